"""The messages POP writes to its revive topic ``rmq_sys_REVIVE_LOG_<cluster>`` and the topics
it creates (a group's POP retry topic; the revive topic is created at the broker's start,
:mod:`rocketmq_emu.broker.pop.boot`).

Each record is built as Java builds it (``PopMessageProcessor.buildCkMsg``,
``AckMessageProcessor.appendAck``, ``ChangeInvisibleTimeProcessor``): topic = revive topic,
queue = the revive queue id, tag ``ck``/``ack``/``bAck``, the JSON body of
:mod:`rocketmq_emu.broker.pop.revive_bodies`, ``TIMER_DELIVER_MS`` and ``UNIQ_KEY`` properties.

Difference on disk: Java hands these records to its timer (``TIMER_DELIVER_MS``), so they reach
the revive queue only at their due time. Here they are put straight into the revive queue (the
property is kept, but nothing reads it): the revive service
(:mod:`rocketmq_emu.broker.pop.revive`) tracks each check point in memory from the moment it is
written and schedules its own revival on the business clock.
"""

from __future__ import annotations

from typing import Any

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.configs.topics import PERM_READ, PERM_WRITE, TopicConfig
from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.revive_bodies import AckMsg, BatchAckMsg, PopCheckPoint


def ensure_pop_retry_topic(topic_config: Any, consumer_offsets: Any, topic: str,
                           group: str) -> None:
    """``PopReviveService.addRetryTopicIfNotExist``: the POP retry topic with
    ``PopAckConstants.retryQueueNum`` (1) queue, perm RW, and (``initPopRetryOffset``) the
    group's offset on its queue 0 set to 0 when it has none."""
    if topic_config.select_topic_config(topic) is not None:
        return
    topic_config.update_topic_config(TopicConfig(
        topic, read_queue_nums=names.RETRY_QUEUE_NUM, write_queue_nums=names.RETRY_QUEUE_NUM,
        perm=PERM_READ | PERM_WRITE))
    if consumer_offsets.query_offset(group, topic, 0) < 0:
        consumer_offsets.commit_offset("initPopRetryOffset", group, topic, 0, 0)


def _record(topic: str, queue_id: int, tag: str, body: bytes, deliver_ms: int, uniq: str,
            store_host: tuple[str, int], now_ms: int) -> MessageRecord:
    return MessageRecord(
        topic=topic,
        body=body,
        queue_id=queue_id,
        properties={
            "TAGS": tag,
            names.PROPERTY_TIMER_DELIVER_MS: str(deliver_ms),
            names.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: uniq,
        },
        born_timestamp=now_ms,
        born_host=store_host,
        store_host=store_host,
    )


def ck_record(ck: PopCheckPoint, revive_topic: str, revive_qid: int,
              store_host: tuple[str, int], now_ms: int) -> MessageRecord:
    """``PopMessageProcessor.buildCkMsg``: due ``reviveTime - ackTimeInterval``."""
    return _record(revive_topic, revive_qid, names.CK_TAG, ck.encode(), ck.deliver_time_ms(),
                   ck.unique_id(), store_host, now_ms)


def ack_record(ack: AckMsg, revive_topic: str, revive_qid: int, deliver_ms: int,
               store_host: tuple[str, int], now_ms: int) -> MessageRecord:
    """``AckMessageProcessor.appendAck``: an ``ack`` (or ``bAck`` for a :class:`BatchAckMsg`)
    due at the acknowledged check point's ``popTime + invisibleTime``."""
    tag = names.BATCH_ACK_TAG if isinstance(ack, BatchAckMsg) else names.ACK_TAG
    return _record(revive_topic, revive_qid, tag, ack.encode(), deliver_ms, ack.unique_id(),
                   store_host, now_ms)
