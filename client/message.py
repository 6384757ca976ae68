"""The client's message model: what a producer sends and what a consumer receives.

Pure values and codecs, no reactor:

* :class:`Message` (Java ``Message``): topic, body, tags, keys, user properties, delay level and
  arbitrary-time delivery (``deliver_at`` / ``delay`` -> ``TIMER_DELIVER_MS`` / ``TIMER_DELAY_MS``).
* :class:`MessageExt` (Java ``MessageExt``/``MessageClientExt``): a received message, decoded from
  pulled commitlog records with :func:`rocketmq_emu.broker.commitlog.record.iter_records` (no second codec).
* :class:`MessageQueue`, :class:`SendResult`, :class:`SendStatus`.
* :func:`encode_batch` (``MessageDecoder.encodeMessages``, protocol.md §4.9) and
  :func:`decode_messages` (``MessageDecoder.decodes``, §4.7).
"""

from __future__ import annotations

import enum
import zlib
from dataclasses import dataclass, field

from rocketmq_emu.broker.commitlog.record import MessageRecord, iter_records
from rocketmq_emu.broker.message import (
    COMPRESSED_FLAG,
    KEY_SEPARATOR,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_MAX_OFFSET,
    PROPERTY_MIN_OFFSET,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
    create_offset_msg_id,
    properties_to_string,
)
from rocketmq_emu.broker.processors.batch_codec import (
    BATCH_HEAD,
    BATCH_MIN_SIZE,
    BATCH_PROPERTIES_LENGTH,
)

#: Properties the client sets itself; user properties may not use these names
#: (``MessageConst.STRING_HASH_SET`` is the Java list of reserved names).
RESERVED_PROPERTIES = frozenset(
    {
        PROPERTY_KEYS, PROPERTY_TAGS, PROPERTY_WAIT_STORE_MSG_OK, PROPERTY_DELAY_TIME_LEVEL,
        PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, PROPERTY_TIMER_DELAY_MS, PROPERTY_TIMER_DELIVER_MS,
        PROPERTY_RETRY_TOPIC, "REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP", PROPERTY_MIN_OFFSET,
        PROPERTY_MAX_OFFSET, "RECONSUME_TIME", "MAX_RECONSUME_TIMES", "TIMER_DELAY_SEC",
        "TIMER_OUT_MS", "CLUSTER",
    }
)

DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # DefaultMQProducer.maxMessageSize


class MessageError(ValueError):
    """A message the client refuses to send (Java ``Validators.checkMessage``)."""


@dataclass(slots=True)
class Message:
    """A message to send.

    ``keys`` are indexed by the broker for query by key. ``delay_level`` uses the broker's level
    table (1 = 1 s ... 18 = 2 h by default). ``deliver_at`` (epoch seconds, float) or ``delay``
    (seconds from now, float) ask for arbitrary-time delivery (RocketMQ 5's
    ``TIMER_DELIVER_MS`` / ``TIMER_DELAY_MS``); at most one of the three may be given.
    """

    topic: str
    body: bytes = b""
    tags: str | None = None
    keys: str | list[str] | None = None
    properties: dict[str, str] = field(default_factory=dict)
    flag: int = 0
    delay_level: int = 0
    deliver_at: float | None = None
    delay: float | None = None
    wait_store_msg_ok: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.body, str):
            self.body = self.body.encode("utf-8")

    @property
    def key_list(self) -> list[str]:
        """``keys`` as a list."""
        if not self.keys:
            return []
        if isinstance(self.keys, str):
            return [k for k in self.keys.split(KEY_SEPARATOR) if k]
        return list(self.keys)

    def validate(self, max_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        """Raise :class:`MessageError` for what ``Validators.checkMessage`` rejects."""
        if not self.topic or len(self.topic.encode()) > 127:
            raise MessageError(f"topic {self.topic!r} must be 1..127 bytes")
        if not self.body:
            raise MessageError("the message body is empty")
        if len(self.body) > max_size:
            raise MessageError(f"the message body size {len(self.body)} exceeds {max_size}")
        timers = [x for x in (self.deliver_at, self.delay) if x is not None]
        if len(timers) > 1 or (timers and self.delay_level):
            raise MessageError("give only one of delay_level, deliver_at and delay")
        if self.delay_level < 0:
            raise MessageError("delay_level must be >= 0")
        bad = RESERVED_PROPERTIES.intersection(self.properties)
        if bad:
            raise MessageError(f"reserved property names: {sorted(bad)}")

    def wire_properties(self, uniq_key: str | None = None) -> dict[str, str]:
        """The properties map as sent: user properties plus the client-set ones.

        ``delay`` travels as the relative ``TIMER_DELAY_MS`` so the broker's clock (which a test
        may have moved) decides when it is due, not the client's.
        """
        props = dict(self.properties)
        if self.tags:
            props[PROPERTY_TAGS] = self.tags
        keys = self.key_list
        if keys:
            props[PROPERTY_KEYS] = KEY_SEPARATOR.join(keys)
        props[PROPERTY_WAIT_STORE_MSG_OK] = "true" if self.wait_store_msg_ok else "false"
        if self.delay_level > 0:
            props[PROPERTY_DELAY_TIME_LEVEL] = str(self.delay_level)
        if self.deliver_at is not None:
            props[PROPERTY_TIMER_DELIVER_MS] = str(int(round(self.deliver_at * 1000)))
        if self.delay is not None:
            props[PROPERTY_TIMER_DELAY_MS] = str(int(round(self.delay * 1000)))
        if uniq_key:
            props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = uniq_key
        return props


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """A queue of a topic on a broker; orders like Java ``MessageQueue.compareTo``."""

    topic: str
    broker_name: str
    queue_id: int

    def to_json(self) -> dict:
        """The fastjson shape ``{"brokerName","queueId","topic"}``."""
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json(cls, obj: dict) -> MessageQueue:
        """Inverse of :meth:`to_json`."""
        return cls(obj["topic"], obj["brokerName"], int(obj["queueId"]))

    def __str__(self) -> str:
        return f"{self.topic}@{self.broker_name}:{self.queue_id}"


@dataclass(slots=True)
class MessageExt:
    """A received message (decoded pulled record).

    ``msg_id`` is the UNIQ_KEY when present, else the offset id, as
    ``MessageClientExt.getMsgId`` returns; ``offset_msg_id`` is always the offset id.
    """

    topic: str
    body: bytes
    queue_id: int
    queue_offset: int
    commitlog_offset: int
    properties: dict[str, str]
    flag: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    born_host: tuple[str, int]
    store_host: tuple[str, int]
    reconsume_times: int
    body_crc: int
    offset_msg_id: str
    broker_name: str = ""
    #: The record's TOTALSIZE and PreparedTransactionOffset (``MessageExt.toString`` shows them).
    store_size: int = 0
    prepared_transaction_offset: int = 0

    @property
    def msg_id(self) -> str:
        """UNIQ_KEY if set, else the offset msgId."""
        return self.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or self.offset_msg_id

    @property
    def tags(self) -> str | None:
        """The TAGS property."""
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> list[str]:
        """The KEYS property split on spaces."""
        raw = self.properties.get(PROPERTY_KEYS)
        return [k for k in raw.split(KEY_SEPARATOR) if k] if raw else []

    @property
    def delay_level(self) -> int:
        """The DELAY property (kept on re-delivered delayed messages, as RocketMQ does)."""
        return int(self.properties.get(PROPERTY_DELAY_TIME_LEVEL, "0") or 0)

    @property
    def message_queue(self) -> MessageQueue:
        """The queue this message was pulled from."""
        return MessageQueue(self.topic, self.broker_name, self.queue_id)

    @classmethod
    def from_record(cls, rec: MessageRecord, broker_name: str = "") -> MessageExt:
        """Build from a decoded commitlog record, inflating a compressed body."""
        body = rec.body
        if rec.sys_flag & COMPRESSED_FLAG:
            # ZLIB is the Java default and the only type older clients set (CompressionType).
            body = zlib.decompress(body)
        return cls(
            topic=rec.topic,
            body=body,
            queue_id=rec.queue_id,
            queue_offset=rec.queue_offset,
            commitlog_offset=rec.physical_offset,
            properties=dict(rec.properties),
            flag=rec.flag,
            sys_flag=rec.sys_flag,
            born_timestamp=rec.born_timestamp,
            store_timestamp=rec.store_timestamp,
            born_host=rec.born_host,
            store_host=rec.store_host,
            reconsume_times=rec.reconsume_times,
            body_crc=rec.body_crc,
            offset_msg_id=create_offset_msg_id(rec.store_host[0], rec.store_host[1], rec.physical_offset),
            broker_name=broker_name,
            store_size=rec.total_size,
            prepared_transaction_offset=rec.prepared_transaction_offset,
        )


def decode_messages(body: bytes, broker_name: str = "") -> list[MessageExt]:
    """Decode a pull/query response body: concatenated commitlog records (§4.7)."""
    return [MessageExt.from_record(rec, broker_name) for _, rec in iter_records(body)]


def restore_retry_topic(msg: MessageExt, group: str) -> None:
    """A message pulled from ``%RETRY%group`` shows its original topic
    (``DefaultMQPushConsumerImpl.resetRetryAndNamespace``)."""
    retry = msg.properties.get(PROPERTY_RETRY_TOPIC)
    if retry and msg.topic == RETRY_GROUP_TOPIC_PREFIX + group:
        msg.topic = retry


# --- batch body (MessageDecoder.encodeMessage / encodeMessages) ------------------------------
# The block layout is declared once, in the broker's codec (BATCH_BLOCK).
_BATCH_HEAD = BATCH_HEAD  # totalSize, magic 0, bodyCRC 0, flag, bodyLength
_I16 = BATCH_PROPERTIES_LENGTH


def encode_batch_message(body: bytes, flag: int, properties: dict[str, str]) -> bytes:
    """One block of a SEND_BATCH_MESSAGE body."""
    props = properties_to_string(properties).encode("utf-8")
    total = BATCH_MIN_SIZE + len(body) + len(props)
    return _BATCH_HEAD.pack(total, 0, 0, flag, len(body)) + body + _I16.pack(len(props)) + props


def encode_batch(items: list[tuple[bytes, int, dict[str, str]]]) -> bytes:
    """Concatenate blocks of (body, flag, properties)."""
    return b"".join(encode_batch_message(b, f, p) for b, f, p in items)


def decode_batch(data: bytes) -> list[tuple[bytes, int, str]]:
    """Inverse of :func:`encode_batch` (for tests and tools): (body, flag, properties string)."""
    out = []
    pos = 0
    while pos < len(data):
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(data, pos)
        p = pos + _BATCH_HEAD.size
        body = data[p : p + body_len]
        p += body_len
        (plen,) = _I16.unpack_from(data, p)
        p += _I16.size
        props = data[p : p + plen].decode("utf-8")
        out.append((body, flag, props))
        if total <= 0:
            raise ValueError(f"batch block at {pos} has TOTALSIZE {total}")
        pos += total
    return out


# --- send results ------------------------------------------------------------------------------
class SendStatus(enum.Enum):
    """Java ``SendStatus``."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


#: Response codes that still produce a SendResult (``MQClientAPIImpl.processSendResponse``).
SEND_STATUS_BY_CODE = {
    0: SendStatus.SEND_OK,
    10: SendStatus.FLUSH_DISK_TIMEOUT,
    12: SendStatus.FLUSH_SLAVE_TIMEOUT,
    11: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(slots=True)
class SendResult:
    """Java ``SendResult``: ``msg_id`` is the UNIQ_KEY (comma-joined for a batch),
    ``offset_msg_id`` the broker's offset id(s)."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    transaction_id: str | None = None


class MQBrokerError(Exception):
    """The broker answered with an error code (Java ``MQBrokerException``)."""

    def __init__(self, code: int, remark: str | None, addr: str = "") -> None:
        super().__init__(f"CODE: {code} DESC: {remark} BROKER: {addr}")
        self.code = code
        self.remark = remark
        self.addr = addr


class MQClientError(Exception):
    """A client-side failure: no route, every attempt failed (Java ``MQClientException``)."""


def send_result_from_response(
    code: int, ext: dict[str, str], mq: MessageQueue, uniq_id: str, addr: str = "", remark: str | None = None
) -> SendResult:
    """Map a send response to a :class:`SendResult` or raise :class:`MQBrokerError`
    (``MQClientAPIImpl.processSendResponse``)."""
    status = SEND_STATUS_BY_CODE.get(code)
    if status is None:
        raise MQBrokerError(code, remark, addr)
    queue_id = int(ext.get("queueId", mq.queue_id))
    return SendResult(
        status=status,
        msg_id=uniq_id,
        offset_msg_id=ext.get("msgId", ""),
        message_queue=MessageQueue(mq.topic, mq.broker_name, queue_id),
        queue_offset=int(ext.get("queueOffset", -1)),
        region_id=ext.get("MSG_REGION") or "DefaultRegion",
        trace_on=ext.get("TRACE_ON", "true") != "false",
        transaction_id=ext.get("transactionId"),
    )
