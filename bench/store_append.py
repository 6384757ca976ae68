"""Append throughput of the store against the floor of a bare mmap copy.

    .venv/bin/python bench/store_append.py [-n 100000] [--batch 1,64] [--props-str] [--profile]

Store: N messages of ``--body`` bytes through ``MessageStore.put_message`` under ASYNC_FLUSH
(commitlog append + consume-queue dispatch; index entries are built after the loop and timed
separately, as RocketMQ's reput thread builds them off the put path); ``put_messages`` with
``--batch`` k > 1.
Floor: the same records pre-encoded (``encode_record``, made before any timing), copied with
slice assignment into a prewarmed mmap of the same size. Both files are preallocated and pre-touched before timing.
``--repeat k`` (default 3) does the whole measurement k times and reports each side's best
time (each run's own ratio is printed too). Prints messages/s for both and the ratio
store/floor (target >= 0.25, goal 0.5). Times are
this thread's CPU time (``time.thread_time``). ``--rounds k`` alternates k store and floor
rounds (fairer under a changing load, but measured 1.5x slower for the store here: the floor
rounds evict its working set).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import mmap
import os
import pstats
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet.task import Clock  # noqa: E402

from rocketmq_emu.broker.commitlog.record import MessageRecord, encode_record  # noqa: E402
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig, PutMessageStatus  # noqa: E402

#: CPU time of this thread (user + system, page faults included): the machine is shared, and
#: wall time would charge other processes' time slices to whichever loop was running.
_now = time.thread_time


def make_records(n: int, body_size: int, with_props_str: bool, batch: int = 1
                 ) -> list[MessageRecord]:
    """Records as the send processor hands them over: TAGS, KEYS-less, a UNIQ_KEY each."""
    body = (b"0123456789abcdef" * (body_size // 16 + 1))[:body_size]
    recs = []
    for i in range(n):
        props = {"UNIQ_KEY": f"7F0000010B2C18B4AAC2{i:012X}", "TAGS": "TagA", "WAIT": "true"}
        r = MessageRecord(topic="BenchTopic", body=body, queue_id=(i // batch) % 4, properties=props,
                          born_timestamp=1_700_000_000_000, born_host=("10.0.0.7", 53211),
                          store_host=("10.0.0.1", 10911))
        if with_props_str:
            r.properties_str = "\u0002".join(f"{k}\u0001{v}" for k, v in props.items())
        recs.append(r)
    return recs


class Floor:
    """A prewarmed mmap the floor loop copies pre-encoded records into."""

    def __init__(self, root: str, total: int) -> None:
        self.fd = os.open(os.path.join(root, "floor"), os.O_RDWR | os.O_CREAT, 0o644)
        os.posix_fallocate(self.fd, 0, total)
        self.mm = mmap.mmap(self.fd, total)
        try:
            self.mm.madvise(getattr(mmap, "MADV_POPULATE_WRITE", 23))
        except OSError:
            for i in range(0, total, 4096):
                self.mm[i] = 0
        self.pos = 0

    def copy(self, chunks: list[bytes]) -> float:
        mm = self.mm
        pos = self.pos
        t0 = _now()
        for c in chunks:
            end = pos + len(c)
            mm[pos:end] = c
            pos = end
        t1 = _now()
        self.pos = pos
        return t1 - t0

    def close(self) -> None:
        self.mm.close()
        os.close(self.fd)


def run(root: str, records: list[MessageRecord], rounds: int, batch: int, profile: bool,
        reactor_clock: bool = False):
    """Alternate store rounds and floor rounds over the same bytes (the machine is shared:
    interleaving exposes both to the same load), then build the queued index entries.
    ``reactor_clock``: the store's clock is the reactor, as in the broker.
    Returns (store s, index s, floor s, record size, put path name)."""
    if reactor_clock:
        from twisted.internet import reactor as clock
    else:
        clock = Clock()
        clock.advance(time.time())
    total = sum(len(r.body) + 200 for r in records)
    size = 1 << 30
    while size < total:
        size <<= 1
    cfg = MessageStoreConfig(store_path_root_dir=os.path.join(root, "store"),
                             mapped_file_size_commitlog=size,
                             max_hash_slot_num=500_000, max_index_num=2_000_000)
    store = MessageStore(cfg, clock)
    path = "pure Python"
    assert store.load()
    store.start()  # creates and preallocates the first commitlog file
    # Pre-touch all of it, as the floor's file: without a reactor the store's warm-ahead timer
    # (16 MiB ahead of the writer) does not run.
    store.commitlog.queue.files[0].warm()
    store.index_drain_limit = len(records) + 1  # index built after the rounds, timed apart
    floor = Floor(root, total)
    # The floor's pre-encoded bytes, made before any timing (as cold as the store's inputs):
    # encode_record gives the same sizes and layout the store writes.
    encoded = [encode_record(copy.copy(r)) for r in records]
    put = store.put_message
    puts = store.put_messages
    ok = PutMessageStatus.PUT_OK
    prof = cProfile.Profile() if profile else None
    t_store = t_floor = 0.0
    per = -(-len(records) // rounds)
    mf = store.commitlog.queue.files[0]
    for k in range(0, len(records), per):
        chunk = records[k : k + per]
        start = mf.wrote_position
        if prof:
            prof.enable()
        t0 = _now()
        if batch > 1:
            for i in range(0, len(chunk), batch):
                if puts(chunk[i : i + batch]).status is not ok:
                    raise SystemExit("put_messages failed")
        else:
            for r in chunk:
                if put(r).status is not ok:
                    raise SystemExit("put failed")
        t1 = _now()
        if prof:
            prof.disable()
        t_store += t1 - t0
        assert mf.wrote_position - start == sum(map(len, encoded[k : k + per]))
        t_floor += floor.copy(encoded[k : k + per])
    t1 = _now()
    store.build_queued_index()  # once at the end: interleaved with the rounds it slows them down
    t_index = _now() - t1
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    rec_size = mf.wrote_position // len(records)
    floor.close()
    store.shutdown()
    return t_store, t_index, t_floor, rec_size, path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=100_000, help="messages per mode (default 100000)")
    ap.add_argument("--body", type=int, default=1024, help="body bytes (default 1024)")
    ap.add_argument("--props-str", action="store_true",
                    help="hand records over with their properties string already encoded")
    ap.add_argument("--profile", action="store_true", help="cProfile the store loop")
    ap.add_argument("--rounds", type=int, default=1,
                    help="store/floor alternations (default 1: all store, then all floor)")
    ap.add_argument("--batch", default="1,64",
                    help="comma-separated modes: 1 = put_message, k > 1 = put_messages batches "
                         "of k (default 1,64)")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    ap.add_argument("--clock", choices=("task", "reactor"), default="task",
                    help="the store's clock: twisted's task.Clock (default; its seconds() is "
                         "a Python method) or the reactor, as the broker passes it (seconds() "
                         "is time.time)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="whole store-then-floor runs per mode, each on fresh files and "
                         "records; the best time of each side is reported (default 3). This "
                         "machine is a VM whose speed drifts by up to 1.7x between runs "
                         "seconds apart (every function slows alike, the floor too), so a "
                         "single run's ratio depends on when each side ran")
    args = ap.parse_args(argv)
    for batch in (int(b) for b in args.batch.split(",")):
        runs: list[tuple[float, float, float]] = []
        for _ in range(max(1, args.repeat)):
            root = tempfile.mkdtemp(prefix="store-bench-", dir=args.dir)
            try:
                records = make_records(args.n, args.body, args.props_str, batch)
                # The input records are fixtures, not store state: keep the cyclic GC from
                # walking 100k of them (and their dicts) on every full collection during the
                # timed loops.
                gc.collect()
                gc.freeze()
                t_store, t_index, t_floor, rec_size, path = run(
                    root, records, args.rounds, batch, args.profile,
                    args.clock == "reactor")
            finally:
                gc.unfreeze()
                shutil.rmtree(root, ignore_errors=True)
            del records
            runs.append((t_store, t_index, t_floor))
        best = [min(column) for column in zip(*runs, strict=True)]
        report(args, batch, rec_size, *best, path if batch == 1 else "pure Python")
        if len(runs) > 1:
            print("  each run's ratio         : " + " ".join(
                f"{tf / ts:.3f}" for ts, _ti, tf in runs) + f"   (best of {len(runs)} above)")
    return 0


def report(args, batch: int, rec_size: int, t_store: float, t_index: float,
           t_floor: float, path: str) -> None:
    n = args.n
    store_rate = n / t_store
    floor_rate = n / t_floor
    how = f"put_messages x{batch}" if batch > 1 else "put_message"
    print(f"messages: {n} x {args.body} B body ({rec_size} B records), ASYNC_FLUSH, {how}, "
          f"properties {'string' if args.props_str else 'map'}; {path} put path, "
          f"{args.clock} clock")
    print(f"  store {how:18s}: {store_rate:12,.0f} msg/s  ({t_store * 1e6 / n:.2f} us/msg)")
    print(f"  floor mmap copy         : {floor_rate:12,.0f} msg/s  "
          f"({t_floor * 1e6 / n:.2f} us/msg)")
    print(f"  ratio store/floor       : {store_rate / floor_rate:.3f}   "
          "(target >= 0.25, goal 0.5)")
    both = n / (t_store + t_index)
    print(f"  index catch-up          : {t_index * 1e6 / n:.2f} us/msg; put + index "
          f"{both:,.0f} msg/s, ratio {both / floor_rate:.3f}")


if __name__ == "__main__":
    sys.exit(main())
