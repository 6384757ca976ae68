"""The commitlog record: RocketMQ's 20-field message layout, byte for byte.

Declared once with ``construct`` (:data:`RECORD`, :data:`BLANK`); every :mod:`struct`, offset and
size the append and read paths use (:data:`V4`, :data:`HEAD`, :data:`PEEK`,
:data:`QUEUE_OFFSET_AT`...) is derived from that declaration at import
(:class:`rocketmq_emu.broker.layout.Layout`), and the tests hold both to the same golden bytes.

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

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import construct as cs

from rocketmq_emu.broker.layout import Layout
from rocketmq_emu.broker.message import (
    BORNHOST_V6_FLAG,
    HOST_V4_SIZE,
    HOST_V6_SIZE,
    STOREHOSTADDRESS_V6_FLAG,
    pack_host,
    properties_to_string,
    string_to_properties,
    unpack_host,
)

MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7
MESSAGE_MAGIC_CODE_V2 = -626843477  # 0xDAA320AB
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194
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


# --- the declaration ----------------------------------------------------------------------------
def _host(flag_bit: int) -> cs.Construct:
    """A host block: 20 bytes when ``flag_bit`` of sysFlag is set, else 8."""
    return cs.IfThenElse(
        lambda ctx: ctx.sysFlag & flag_bit, cs.Bytes(HOST_V6_SIZE), cs.Bytes(HOST_V4_SIZE)
    )


#: One record, field by field (``CommitLog.MessageExtEncoder``). Every struct, offset and size
#: below is derived from it.
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
    "bodyLength" / cs.Rebuild(cs.Int32sb, cs.len_(cs.this.body)),
    "body" / cs.Bytes(cs.this.bodyLength),
    # V1 magic: one byte; V2 (RocketMQ 5, topics over 127 bytes): two.
    "topicLength" / cs.Rebuild(
        cs.IfThenElse(cs.this.magicCode == MESSAGE_MAGIC_CODE_V2, cs.Int16sb, cs.Int8sb),
        cs.len_(cs.this.topic),
    ),
    "topic" / cs.Bytes(cs.this.topicLength),
    "propertiesLength" / cs.Rebuild(cs.Int16sb, cs.len_(cs.this.properties)),
    "properties" / cs.Bytes(cs.this.propertiesLength),
)

#: The end-of-file filler: the first 8 bytes of the unused remainder of a mapped file.
BLANK = cs.Struct(
    "totalSize" / cs.Int32sb,
    "magicCode" / cs.Const(BLANK_MAGIC_CODE, cs.Int32sb),
)

# --- derived at import --------------------------------------------------------------------------
_V6_BITS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
#: The record's shapes: (sysFlag & (0x10 | 0x20), magicCode) -> its resolved layout.
RECORD_LAYOUTS: dict[tuple[int, int], Layout] = {
    (bits, magic): Layout(RECORD, sysFlag=bits, magicCode=magic)
    for bits in (0, BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG, _V6_BITS)
    for magic in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2)
}
#: The common shape: IPv4 hosts, V1 magic. Its offsets are the ones named below.
V4_LAYOUT = RECORD_LAYOUTS[0, MESSAGE_MAGIC_CODE]
BLANK_LAYOUT = Layout(BLANK)


def record_layout(sys_flag: int = 0, magic_code: int = MESSAGE_MAGIC_CODE) -> Layout:
    """The layout of a record with this sysFlag (its IPv6 host bits) and magic."""
    return RECORD_LAYOUTS[sys_flag & _V6_BITS, magic_code]


# Public: recovery, record_scan, batch, the filter and reports/ read records with these.
#: The fixed prefix totalSize .. bornTimestamp (48 bytes); the hosts after it vary in width.
HEAD = V4_LAYOUT.struct("totalSize", "bornTimestamp")
#: Big-endian int, short and long, as Java writes them (totalSize, propertiesLength, queueOffset).
I32 = V4_LAYOUT.struct("totalSize")
I16 = V4_LAYOUT.struct("propertiesLength")
I64 = V4_LAYOUT.struct("queueOffset")
_MID = V4_LAYOUT.struct("storeTimestamp")
_TAIL = V4_LAYOUT.struct("reconsumeTimes", "bodyLength")
#: The common IPv4 shape as one struct (88 bytes): every fixed field totalSize .. bodyLength.
V4 = V4_LAYOUT.struct("totalSize", "bodyLength")
#: totalSize and magicCode, the first 8 bytes of a record or of the end-of-file blank.
PEEK = V4_LAYOUT.struct("totalSize", "magicCode")
#: The end-of-file filler (totalSize = bytes left, BLANK_MAGIC_CODE).
BLANK_STRUCT = BLANK_LAYOUT.struct()
_BLANK = BLANK_STRUCT
#: ``CommitLog.END_FILE_MIN_BLANK_LENGTH`` (4 + 4): room always left for the filler.
END_FILE_MIN_BLANK_LENGTH = BLANK_LAYOUT.min_size

#: Byte offsets of the fixed fields. Up to bornHost they hold in every shape; from
#: storeTimestamp on they are the IPv4 shape's (see :func:`record_layout` for IPv6).
MAGIC_CODE_AT = V4_LAYOUT.offset("magicCode")
BODY_CRC_AT = V4_LAYOUT.offset("bodyCRC")
QUEUE_ID_AT = V4_LAYOUT.offset("queueId")
QUEUE_OFFSET_AT = V4_LAYOUT.offset("queueOffset")
PHYSICAL_OFFSET_AT = V4_LAYOUT.offset("physicalOffset")
SYS_FLAG_AT = V4_LAYOUT.offset("sysFlag")
BORN_TIMESTAMP_AT = V4_LAYOUT.offset("bornTimestamp")
BORN_HOST_AT = V4_LAYOUT.offset("bornHost")
STORE_TIMESTAMP_AT = V4_LAYOUT.offset("storeTimestamp")
STORE_HOST_AT = V4_LAYOUT.offset("storeHostAddress")
BODY_LENGTH_AT = V4_LAYOUT.offset("bodyLength")
#: Where the body starts in the IPv4 shape (= ``V4.size``).
BODY_AT = V4_LAYOUT.fixed_size
#: The smallest record (IPv4, V1, empty body, topic and properties): 91 bytes.
MIN_RECORD_SIZE = V4_LAYOUT.min_size
#: Bytes after the body in the smallest record: topicLength (V1) and propertiesLength.
MIN_TAIL_SIZE = MIN_RECORD_SIZE - BODY_AT
#: storeTimestamp's and bodyLength's offsets by host shape (sysFlag & 0x30).
STORE_TIMESTAMP_AT_BY_HOSTS = {
    bits: RECORD_LAYOUTS[bits, MESSAGE_MAGIC_CODE].offset("storeTimestamp") for bits, _ in RECORD_LAYOUTS
}
BODY_LENGTH_AT_BY_HOSTS = {
    bits: RECORD_LAYOUTS[bits, MESSAGE_MAGIC_CODE].offset("bodyLength") for bits, _ in RECORD_LAYOUTS
}
_MIN_SIZE = {key: layout.min_size for key, layout in RECORD_LAYOUTS.items()}
_V1_TOPIC_LENGTH_SIZE = V4_LAYOUT.size("topicLength")
_V2_TOPIC_LENGTH_SIZE = RECORD_LAYOUTS[0, MESSAGE_MAGIC_CODE_V2].size("topicLength")


def store_timestamp_at(sys_flag: int) -> int:
    """Byte offset of storeTimestamp in a record with this sysFlag."""
    return STORE_TIMESTAMP_AT_BY_HOSTS[sys_flag & _V6_BITS]


def body_length_at(sys_flag: int) -> int:
    """Byte offset of bodyLength in a record with this sysFlag (the body follows it)."""
    return BODY_LENGTH_AT_BY_HOSTS[sys_flag & _V6_BITS]


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
    return HOST_V6_SIZE if sys_flag & bit else HOST_V4_SIZE


def record_size(body_len: int, topic_len: int, props_len: int, sys_flag: int = 0) -> int:
    """TOTALSIZE of a record (``CommitLog.calMsgLength``)."""
    magic = MESSAGE_MAGIC_CODE if topic_len <= MAX_V1_TOPIC_LENGTH else MESSAGE_MAGIC_CODE_V2
    return _MIN_SIZE[sys_flag & _V6_BITS, magic] + body_len + topic_len + props_len


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
    if len(parts.born_host) == HOST_V4_SIZE and len(parts.store_host) == HOST_V4_SIZE:
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
        p += _MID.size
        buf[p : p + len(parts.store_host)] = parts.store_host
        p += len(parts.store_host)
        _TAIL.pack_into(buf, p, record.reconsume_times, record.prepared_transaction_offset, len(body))
        p += _TAIL.size
    buf[p : p + len(body)] = body
    p += len(body)
    if magic == MESSAGE_MAGIC_CODE:
        buf[p] = len(topic)  # the one-byte topicLength
        p += _V1_TOPIC_LENGTH_SIZE
    else:
        I16.pack_into(buf, p, len(topic))
        p += _V2_TOPIC_LENGTH_SIZE
    buf[p : p + len(topic)] = topic
    p += len(topic)
    I16.pack_into(buf, p, len(props))
    p += I16.size
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
    if pos + PEEK.size > len(buf):
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
    if p + bh + _MID.size + sh + _TAIL.size > limit:
        raise RecordError("fixed fields run past TOTALSIZE", pos)
    born_host = unpack_host(bytes(buf[p : p + bh]))
    p += bh
    (store_ts,) = _MID.unpack_from(buf, p)
    p += _MID.size
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
        if p + _V1_TOPIC_LENGTH_SIZE > limit:
            raise RecordError("TOPICLENGTH needs 1 byte, 0 left", pos)
        topic_len = buf[p]
        p += _V1_TOPIC_LENGTH_SIZE
    else:
        if p + _V2_TOPIC_LENGTH_SIZE > limit:
            raise RecordError(f"TOPICLENGTH needs 2 bytes, {limit - p} left", pos)
        (topic_len,) = I16.unpack_from(buf, p)
        p += _V2_TOPIC_LENGTH_SIZE
    if topic_len < 0 or p + topic_len > limit:
        raise RecordError(f"TOPICLENGTH {topic_len} exceeds the {limit - p} bytes left", pos)
    topic = bytes(buf[p : p + topic_len]).decode("utf-8", errors="replace")
    p += topic_len
    if p + I16.size > limit:
        raise RecordError(f"PROPERTIESLENGTH needs 2 bytes, {limit - p} left", pos)
    (props_len,) = I16.unpack_from(buf, p)
    p += I16.size
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
    while pos + PEEK.size <= end:
        size, magic = PEEK.unpack_from(buf, pos)
        if magic == BLANK_MAGIC_CODE or (size == 0 and magic == 0):
            return
        rec = decode_record(buf, pos, **kwargs)
        yield pos, rec
        pos += rec.total_size
