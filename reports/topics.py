"""Which topics are the user's, and how the report pages name the others.

A person reading a report wants their own topics first; the broker's system topics (delay
levels' ``SCHEDULE_TOPIC_XXXX``, the timer wheel's ``rmq_sys_wheel_timer``, transaction half
and op topics, POP's revive logs) are the broker's bookkeeping and are shown apart. Retry and
dead-letter topics hold user messages again, so they stay beside the user's topics, named by
the consumer group they belong to.

System topics are those of ``TopicValidator.isSystemTopic`` (its built-in set and the
``rmq_sys_`` prefix). Pure: no Spark.
"""

from __future__ import annotations

from rocketmq_emu.broker.configs.topics import (
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_SELF_TEST_TOPIC,
    RMQ_SYS_TRACE_TOPIC,
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    SYSTEM_TOPIC_PREFIX,
)
from rocketmq_emu.broker.message import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)

USER = "user"
RETRY = "retry"
DLQ = "dlq"
SYSTEM = "system"

#: ``TopicValidator.SYSTEM_TOPIC_SET`` (4.9 and 5.x; CHECKPOINT_TOPIC is 5.x's RocksDB offsets).
SYSTEM_TOPICS = frozenset((
    AUTO_CREATE_TOPIC_KEY_TOPIC, RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRACE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC,
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, RMQ_SYS_SELF_TEST_TOPIC, RMQ_SYS_OFFSET_MOVED_EVENT,
    "CHECKPOINT_TOPIC",
))


def topic_kind(topic: str) -> str:
    """``system``, ``retry`` (``%RETRY%<group>``), ``dlq`` (``%DLQ%<group>``) or ``user``."""
    if topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX):
        return SYSTEM
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return DLQ
    return USER


def group_of(topic: str) -> str | None:
    """The consumer group a retry or DLQ topic belongs to (what follows the prefix; a POP v1
    retry topic ``%RETRY%<group>_<topic>`` cannot be split by its name alone, see
    :mod:`rocketmq_emu.reports.jobs.pop`), else None."""
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if topic.startswith(prefix):
            return topic[len(prefix):]
    return None


def label(topic: str) -> str:
    """How a chart names ``topic``: a retry or DLQ topic by its group (``retries of G``,
    ``dead letters of G``), any other by its name."""
    kind = topic_kind(topic)
    if kind == RETRY:
        return f"retries of {group_of(topic)}"
    if kind == DLQ:
        return f"dead letters of {group_of(topic)}"
    return topic
