"""Message vocabulary shared by every layer: property names, the properties string codec,
tags hash codes, offset message ids and UNIQ_KEY ids.

Pure functions only: no files, no reactor.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import os
import sys
import time
from array import array
from operator import methodcaller, mul

import construct as cs

from rocketmq_emu.broker.layout import Layout

# --- property names (org.apache.rocketmq.common.message.MessageConst) -----------------------
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK = "WAIT"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID = "REAL_QID"
PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP = "PGROUP"
PROPERTY_MIN_OFFSET = "MIN_OFFSET"
PROPERTY_MAX_OFFSET = "MAX_OFFSET"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_RECONSUME_TIME = "RECONSUME_TIME"
PROPERTY_MSG_REGION = "MSG_REGION"
PROPERTY_TRACE_SWITCH = "TRACE_ON"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
PROPERTY_CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"
PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
PROPERTY_TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROPERTY_CORRELATION_ID = "CORRELATION_ID"
PROPERTY_MESSAGE_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
PROPERTY_MESSAGE_TTL = "TTL"
PROPERTY_PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
PROPERTY_CLUSTER = "CLUSTER"
PROPERTY_MESSAGE_TYPE = "MSG_TYPE"
PROPERTY_TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
PROPERTY_TIMER_DELAY_MS = "TIMER_DELAY_MS"
PROPERTY_TIMER_OUT_MS = "TIMER_OUT_MS"
#: A timer delete marker (RECALL_MESSAGE): ``<real topic>+<UNIQ_KEY>`` of the message it deletes.
PROPERTY_TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
PROPERTY_TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
PROPERTY_TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"

KEY_SEPARATOR = " "

# --- system topics (org.apache.rocketmq.common.topic.TopicValidator, MixAll) ---------------
AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
RMQ_SYS_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
TIMER_TOPIC = "rmq_sys_wheel_timer"

# --- sysFlag bits (org.apache.rocketmq.common.sysflag.MessageSysFlag) -----------------------
COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
TRANSACTION_TYPE_MASK = 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20
NEED_UNWRAP_FLAG = 0x40
INNER_BATCH_FLAG = 0x80
COMPRESSION_TYPE_MASK = 0x700

NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"


def transaction_type(sys_flag: int) -> int:
    """The transaction type bits of a sysFlag (MessageSysFlag.getTransactionValue)."""
    return sys_flag & TRANSACTION_TYPE_MASK


# --- properties string (MessageDecoder.messageProperties2String / string2messageProperties) --
def properties_to_string(properties: dict[str, str]) -> str:
    """Encode properties as ``name\\u0001value\\u0002...`` without the trailing separator.

    Entries whose value is None are skipped, as Java skips null values.
    """
    return PROPERTY_SEPARATOR.join(
        f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in properties.items() if v is not None
    )


#: ``piece.split(NAME_VALUE_SEPARATOR, 1)``: name and value (partition's split, as a C call).
_split_pair = methodcaller("split", NAME_VALUE_SEPARATOR, 1)


def string_to_properties(text: str) -> dict[str, str]:
    """Decode a properties string; pieces without a key or with an empty value are dropped,
    as ``MessageDecoder.string2messageProperties`` drops them."""
    if not text:
        return {}
    # Every piece well formed (the usual case): the map built by C loops, checked after.
    try:
        result = dict(map(_split_pair, text.split(PROPERTY_SEPARATOR)))
    except ValueError:  # a piece without NAME_VALUE_SEPARATOR
        pass
    else:
        if "" not in result and "" not in result.values():
            return result
    result = {}
    for piece in text.split(PROPERTY_SEPARATOR):
        key, sep, value = piece.partition(NAME_VALUE_SEPARATOR)
        if sep and key and value:
            result[key] = value
    return result


# --- tags hash code (Java String.hashCode over UTF-16 code units) ---------------------------
#: Java hashes over this many UTF-16 units at a time (one C-level dot product per chunk).
_HASH_CHUNK = 256
#: 31**k mod 2**32, k ascending: weights of a reversed chunk (the last unit weighs 31**0).
_POW31 = [pow(31, k, 1 << 32) for k in range(_HASH_CHUNK + 1)]
#: The codec whose bytes read as native-order uint16 UTF-16 code units in an ``array("H")``.
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode()``: ``h = 31*h + c`` over UTF-16 code units, as a signed int32.

    Computed as ``sum(c_i * 31**(n-1-i)) mod 2**32`` with precomputed powers (a dot product in
    C, ~3-5x faster than the Horner loop of :func:`java_string_hash_reference`, which the
    tests hold it to): the index hashes two keys per message and the consume queue one tag.
    """
    units = text.encode("ascii") if text.isascii() else array("H", text.encode(_UTF16_NATIVE))
    n = len(units)
    if n <= _HASH_CHUNK:
        h = sum(map(mul, units[::-1], _POW31)) & 0xFFFFFFFF
    else:
        h = 0
        for i in range(0, n, _HASH_CHUNK):
            part = units[i : i + _HASH_CHUNK]
            h = (h * _POW31[len(part)] + sum(map(mul, part[::-1], _POW31))) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def java_string_hash_reference(text: str) -> int:
    """``String.hashCode()`` written as Java's loop: the specification
    :func:`java_string_hash` is tested against."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def java_string_hash_append(prefix_hash: int, text: str) -> int:
    """``(prefix + text).hashCode()`` from ``prefix.hashCode()`` (as returned by
    :func:`java_string_hash`) without building the string: ``prefix_hash * 31**len(text) +
    text.hashCode()`` mod 2**32, ``len`` in UTF-16 units."""
    if text.isascii() and len(text) <= _HASH_CHUNK:
        units = text.encode("ascii")
        h = (prefix_hash * _POW31[len(units)] + sum(map(mul, units[::-1], _POW31))) & 0xFFFFFFFF
    else:
        n = len(text.encode(_UTF16_NATIVE)) // 2
        h = (prefix_hash * pow(31, n, 1 << 32) + java_string_hash(text)) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def tags_code(tags: str | None) -> int:
    """Consume-queue tagsCode of a tag (MessageExtBrokerInner.tagsString2tagsCode): 0 if none."""
    if not tags:
        return 0
    return java_string_hash(tags)


# --- hosts ------------------------------------------------------------------------------------
#: A host block as RocketMQ stores it (``MessageExt.socketAddress2ByteBuffer``): the 4 or 16
#: address bytes, then the port as int32. ``ipv6`` picks the shape.
HOST = cs.Struct(
    "address" / cs.IfThenElse(cs.this.ipv6, cs.Bytes(16), cs.Bytes(4)),
    "port" / cs.Int32sb,
)
HOST_V4_LAYOUT = Layout(HOST, ipv6=False)
HOST_V6_LAYOUT = Layout(HOST, ipv6=True)
#: Bytes of an IPv4 / IPv6 host block (8 / 20): the record's bornHost / storeHostAddress width.
HOST_V4_SIZE = HOST_V4_LAYOUT.min_size
HOST_V6_SIZE = HOST_V6_LAYOUT.min_size
_PORT = HOST_V4_LAYOUT.struct("port")


def pack_host(host: str, port: int) -> bytes:
    """Pack an address as RocketMQ stores it: 4 or 16 address bytes then an int32 port."""
    return ipaddress.ip_address(host).packed + _PORT.pack(port)


@functools.lru_cache(maxsize=4096)  # decoders see few distinct hosts; ipaddress is slow
def unpack_host(data: bytes) -> tuple[str, int]:
    """Inverse of :func:`pack_host` for an 8- or 20-byte block."""
    at = len(data) - _PORT.size
    (port,) = _PORT.unpack_from(data, at)
    return str(ipaddress.ip_address(bytes(data[:at]))), port


def is_ipv6(host: str) -> bool:
    """True for an IPv6 literal (the record then holds a 20-byte host block)."""
    return ipaddress.ip_address(host).version == 6


def split_addr(addr: str) -> tuple[str, int]:
    """Split ``ip:port`` (IPv6 may be bracketed or bare with the port after the last colon)."""
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


# --- offset message id (MessageDecoder.createMessageId / decodeMessageId) -----------------
#: The offset msgId's bytes: the store's host block, then the record's commitlog offset.
OFFSET_MSG_ID = cs.Struct(
    "storeHost" / cs.IfThenElse(cs.this.ipv6, cs.Bytes(HOST_V6_SIZE), cs.Bytes(HOST_V4_SIZE)),
    "commitLogOffset" / cs.Int64sb,
)
_MSG_ID_V4 = Layout(OFFSET_MSG_ID, ipv6=False)
_MSG_ID_SIZES = (_MSG_ID_V4.min_size, Layout(OFFSET_MSG_ID, ipv6=True).min_size)
#: The int64 commitlog offset that ends an offset msgId (after the store's host block).
MSG_ID_COMMIT_LOG_OFFSET = _MSG_ID_V4.struct("commitLogOffset")


def create_offset_msg_id(store_host: str, store_port: int, commitlog_offset: int) -> str:
    """Offset msgId: store host bytes + port int32 + commitlog offset int64 as uppercase hex."""
    return (pack_host(store_host, store_port) + MSG_ID_COMMIT_LOG_OFFSET.pack(commitlog_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """Return (host, port, commitlog offset) of an offset msgId; 32 hex chars means IPv4."""
    raw = bytes.fromhex(msg_id)
    if len(raw) not in _MSG_ID_SIZES:
        raise ValueError(f"offset msgId must be 32 or 56 hex characters, got {len(msg_id)}")
    at = len(raw) - MSG_ID_COMMIT_LOG_OFFSET.size
    host, port = unpack_host(raw[:at])
    (offset,) = MSG_ID_COMMIT_LOG_OFFSET.unpack_from(raw, at)
    return host, port, offset


# --- UNIQ_KEY (MessageClientIDSetter.createUniqID) --------------------------------------------
#: The UNIQ_KEY id's bytes (``MessageClientIDSetter``: the client's ip, pid and class-loader
#: hash, then per id the ms since the month started and a counter).
UNIQ_ID = cs.Struct(
    "ip" / cs.IfThenElse(cs.this.ipv6, cs.Bytes(16), cs.Bytes(4)),
    "pid" / cs.Int16sb,
    "classLoaderHash" / cs.Int32sb,
    "sinceMonthStart" / cs.Int32sb,
    "counter" / cs.Int16ub,
)
_UNIQ_ID = Layout(UNIQ_ID, ipv6=False)
_UNIQ_PROCESS = _UNIQ_ID.struct("pid", "classLoaderHash")
_UNIQ_NEXT = _UNIQ_ID.struct("sinceMonthStart", "counter")


class UniqIdGenerator:
    """Generate UNIQ_KEY ids the way the Java client does.

    Layout: client IP (4 bytes), pid int16, class-loader hash int32, ms since the start of the
    current month int32, counter int16; rendered as 32 uppercase hex characters.
    """

    def __init__(self, ip: str = "127.0.0.1", clock=time.time) -> None:
        self._prefix = ipaddress.ip_address(ip).packed + _UNIQ_PROCESS.pack(
            os.getpid() & 0x7FFF, id(self) & 0x7FFFFFFF
        )
        self._clock = clock
        self._counter = itertools.count()

    def next(self) -> str:
        """The next id."""
        now = self._clock()
        lt = time.localtime(now)
        month_start = time.mktime((lt.tm_year, lt.tm_mon, 1, 0, 0, 0, 0, 0, -1))
        since = int((now - month_start) * 1000) & 0x7FFFFFFF
        count = next(self._counter) & 0xFFFF
        return (self._prefix + _UNIQ_NEXT.pack(since, count)).hex().upper()
