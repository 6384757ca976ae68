"""The batch append fast path: a whole ``put_messages`` batch (one topic and queue, IPv4 hosts,
no PREPARED / ROLLBACK records) written with ONE ``struct.pack_into`` call whose format covers
every record (fixed fields, body, topic block, properties), instead of several Python-level
operations per record. Bytes are identical to :func:`broker.commitlog.record.encode_record`
(tests prove it).

Torn-batch guard: the first record's TOTALSIZE is packed as ``-batch_bytes`` and patched to
its real value after the whole batch is in place, so a process killed midway leaves a marker
that tells recovery exactly which extent was never published (and must be dropped whole).
"""

from __future__ import annotations

import struct
from itertools import accumulate

from broker.commitlog.bodycrc import crc32
from broker.commitlog.encoder import props_string
from broker.commitlog.record import END_FILE_MIN_BLANK_LENGTH, MAX_PROPERTIES_LENGTH
from broker.commitlog.results import AppendMessageResult, AppendMessageStatus
from broker.message import (
    BORNHOST_V6_FLAG,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)

_FIELDS = 19  # 15 fixed fields (TOTALSIZE .. BODYLENGTH), body, topic block, PROPERTIESLENGTH, properties
_I32 = struct.Struct(">i")
_HOST_FLAGS_OFF = ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
_crc32 = crc32
_tuple_new = tuple.__new__
_PUT_OK = AppendMessageStatus.PUT_OK


class BatchStamp:
    """What a fast batch append assigned, for stamping the records later if needed."""

    __slots__ = ("records", "offsets", "sizes", "crcs", "sys_flags", "q0", "ts", "magic")

    def __init__(self, records, offsets, sizes, crcs, sys_flags, q0, ts, magic) -> None:
        self.records = records
        self.offsets = offsets
        self.sizes = sizes
        self.crcs = crcs
        self.sys_flags = sys_flags
        self.q0 = q0
        self.ts = ts
        self.magic = magic

    def apply(self) -> None:
        """Set the store fields on every record (as a single append does)."""
        ts, q0, magic = self.ts, self.q0, self.magic
        for i, r in enumerate(self.records):
            r.store_timestamp = ts
            r.body_crc = self.crcs[i]
            r.physical_offset = self.offsets[i]
            r.queue_offset = q0 + i
            r.total_size = self.sizes[i]
            r.magic_code = magic
            r.sys_flag = self.sys_flags[i]


def append_batch_fast(commitlog, records: list) -> tuple[AppendMessageResult, BatchStamp | None] | None:
    """Append ``records`` if they qualify for the fast path, else return None (the caller
    takes the general path). The records are NOT stamped: call ``stamp.apply()`` when their
    store fields are needed (the result's offsets and the stamp carry everything)."""
    first = records[0]
    topic = first.topic
    qid = first.queue_id
    born = first.born_host
    store = first.store_host
    enc = commitlog.encoder
    born_b, store_b, host_flags, v4 = enc.host_pair(born, store)
    if not v4:
        return None
    # Checked with set comprehensions (C loops): one topic, queue and host pair, no half or
    # rolled-back transaction records. Host tuples are usually shared objects: compare ids
    # first, values only when they differ.
    flags = {r.sys_flag for r in records}
    if any(f & 0xC in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE) for f in flags):
        return None
    if len({r.topic for r in records}) != 1 or len({r.queue_id for r in records}) != 1:
        return None
    if len({id(r.born_host) for r in records}) != 1 or len(
            {id(r.store_host) for r in records}) != 1:
        if len({(r.born_host, r.store_host) for r in records}) != 1:
            return None
    tb, magic = enc.topic(topic)
    props = [
        (r.properties_str if r.properties_str is not None
         else props_string(r.properties)).encode()
        for r in records
    ]
    plens = list(map(len, props))
    if max(plens) > MAX_PROPERTIES_LENGTH:
        return AppendMessageResult(
            AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED,
            error=f"properties length {max(plens)} exceeds {MAX_PROPERTIES_LENGTH} bytes"), None
    n = len(records)
    bodies = [r.body for r in records]
    blens = list(map(len, bodies))
    fixed = 90 + len(tb)
    sizes = [fixed + b + p for b, p in zip(blens, plens, strict=True)]
    total = sum(sizes)
    if total + END_FILE_MIN_BLANK_LENGTH > commitlog.mapped_file_size:
        return AppendMessageResult(
            AppendMessageStatus.MESSAGE_SIZE_EXCEEDED,
            error=f"batch of {total} bytes does not fit a {commitlog.mapped_file_size}-byte file"
        ), None
    mf = commitlog._writable(total)
    pos = mf.wrote_position
    base = mf.file_from_offset + pos
    offsets = list(accumulate(sizes[:-1], initial=base))
    now = commitlog.clock.seconds()
    ts = int(now * 1000)
    table = commitlog.topic_queue_table
    key = (topic, qid)
    q0 = table.get(key, 0)
    table[key] = q0 + n
    crcs = [_crc32(b) & 0x7FFFFFFF for b in bodies]
    if len(flags) == 1:
        sys_flags = [(flags.pop() & _HOST_FLAGS_OFF) | host_flags] * n
    else:
        sys_flags = [(r.sys_flag & _HOST_FLAGS_OFF) | host_flags for r in records]
    tl = len(tb)
    if blens.count(blens[0]) == n and plens.count(plens[0]) == n:
        fmt = ">" + f"iiiiiqqiq8sq8siqi{blens[0]}s{tl}sh{plens[0]}s" * n
    else:
        fmt = ">" + "".join(f"iiiiiqqiq8sq8siqi{b}s{tl}sh{p}s"
                            for b, p in zip(blens, plens, strict=True))
    flat: list = [None] * (n * _FIELDS)
    flat[0::_FIELDS] = sizes
    flat[0] = -total  # unpublished: recovery drops exactly this extent; patched last
    flat[1::_FIELDS] = [magic] * n
    flat[2::_FIELDS] = crcs
    flat[3::_FIELDS] = [qid] * n
    flat[4::_FIELDS] = [r.flag for r in records]
    flat[5::_FIELDS] = range(q0, q0 + n)
    flat[6::_FIELDS] = offsets
    flat[7::_FIELDS] = sys_flags
    flat[8::_FIELDS] = [r.born_timestamp for r in records]
    flat[9::_FIELDS] = [born_b] * n
    flat[10::_FIELDS] = [ts] * n
    flat[11::_FIELDS] = [store_b] * n
    flat[12::_FIELDS] = [r.reconsume_times for r in records]
    flat[13::_FIELDS] = [r.prepared_transaction_offset for r in records]
    flat[14::_FIELDS] = blens
    flat[15::_FIELDS] = bodies
    flat[16::_FIELDS] = [tb] * n
    flat[17::_FIELDS] = plens
    flat[18::_FIELDS] = props
    mm = mf.mm
    struct.pack_into(fmt, mm, pos, *flat)
    _I32.pack_into(mm, pos, sizes[0])  # publish
    mf.wrote_position = pos + total
    mf.last_modified = now
    commitlog.last_store_timestamp = ts
    res = _tuple_new(AppendMessageResult, (_PUT_OK, base, total, ts, q0, n, store, offsets, None))
    return res, BatchStamp(records, offsets, sizes, crcs, sys_flags, q0, ts, magic)
