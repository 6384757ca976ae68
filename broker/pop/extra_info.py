"""The strings POP passes around: a message's check-point info ("extraInfo", the ``POP_CK``
property a consumer hands back with ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME), the gRPC proxy's
receipt handle, and the ``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo`` fields of the
POP_MESSAGE response header.

Facts from Apache RocketMQ 5.3.3 (unchanged on the 5.x branch up to commit 8fc57f1):
``remoting/.../protocol/header/ExtraInfoUtil``, ``common/.../KeyBuilder``,
``common/.../consumer/ReceiptHandle``, ``proxy/.../processor/ConsumerProcessor.createHandle``.

extraInfo is space-separated (``MessageConst.KEY_SEPARATOR``)::

    ckQueueOffset popTime invisibleTime reviveQid retryMark brokerName queueId [queueOffset]

``retryMark`` is ``"0"`` for a normal topic, ``"1"`` for a POP retry topic
``%RETRY%<group>_<topic>`` (V1) and ``"2"`` for ``%RETRY%<group>+<topic>`` (V2). The broker's
POP_MESSAGE writes all eight fields into ``POP_CK``; a client that builds it from the response
header (``MQClientAPIImpl.processPopResponse``) also ends with the message's queue offset.

The proxy's receipt handle (``ReceiptHandle``) is that same eight-field string with the message's
commit-log offset appended as a ninth field (``ConsumerProcessor.createHandle``); its
``startOffset``/``retrieveTime``/``topicType``/``offset`` are extraInfo's
``ckQueueOffset``/``popTime``/``retryMark``/``queueOffset``. So the broker reads a receipt handle
as extraInfo (the ninth field is ignored) and :meth:`ReceiptHandle.to_extra_info` drops it.

Strings are split the way Java's ``String.split`` does (trailing empty fields dropped); numbers
are read as ``Long.parseLong``/``Integer.parseInt`` read them. A malformed string raises
ValueError (Java: ``IllegalArgumentException`` / ``NumberFormatException``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from rocketmq_emu.broker.pop.names import (
    POP_ORDER_REVIVE_QUEUE,
    RETRY_GROUP_TOPIC_PREFIX,
    is_pop_retry_topic_v2,
    pop_retry_topic_v1,
    pop_retry_topic_v2,
)
from rocketmq_emu.broker.remoting.headers.base import INT, LONG, parse_java_int

KEY_SEPARATOR = " "
#: Separates the entries of startOffsetInfo / msgOffsetInfo / orderCountInfo.
ENTRY_SEPARATOR = ";"
#: Separates the message offsets of one msgOffsetInfo entry.
OFFSET_SEPARATOR = ","
#: Joins a retry mark and a queue key in the parsed maps (``topicMark@queueId``).
KEY_JOIN = "@"

NORMAL_TOPIC = "0"
RETRY_TOPIC = "1"
RETRY_TOPIC_V2 = "2"
#: Prefix of the ``qo<queueId>%<queueOffset>`` key of a per-message order count.
QUEUE_OFFSET_PREFIX = "qo"


def java_split(text: str, sep: str) -> list[str]:
    """``String.split`` with a one-character literal separator: trailing empty strings are
    dropped, and a string without ``sep`` is returned whole (``"".split`` gives ``[""]``)."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _long(text: str) -> int:
    # Up to 18 ASCII digits always fit a long: int() at once (the common case, several per ACK).
    if len(text) < 19 and text.isascii() and text.isdigit():
        return int(text)
    return parse_java_int(text, LONG)


def _int(text: str) -> int:
    if len(text) < 10 and text.isascii() and text.isdigit():
        return int(text)
    return parse_java_int(text, INT)


# -- retry marks -----------------------------------------------------------------------------


def retry_mark(topic: str) -> str:
    """``ExtraInfoUtil.getRetry(String topic)``: "2" for a V2 POP retry topic, "1" for any other
    ``%RETRY%`` topic, else "0"."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_TOPIC_V2
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC
    return NORMAL_TOPIC


def real_topic(topic: str, group: str, mark: str) -> str:
    """``ExtraInfoUtil.getRealTopic(topic, cid, retry)``: the topic the message was popped from,
    given the subscribed ``topic`` and a retry mark; an unknown mark raises ValueError."""
    if mark == NORMAL_TOPIC:
        return topic
    if mark == RETRY_TOPIC:
        return pop_retry_topic_v1(topic, group)
    if mark == RETRY_TOPIC_V2:
        return pop_retry_topic_v2(topic, group)
    raise ValueError(f"getRetry fail, format is wrong: {mark!r}")


# -- extraInfo (POP_CK) ----------------------------------------------------------------------


def split_extra_info(extra_info: str) -> list[str]:
    """``ExtraInfoUtil.split``: the space-separated fields (Java split)."""
    return java_split(extra_info, KEY_SEPARATOR)


def _field(parts: Sequence[str], index: int, what: str) -> str:
    if len(parts) <= index:
        raise ValueError(f"{what} fail, extraInfoStrs length {len(parts)}")
    return parts[index]


def get_ck_queue_offset(parts: Sequence[str]) -> int:
    """``ExtraInfoUtil.getCkQueueOffset`` (field 0)."""
    return _long(_field(parts, 0, "getCkQueueOffset"))


def get_pop_time(parts: Sequence[str]) -> int:
    """``ExtraInfoUtil.getPopTime`` (field 1)."""
    return _long(_field(parts, 1, "getPopTime"))


def get_invisible_time(parts: Sequence[str]) -> int:
    """``ExtraInfoUtil.getInvisibleTime`` (field 2)."""
    return _long(_field(parts, 2, "getInvisibleTime"))


def get_revive_qid(parts: Sequence[str]) -> int:
    """``ExtraInfoUtil.getReviveQid`` (field 3)."""
    return _int(_field(parts, 3, "getReviveQid"))


def get_retry(parts: Sequence[str]) -> str:
    """``ExtraInfoUtil.getRetry(String[])``: the retry mark (field 4)."""
    return _field(parts, 4, "getRetry")


def get_broker_name(parts: Sequence[str]) -> str:
    """``ExtraInfoUtil.getBrokerName`` (field 5)."""
    return _field(parts, 5, "getBrokerName")


def get_queue_id(parts: Sequence[str]) -> int:
    """``ExtraInfoUtil.getQueueId`` (field 6)."""
    return _int(_field(parts, 6, "getQueueId"))


def get_queue_offset(parts: Sequence[str]) -> int:
    """``ExtraInfoUtil.getQueueOffset`` (field 7)."""
    return _long(_field(parts, 7, "getQueueOffset"))


def get_real_topic(parts: Sequence[str], topic: str, group: str) -> str:
    """``ExtraInfoUtil.getRealTopic(String[], topic, cid)``: like :func:`real_topic`, but an
    unknown mark means the normal topic."""
    mark = get_retry(parts)
    return real_topic(topic, group, mark) if mark in (RETRY_TOPIC, RETRY_TOPIC_V2) else topic


def is_order(parts: Sequence[str]) -> bool:
    """``ExtraInfoUtil.isOrder``: the revive queue id is :data:`POP_ORDER_REVIVE_QUEUE`."""
    return get_revive_qid(parts) == POP_ORDER_REVIVE_QUEUE


def build_extra_info(
    ck_queue_offset: int,
    pop_time: int,
    invisible_time: int,
    revive_qid: int,
    topic: str,
    broker_name: str,
    queue_id: int,
    msg_queue_offset: int | None = None,
) -> str:
    """``ExtraInfoUtil.buildExtraInfo``, both overloads: seven fields, or eight with the
    message's queue offset. ``topic`` is the topic popped from; only its retry mark is kept."""
    fields = [ck_queue_offset, pop_time, invisible_time, revive_qid, retry_mark(topic),
              broker_name, queue_id]
    if msg_queue_offset is not None:
        fields.append(msg_queue_offset)
    return KEY_SEPARATOR.join(map(str, fields))


#: ck_queue_offset, pop_time, invisible_time, revive_qid, retry, broker_name, queue_id, queue_offset.
ExtraInfoFields = tuple[int, int, int, int, str, str, int, int | None]


def extra_info_fields(extra_info: str) -> ExtraInfoFields:
    """:meth:`ExtraInfo.parse`'s fields as a tuple, in :class:`ExtraInfo`'s order (the ACK path
    reads them without building the object). Fewer than seven fields raise the getters'
    ValueError; a malformed number raises as ``Long.parseLong``/``Integer.parseInt`` does."""
    parts = split_extra_info(extra_info)
    if len(parts) >= 7:  # the getters' own length checks cannot fail: read the fields
        return (_long(parts[0]), _long(parts[1]), _long(parts[2]), _int(parts[3]), parts[4],
                parts[5], _int(parts[6]), _long(parts[7]) if len(parts) > 7 else None)
    return (get_ck_queue_offset(parts), get_pop_time(parts), get_invisible_time(parts),
            get_revive_qid(parts), get_retry(parts), get_broker_name(parts), get_queue_id(parts),
            None)


@dataclasses.dataclass(frozen=True)
class ExtraInfo:
    """One extraInfo string, field by field (the getters of ``ExtraInfoUtil``)."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None

    @classmethod
    def parse(cls, extra_info: str) -> ExtraInfo:
        """Read the seven or eight leading fields; later ones (a receipt handle's commit-log
        offset) are ignored, as the broker's getters ignore them."""
        return cls(*extra_info_fields(extra_info))

    def encode(self) -> str:
        """The string ``buildExtraInfo`` makes for these fields."""
        fields = [self.ck_queue_offset, self.pop_time, self.invisible_time, self.revive_qid,
                  self.retry, self.broker_name, self.queue_id]
        if self.queue_offset is not None:
            fields.append(self.queue_offset)
        return KEY_SEPARATOR.join(map(str, fields))

    @property
    def is_order(self) -> bool:
        """``ExtraInfoUtil.isOrder``."""
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def real_topic(self, topic: str, group: str) -> str:
        """``ExtraInfoUtil.getRealTopic(String[], topic, cid)``."""
        if self.retry in (RETRY_TOPIC, RETRY_TOPIC_V2):
            return real_topic(topic, group, self.retry)
        return topic


# -- the proxy's receipt handle --------------------------------------------------------------


def create_handle(pop_ck: str, commit_log_offset: int) -> str:
    """``ConsumerProcessor.createHandle``: a message's ``POP_CK`` plus its commit-log offset."""
    return f"{pop_ck}{KEY_SEPARATOR}{commit_log_offset}"


@dataclasses.dataclass(frozen=True)
class ReceiptHandle:
    """``org.apache.rocketmq.common.consumer.ReceiptHandle`` (what gRPC clients carry).

    ``topic_type`` is the retry mark; ``commit_log_offset`` is -1 when the handle has only eight
    fields.
    """

    start_offset: int
    retrieve_time: int
    invisible_time: int
    revive_queue_id: int
    topic_type: str
    broker_name: str
    queue_id: int
    offset: int
    commit_log_offset: int = -1

    @classmethod
    def decode(cls, handle: str) -> ReceiptHandle:
        """``ReceiptHandle.decode``: at least eight fields, an optional ninth."""
        parts = java_split(handle, KEY_SEPARATOR)
        if len(parts) < 8:
            raise ValueError(f"Parse failed, dataList size {len(parts)}")
        return cls(
            _long(parts[0]), _long(parts[1]), _long(parts[2]), _int(parts[3]), parts[4],
            parts[5], _int(parts[6]), _long(parts[7]),
            _long(parts[8]) if len(parts) >= 9 else -1,
        )

    def encode(self) -> str:
        """``ReceiptHandle.encode``: always nine fields."""
        return KEY_SEPARATOR.join(map(str, (
            self.start_offset, self.retrieve_time, self.invisible_time, self.revive_queue_id,
            self.topic_type, self.broker_name, self.queue_id, self.offset,
            self.commit_log_offset)))

    @property
    def next_visible_time(self) -> int:
        """``getNextVisibleTime``: retrieve time plus invisible time (epoch ms)."""
        return self.retrieve_time + self.invisible_time

    def is_expired(self, now_ms: int) -> bool:
        """``isExpired`` at ``now_ms`` (Java reads the wall clock)."""
        return self.next_visible_time <= now_ms

    @property
    def is_retry_topic(self) -> bool:
        """``isRetryTopic``: mark "1" or "2"."""
        return self.topic_type in (RETRY_TOPIC, RETRY_TOPIC_V2)

    def real_topic(self, topic: str, group: str) -> str:
        """``getRealTopic``: an unknown mark means the normal topic."""
        return real_topic(topic, group, self.topic_type) if self.is_retry_topic else topic

    def to_extra_info(self) -> ExtraInfo:
        """The broker's view of this handle: its first eight fields."""
        return ExtraInfo(self.start_offset, self.retrieve_time, self.invisible_time,
                         self.revive_queue_id, self.topic_type, self.broker_name, self.queue_id,
                         self.offset)


# -- startOffsetInfo / msgOffsetInfo / orderCountInfo ----------------------------------------


def start_offset_info_key(topic: str, queue_id: int, pop_ck: str | None = None) -> str:
    """``ExtraInfoUtil.getStartOffsetInfoMapKey``: ``<mark>@<queueId>``; with ``pop_ck`` the
    mark is read from that extraInfo instead of the topic (the three-argument overload)."""
    mark = get_retry(split_extra_info(pop_ck)) if pop_ck is not None else retry_mark(topic)
    return f"{mark}{KEY_JOIN}{queue_id}"


def queue_offset_key(queue_id: int, queue_offset: int) -> str:
    """``ExtraInfoUtil.getQueueOffsetKeyValueKey``: ``qo<queueId>%<queueOffset>``."""
    return f"{QUEUE_OFFSET_PREFIX}{queue_id}%{queue_offset}"


def queue_offset_map_key(topic: str, queue_id: int, queue_offset: int) -> str:
    """``ExtraInfoUtil.getQueueOffsetMapKey``: ``<mark>@qo<queueId>%<queueOffset>``."""
    return f"{retry_mark(topic)}{KEY_JOIN}{queue_offset_key(queue_id, queue_offset)}"


class InfoBuilder:
    """The ``StringBuilder`` the ``ExtraInfoUtil.build*Info`` methods append to: entries joined
    by ``;``. Use one builder per header field."""

    def __init__(self) -> None:
        self._entries: list[str] = []

    def _add(self, topic: str, key: object, value: object) -> InfoBuilder:
        self._entries.append(KEY_SEPARATOR.join((retry_mark(topic), str(key), str(value))))
        return self

    def add_start_offset(self, topic: str, queue_id: int, start_offset: int) -> InfoBuilder:
        """``buildStartOffsetInfo``: ``<mark> <queueId> <startOffset>``."""
        return self._add(topic, queue_id, start_offset)

    def add_msg_offsets(self, topic: str, queue_id: int, offsets: Iterable[int]) -> InfoBuilder:
        """``buildMsgOffsetInfo``: ``<mark> <queueId> <o1>,<o2>,...``."""
        return self._add(topic, queue_id, OFFSET_SEPARATOR.join(map(str, offsets)))

    def add_queue_id_order_count(self, topic: str, queue_id: int, count: int) -> InfoBuilder:
        """``buildQueueIdOrderCountInfo``: ``<mark> <queueId> <count>``."""
        return self._add(topic, queue_id, count)

    def add_queue_offset_order_count(
        self, topic: str, queue_id: int, queue_offset: int, count: int
    ) -> InfoBuilder:
        """``buildQueueOffsetOrderCountInfo``: ``<mark> qo<queueId>%<queueOffset> <count>``."""
        return self._add(topic, queue_offset_key(queue_id, queue_offset), count)

    def __len__(self) -> int:
        return len(self._entries)

    def __str__(self) -> str:
        return ENTRY_SEPARATOR.join(self._entries)


def _entries(info: str, what: str) -> list[tuple[str, str]]:
    """(``mark@key``, value) per entry, rejecting malformed and duplicate keys as Java does."""
    items = [info] if ENTRY_SEPARATOR not in info else java_split(info, ENTRY_SEPARATOR)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for one in items:
        parts = java_split(one, KEY_SEPARATOR)
        if len(parts) != 3:
            raise ValueError(f"parse {what} error, {info!r}")
        key = f"{parts[0]}{KEY_JOIN}{parts[1]}"
        if key in seen:
            raise ValueError(f"parse {what} error, duplicate, {info!r}")
        seen.add(key)
        out.append((key, parts[2]))
    return out


def parse_start_offset_info(info: str | None) -> dict[str, int] | None:
    """``ExtraInfoUtil.parseStartOffsetInfo``: ``{"<mark>@<queueId>": startOffset}``; None for
    a missing or empty string."""
    if not info:
        return None
    return {key: _long(value) for key, value in _entries(info, "startOffsetInfo")}


def parse_msg_offset_info(info: str | None) -> dict[str, list[int]] | None:
    """``ExtraInfoUtil.parseMsgOffsetInfo``: ``{"<mark>@<queueId>": [offsets]}``."""
    if not info:
        return None
    return {key: [_long(o) for o in java_split(value, OFFSET_SEPARATOR)]
            for key, value in _entries(info, "msgOffsetMap")}


def parse_order_count_info(info: str | None) -> dict[str, int] | None:
    """``ExtraInfoUtil.parseOrderCountInfo``: keys ``<mark>@<queueId>`` or
    ``<mark>@qo<queueId>%<queueOffset>``, values consume counts."""
    if not info:
        return None
    return {key: _int(value) for key, value in _entries(info, "orderCountInfo")}
