"""Headers of the client <-> broker data path: send, pull, offsets, query, retry, transactions.

Field names, types and ``@CFNotNull`` flags follow ``org.apache.rocketmq.common.protocol.header``
(Apache RocketMQ 4.9.8; a few 5.x optional fields are accepted too), docs/protocol.md §3.
"""

from __future__ import annotations

from typing import ClassVar

from rocketmq_emu.broker.remoting.headers.base import (
    BOOL,
    INT,
    LONG,
    CommandHeader,
    HeaderError,
    compile_parser,
    header,
    opt,
    req,
)

#: SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2 carry the V2 letters.
_V2_CODES = frozenset({310, 320, 325})


@header
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10) / SEND_REPLY_MESSAGE (324) header; V2 letters via :meth:`from_v2`."""

    producer_group: str | None = req("producerGroup")
    topic: str | None = req("topic")
    default_topic: str | None = req("defaultTopic")
    default_topic_queue_nums: int | None = req("defaultTopicQueueNums", INT)
    queue_id: int | None = req("queueId", INT)
    sys_flag: int | None = req("sysFlag", INT)
    born_timestamp: int | None = req("bornTimestamp", LONG)
    flag: int | None = req("flag", INT)
    properties: str | None = opt("properties")
    reconsume_times: int | None = opt("reconsumeTimes", INT)
    unit_mode: bool = opt("unitMode", BOOL, False)
    batch: bool = opt("batch", BOOL, False)
    max_reconsume_times: int | None = opt("maxReconsumeTimes", INT)
    bname: str | None = opt("bname")

    #: SendMessageRequestHeaderV2 letter -> V1 name (createSendMessageRequestHeaderV1).
    V2_TO_V1: ClassVar[dict[str, str]] = {
        "a": "producerGroup",
        "b": "topic",
        "c": "defaultTopic",
        "d": "defaultTopicQueueNums",
        "e": "queueId",
        "f": "sysFlag",
        "g": "bornTimestamp",
        "h": "flag",
        "i": "properties",
        "j": "reconsumeTimes",
        "k": "unitMode",
        "l": "maxReconsumeTimes",
        "m": "batch",
        "n": "bname",
    }
    V1_TO_V2: ClassVar[dict[str, str]] = {v: k for k, v in V2_TO_V1.items()}

    @classmethod
    def from_v2(cls, ext: dict[str, str] | None) -> SendMessageRequestHeader:
        """Parse SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2 letters a..n."""
        parse = cls.__dict__.get("_parse_v2")
        if parse is None:
            spec = tuple((a, cls.V1_TO_V2[w], k, r) for a, w, k, r in cls.SPEC)
            parse = compile_parser(cls, spec)
            cls._parse_v2 = staticmethod(parse)
        try:
            return parse(ext)
        except HeaderError as exc:
            raise cls._name_letters(exc) from None

    @classmethod
    def _name_letters(cls, exc: HeaderError) -> HeaderError:
        """The error naming each letter with its V1 meaning (SendMessageRequestHeaderV2's
        field comments)."""
        text = str(exc)
        for letter, name in cls.V2_TO_V1.items():
            text = text.replace(f"<{letter}>", f"<{letter}> ({name})")
        return HeaderError(text)

    @classmethod
    def from_request(cls, code: int, ext: dict[str, str] | None) -> SendMessageRequestHeader:
        """Pick V1 or V2 parsing by request code (310, 320, 325 use letters)."""
        if code not in _V2_CODES:
            return cls.from_ext_fields(ext)
        parse = cls.__dict__.get("_parse_v2")
        if parse is None:
            return cls.from_v2(ext)  # compiles the parser
        try:
            return parse(ext)
        except HeaderError as exc:
            raise cls._name_letters(exc) from None

    def to_v2_ext_fields(self) -> dict[str, str]:
        """The letters a..n a Java client sends with SEND_MESSAGE_V2."""
        return {self.V1_TO_V2[k]: v for k, v in self.to_ext_fields().items()}


@header
class SendMessageResponseHeader(CommandHeader):
    """Send response: offset msgId, queue and queue offset."""

    msg_id: str | None = req("msgId")
    queue_id: int | None = req("queueId", INT)
    queue_offset: int | None = req("queueOffset", LONG)
    transaction_id: str | None = opt("transactionId")
    batch_uniq_id: str | None = opt("batchUniqId")


@header
class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker -> requesting producer."""

    producer_group: str | None = req("producerGroup")
    topic: str | None = req("topic")
    default_topic: str | None = req("defaultTopic")
    default_topic_queue_nums: int | None = req("defaultTopicQueueNums", INT)
    queue_id: int | None = req("queueId", INT)
    sys_flag: int | None = req("sysFlag", INT)
    born_timestamp: int | None = req("bornTimestamp", LONG)
    flag: int | None = req("flag", INT)
    properties: str | None = opt("properties")
    reconsume_times: int | None = opt("reconsumeTimes", INT)
    unit_mode: bool = opt("unitMode", BOOL, False)
    born_host: str | None = req("bornHost")
    store_host: str | None = req("storeHost")
    store_timestamp: int | None = req("storeTimestamp", LONG)


@header
class PullMessageRequestHeader(CommandHeader):
    """PULL_MESSAGE (11)."""

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    queue_offset: int | None = req("queueOffset", LONG)
    max_msg_nums: int | None = req("maxMsgNums", INT)
    sys_flag: int | None = req("sysFlag", INT)
    commit_offset: int | None = req("commitOffset", LONG)
    suspend_timeout_millis: int | None = req("suspendTimeoutMillis", LONG)
    subscription: str | None = opt("subscription")
    sub_version: int | None = req("subVersion", LONG)
    expression_type: str | None = opt("expressionType")
    bname: str | None = opt("bname")
    max_msg_bytes: int | None = opt("maxMsgBytes", INT)


@header
class PullMessageResponseHeader(CommandHeader):
    """Pull response offsets (maxOffset is exclusive)."""

    suggest_which_broker_id: int | None = req("suggestWhichBrokerId", LONG)
    next_begin_offset: int | None = req("nextBeginOffset", LONG)
    min_offset: int | None = req("minOffset", LONG)
    max_offset: int | None = req("maxOffset", LONG)


@header
class QueryConsumerOffsetRequestHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET (14)."""

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    set_zero_if_not_found: bool | None = opt("setZeroIfNotFound", BOOL)


@header
class QueryConsumerOffsetResponseHeader(CommandHeader):
    """Offset of a (group, topic, queue)."""

    offset: int | None = req("offset", LONG)


@header
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    """UPDATE_CONSUMER_OFFSET (15), usually oneway."""

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    commit_offset: int | None = req("commitOffset", LONG)


@header
class GetMaxOffsetRequestHeader(CommandHeader):
    """GET_MAX_OFFSET (30)."""

    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    committed: bool | None = opt("committed", BOOL)


@header
class GetMinOffsetRequestHeader(CommandHeader):
    """GET_MIN_OFFSET (31)."""

    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)


@header
class SearchOffsetRequestHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29)."""

    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    timestamp: int | None = req("timestamp", LONG)
    boundary_type: str | None = opt("boundaryType")


@header
class OffsetResponseHeader(CommandHeader):
    """Response of 29/30/31 (GetMaxOffset/GetMinOffset/SearchOffset response headers)."""

    offset: int | None = req("offset", LONG)


GetMaxOffsetResponseHeader = OffsetResponseHeader
GetMinOffsetResponseHeader = OffsetResponseHeader
SearchOffsetResponseHeader = OffsetResponseHeader


@header
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME (32)."""

    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)


@header
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """Store timestamp (ms) of the first message of the queue."""

    timestamp: int | None = req("timestamp", LONG)


@header
class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33): commitlog offset decoded from the offset msgId."""

    offset: int | None = req("offset", LONG)
    topic: str | None = opt("topic")


@header
class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE (12); extField ``_UNIQUE_KEY_QUERY`` is read separately."""

    topic: str | None = req("topic")
    key: str | None = req("key")
    max_num: int | None = req("maxNum", INT)
    begin_timestamp: int | None = req("beginTimestamp", LONG)
    end_timestamp: int | None = req("endTimestamp", LONG)


@header
class QueryMessageResponseHeader(CommandHeader):
    """Index timestamps of a QUERY_MESSAGE answer."""

    index_last_update_timestamp: int | None = req("indexLastUpdateTimestamp", LONG)
    index_last_update_phyoffset: int | None = req("indexLastUpdatePhyoffset", LONG)


@header
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    """CONSUMER_SEND_MSG_BACK (36): offset is the commitlog offset of the consumed message."""

    offset: int | None = req("offset", LONG)
    group: str | None = req("group")
    delay_level: int | None = req("delayLevel", INT)
    origin_msg_id: str | None = opt("originMsgId")
    origin_topic: str | None = opt("originTopic")
    unit_mode: bool = opt("unitMode", BOOL, False)
    max_reconsume_times: int | None = opt("maxReconsumeTimes", INT)


@header
class EndTransactionRequestHeader(CommandHeader):
    """END_TRANSACTION (37), oneway; commitOrRollback 8 commit, 12 rollback, 0 unknown."""

    producer_group: str | None = req("producerGroup")
    tran_state_table_offset: int | None = req("tranStateTableOffset", LONG)
    commit_log_offset: int | None = req("commitLogOffset", LONG)
    commit_or_rollback: int | None = req("commitOrRollback", INT)
    from_transaction_check: bool = opt("fromTransactionCheck", BOOL, False)
    msg_id: str | None = req("msgId")
    transaction_id: str | None = opt("transactionId")
    topic: str | None = opt("topic")


@header
class CheckTransactionStateRequestHeader(CommandHeader):
    """CHECK_TRANSACTION_STATE (39), broker -> producer, oneway."""

    tran_state_table_offset: int | None = req("tranStateTableOffset", LONG)
    commit_log_offset: int | None = req("commitLogOffset", LONG)
    msg_id: str | None = opt("msgId")
    transaction_id: str | None = opt("transactionId")
    offset_msg_id: str | None = opt("offsetMsgId")
    topic: str | None = opt("topic")


@header
class RecallMessageRequestHeader(CommandHeader):
    """RECALL_MESSAGE (370), RocketMQ 5.3 (``RecallMessageRequestHeader``; ``bname`` from
    ``TopicRequestHeader``)."""

    producer_group: str | None = opt("producerGroup")
    topic: str | None = req("topic")
    recall_handle: str | None = req("recallHandle")
    bname: str | None = opt("bname")


__all__ = sorted(
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, CommandHeader) and value is not CommandHeader
)
