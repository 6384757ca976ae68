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
from typing import Any

from rocketmq_emu.broker.lazy import lazy_specs
from rocketmq_emu.broker.message import (
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
def _specs() -> dict[str, Any]:
    """The readable ``construct`` declarations, built on first access (``lazy_specs``)."""
    import construct as cs

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
    return {"RECORD": RECORD, "BLANK": BLANK}


__getattr__ = lazy_specs(__name__, _specs)


# --- the fast path ------------------------------------------------------------------------------
# Public: record_scan.py and reports/ read records with the same structs.
#: The fixed prefix totalSize .. bornTimestamp (48 bytes); the hosts after it vary in width.
HEAD = struct.Struct(">iiiiiqqiq")
#: Big-endian int, short and long, as Java writes them.
I32 = struct.Struct(">i")
I16 = struct.Struct(">h")
I64 = struct.Struct(">q")
_MID = struct.Struct(">q")  # storeTimestamp
_TAIL = struct.Struct(">iqi")  # reconsumeTimes, preparedTransactionOffset, bodyLength
#: The common IPv4 shape as one struct (88 bytes): head + bornHost + storeTimestamp + storeHost
#: + reconsumeTimes, preparedTransactionOffset, bodyLength.
V4 = struct.Struct(">iiiiiqqiq8sq8siqi")
_BLANK = struct.Struct(">ii")
#: totalSize and magicCode, the first 8 bytes of a record or of the end-of-file blank.
PEEK = struct.Struct(">ii")


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

    def derive(
        self, topic: str, queue_id: int, properties: dict[str, str], reconsume_times: int | None = None
    ) -> MessageRecord:
        """A new record to put elsewhere (``ScheduleMessageService.messageTimeup``,
        ``SendMessageProcessor.consumerSendMsgBack``): same body, flag, sysFlag, born and store
        hosts and born time; new topic, queue and properties; store fields left to the store."""
        return MessageRecord(
            topic=topic,
            body=self.body,
            queue_id=queue_id,
            flag=self.flag,
            properties=properties,
            sys_flag=self.sys_flag,
            born_timestamp=self.born_timestamp,
            born_host=self.born_host,
            store_host=self.store_host,
            reconsume_times=self.reconsume_times if reconsume_times is None else reconsume_times,
        )


def host_len(sys_flag: int, bit: int) -> int:
    """Bytes of a host field: 20 (IPv6 address + port) when ``bit`` of ``sys_flag`` is set, else 8."""
    return 20 if sys_flag & bit else 8


def record_size(body_len: int, topic_len: int, props_len: int, sys_flag: int = 0) -> int:
    """TOTALSIZE of a record (``CommitLog.calMsgLength``)."""
    topic_field = 1 if topic_len <= MAX_V1_TOPIC_LENGTH else 2
    return (
        4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8
        + host_len(sys_flag, BORNHOST_V6_FLAG)
        + 8
        + host_len(sys_flag, STOREHOSTADDRESS_V6_FLAG)
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
        V4.pack_into(
            buf, pos, size, magic, record.body_crc, record.queue_id, record.flag,
            record.queue_offset, record.physical_offset, parts.sys_flag, record.born_timestamp,
            parts.born_host, record.store_timestamp, parts.store_host, record.reconsume_times,
            record.prepared_transaction_offset, len(body),
        )
        p = pos + V4.size
    else:
        HEAD.pack_into(
            buf, pos, size, magic, record.body_crc, record.queue_id, record.flag,
            record.queue_offset, record.physical_offset, parts.sys_flag, record.born_timestamp,
        )
        p = pos + HEAD.size
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
        I16.pack_into(buf, p, len(topic))
        p += 2
    buf[p : p + len(topic)] = topic
    p += len(topic)
    I16.pack_into(buf, p, len(props))
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
    return PEEK.unpack_from(buf, pos)


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
    if pos + HEAD.size > end:
        raise RecordError(f"header needs {HEAD.size} bytes, {end - pos} left", pos)
    (
        total, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts,
    ) = HEAD.unpack_from(buf, pos)
    if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
        raise RecordError(f"MAGICCODE {magic & 0xFFFFFFFF:#010x} is not a message magic", pos)
    if total < V4.size or pos + total > end:
        raise RecordError(f"TOTALSIZE {total} exceeds the {end - pos} bytes left", pos)
    limit = pos + total
    p = pos + HEAD.size
    bh = host_len(sys_flag, BORNHOST_V6_FLAG)
    sh = host_len(sys_flag, STOREHOSTADDRESS_V6_FLAG)
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
        (topic_len,) = I16.unpack_from(buf, p)
        p += 2
    if topic_len < 0 or p + topic_len > limit:
        raise RecordError(f"TOPICLENGTH {topic_len} exceeds the {limit - p} bytes left", pos)
    topic = bytes(buf[p : p + topic_len]).decode("utf-8", errors="replace")
    p += topic_len
    if p + 2 > limit:
        raise RecordError(f"PROPERTIESLENGTH needs 2 bytes, {limit - p} left", pos)
    (props_len,) = I16.unpack_from(buf, p)
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
        size, magic = PEEK.unpack_from(buf, pos)
        if magic == BLANK_MAGIC_CODE or (size == 0 and magic == 0):
            return
        rec = decode_record(buf, pos, **kwargs)
        yield pos, rec
        pos += rec.total_size
