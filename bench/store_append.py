"""Append throughput of the store against the floor of a bare mmap copy.

    .venv/bin/python bench/store_append.py [-n 200000] [--body 1024] [--profile]

Store: N messages of ``--body`` bytes through ``MessageStore.put_message`` under ASYNC_FLUSH
(commitlog append + consume-queue dispatch; index entries are built after the loop and timed
separately, as RocketMQ's reput thread builds them off the put path).
Floor: the same record bytes, pre-encoded, copied with slice assignment into a prewarmed
mmap of the same size. Both files are preallocated and pre-touched before timing.
Prints messages/s for both and the ratio store/floor (target >= 0.25, goal 0.5).
"""

from __future__ import annotations

import argparse
import cProfile
import mmap
import os
import pstats
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet.task import Clock  # noqa: E402

from broker.commitlog.record import MessageRecord  # noqa: E402
from broker.store import MessageStore, MessageStoreConfig, PutMessageStatus  # noqa: E402


def make_records(n: int, body_size: int, with_props_str: bool) -> list[MessageRecord]:
    """Records as the send processor hands them over: TAGS, KEYS-less, a UNIQ_KEY each."""
    body = (b"0123456789abcdef" * (body_size // 16 + 1))[:body_size]
    recs = []
    for i in range(n):
        props = {"UNIQ_KEY": f"7F0000010B2C18B4AAC2{i:012X}", "TAGS": "TagA", "WAIT": "true"}
        r = MessageRecord(topic="BenchTopic", body=body, queue_id=i % 4, properties=props,
                          born_timestamp=1_700_000_000_000, born_host=("10.0.0.7", 53211),
                          store_host=("10.0.0.1", 10911))
        if with_props_str:
            r.properties_str = "\u0002".join(f"{k}\u0001{v}" for k, v in props.items())
        recs.append(r)
    return recs


def bench_store(root: str, records: list[MessageRecord], profile: bool) -> tuple[float, float, bytes]:
    clock = Clock()
    clock.advance(time.time())
    total = sum(len(r.body) for r in records) * 2
    size = 1 << 30
    while size < total:
        size <<= 1
    cfg = MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commitlog=size,
                             max_hash_slot_num=500_000, max_index_num=2_000_000)
    store = MessageStore(cfg, clock)
    assert store.load()
    store.start()  # creates, preallocates and pre-touches the first commitlog file
    store.index_drain_limit = len(records) + 1  # index built after the loop, timed apart
    put = store.put_message
    ok = PutMessageStatus.PUT_OK
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    t0 = time.perf_counter()
    for r in records:
        if put(r).status is not ok:
            raise SystemExit("put failed")
    t1 = time.perf_counter()
    store._drain_index()
    t2 = time.perf_counter()
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    mf = store.commitlog.queue.files[0]
    written = bytes(mf.mm[: mf.wrote_position])
    store.shutdown()
    return t1 - t0, t2 - t1, written


def split_records(data: bytes) -> list[bytes]:
    out = []
    pos = 0
    while pos + 4 <= len(data):
        size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
        if size <= 0:
            break
        out.append(data[pos : pos + size])
        pos += size
    return out


def bench_floor(root: str, chunks: list[bytes]) -> float:
    total = sum(len(c) for c in chunks)
    path = os.path.join(root, "floor")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(fd, 0, total)
        mm = mmap.mmap(fd, total)
        try:
            mm.madvise(getattr(mmap, "MADV_POPULATE_WRITE", 23))
        except OSError:
            for i in range(0, total, 4096):
                mm[i] = 0
        t0 = time.perf_counter()
        pos = 0
        for c in chunks:
            end = pos + len(c)
            mm[pos:end] = c
            pos = end
        t1 = time.perf_counter()
        mm.close()
    finally:
        os.close(fd)
    return t1 - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200_000, help="messages (default 200000)")
    ap.add_argument("--body", type=int, default=1024, help="body bytes (default 1024)")
    ap.add_argument("--props-str", action="store_true",
                    help="hand records over with their properties string already encoded")
    ap.add_argument("--profile", action="store_true", help="cProfile the store loop")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="store-bench-", dir=args.dir)
    try:
        records = make_records(args.n, args.body, args.props_str)
        t_store, t_index, written = bench_store(os.path.join(root, "store"), records, args.profile)
        chunks = split_records(written)
        assert len(chunks) == args.n, (len(chunks), args.n)
        t_floor = bench_floor(root, chunks)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    n = args.n
    rec_size = len(chunks[0])
    store_rate = n / t_store
    floor_rate = n / t_floor
    print(f"messages: {n} x {args.body} B body ({rec_size} B records), ASYNC_FLUSH")
    print(f"store put_message : {store_rate:12,.0f} msg/s  ({t_store * 1e6 / n:.2f} us/msg)")
    print(f"floor mmap copy   : {floor_rate:12,.0f} msg/s  ({t_floor * 1e6 / n:.2f} us/msg)")
    print(f"ratio store/floor : {store_rate / floor_rate:.3f}   (target >= 0.25, goal 0.5)")
    both = n / (t_store + t_index)
    print(f"index catch-up    : {t_index * 1e6 / n:.2f} us/msg; put + index {both:,.0f} msg/s, "
          f"ratio {both / floor_rate:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
