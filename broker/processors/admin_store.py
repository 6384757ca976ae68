"""Admin requests that clean the store (``AdminBrokerProcessor``, 4.9.8):
306 CLEAN_EXPIRED_CONSUMEQUEUE, 316 CLEAN_UNUSED_TOPIC, 329 DELETE_EXPIRED_COMMITLOG.

Each answers SUCCESS with no body once the work is done, as Java does. The work is the
store's when it has a method of that name (``clean_expired_consume_queues``,
``clean_unused_topic``, ``delete_expired_commitlog``); otherwise the functions below do it
through the store's public parts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from rocketmq_emu.broker.message import RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

log = logging.getLogger(__name__)

#: ``MixAll.LMQ_PREFIX``: light message queue topics, never cleaned as unused.
LMQ_PREFIX = "%LMQ%"


def _drop_queue(store: Any, topic: str, queue_id: int) -> None:
    """Destroy one consume queue and forget its next queue offset
    (``commitLog.removeQueueFromTopicQueueTable`` + ``ConsumeQueue.destroy``)."""
    by_id = store.consume_queues.queues.get(topic, {})
    cq = by_id.pop(queue_id, None)
    if cq is not None:
        cq.destroy()
    store.commitlog.topic_queue_table.pop((topic, queue_id), None)
    # The dispatch path caches queue objects; a destroyed one must not be written again.
    getattr(store, "_cq_cache", {}).pop((topic, queue_id), None)
    if not by_id:
        store.consume_queues.queues.pop(topic, None)


def clean_expired_consume_queues(store: Any) -> int:
    """``DefaultMessageStore.cleanExpiredConsumerQueue``: destroy every queue (but the schedule
    topic's) whose last unit points below the commitlog's min offset; returns how many."""
    min_offset = store.commitlog.min_offset
    destroyed = 0
    for topic, by_id in list(store.consume_queues.queues.items()):
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            continue
        for queue_id, cq in list(by_id.items()):
            last = cq.last_commitlog_offset
            if last == -1:
                log.warning("maybe ConsumeQueue was created just now. topic=%s queueId=%d "
                            "maxPhysicOffset=%d minLogicOffset=%d.", topic, queue_id, last,
                            cq.min_offset * 20)
            elif last < min_offset:
                log.info("cleanExpiredConsumerQueue: %s %d consumer queue destroyed, "
                         "minCommitLogOffset: %d maxCLOffsetInConsumeQueue: %d",
                         topic, queue_id, min_offset, last)
                _drop_queue(store, topic, queue_id)
                destroyed += 1
        if topic not in store.consume_queues.queues:
            log.info("cleanExpiredConsumerQueue: %s,topic destroyed", topic)
    return destroyed


def clean_unused_topic(store: Any, topics: Iterable[str]) -> list[str]:
    """``DefaultMessageStore.cleanUnusedTopic``: destroy the consume queues of every topic not
    in ``topics`` (the topic config table), except the schedule, transaction-op and LMQ
    topics; returns the topics cleaned."""
    keep = set(topics)
    cleaned = []
    for topic in list(store.consume_queues.queues):
        if topic in keep or topic in (RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC) \
                or topic.startswith(LMQ_PREFIX):
            continue
        for queue_id in sorted(store.consume_queues.queues.get(topic, {})):
            log.info("cleanUnusedTopic: %s %d ConsumeQueue cleaned", topic, queue_id)
        store.delete_topic(topic)
        log.info("cleanUnusedTopic: %s,topic destroyed", topic)
        cleaned.append(topic)
    return cleaned


def delete_expired_commitlog(store: Any) -> int:
    """``DefaultMessageStore.executeDeleteFilesManually``: Java makes its clean service delete
    commitlog files older than ``fileReservedTime`` on its next runs whatever the hour
    (``deleteWhen``); done here at once by the store's retention pass. Returns files deleted."""
    return int(store.clean_expired_files() or 0)


class AdminStoreProcessor:
    """Handlers for 306, 316 and 329."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
            RequestCode.CLEAN_UNUSED_TOPIC: self.clean_unused_topic,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commitlog,
        }

    def clean_expired_consume_queue(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """306: destroy consume queues whose messages all left the commitlog."""
        log.warning("invoke cleanExpiredConsumeQueue start.")
        store = self.ctx.store
        own = getattr(store, "clean_expired_consume_queues", None)
        if own is not None:
            own()
        else:
            clean_expired_consume_queues(store)
        log.warning("invoke cleanExpiredConsumeQueue end.")
        return cmd.response(ResponseCode.SUCCESS)

    def clean_unused_topic(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """316: destroy consume queues of topics the broker no longer has a config for."""
        log.warning("invoke cleanUnusedTopic start.")
        store = self.ctx.store
        topics = set(self.ctx.topic_config.topic_config_table)
        own = getattr(store, "clean_unused_topic", None)
        if own is not None:
            own(topics)
        else:
            clean_unused_topic(store, topics)
        log.warning("invoke cleanUnusedTopic end.")
        return cmd.response(ResponseCode.SUCCESS)

    def delete_expired_commitlog(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """329: delete expired commitlog files now (and the queue / index entries below)."""
        log.warning("invoke deleteExpiredCommitLog start.")
        store = self.ctx.store
        own = getattr(store, "delete_expired_commitlog", None)
        if own is not None:
            own()
        else:
            delete_expired_commitlog(store)
        log.warning("invoke deleteExpiredCommitLog end.")
        return cmd.response(ResponseCode.SUCCESS)
