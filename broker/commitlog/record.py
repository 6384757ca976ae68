"""The commitlog record: RocketMQ's 20-field message layout, byte for byte.

Declared once with ``construct`` (:data:`RECORD`, the readable spec used by tests and tools);
the append and read paths run on precompiled :mod:`struct` (:func:`encode_into`,
:func:`decode_record`), and the tests hold both to the same golden bytes.

Layout (big-endian; ``CommitLog.MessageExtEncoder`` and ``MessageDecoder`` in Java)::

    TOTALSIZE int32 | MAGICCODE int32 | BODYCRC int32 | QUEUEID int32 | FLAG int32
    QUEUEOFFSET int64 | PHYSICALOFFSET int64 | SYSFLAG int32 | BORNTIMESTAMP int64
    BORNHOST 8|20 | STORETIMESTAMP int64 | STOREHOSTADDRESS 8|20 | RECONSUMETIMES int32
    PREPARED_TRANSACTION_OFFSET int64 | BODYLENGTH int32 | BODY | TOPICLENGTH int8 (V1) or
    int16 (V2) | TOPIC | PROPERTIESLENGTH int16 | PROPERTIES

A host block is 4 (IPv4) or 16 (IPv6, sysFlag bits 0x10 / 0x20) address bytes and an int32
port. V2 magic (2-byte topic length) is written only for topics over 127 bytes, as
RocketMQ 5's ``CommitLog.asyncPutMessage`` does: 4.x clients ignore the magic and always read
one byte.

A file ends with an 8-byte BLANK filler (``int32 remaining, int32 BLANK_MAGIC_CODE``) whenever
the next record plus 8 bytes would not fit (``END_FILE_MIN_BLANK_LENGTH``).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import repeat

import construct as cs

from broker.message import (
    BORNHOST_V6_FLAG,
    STOREHOSTADDRESS_V6_FLAG,
    pack_host,
    properties_to_string,
    string_to_properties,
    unpack_host,
)

MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7
MESSAGE_MAGIC_CODE_V2 = -626843477  # 0xDAA320AB
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194
END_FILE_MIN_BLANK_LENGTH = 8
MAX_V1_TOPIC_LENGTH = 127
MAX_PROPERTIES_LENGTH = 32767


class RecordError(ValueError):
    """A record that cannot be decoded; names the field, what was needed and what was left."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message if offset is None else f"{message} (at byte {offset})")
        self.offset = offset


def body_crc(body: bytes) -> int:
    """RocketMQ's BODYCRC: ``UtilAll.crc32`` = java.util.zip.CRC32 with the sign bit cleared."""
    return zlib.crc32(body) & 0x7FFFFFFF


# --- the spec -----------------------------------------------------------------------------------
def _host(flag_bit: int) -> cs.Construct:
    return cs.IfThenElse(
        lambda ctx: ctx.sysFlag & flag_bit, cs.Bytes(20), cs.Bytes(8)
    )


RECORD = cs.Struct(
    "totalSize" / cs.Int32sb,
    "magicCode" / cs.Int32sb,
    "bodyCRC" / cs.Int32sb,
    "queueId" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "queueOffset" / cs.Int64sb,
    "physicalOffset" / cs.Int64sb,
    "sysFlag" / cs.Int32sb,
    "bornTimestamp" / cs.Int64sb,
    "bornHost" / _host(BORNHOST_V6_FLAG),
    "storeTimestamp" / cs.Int64sb,
    "storeHostAddress" / _host(STOREHOSTADDRESS_V6_FLAG),
    "reconsumeTimes" / cs.Int32sb,
    "preparedTransactionOffset" / cs.Int64sb,
    "body" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes),
    "topic" / cs.IfThenElse(
        lambda ctx: ctx.magicCode == MESSAGE_MAGIC_CODE_V2,
        cs.Prefixed(cs.Int16sb, cs.GreedyBytes),
        cs.Prefixed(cs.Int8sb, cs.GreedyBytes),
    ),
    "properties" / cs.Prefixed(cs.Int16sb, cs.GreedyBytes),
)
"""construct declaration of one record (the readable spec; not used on the hot path)."""

BLANK = cs.Struct(
    "totalSize" / cs.Int32sb,
    "magicCode" / cs.Const(BLANK_MAGIC_CODE, cs.Int32sb),
)
"""The end-of-file filler: the first 8 bytes of the unused remainder of a mapped file."""

# --- the fast path ------------------------------------------------------------------------------
# Fixed prefix up to and including SYSFLAG, then BORNTIMESTAMP; hosts vary in width.
_HEAD = struct.Struct(">iiiiiqqiq")  # totalSize .. bornTimestamp: 48 bytes
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")
_MID = struct.Struct(">q")  # storeTimestamp
_TAIL = struct.Struct(">iqi")  # reconsumeTimes, preparedTransactionOffset, bodyLength
# The common IPv4 shape as one struct: head + bornHost + storeTimestamp + storeHost + tail.
_V4 = struct.Struct(">iiiiiqqiq8sq8siqi")  # 88 bytes
_BLANK = struct.Struct(">ii")
_PEEK = struct.Struct(">ii")  # totalSize, magicCode


@dataclass(slots=True)
class MessageRecord:
    """One message as stored in the commitlog (``MessageExt`` / ``MessageExtBrokerInner``).

    Hosts are ``(ip, port)`` pairs. ``properties`` is the decoded map; the exact stored
    string is kept in ``properties_str`` when decoded from bytes (property order matters
    for byte identity), and recomputed from the map when it is None.
    """

    topic: str
    body: bytes = b""
    queue_id: int = 0
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    store_host: tuple[str, int] = ("127.0.0.1", 10911)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    # Assigned by the store at append time.
    queue_offset: int = 0
    physical_offset: int = 0
    store_timestamp: int = 0
    body_crc: int = 0
    total_size: int = 0
    magic_code: int = MESSAGE_MAGIC_CODE
    properties_str: str | None = None

    @property
    def tags(self) -> str | None:
        """The TAGS property, if any."""
        return self.properties.get("TAGS")

    @property
    def keys(self) -> list[str]:
        """The KEYS property split on spaces."""
        raw = self.properties.get("KEYS")
        return [k for k in raw.split(" ") if k] if raw else []

    def encoded_properties(self) -> bytes:
        """The stored properties string as UTF-8."""
        text = self.properties_str
        if text is None:
            text = properties_to_string(self.properties)
        return text.encode("utf-8")

    def set_properties(self, properties: dict[str, str]) -> None:
        """Replace the properties map and drop the cached string."""
        self.properties = properties
        self.properties_str = None


def _host_len(sys_flag: int, bit: int) -> int:
    return 20 if sys_flag & bit else 8


def record_size(body_len: int, topic_len: int, props_len: int, sys_flag: int = 0) -> int:
    """TOTALSIZE of a record (``CommitLog.calMsgLength``)."""
    topic_field = 1 if topic_len <= MAX_V1_TOPIC_LENGTH else 2
    return (
        4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8
        + _host_len(sys_flag, BORNHOST_V6_FLAG)
        + 8
        + _host_len(sys_flag, STOREHOSTADDRESS_V6_FLAG)
        + 4 + 8 + 4 + body_len + topic_field + topic_len + 2 + props_len
    )


@dataclass(slots=True)
class EncodedParts:
    """Pre-encoded variable parts of a record, computed once outside the put lock."""

    topic: bytes
    properties: bytes
    born_host: bytes
    store_host: bytes
    sys_flag: int
    size: int


def prepare(record: MessageRecord) -> EncodedParts:
    """Encode the variable-width parts and compute the total size and host sysFlag bits.

    Raises :class:`RecordError` when the topic or properties exceed RocketMQ's limits.
    """
    topic = record.topic.encode("utf-8")
    if len(topic) > 32767:
        raise RecordError(f"topic length {len(topic)} exceeds 32767 bytes")
    props = record.encoded_properties()
    if len(props) > MAX_PROPERTIES_LENGTH:
        raise RecordError(f"properties length {len(props)} exceeds {MAX_PROPERTIES_LENGTH} bytes")
    born = pack_host(*record.born_host)
    store = pack_host(*record.store_host)
    sys_flag = record.sys_flag & ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
    if len(born) == 20:
        sys_flag |= BORNHOST_V6_FLAG
    if len(store) == 20:
        sys_flag |= STOREHOSTADDRESS_V6_FLAG
    size = record_size(len(record.body), len(topic), len(props), sys_flag)
    return EncodedParts(topic, props, born, store, sys_flag, size)


def encode_into(
    buf: bytearray | memoryview, pos: int, record: MessageRecord, parts: EncodedParts | None = None
) -> int:
    """Write ``record`` at ``buf[pos:]`` with ``struct.pack_into``; return the bytes written.

    Uses the record's queue_offset, physical_offset, store_timestamp and body_crc as they are
    (the store sets them first). Also sets ``record.total_size`` and ``record.magic_code``.
    """
    if parts is None:
        parts = prepare(record)
    body = record.body
    topic = parts.topic
    props = parts.properties
    magic = MESSAGE_MAGIC_CODE if len(topic) <= MAX_V1_TOPIC_LENGTH else MESSAGE_MAGIC_CODE_V2
    size = parts.size
    if len(parts.born_host) == 8 and len(parts.store_host) == 8:
        _V4.pack_into(
            buf, pos, size, magic, record.body_crc, record.queue_id, record.flag,
            record.queue_offset, record.physical_offset, parts.sys_flag, record.born_timestamp,
            parts.born_host, record.store_timestamp, parts.store_host, record.reconsume_times,
            record.prepared_transaction_offset, len(body),
        )
        p = pos + _V4.size
    else:
        _HEAD.pack_into(
            buf, pos, size, magic, record.body_crc, record.queue_id, record.flag,
            record.queue_offset, record.physical_offset, parts.sys_flag, record.born_timestamp,
        )
        p = pos + _HEAD.size
        buf[p : p + len(parts.born_host)] = parts.born_host
        p += len(parts.born_host)
        _MID.pack_into(buf, p, record.store_timestamp)
        p += 8
        buf[p : p + len(parts.store_host)] = parts.store_host
        p += len(parts.store_host)
        _TAIL.pack_into(buf, p, record.reconsume_times, record.prepared_transaction_offset, len(body))
        p += _TAIL.size
    buf[p : p + len(body)] = body
    p += len(body)
    if magic == MESSAGE_MAGIC_CODE:
        buf[p] = len(topic)
        p += 1
    else:
        _I16.pack_into(buf, p, len(topic))
        p += 2
    buf[p : p + len(topic)] = topic
    p += len(topic)
    _I16.pack_into(buf, p, len(props))
    p += 2
    buf[p : p + len(props)] = props
    p += len(props)
    record.total_size = size
    record.magic_code = magic
    record.sys_flag = parts.sys_flag
    return p - pos


def encode_record(record: MessageRecord) -> bytes:
    """The record's bytes (fast path). Computes BODYCRC if it is unset (0)."""
    if not record.body_crc and record.body:
        record.body_crc = body_crc(record.body)
    parts = prepare(record)
    buf = bytearray(parts.size)
    encode_into(buf, 0, record, parts)
    return bytes(buf)


def encode_blank(remaining: int) -> bytes:
    """The 8-byte end-of-file filler announcing ``remaining`` unused bytes."""
    return _BLANK.pack(remaining, BLANK_MAGIC_CODE)


def peek(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(totalSize, magicCode) at ``pos``; (0, 0) when fewer than 8 bytes remain."""
    if pos + 8 > len(buf):
        return 0, 0
    return _PEEK.unpack_from(buf, pos)


def decode_record(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    with_body: bool = True,
    check_crc: bool = False,
) -> MessageRecord:
    """Decode the record at ``buf[pos:]`` (fast path).

    Every declared length is checked against the bytes left; a violation raises
    :class:`RecordError` naming the field. The blank filler is not a record: callers check
    :func:`peek` for BLANK_MAGIC_CODE first.
    """
    end = len(buf)
    if pos + _HEAD.size > end:
        raise RecordError(f"header needs {_HEAD.size} bytes, {end - pos} left", pos)
    (
        total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts,
    ) = _HEAD.unpack_from(buf, pos)
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
        raise RecordError(f"MAGICCODE {magic & 0xFFFFFFFF:#010x} is not a message magic", pos)
    if total < _V4.size or pos + total > end:
        raise RecordError(f"TOTALSIZE {total} exceeds the {end - pos} bytes left", pos)
    limit = pos + total
    p = pos + _HEAD.size
    bh = _host_len(sys_flag, BORNHOST_V6_FLAG)
    sh = _host_len(sys_flag, STOREHOSTADDRESS_V6_FLAG)
    if p + bh + 8 + sh + _TAIL.size > limit:
        raise RecordError("fixed fields run past TOTALSIZE", pos)
    born_host = unpack_host(bytes(buf[p : p + bh]))
    p += bh
    (store_ts,) = _MID.unpack_from(buf, p)
    p += 8
    store_host = unpack_host(bytes(buf[p : p + sh]))
    p += sh
    reconsume, prepared, body_len = _TAIL.unpack_from(buf, p)
    p += _TAIL.size
    if body_len < 0 or p + body_len > limit:
        raise RecordError(f"BODYLENGTH {body_len} exceeds the {limit - p} bytes left", pos)
    body = bytes(buf[p : p + body_len]) if with_body else b""
    if check_crc and body_crc(bytes(buf[p : p + body_len])) != crc:
        raise RecordError(f"BODYCRC mismatch: stored {crc}", pos)
    p += body_len
    if magic == MESSAGE_MAGIC_CODE:
        if p + 1 > limit:
            raise RecordError("TOPICLENGTH needs 1 byte, 0 left", pos)
        topic_len = buf[p]
        p += 1
    else:
        if p + 2 > limit:
            raise RecordError(f"TOPICLENGTH needs 2 bytes, {limit - p} left", pos)
        (topic_len,) = _I16.unpack_from(buf, p)
        p += 2
    if topic_len < 0 or p + topic_len > limit:
        raise RecordError(f"TOPICLENGTH {topic_len} exceeds the {limit - p} bytes left", pos)
    topic = bytes(buf[p : p + topic_len]).decode("utf-8", errors="replace")
    p += topic_len
    if p + 2 > limit:
        raise RecordError(f"PROPERTIESLENGTH needs 2 bytes, {limit - p} left", pos)
    (props_len,) = _I16.unpack_from(buf, p)
    p += 2
    if props_len < 0 or p + props_len > limit:
        raise RecordError(f"PROPERTIESLENGTH {props_len} exceeds the {limit - p} bytes left", pos)
    props_str = bytes(buf[p : p + props_len]).decode("utf-8", errors="replace")
    p += props_len
    if p != limit:
        raise RecordError(f"TOTALSIZE {total} but the fields end at {p - pos}", pos)
    return MessageRecord(
        topic=topic,
        body=body,
        queue_id=queue_id,
        flag=flag,
        properties=string_to_properties(props_str),
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=born_host,
        store_host=store_host,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        queue_offset=queue_offset,
        physical_offset=phys,
        store_timestamp=store_ts,
        body_crc=crc,
        total_size=total,
        magic_code=magic,
        properties_str=props_str,
    )


def iter_records(
    buf: bytes | bytearray | memoryview, pos: int = 0, **kwargs: bool
) -> Iterator[tuple[int, MessageRecord]]:
    """Yield (position, record) for consecutive records, stopping at a BLANK filler or at
    zeroes (the unwritten tail). A corrupt record raises :class:`RecordError`."""
    end = len(buf)
    while pos + 8 <= end:
        size, magic = _PEEK.unpack_from(buf, pos)
        if magic == BLANK_MAGIC_CODE or (size == 0 and magic == 0):
            return
        rec = decode_record(buf, pos, **kwargs)
        yield pos, rec
        pos += rec.total_size


# --- columnar scan (reports/, bench/) -------------------------------------------------------------
#: Names :func:`scan_columns` can fill, in record order: the construct spec's field names plus the
#: three length fields.
SCAN_FIELDS = (
    "totalSize", "magicCode", "bodyCRC", "queueId", "flag", "queueOffset", "physicalOffset",
    "sysFlag", "bornTimestamp", "bornHost", "storeTimestamp", "storeHostAddress",
    "reconsumeTimes", "preparedTransactionOffset", "bodyLength", "body", "topicLength", "topic",
    "propertiesLength", "properties",
)
# Index of each fixed field in a _V4 tuple (IPv4 hosts); the hosts are raw 8-byte blocks there.
_V4_INDEX = {
    "totalSize": 0, "magicCode": 1, "bodyCRC": 2, "queueId": 3, "flag": 4, "queueOffset": 5,
    "physicalOffset": 6, "sysFlag": 7, "bornTimestamp": 8, "bornHost": 9, "storeTimestamp": 10,
    "storeHostAddress": 11, "reconsumeTimes": 12, "preparedTransactionOffset": 13,
    "bodyLength": 14,
}
# totalSize, magicCode, sysFlag, bodyLength: the IPv4 offsets 0, 4, 36 and 84.
_LEAN = struct.Struct(">ii28xi44xi")
_MAGICS = (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2)
_V1_MAGIC_BYTES = _I32.pack(MESSAGE_MAGIC_CODE)
_V2_MAGIC_BYTES = _I32.pack(MESSAGE_MAGIC_CODE_V2)
_PHYS_AT = 28  # PHYSICALOFFSET's byte offset in a record


@dataclass(slots=True)
class ColumnScan:
    """Result of :func:`scan_columns`: one list per requested field, aligned with
    ``positions`` (each record's byte position in the buffer).

    ``end`` says why the scan stopped: ``"stop"`` (reached the stop position or the record
    limit; resume at ``next_pos``), ``"blank"`` (end-of-file filler), ``"zero"`` (unwritten
    tail), ``"eof"`` (buffer exhausted) or ``"error"`` (``error`` holds the
    :class:`RecordError` of the record at ``next_pos``).
    """

    columns: dict[str, list]
    positions: list[int]
    next_pos: int
    end: str
    error: RecordError | None = None


def is_record_start(buf, pos: int, base_offset: int) -> bool:
    """True when ``pos`` holds a message magic, a plausible TOTALSIZE and a PHYSICALOFFSET of
    ``base_offset + pos``: the test :func:`find_record_start` applies."""
    if pos < 0 or pos + _V4.size > len(buf):
        return False
    total, magic = _PEEK.unpack_from(buf, pos)
    if magic not in _MAGICS or total < _V4.size:
        return False
    return _I64.unpack_from(buf, pos + _PHYS_AT)[0] == base_offset + pos


def find_record_start(
    buf: bytes | bytearray | memoryview, start: int, stop: int, base_offset: int
) -> int | None:
    """The first record start in ``[start, stop)`` of a commitlog file whose first byte is
    commitlog offset ``base_offset``, found without walking the records before ``start``.

    A position is a record start when it holds a message magic, a TOTALSIZE of at least the
    fixed fields, and a PHYSICALOFFSET equal to ``base_offset + position``: RocketMQ writes
    ``fileFromOffset + position`` there (``CommitLog.DefaultAppendMessageCallback``), so bytes
    inside a body match only if forged for that very position. The search is ``bytes.find``
    for the magic (C speed). Returns None when no record starts in the range.
    """
    blen = len(buf)
    find = buf.find
    best: int | None = None
    for magic_bytes in (_V1_MAGIC_BYTES, _V2_MAGIC_BYTES):
        # A hit at h is a candidate start h - 4 < stop, so the match may end at stop + 7.
        # The second magic is only searched before the first one's hit.
        limit = min(stop if best is None else best, blen) + 7
        hit = find(magic_bytes, start + 4, limit)
        while hit != -1:
            if is_record_start(buf, hit - 4, base_offset):
                best = hit - 4
                break
            hit = find(magic_bytes, hit + 1, limit)
    return best


def scan_columns(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    stop: int | None = None,
    fields: tuple[str, ...] | list[str] = SCAN_FIELDS,
    max_records: int = 1 << 62,
    check_crc: bool = False,
) -> ColumnScan:
    """Decode consecutive records starting at ``pos`` into columns, only the ``fields`` asked
    for (names from :data:`SCAN_FIELDS`), without building a :class:`MessageRecord` per row.

    Records *starting* before ``stop`` are decoded (the last may extend past it). Hosts are
    the raw 8- or 20-byte blocks (:func:`broker.message.unpack_host` turns one into
    ``(ip, port)``), ``topic`` a str, ``properties`` the stored properties string (see
    :func:`broker.message.string_to_properties`), ``body`` bytes.

    The IPv4 case runs on one precompiled struct; an IPv6 record, and any record that fails a
    length check, goes through :func:`decode_record`, so errors and values are exactly
    :func:`decode_record`'s. With ``check_crc`` a record whose BODYCRC does not match its body
    is an error, as on RocketMQ's recovery (``checkCRCOnRecover``).
    """
    unknown = set(fields) - set(SCAN_FIELDS)
    if unknown:
        raise ValueError(f"unknown record fields {sorted(unknown)}")
    blen = len(buf)
    if stop is None:
        stop = blen
    if not check_crc and not _PER_ROW_FIELDS.intersection(fields):
        fast = _scan_vectorized(buf, pos, stop, fields, max_records)
        if fast is not None:
            return fast
    columns: dict[str, list] = {name: [] for name in fields}
    fixed = [(_V4_INDEX[name], columns[name].append) for name in fields if name in _V4_INDEX]
    # Without fixed fields a narrower struct reads only what locating the tail needs.
    head, si, bi = (_V4, 7, 14) if fixed else (_LEAN, 2, 3)
    want_body = "body" in columns
    want_topic_len = "topicLength" in columns
    want_topic = "topic" in columns
    want_props_len = "propertiesLength" in columns
    want_props = "properties" in columns
    want_tail = want_topic or want_topic_len or want_props or want_props_len
    positions: list[int] = []
    add_pos = positions.append
    unpack_head = head.unpack_from
    unpack_peek = _PEEK.unpack_from
    unpack_i16 = _I16.unpack_from
    topic_cache: dict[bytes, str] = {}
    v6_bits = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
    v4_size = _V4.size
    end = "stop"
    error = None
    n = 0
    while pos < stop and n < max_records:
        if pos + 8 > blen:
            end = "eof"
            break
        total, magic = unpack_peek(buf, pos)
        if magic == BLANK_MAGIC_CODE:
            end = "blank"
            break
        if total == 0 and magic == 0:
            end = "zero"
            break
        limit = pos + total
        vals = None
        if (magic == MESSAGE_MAGIC_CODE or magic == MESSAGE_MAGIC_CODE_V2) and (
            total >= v4_size and limit <= blen
        ):
            vals = unpack_head(buf, pos)
            body_len = vals[bi]
            if vals[si] & v6_bits:
                vals = None
            else:
                p = pos + v4_size + body_len
                if body_len < 0 or p + 3 > limit:
                    vals = None
                elif magic == MESSAGE_MAGIC_CODE:
                    tl = buf[p]
                    p += 1
                else:
                    tl = unpack_i16(buf, p)[0]
                    p += 2
                if vals is not None:
                    tp = p
                    p += tl
                    if tl < 0 or p + 2 > limit:
                        vals = None
                    else:
                        pl = unpack_i16(buf, p)[0]
                        p += 2
                        if pl < 0 or p + pl != limit:
                            vals = None
                        elif check_crc:
                            body_at = pos + v4_size
                            stored_crc = _I32.unpack_from(buf, pos + 8)[0]
                            if body_crc(bytes(buf[body_at : body_at + body_len])) != stored_crc:
                                vals = None  # decode_record(check_crc=True) names the error
        if vals is None:
            # Slow path: IPv6 hosts or a record that fails a check; decode_record decides.
            try:
                rec = decode_record(buf, pos, check_crc=check_crc)
            except RecordError as exc:
                end = "error"
                error = exc
                break
            _append_record(columns, rec, buf, pos)
            add_pos(pos)
            pos += rec.total_size
            n += 1
            continue
        for index, append in fixed:
            append(vals[index])
        if want_body:
            columns["body"].append(bytes(buf[pos + v4_size : pos + v4_size + body_len]))
        if want_tail:
            if want_topic_len:
                columns["topicLength"].append(tl)
            if want_topic:
                raw = bytes(buf[tp : tp + tl])
                topic = topic_cache.get(raw)
                if topic is None:
                    topic = topic_cache[raw] = raw.decode("utf-8", errors="replace")
                columns["topic"].append(topic)
            if want_props_len:
                columns["propertiesLength"].append(pl)
            if want_props:
                columns["properties"].append(
                    bytes(buf[p : p + pl]).decode("utf-8", errors="replace")
                )
        add_pos(pos)
        pos = limit
        n += 1
    if end == "stop" and pos >= blen:
        end = "eof"
    return ColumnScan(columns, positions, pos, end, error)


def _append_record(columns: dict[str, list], rec: MessageRecord, buf, pos: int) -> None:
    """Append a decoded record's values to ``columns`` (the slow path of scan_columns)."""
    bh = _host_len(rec.sys_flag, BORNHOST_V6_FLAG)
    sh = _host_len(rec.sys_flag, STOREHOSTADDRESS_V6_FLAG)
    topic_raw = rec.topic.encode("utf-8")
    props = rec.properties_str or ""
    values = {
        "totalSize": rec.total_size, "magicCode": rec.magic_code, "bodyCRC": rec.body_crc,
        "queueId": rec.queue_id, "flag": rec.flag, "queueOffset": rec.queue_offset,
        "physicalOffset": rec.physical_offset, "sysFlag": rec.sys_flag,
        "bornTimestamp": rec.born_timestamp,
        "bornHost": bytes(buf[pos + _HEAD.size : pos + _HEAD.size + bh]),
        "storeTimestamp": rec.store_timestamp,
        "storeHostAddress": bytes(buf[pos + _HEAD.size + bh + 8 : pos + _HEAD.size + bh + 8 + sh]),
        "reconsumeTimes": rec.reconsume_times,
        "preparedTransactionOffset": rec.prepared_transaction_offset,
        "bodyLength": len(rec.body), "body": rec.body, "topicLength": len(topic_raw),
        "topic": rec.topic, "propertiesLength": len(props.encode("utf-8")), "properties": props,
    }
    for name, column in columns.items():
        column.append(values[name])


# --- vectorized variant of scan_columns ---------------------------------------------------------
# Fields that need a Python object per row anyway (bytes / str of variable content).
_PER_ROW_FIELDS = frozenset(("body", "properties"))
# (byte offset, width) of the fixed fields of an IPv4 record (the _V4 layout).
_V4_AT = {
    "totalSize": (0, 4), "magicCode": (4, 4), "bodyCRC": (8, 4), "queueId": (12, 4),
    "flag": (16, 4), "queueOffset": (20, 8), "physicalOffset": (28, 8), "sysFlag": (36, 4),
    "bornTimestamp": (40, 8), "bornHost": (48, 8), "storeTimestamp": (56, 8),
    "storeHostAddress": (64, 8), "reconsumeTimes": (72, 4), "preparedTransactionOffset": (76, 8),
    "bodyLength": (84, 4),
}
_VECTOR_MIN = 64  # below this many records the per-record loop is as fast


def _scan_vectorized(buf, pos: int, stop: int, fields, max_records: int) -> ColumnScan | None:
    """scan_columns for IPv4 / V1 records without body or properties strings: one Python step
    per record to find the boundaries, then numpy gathers every field of the batch at once.

    Returns None when the first record is not of that common shape (the per-record loop then
    handles the call, IPv6 hosts and errors included); stops early, with ``end="stop"``, before
    the first record that is not, so the next call starts at it.
    """
    import numpy as np

    blen = len(buf)
    unpack_peek = _PEEK.unpack_from
    positions: list[int] = []
    add = positions.append
    v4_size = _V4.size
    end = "stop"
    exhausted = False
    for _ in repeat(None, max_records):
        if pos >= stop:
            break
        if pos + 8 > blen:
            end = "eof"
            break
        total, magic = unpack_peek(buf, pos)
        if magic != MESSAGE_MAGIC_CODE or total < v4_size or pos + total > blen:
            if magic == BLANK_MAGIC_CODE:
                end = "blank"
            elif total == 0 and magic == 0:
                end = "zero"
            break  # anything else: the per-record loop decides, starting here
        add(pos)
        pos += total
    else:
        exhausted = True
    n = len(positions)
    if end == "stop" and pos >= blen:
        end = "eof"
    irregular = end == "stop" and pos < stop and not exhausted
    if n < _VECTOR_MIN and (irregular or n > 0):
        return None  # few records, or an odd one first: the per-record loop
    if n == 0:
        return ColumnScan({name: [] for name in fields}, [], pos, end)
    # A view of the buffer (no copy); every gather below copies, so none outlives the call
    # (an mmap cannot be closed while a view of it exists).
    arr = np.frombuffer(buf, dtype=np.uint8)
    P = np.asarray(positions, dtype=np.int64)
    ranges = {w: np.arange(w, dtype=np.int64) for w in (2, 4, 8)}

    def gather(offsets, width: int, kind: str = "i"):
        g = arr[offsets[:, None] + ranges[width]]
        return g.view(f">{kind}{width}").ravel()

    total = gather(P, 4).astype(np.int64)
    sys_flag = gather(P + 36, 4)
    body_len = gather(P + 84, 4).astype(np.int64)
    limit = P + total
    tpos = P + v4_size + body_len
    ok = ((sys_flag & (BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)) == 0) & (body_len >= 0)
    ok &= tpos + 3 <= limit
    tpos_safe = np.where(ok, tpos, P)
    topic_len = arr[tpos_safe].astype(np.int64)
    ppos = tpos_safe + 1 + topic_len
    ok &= ppos + 2 <= limit
    props_len = gather(np.where(ok, ppos, P), 2).astype(np.int64)
    ok &= (props_len >= 0) & (ppos + 2 + props_len == limit)
    bad = np.flatnonzero(~ok)
    if bad.size:
        k = int(bad[0])
        if k == 0:
            return None
        cut = slice(0, k)
        P, tpos_safe, topic_len, props_len, body_len = (
            P[cut], tpos_safe[cut], topic_len[cut], props_len[cut], body_len[cut]
        )
        next_pos, end = positions[k], "stop"
        positions = positions[:k]
    else:
        next_pos = pos
    columns: dict[str, list] = {}
    for name in fields:
        if name in ("bornHost", "storeHostAddress"):
            off = _V4_AT[name][0]
            columns[name] = arr[(P + off)[:, None] + ranges[8]].view("V8").ravel().tolist()
        elif name == "bodyLength":
            columns[name] = body_len.tolist()
        elif name in _V4_AT:
            off, width = _V4_AT[name]
            columns[name] = gather(P + off, width).tolist()
        elif name == "topicLength":
            columns[name] = topic_len.tolist()
        elif name == "propertiesLength":
            columns[name] = props_len.tolist()
        elif name == "topic":
            columns[name] = _topics(np, arr, tpos_safe + 1, topic_len)
    return ColumnScan(columns, positions, next_pos, end)


def _topics(np, arr, starts, lengths) -> list[str]:
    """Decode the topic at each (start, length), once per distinct byte string."""
    width = int(lengths.max()) if len(lengths) else 0
    idx = np.minimum(starts[:, None] + np.arange(max(width, 1)), len(arr) - 1)
    raw = arr[idx]
    raw[np.arange(raw.shape[1]) >= lengths[:, None]] = 0
    keyed = np.ascontiguousarray(np.concatenate([lengths[:, None].astype(np.uint8), raw], axis=1))
    uniq, inverse = np.unique(keyed.view(f"V{keyed.shape[1]}").ravel(), return_inverse=True)
    names = np.empty(len(uniq), dtype=object)
    for i, key in enumerate(uniq.tolist()):
        names[i] = key[1 : 1 + key[0]].decode("utf-8", errors="replace")
    return names[inverse.ravel()].tolist()
