"""The batch append fast path: a whole ``put_messages`` batch (one topic and queue, IPv4 hosts,
no PREPARED / ROLLBACK records) written with ONE ``struct.pack_into`` call whose format covers
every record (fixed fields, body, topic block, properties), instead of several Python-level
operations per record. Bytes are identical to :func:`rocketmq_emu.broker.commitlog.record.encode_record`
(tests prove it).

Torn-batch guard: the first record's TOTALSIZE is packed as ``-batch_bytes`` and patched to
its real value after the whole batch is in place, so a process killed midway leaves a marker
that tells recovery exactly which extent was never published (and must be dropped whole).
"""

from __future__ import annotations

import struct
from functools import partial
from itertools import accumulate, repeat
from operator import and_ as _and
from operator import attrgetter

from rocketmq_emu.broker.commitlog.bodycrc import crc32
from rocketmq_emu.broker.commitlog.encoder import props_string
from rocketmq_emu.broker.commitlog.record import (
    END_FILE_MIN_BLANK_LENGTH,
    I16,
    I32,
    MAX_PROPERTIES_LENGTH,
    V4,
    V4_LAYOUT,
)
from rocketmq_emu.broker.commitlog.results import AppendMessageResult, AppendMessageStatus
from rocketmq_emu.broker.message import (
    BORNHOST_V6_FLAG,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)

# One record's struct codes around its three variable parts: the fixed fields totalSize ..
# bodyLength (the record's V4 shape), then body, topic block (its length byte(s) included, as
# the encoder gives it), propertiesLength, properties.
_FIXED_CODES = V4_LAYOUT.codes("totalSize", "bodyLength")
_PROPS_LENGTH_CODES = V4_LAYOUT.codes("propertiesLength")
_ORDER = V4_LAYOUT.byte_order
# Values per record in the flat argument list: the 15 fixed fields, then the four above.
_FIELDS = V4_LAYOUT.names.index("bodyLength") + 1 + 4
_I32 = I32


def _record_codes(blen: int, tl: int, plen: int) -> str:
    """Struct codes of one IPv4 record with these body, topic-block and properties lengths."""
    return f"{_FIXED_CODES}{blen}s{tl}s{_PROPS_LENGTH_CODES}{plen}s"
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


#: Every record field a batch append reads, fetched per record by one C call.
_COLUMNS = attrgetter("topic", "queue_id", "sys_flag", "born_host", "store_host", "body",
                      "properties_str", "flag", "born_timestamp", "reconsume_times",
                      "prepared_transaction_offset")
_SHAPE_CACHE_LIMIT = 256
_shapes: dict[tuple, object] = {}


def _batch_shape(n: int, blen: int, tl: int, plen: int):
    """``pack_into`` of a precompiled struct for ``n`` records of one shape (cached: building
    and hashing the format string per batch costs more than the lookup)."""
    key = (n, blen, tl, plen)
    fn = _shapes.get(key)
    if fn is None:
        if len(_shapes) >= _SHAPE_CACHE_LIMIT:
            _shapes.clear()
        fn = _shapes[key] = struct.Struct(_ORDER + _record_codes(blen, tl, plen) * n).pack_into
    return fn


def append_batch_fast(commitlog, records: list) -> tuple[AppendMessageResult, BatchStamp | None] | None:
    """Append ``records`` if they qualify for the fast path, else return None (the caller
    takes the general path). The records are NOT stamped: call ``stamp.apply()`` when their
    store fields are needed (the result's offsets and the stamp carry everything).

    Per-record work is done by C loops: one ``attrgetter`` call per record fetches every
    field, ``zip(*...)`` turns them into columns, and the checks and encodings run on
    columns (sets, ``map``)."""
    n = len(records)
    (topics, qids, flags_col, borns, stores, bodies, pstrs, msg_flags, born_ts, reconsumes,
     prepared) = zip(*map(_COLUMNS, records), strict=True)
    topic = topics[0]
    qid = qids[0]
    born = borns[0]
    store = stores[0]
    enc = commitlog.encoder
    born_b, store_b, host_flags, v4 = enc.host_pair(born, store)
    if not v4:
        return None
    # One topic, queue and host pair, no half or rolled-back transaction records. Host
    # tuples are usually shared objects: compare ids first, values only when they differ.
    flags = set(flags_col)
    if any(f & 0xC in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE) for f in flags):
        return None
    if len(set(topics)) != 1 or len(set(qids)) != 1:
        return None
    if len(set(map(id, borns))) != 1 or len(set(map(id, stores))) != 1:
        if len(set(zip(borns, stores, strict=True))) != 1:
            return None
    tb, magic = enc.topic(topic)
    if None in pstrs:
        props = [
            (ps if ps is not None else props_string(r.properties)).encode()
            for ps, r in zip(pstrs, records, strict=True)
        ]
    else:
        props = list(map(str.encode, pstrs))
    plens = list(map(len, props))
    if max(plens) > MAX_PROPERTIES_LENGTH:
        return AppendMessageResult(
            AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED,
            error=f"properties length {max(plens)} exceeds {MAX_PROPERTIES_LENGTH} bytes"), None
    blens = list(map(len, bodies))
    tl = len(tb)
    fixed = V4.size + I16.size + tl
    uniform = blens.count(blens[0]) == n and plens.count(plens[0]) == n
    if uniform:
        size0 = fixed + blens[0] + plens[0]
        sizes = [size0] * n
        total = size0 * n
    else:
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
    crcs = list(map(_and, map(_crc32, bodies), repeat(0x7FFFFFFF, n)))
    if len(flags) == 1:
        sys_flags = [(flags.pop() & _HOST_FLAGS_OFF) | host_flags] * n
    else:
        sys_flags = [(f & _HOST_FLAGS_OFF) | host_flags for f in flags_col]
    if uniform:  # every record the same body and properties lengths: one cached struct
        pack = _batch_shape(n, blens[0], tl, plens[0])
    else:
        pack = partial(struct.pack_into, _ORDER + "".join(
            _record_codes(b, tl, p) for b, p in zip(blens, plens, strict=True)))
    flat: list = [None] * (n * _FIELDS)
    flat[0::_FIELDS] = sizes
    flat[0] = -total  # unpublished: recovery drops exactly this extent; patched last
    flat[1::_FIELDS] = repeat(magic, n)
    flat[2::_FIELDS] = crcs
    flat[3::_FIELDS] = qids
    flat[4::_FIELDS] = msg_flags
    flat[5::_FIELDS] = range(q0, q0 + n)
    flat[6::_FIELDS] = offsets
    flat[7::_FIELDS] = sys_flags
    flat[8::_FIELDS] = born_ts
    flat[9::_FIELDS] = repeat(born_b, n)
    flat[10::_FIELDS] = repeat(ts, n)
    flat[11::_FIELDS] = repeat(store_b, n)
    flat[12::_FIELDS] = reconsumes
    flat[13::_FIELDS] = prepared
    flat[14::_FIELDS] = blens
    flat[15::_FIELDS] = bodies
    flat[16::_FIELDS] = repeat(tb, n)
    flat[17::_FIELDS] = plens
    flat[18::_FIELDS] = props
    mm = mf.mm
    try:
        pack(mm, pos, *flat)
    except struct.error:  # a body that is not bytes (memoryview...): the general path
        table[key] = q0
        return None
    _I32.pack_into(mm, pos, sizes[0])  # publish
    mf.wrote_position = pos + total
    mf.last_modified = now
    commitlog.last_store_timestamp = ts
    res = _tuple_new(AppendMessageResult, (_PUT_OK, base, total, ts, q0, n, store, offsets, None))
    return res, BatchStamp(records, offsets, sizes, crcs, sys_flags, q0, ts, magic)
