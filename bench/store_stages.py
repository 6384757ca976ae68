"""Per-stage cost of one store put, against the floor of bench/store_append.py.

    .venv/bin/python bench/store_stages.py [-n 20000] [--props-str] [--rounds 3]

Each stage runs over the same N records (``store_append.make_records``: 1 KiB body, TAGS,
UNIQ_KEY) on a fresh store whose 1 GiB commitlog file is pre-touched, and is timed with this
thread's CPU time; the best of ``--rounds`` rounds is printed per stage, with its multiple of
the floor (a bare slice copy of the pre-encoded record). The "lean minimal put" is the least a
put can do in CPython (body CRC, properties to bytes, the whole record in one ``pack_into``, a
queue offset from a dict, one consume-queue unit), without the store's checks, result objects
or dispatch: it tells how far a Python put can get from the floor at best.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import shutil
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from store_append import make_records  # noqa: E402
from twisted.internet.task import Clock  # noqa: E402

from rocketmq_emu.broker.commitlog.bodycrc import crc32  # noqa: E402
from rocketmq_emu.broker.commitlog.record import MESSAGE_MAGIC_CODE, encode_record  # noqa: E402
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig  # noqa: E402

_now = time.thread_time
_join_pair = "\u0001".join
_I32 = struct.Struct(">i")
_UNIT = struct.Struct(">qiq")
_HOST = b"\0" * 8


def _store(root: str, n: int) -> MessageStore:
    clock = Clock()
    clock.advance(time.time())
    cfg = MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commitlog=1 << 30,
                             max_hash_slot_num=500_000, max_index_num=2_000_000)
    s = MessageStore(cfg, clock)
    assert s.load()
    s.start()
    s.commitlog.queue.files[0].warm()
    s.index_drain_limit = n + 1
    return s


def stages(records, encoded):
    """(name, fn(store, mm)) of every stage, in print order."""
    first = encoded[0]
    blen = len(records[0].body)
    tb = bytes((len(records[0].topic),)) + records[0].topic.encode()
    plen = len(first) - 90 - blen - len(tb)
    whole = struct.Struct(f">iiiiiqqiq8sq8siqi{blen}s{len(tb)}sh{plen}s")
    props0 = first[-plen:]

    def floor(s, mm):
        p = 0
        for c in encoded:
            e = p + len(c)
            mm[p:e] = c
            p = e

    def crc(s, mm):
        for r in records:
            crc32(r.body) & 0x7FFFFFFF

    def props(s, mm):
        for r in records:
            ps = r.properties_str
            (ps if ps is not None else "\u0002".join(map(_join_pair, r.properties.items()))
             ).encode()

    def pack(s, mm):
        p = 0
        pk = whole.pack_into
        for r in records:
            pk(mm, p, 0, 1, 2, 3, 4, 5, 6, 7, 8, _HOST, 9, _HOST, 1, 2, blen, r.body, tb, plen,
               props0)
            p += whole.size

    def lean(s, mm):
        p = c = 0
        pk = whole.pack_into
        table: dict = {}
        cq = bytearray(20 * len(records))
        size = whole.size
        for r in records:
            body = r.body
            ps = r.properties_str
            pr = (ps if ps is not None else "\u0002".join(map(_join_pair, r.properties.items()))
                  ).encode()
            key = (r.topic, r.queue_id)
            q = table.get(key, 0)
            table[key] = q + 1
            pk(mm, p, 0, MESSAGE_MAGIC_CODE, crc32(body) & 0x7FFFFFFF, r.queue_id, r.flag, q, p,
               r.sys_flag, r.born_timestamp, _HOST, 17, _HOST, r.reconsume_times,
               r.prepared_transaction_offset, blen, body, tb, len(pr), pr)
            _I32.pack_into(mm, p, size)
            _UNIT.pack_into(cq, c, p, size, 123)
            c += 20
            p += size

    def append(s, mm):
        f = s.commitlog.append
        for r in records:
            f(r)

    def put(s, mm):
        f = s.put_message
        for r in records:
            f(r)

    def put_index(s, mm):
        put(s, mm)
        s.build_queued_index()

    return [("floor: bare copy of the encoded record", floor),
            ("body CRC", crc),
            ("properties to bytes", props),
            ("one pack_into of the whole record", pack),
            ("lean minimal put (the above + qoffset + CQ unit)", lean),
            ("CommitLog.append", append),
            ("MessageStore.put_message", put),
            ("put_message + index drain", put_index)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20_000)
    ap.add_argument("--props-str", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    records = make_records(args.n, 1024, args.props_str)
    gc.collect()
    gc.freeze()
    encoded = [encode_record(copy.copy(r)) for r in records]
    todo = stages(records, encoded)
    best = {name: float("inf") for name, _ in todo}
    for _ in range(args.rounds):
        for name, fn in todo:
            root = tempfile.mkdtemp(prefix="store-stages-")
            try:
                s = _store(root, args.n)
                mm = s.commitlog.queue.files[0].mm
                t0 = _now()
                fn(s, mm)
                best[name] = min(best[name], _now() - t0)
                s.shutdown()
            finally:
                shutil.rmtree(root, ignore_errors=True)
    floor = best[todo[0][0]]
    print(f"{args.n} records, properties {'string' if args.props_str else 'map'}, "
          f"best of {args.rounds}")
    for name, _ in todo:
        print(f"  {name:50s} {best[name] / args.n * 1e6:6.2f} us/msg  "
              f"({best[name] / floor:5.1f}x floor)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
