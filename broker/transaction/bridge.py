"""Reading and writing the two transaction system queues (RocketMQ
``broker/transaction/queue/TransactionalMessageBridge.java``).

* half messages: ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 — prepared messages with their real topic
  and queue in ``REAL_TOPIC`` / ``REAL_QID`` (written by the send processor,
  :func:`rocketmq_emu.broker.processors.send.to_half_message`), and the copies the check service puts back;
* op records: ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` queue 0 — one per decided half message, tag ``d``
  (``TransactionalMessageUtil.REMOVETAG``), body = the half message's queue offset in decimal.

The check service's progress is two consumer offsets of the system group ``CID_RMQ_SYS_TRANS``
(one on each queue) in ``consumerOffset.json``, so a restarted broker resumes where it was.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from rocketmq_emu.broker.commitlog.record import MessageRecord, decode_record
from rocketmq_emu.broker.message import (
    PROPERTY_TAGS,
    PROPERTY_TRANSACTION_CHECK_TIMES,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    PROPERTY_WAIT_STORE_MSG_OK,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)

log = logging.getLogger(__name__)

#: ``TransactionalMessageUtil.buildConsumerGroup()``.
CID_RMQ_SYS_TRANS = "CID_RMQ_SYS_TRANS"
#: ``TransactionalMessageUtil.REMOVETAG``.
REMOVE_TAG = "d"
#: ``TopicValidator.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC`` (4.9.8 spelling).
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
HALF_QUEUE_ID = 0
PERM_RW = 0x4 | 0x2
_BATCH = 32


class TransactionalMessageBridge:
    """Half / op queue access on top of a :class:`rocketmq_emu.broker.store.MessageStore`.

    ``store_host`` is the broker's ``(ip, port)`` (born/store host of op records); ``now_ms``
    a callable giving the injected clock in milliseconds.
    """

    def __init__(self, store: Any, store_host: tuple[str, int], now_ms: Any,
                 topic_config: Any = None, consumer_offsets: Any = None) -> None:
        self.store = store
        self.store_host = store_host
        self.now_ms = now_ms
        self.topic_config = topic_config if topic_config is not None else store.topic_config
        self.consumer_offsets = (consumer_offsets if consumer_offsets is not None
                                 else store.consumer_offsets)
        self.rng = random.Random()

    # --- topics -----------------------------------------------------------------------------
    def ensure_topics(self) -> None:
        """Create the half and op topics (1 queue, RW) as ``selectTopicConfig`` does on use."""
        for topic in (RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC):
            self.topic_config.create_topic_in_send_message_back_method(topic, 1, PERM_RW, 0)

    # --- offsets ----------------------------------------------------------------------------
    def fetch_consume_offset(self, topic: str) -> int:
        """``fetchConsumeOffset``: the stored offset, else the queue's min offset."""
        offset = self.consumer_offsets.query_offset(CID_RMQ_SYS_TRANS, topic, HALF_QUEUE_ID)
        if offset < 0:
            offset = self.store.get_min_offset_in_queue(topic, HALF_QUEUE_ID)
        return max(offset, 0)

    def update_consume_offset(self, topic: str, offset: int) -> None:
        """``updateConsumeOffset``."""
        self.consumer_offsets.commit_offset("broker", CID_RMQ_SYS_TRANS, topic, HALF_QUEUE_ID,
                                            offset)

    def max_offset(self, topic: str) -> int:
        """The queue's exclusive max offset."""
        return self.store.get_max_offset_in_queue(topic, HALF_QUEUE_ID)

    def min_offset(self, topic: str) -> int:
        """The queue's min offset."""
        return self.store.get_min_offset_in_queue(topic, HALF_QUEUE_ID)

    # --- reading ----------------------------------------------------------------------------
    def read(self, topic: str, offset: int, max_nums: int = _BATCH) -> list[MessageRecord]:
        """Records of ``topic`` queue 0 from ``offset`` (at most ``max_nums``)."""
        result = self.store.get_message(CID_RMQ_SYS_TRANS, topic, HALF_QUEUE_ID, offset, max_nums)
        records = []
        for raw, qoff in zip(result.messages, result.queue_offsets, strict=False):
            try:
                rec = decode_record(raw)
            except Exception as exc:
                log.error("cannot decode a %s record at queue offset %d: %s", topic, qoff, exc)
                continue
            records.append(rec)
        return records

    def half_message_at(self, queue_offset: int) -> MessageRecord | None:
        """The half message stored at ``queue_offset`` of the half queue, if readable."""
        records = self.read(RMQ_SYS_TRANS_HALF_TOPIC, queue_offset, 1)
        if records and records[0].queue_offset == queue_offset:
            return records[0]
        return None

    def look_message_by_offset(self, commitlog_offset: int) -> MessageRecord | None:
        """``getHalfMessageByOffset``: the record at a commitlog offset."""
        try:
            return self.store.look_message_by_offset(commitlog_offset)
        except Exception as exc:
            log.warning("look message by offset %d failed: %s", commitlog_offset, exc)
            return None

    # --- writing ----------------------------------------------------------------------------
    def put_op_message(self, half: MessageRecord) -> bool:
        """``putOpMessage(msgExt, REMOVETAG)``: record that ``half`` is decided."""
        self.ensure_topics()
        record = MessageRecord(
            topic=RMQ_SYS_TRANS_OP_HALF_TOPIC,
            body=str(half.queue_offset).encode("utf-8"),
            queue_id=HALF_QUEUE_ID,
            # TransactionalMessageBridge.makeOpMessageInner: the string of ``new Message(opTopic,
            # "d", body)`` (TAGS, then WAIT=true from its constructor); the UNIQ_KEY that
            # MessageClientIDSetter.setUniqID puts in the map afterwards is never stored (nor
            # indexed, the index reading what is stored).
            properties={
                PROPERTY_TAGS: REMOVE_TAG,
                PROPERTY_WAIT_STORE_MSG_OK: "true",
            },
            born_timestamp=self.now_ms(),
            born_host=self.store_host,
            store_host=self.store_host,
        )
        result = self.store.put_message(record)
        ok = _status(result) == "PUT_OK"
        if not ok:
            log.error("writing the op record of half offset %d failed: %s", half.queue_offset,
                      _status(result))
        return ok

    def put_back_half_message(self, half: MessageRecord) -> MessageRecord | None:
        """``putBackHalfMsgQueue`` / ``renewHalfMessageInner``: append a copy of ``half`` (with
        its current properties, e.g. the incremented ``TRANSACTION_CHECK_TIMES``) to the half
        queue; returns the copy with its new queue/commitlog offsets, or None on failure."""
        # renewHalfMessageInner sets neither reconsumeTimes nor the flag: both are 0 on the copy
        # (and on a message committed from it after a check-back).
        copy = half.derive(RMQ_SYS_TRANS_HALF_TOPIC, HALF_QUEUE_ID, dict(half.properties), 0)
        copy.flag = 0
        result = self.store.put_message(copy)
        if _status(result) != "PUT_OK":
            log.error("PutBackToHalfQueueReturnResult failed: %s, topic %s msgId %s",
                      _status(result), half.properties.get("REAL_TOPIC"),
                      half.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))
            return None
        copy.queue_offset = result.append.queue_offset
        copy.physical_offset = result.append.wrote_offset
        copy.store_timestamp = result.append.store_timestamp
        return copy

    def put_discarded(self, half: MessageRecord) -> bool:
        """``resolveDiscardMsg``: move a half message checked too often to
        ``TRANS_CHECK_MAX_TIME_TOPIC`` (1 queue)."""
        self.topic_config.create_topic_in_send_message_back_method(
            TRANS_CHECK_MAX_TIME_TOPIC, 1, PERM_RW, 0)
        record = MessageRecord(
            topic=TRANS_CHECK_MAX_TIME_TOPIC,
            body=half.body,
            queue_id=0,
            flag=half.flag,
            properties=dict(half.properties),
            sys_flag=half.sys_flag,
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            store_host=half.store_host,
            reconsume_times=half.reconsume_times,
        )
        return _status(self.store.put_message(record)) == "PUT_OK"


    def put_resumed(self, record: MessageRecord) -> bool:
        """``AdminBrokerProcessor.resumeCheckHalfMessage``: put a copy of ``record`` (a half
        message, usually one discarded to ``TRANS_CHECK_MAX_TIME_TOPIC``) back on the half queue
        with ``TRANSACTION_CHECK_TIMES`` 0, so the check service asks its producer again from
        scratch. Java's ``toMessageExtBrokerInner`` keeps flag, sysFlag, hosts, born time and
        reconsume times."""
        props = dict(record.properties)
        props[PROPERTY_TRANSACTION_CHECK_TIMES] = "0"
        copy = record.derive(RMQ_SYS_TRANS_HALF_TOPIC, HALF_QUEUE_ID, props)
        return _status(self.store.put_message(copy)) == "PUT_OK"


def _status(result: Any) -> str:
    status = getattr(result, "status", None)
    return getattr(status, "name", None) or str(status)
