"""Names and constants of RocketMQ 5's POP consumption, as the Java broker spells them.

Read from apache/rocketmq (5.3.3 and later, develop 8fc57f1): ``PopAckConstants``,
``KeyBuilder``, ``MixAll``, ``TopicValidator``, ``MessageConst`` (common module),
``BrokerConfig`` defaults, and the key builders of ``PopMessageProcessor``,
``PopBufferMergeService`` and ``PopReviveService`` (broker module). Each constant names its class.

Pure functions and constants: nothing here touches the store.
"""

from __future__ import annotations

from collections.abc import Iterable

# --- prefixes (MixAll, TopicValidator) ---------------------------------------------------------
#: ``MixAll.RETRY_GROUP_TOPIC_PREFIX``.
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
#: ``MixAll.DLQ_GROUP_TOPIC_PREFIX``.
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
#: ``MixAll.CID_RMQ_SYS_PREFIX``.
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
#: ``TopicValidator.SYSTEM_TOPIC_PREFIX``.
SYSTEM_TOPIC_PREFIX = "rmq_sys_"

# --- PopAckConstants ---------------------------------------------------------------------------
#: ``PopAckConstants.ackTimeInterval`` (ms): a CK message is due this long before its revive time.
ACK_TIME_INTERVAL_MS = 1000
#: ``PopAckConstants.SECOND`` (ms).
SECOND_MS = 1000
#: ``PopAckConstants.lockTime`` (ms).
LOCK_TIME_MS = 5000
#: ``PopAckConstants.retryQueueNum``: queues of a POP retry topic.
RETRY_QUEUE_NUM = 1
#: ``PopAckConstants.REVIVE_GROUP``: the group whose offsets on the revive topic are committed.
REVIVE_GROUP = CID_RMQ_SYS_PREFIX + "REVIVE_GROUP"
#: ``PopAckConstants.LOCAL_HOST``: the client host given when the revive offset is committed.
LOCAL_HOST = "127.0.0.1"
#: ``PopAckConstants.REVIVE_TOPIC``: the revive topic's prefix, the cluster name follows.
REVIVE_TOPIC_PREFIX = SYSTEM_TOPIC_PREFIX + "REVIVE_LOG_"
#: ``PopAckConstants.CK_TAG``: tag of a PopCheckPoint message in the revive topic.
CK_TAG = "ck"
#: ``PopAckConstants.ACK_TAG``: tag of an AckMsg message in the revive topic.
ACK_TAG = "ack"
#: ``PopAckConstants.BATCH_ACK_TAG``: tag of a BatchAckMsg message in the revive topic.
BATCH_ACK_TAG = "bAck"
#: ``PopAckConstants.SPLIT``: separator of the unique ids and lock keys.
SPLIT = "@"

# --- KeyBuilder --------------------------------------------------------------------------------
#: ``KeyBuilder.POP_ORDER_REVIVE_QUEUE``: the revive queue id an orderly POP's CK claims.
POP_ORDER_REVIVE_QUEUE = 999
#: ``KeyBuilder.POP_RETRY_SEPARATOR_V1``: ``%RETRY%{group}_{topic}``.
POP_RETRY_SEPARATOR_V1 = "_"
#: ``KeyBuilder.POP_RETRY_SEPARATOR_V2``: ``%RETRY%{group}+{topic}`` (``enableRetryTopicV2``).
POP_RETRY_SEPARATOR_V2 = "+"

# --- MessageConst: properties POP reads or sets -------------------------------------------------
#: ``MessageConst.PROPERTY_POP_CK``: the extra info (receipt handle) put on a popped message.
PROPERTY_POP_CK = "POP_CK"
#: ``MessageConst.PROPERTY_POP_CK_OFFSET``.
PROPERTY_POP_CK_OFFSET = "POP_CK_OFFSET"
#: ``MessageConst.PROPERTY_FIRST_POP_TIME``: set by revive on the first retry copy of a message.
PROPERTY_FIRST_POP_TIME = "1ST_POP_TIME"
#: ``MessageConst.PROPERTY_TIMER_DELIVER_MS``: ``Message.setDeliverTimeMs`` writes it; CK and ACK
#: messages carry their due time in it (CK: reviveTime - ackTimeInterval; ACK: reviveTime).
PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
#: ``MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX``: CK/ACK messages carry their unique id.
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
#: ``MessageConst.PROPERTY_RETRY_TOPIC``.
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
#: ``MessageConst.PROPERTY_ORIGIN_MESSAGE_ID``.
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
#: ``MessageConst.PROPERTY_RECONSUME_TIME``.
PROPERTY_RECONSUME_TIME = "RECONSUME_TIME"
#: ``MessageConst.PROPERTY_MAX_RECONSUME_TIMES``.
PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
#: ``MessageConst.PROPERTY_DLQ_ORIGIN_TOPIC``.
PROPERTY_DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
#: ``MessageConst.PROPERTY_DLQ_ORIGIN_MESSAGE_ID``.
PROPERTY_DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"

# --- BrokerConfig defaults ---------------------------------------------------------------------
#: ``BrokerConfig.reviveQueueNum``: queues of the revive topic.
REVIVE_QUEUE_NUM = 8
#: ``BrokerConfig.reviveInterval`` (ms).
REVIVE_INTERVAL_MS = 1000
#: ``BrokerConfig.reviveMaxSlow`` (s).
REVIVE_MAX_SLOW_S = 3
#: ``BrokerConfig.reviveScanTime`` (ms): longest scan of one revive queue.
REVIVE_SCAN_TIME_MS = 10000
#: ``BrokerConfig.reviveAckWaitMs``: 3 minutes.
REVIVE_ACK_WAIT_MS = 3 * 60 * 1000
#: ``BrokerConfig.enableSkipLongAwaitingAck``.
ENABLE_SKIP_LONG_AWAITING_ACK = False
#: ``BrokerConfig.enablePopBufferMerge``.
ENABLE_POP_BUFFER_MERGE = False
#: ``BrokerConfig.popCkStayBufferTime`` (ms).
POP_CK_STAY_BUFFER_TIME_MS = 10 * 1000
#: ``BrokerConfig.popCkStayBufferTimeOut`` (ms).
POP_CK_STAY_BUFFER_TIME_OUT_MS = 3 * 1000
#: ``BrokerConfig.popCkMaxBufferSize``.
POP_CK_MAX_BUFFER_SIZE = 200000
#: ``BrokerConfig.popCkOffsetMaxQueueSize``.
POP_CK_OFFSET_MAX_QUEUE_SIZE = 20000
#: ``BrokerConfig.enablePopBatchAck``.
ENABLE_POP_BATCH_ACK = False
#: ``BrokerConfig.popPollingSize``.
POP_POLLING_SIZE = 1024
#: ``BrokerConfig.popPollingMapSize``.
POP_POLLING_MAP_SIZE = 100000
#: ``BrokerConfig.popLongPollingForceNotifyInterval`` (ms).
POP_LONG_POLLING_FORCE_NOTIFY_INTERVAL_MS = 800
#: ``BrokerConfig.retrieveMessageFromPopRetryTopicV1``.
RETRIEVE_MESSAGE_FROM_POP_RETRY_TOPIC_V1 = True
#: ``BrokerConfig.enableRetryTopicV2``.
ENABLE_RETRY_TOPIC_V2 = False
#: ``BrokerConfig.popFromRetryProbability`` (percent).
POP_FROM_RETRY_PROBABILITY = 20
#: ``BrokerConfig.popReviveMaxReturnSizePerRead``.
POP_REVIVE_MAX_RETURN_SIZE_PER_READ = 16 * 1024
#: ``BrokerConfig.popReviveMaxAttemptTimes``.
POP_REVIVE_MAX_ATTEMPT_TIMES = 16
#: ``BrokerConfig.skipWhenCKRePutReachMaxTimes``.
SKIP_WHEN_CK_RE_PUT_REACH_MAX_TIMES = False
#: ``BrokerConfig.appendAckAsync`` / ``appendCkAsync``.
APPEND_ACK_ASYNC = False
APPEND_CK_ASYNC = False
#: ``BrokerConfig.initPopOffsetByCheckMsgInMem``.
INIT_POP_OFFSET_BY_CHECK_MSG_IN_MEM = True

# --- PopReviveService --------------------------------------------------------------------------
#: ``PopReviveService.ckRewriteIntervalsInSeconds``: the extra invisible time of the n-th re-put
#: CK (``rp``), the last one repeating.
CK_REWRITE_INTERVALS_S = (10, 20, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200,
                          1800, 3600, 7200)


# --- topics ------------------------------------------------------------------------------------
def revive_topic(cluster: str) -> str:
    """``PopAckConstants.buildClusterReviveTopic``: ``rmq_sys_REVIVE_LOG_{cluster}``."""
    return REVIVE_TOPIC_PREFIX + cluster


def is_revive_topic(topic: str | None) -> bool:
    """``PopAckConstants.isStartWithRevivePrefix``."""
    return topic is not None and topic.startswith(REVIVE_TOPIC_PREFIX)


def retry_topic(group: str) -> str:
    """``MixAll.getRetryTopic``: ``%RETRY%{group}`` (the push consumer's retry topic)."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``MixAll.getDLQTopic``: ``%DLQ%{group}``."""
    return DLQ_GROUP_TOPIC_PREFIX + group


def pop_retry_topic_v1(topic: str, group: str) -> str:
    """``KeyBuilder.buildPopRetryTopicV1``: ``%RETRY%{group}_{topic}``."""
    return RETRY_GROUP_TOPIC_PREFIX + group + POP_RETRY_SEPARATOR_V1 + topic


def pop_retry_topic_v2(topic: str, group: str) -> str:
    """``KeyBuilder.buildPopRetryTopicV2``: ``%RETRY%{group}+{topic}``."""
    return RETRY_GROUP_TOPIC_PREFIX + group + POP_RETRY_SEPARATOR_V2 + topic


def pop_retry_topic(topic: str, group: str, enable_retry_v2: bool = False) -> str:
    """``KeyBuilder.buildPopRetryTopic``: v2 when ``enableRetryTopicV2``, else v1 (the 2-argument
    Java overload is v1)."""
    return pop_retry_topic_v2(topic, group) if enable_retry_v2 else pop_retry_topic_v1(topic, group)


def is_pop_retry_topic_v2(retry_topic_name: str) -> bool:
    """``KeyBuilder.isPopRetryTopicV2``: starts with ``%RETRY%`` and holds a ``+`` anywhere."""
    return (retry_topic_name.startswith(RETRY_GROUP_TOPIC_PREFIX)
            and POP_RETRY_SEPARATOR_V2 in retry_topic_name)


def _java_substring(text: str, begin: int) -> str:
    """``String.substring(begin)``, which throws past the end."""
    if begin > len(text):
        raise ValueError(f"{text!r} is shorter than {begin} characters")
    return text[begin:]


def _java_split_plus(text: str) -> list[str]:
    """``String.split("\\\\+")``: trailing empty strings are removed (all of them)."""
    parts = text.split(POP_RETRY_SEPARATOR_V2)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_normal_topic_of_group(topic: str, group: str) -> str:
    """``KeyBuilder.parseNormalTopic(topic, cid)``: the topic a POP retry topic of ``group`` is for.

    Not a retry topic: unchanged. ``%RETRY%{group}+`` prefix: what follows. Otherwise the length
    of ``%RETRY%{group}_`` is cut off without checking it matches, as Java does; a topic shorter
    than that (``%RETRY%{group}`` itself) raises ValueError where Java throws."""
    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return topic
    v2 = RETRY_GROUP_TOPIC_PREFIX + group + POP_RETRY_SEPARATOR_V2
    if topic.startswith(v2):
        return topic[len(v2):]
    return _java_substring(topic, len(RETRY_GROUP_TOPIC_PREFIX + group + POP_RETRY_SEPARATOR_V1))


def parse_normal_topic(retry_topic_name: str) -> str:
    """``KeyBuilder.parseNormalTopic(retryTopic)``: a v2 retry topic splitting on ``+`` into exactly
    two parts gives the second; anything else (v1 included) is returned unchanged."""
    if is_pop_retry_topic_v2(retry_topic_name):
        parts = _java_split_plus(retry_topic_name)
        if len(parts) == 2:
            return parts[1]
    return retry_topic_name


def parse_group(retry_topic_name: str) -> str:
    """``KeyBuilder.parseGroup``: a v2 retry topic of exactly two ``+`` parts gives the group;
    otherwise everything after ``%RETRY%`` (for v1 that is ``{group}_{topic}``: v1 cannot be
    split). A name shorter than the prefix raises ValueError where Java throws."""
    if is_pop_retry_topic_v2(retry_topic_name):
        parts = _java_split_plus(retry_topic_name)
        if len(parts) == 2:
            return _java_substring(parts[0], len(RETRY_GROUP_TOPIC_PREFIX))
    return _java_substring(retry_topic_name, len(RETRY_GROUP_TOPIC_PREFIX))


# --- keys --------------------------------------------------------------------------------------
def _j(value: object) -> str:
    """A value as Java's string concatenation writes it (``null`` for None)."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[return-value]
    if kind is int:
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def polling_key(topic: str, group: str, queue_id: int) -> str:
    """``KeyBuilder.buildPollingKey``: ``{topic}@{group}@{queueId}``."""
    return SPLIT.join((_j(topic), _j(group), _j(queue_id)))


def lock_key(topic: str | None, group: str | None, queue_id: int) -> str:
    """``PopMessageProcessor.QueueLockManager.buildLockKey`` and
    ``PopBufferMergeService.PopCheckPointWrapper``'s lockKey: ``{topic}@{group}@{queueId}``."""
    return SPLIT.join((_j(topic), _j(group), _j(queue_id)))


def merge_key(topic: str | None, group: str | None, queue_id: int, start_offset: int,
              pop_time: int, broker_name: str | None) -> str:
    """The key matching ACKs to their CK, the six values concatenated with no separator
    (``PopReviveService.consumeReviveMessage``, ``PopCheckPointWrapper.mergeKey``). For an ACK
    without a broker name, Java's revive uses its own ``brokerName``: pass that."""
    return "".join(_j(v) for v in (topic, group, queue_id, start_offset, pop_time, broker_name))


def ck_unique_id(topic: str | None, queue_id: int, start_offset: int, group: str | None,
                 pop_time: int, broker_name: str | None) -> str:
    """``PopMessageProcessor.genCkUniqueId``:
    ``{topic}@{queueId}@{startOffset}@{cid}@{popTime}@{brokerName}@ck``."""
    return (f"{_j(topic)}{SPLIT}{_j(queue_id)}{SPLIT}{_j(start_offset)}{SPLIT}{_j(group)}"
            f"{SPLIT}{_j(pop_time)}{SPLIT}{_j(broker_name)}{SPLIT}{CK_TAG}")


def ack_unique_id(topic: str | None, queue_id: int, ack_offset: int, group: str | None,
                  pop_time: int, broker_name: str | None) -> str:
    """``PopMessageProcessor.genAckUniqueId``:
    ``{topic}@{queueId}@{ackOffset}@{group}@{popTime}@{brokerName}@ack``."""
    if type(topic) is str and type(group) is str and type(broker_name) is str and \
            type(queue_id) is int and type(ack_offset) is int and type(pop_time) is int:
        # Once per ACK: strings and ints (not bool, not None) are written as they are.
        return f"{topic}@{queue_id}@{ack_offset}@{group}@{pop_time}@{broker_name}@ack"
    return (f"{_j(topic)}{SPLIT}{_j(queue_id)}{SPLIT}{_j(ack_offset)}{SPLIT}{_j(group)}"
            f"{SPLIT}{_j(pop_time)}{SPLIT}{_j(broker_name)}{SPLIT}{ACK_TAG}")


def batch_ack_unique_id(topic: str | None, queue_id: int, ack_offsets: Iterable[int],
                        group: str | None, pop_time: int) -> str:
    """``PopMessageProcessor.genBatchAckUniqueId``: the offsets as Java's ``List.toString``
    (``[1, 2]``), no broker name: ``{topic}@{queueId}@[o1, o2]@{group}@{popTime}@bAck``."""
    offsets = "[" + ", ".join(_j(o) for o in ack_offsets) + "]"
    return SPLIT.join((_j(topic), _j(queue_id), offsets, _j(group), _j(pop_time), BATCH_ACK_TAG))
