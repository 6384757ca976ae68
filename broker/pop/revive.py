"""``PopReviveService``: check points of popped messages, and their redelivery to the POP retry
topic when their invisible time ends unacknowledged.

Every non-orderly POP writes a CK (``PopCheckPoint``) record, every ACK_MESSAGE an ``ack``
(``AckMsg``) record, every BATCH_ACK_MESSAGE a ``bAck`` record into the revive topic
(:mod:`rocketmq_emu.broker.pop.revive_log`). That topic is the durable state; this service also
keeps the live check points in memory and, on the **business clock**, revives each one at its
``reviveTime`` (``popTime + invisibleTime``): every message whose bit is not set is re-put to
``%RETRY%<group>_<topic>`` as ``PopReviveService.reviveRetry`` does (queue 0, same body, tags,
flag, sysFlag, born time and properties, ``RECONSUME_TIME`` + 1, ``1ST_POP_TIME`` set on the first
retry, born and store host = this broker; the retry topic created with one queue and the group's
offset initialised to 0).

Design choices (where this differs from Apache RocketMQ 5 on disk or in timing):

* CK and ACK records go straight into the revive queue (Java routes them through its timer by
  ``TIMER_DELIVER_MS``); the service schedules revival itself, exactly at ``reviveTime`` (Java
  revives one to a few seconds later, when its scan of the timer-delivered records has moved
  ``ackTimeInterval + 1 s`` past it).
* After reviving a check point, the service appends a ``bAck`` record listing the offsets it sent
  to retry. It marks the check point finished in the log, so a restart does not revive it twice
  (Java needs no such record: its timer delivers CKs in revive-time order, so its committed revive
  offset alone says what is done).
* Revive offset (``CID_RMQ_SYS_REVIVE_GROUP`` on each revive queue, in consumerOffset.json): as
  in Java, the offset of the last revive record whose processing is finished; here that is one
  below the oldest check point still live (or the last record of the queue when none is). A
  restart re-reads each revive queue from that offset + 1 and rebuilds the live check points; one
  whose time already passed is revived at once. What was committed is never read again.
* An ACK is matched to a live check point of the same topic, group, queue, pop time and broker
  that still waits for the acknowledged offset, preferring Java's full merge key (with the start
  offset) and a revive time equal to the ACK's due time (``TIMER_DELIVER_MS``). Java's timer
  separates a CK from a CK re-written in the same millisecond by delivery time; here the due time
  does. Without the start offset, Apache's proxy's receipt handle after a changed invisible time
  (``LocalMessageService.changeInvisibleTime`` keeps the old check point's start offset) still
  acknowledges the new check point.
* A message that cannot be re-put is retried with the next ``ckRewriteIntervalsInSeconds`` delay
  (Java re-writes a CK with that extra invisible time, ``rePutCK``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.commitlog.record import MessageRecord, decode_record
from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.boot import ensure_revive_topic
from rocketmq_emu.broker.pop.revive_bodies import (
    AckMsg,
    BatchAckMsg,
    PopCheckPoint,
    decode_revive_body,
    java_long,
)
from rocketmq_emu.broker.pop.revive_log import (
    ack_record,
    ck_record,
    ensure_pop_retry_topic,
)
from rocketmq_emu.broker.processors.common import status_name

log = logging.getLogger(__name__)

_LooseKey = tuple[Any, ...]


@dataclass(eq=False)
class LiveCheckPoint:
    """A check point not yet fully acknowledged nor revived."""

    ck: PopCheckPoint
    revive_qid: int
    #: Offset of the CK record in its revive queue.
    offset: int
    timer: Any = None
    attempts: int = 0
    loose_key: _LooseKey = field(default=())


def _loose_key(topic: Any, group: Any, queue_id: int, pop_time: int, broker: Any) -> _LooseKey:
    return (topic, group, queue_id, pop_time, broker)


class PopReviveService:
    """Live check points by merge key, revived on ``ctx.clock``; the revive topic as their log."""

    def __init__(self, ctx: Any, revive_queue_num: int = names.REVIVE_QUEUE_NUM) -> None:
        self.ctx = ctx
        self.revive_queue_num = revive_queue_num
        self.revive_topic = names.revive_topic(ctx.cluster_name)
        #: Live check points by (revive queue, offset of their CK record).
        self.live: dict[tuple[int, int], LiveCheckPoint] = {}
        self._loose: dict[_LooseKey, list[LiveCheckPoint]] = {}
        self._by_queue: dict[int, dict[int, LiveCheckPoint]] = {}
        self.running = False
        #: Called with (retry_topic, queue_id) after a message was re-put (long polling).
        self.on_revived: Any = None

    @property
    def broker_name(self) -> str:
        return self.ctx.broker_name

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Create the revive topic, rebuild the live check points from the revive queues (from
        each committed revive offset + 1) and schedule them."""
        ensure_revive_topic(self.ctx.topic_config, self.ctx.cluster_name, self.revive_queue_num)
        self.running = True
        for qid in range(self.revive_queue_num):
            self._replay(qid)
        for live in list(self.live.values()):
            self._schedule(live)
        for qid in list(self._by_queue):
            self._commit(qid)

    def stop(self) -> None:
        """Cancel the revive timers (the check points stay in the log)."""
        self.running = False
        for live in self.live.values():
            if live.timer is not None and live.timer.active():
                live.timer.cancel()
            live.timer = None

    def _replay(self, qid: int) -> None:
        store = self.ctx.store
        committed = self.ctx.consumer_offsets.query_offset(names.REVIVE_GROUP,
                                                           self.revive_topic, qid)
        offset = max(committed + 1, store.get_min_offset_in_queue(self.revive_topic, qid))
        end = store.get_max_offset_in_queue(self.revive_topic, qid)
        while offset < end:
            result = store.get_message(names.REVIVE_GROUP, self.revive_topic, qid, offset, 32)
            if not result.messages:
                if result.next_begin_offset <= offset:
                    break
                offset = result.next_begin_offset
                continue
            for raw, qoff in zip(result.messages, result.queue_offsets, strict=True):
                self._replay_record(decode_record(raw), qid, qoff)
            offset = result.next_begin_offset

    def _replay_record(self, record: MessageRecord, qid: int, qoff: int) -> None:
        try:
            body = decode_revive_body(record.tags, record.body)
        except (ValueError, TypeError) as exc:
            log.warning("revive queue %d offset %d: unreadable %s body: %s", qid, qoff,
                        record.tags, exc)
            return
        if isinstance(body, PopCheckPoint):
            if body.topic is None or body.cid is None:
                return
            body.revive_offset = qoff
            self._track(body, qid, qoff)
        elif isinstance(body, AckMsg):
            try:
                deliver_ms = int(record.properties.get(names.PROPERTY_TIMER_DELIVER_MS, ""))
            except ValueError:
                deliver_ms = None
            self._apply_ack(body, deliver_ms)

    # --- writing --------------------------------------------------------------------------------
    def _put(self, record: MessageRecord) -> Any:
        result = self.ctx.store.put_message(record)
        if status_name(result.status) != "PUT_OK" or result.append is None:
            log.error("put %s to %s failed: %s", record.tags, record.topic,
                      status_name(result.status))
            return None
        return result.append

    def append_ck(self, ck: PopCheckPoint, revive_qid: int) -> bool:
        """Write a CK record and track it (``PopBufferMergeService.addCkJustOffset``)."""
        append = self._put(ck_record(ck, self.revive_topic, revive_qid, self.ctx.store_host,
                                     self.ctx.now_ms()))
        if append is None:
            return False
        ck.revive_offset = append.queue_offset
        live = self._track(ck, revive_qid, append.queue_offset)
        if live is not None:
            self._schedule(live)
        return True

    def append_ack(self, ack: AckMsg, revive_qid: int, deliver_ms: int) -> bool:
        """Write an ``ack``/``bAck`` record and apply it to the live check point."""
        append = self._put(ack_record(ack, self.revive_topic, revive_qid, deliver_ms,
                                      self.ctx.store_host, self.ctx.now_ms()))
        if append is None:
            return False
        self._apply_ack(ack, deliver_ms)
        self._commit(revive_qid)
        return True

    # --- tracking -------------------------------------------------------------------------------
    def _track(self, ck: PopCheckPoint, qid: int, offset: int) -> LiveCheckPoint | None:
        old = self.live.get((qid, offset))
        if old is not None:
            self._untrack(old)
        live = LiveCheckPoint(ck, qid, offset,
                              loose_key=_loose_key(ck.topic, ck.cid, ck.queue_id, ck.pop_time,
                                                   ck.broker_name))
        self.live[(qid, offset)] = live
        self._loose.setdefault(live.loose_key, []).append(live)
        self._by_queue.setdefault(qid, {})[offset] = live
        return live

    def _untrack(self, live: LiveCheckPoint) -> None:
        if live.timer is not None and live.timer.active():
            live.timer.cancel()
        live.timer = None
        if self.live.get((live.revive_qid, live.offset)) is live:
            del self.live[(live.revive_qid, live.offset)]
        same = self._loose.get(live.loose_key)
        if same is not None and live in same:
            same.remove(live)
            if not same:
                del self._loose[live.loose_key]
        self._by_queue.get(live.revive_qid, {}).pop(live.offset, None)

    def _find(self, ack: AckMsg, offset: int, deliver_ms: int | None
              ) -> tuple[LiveCheckPoint | None, int]:
        """The live check point an ACK of ``offset`` is for, and the offset's message index in
        it: same topic, group, queue, pop time and broker (Java's merge key without the start
        offset), still waiting for ``offset``; preferring the same start offset and a revive
        time equal to the ACK's due time. A check point due (``reviveTime - ackTimeInterval``)
        after the ACK is not a candidate: Java's timer would deliver the ACK before it (two
        check points share a merge key when the invisible time is changed in the millisecond
        of the pop). ``(None, -1)`` when there is none."""
        broker = ack.broker_name if ack.broker_name and ack.broker_name.strip() else \
            self.broker_name
        candidates = self._loose.get((ack.topic, ack.consumer_group, ack.queue_id, ack.pop_time,
                                      broker))  # _loose_key, inline: once per ACK
        if not candidates:
            return None, -1
        best: LiveCheckPoint | None = None
        best_index = best_rank = -1
        for cand in candidates:
            ck = cand.ck
            index = ck.index_of_ack(offset)
            if index < 0 or ck.is_acked(index):
                continue
            rank = 2 if ck.start_offset == ack.start_offset else 0
            if deliver_ms is not None:
                revive_time = ck.revive_time
                if java_long(revive_time - names.ACK_TIME_INTERVAL_MS) > deliver_ms:
                    continue  # its deliver_time_ms(): Java's timer has not delivered it yet
                if revive_time == deliver_ms:
                    rank += 1
            if rank > best_rank:
                best, best_index, best_rank = cand, index, rank
        return best, best_index

    def _apply_ack(self, ack: AckMsg, deliver_ms: int | None) -> None:
        offsets = (ack.ack_offset_list or []) if isinstance(ack, BatchAckMsg) else [ack.ack_offset]
        for offset in offsets:
            live, index = self._find(ack, offset, deliver_ms)
            if live is None:
                continue
            live.ck.mark_acked(index)
            if not live.ck.unacked_count():
                self._untrack(live)

    def _schedule(self, live: LiveCheckPoint, extra_ms: int = 0) -> None:
        if not self.running:
            return
        if live.timer is not None and live.timer.active():
            live.timer.cancel()
        delay_ms = max(0, live.ck.revive_time + extra_ms - self.ctx.now_ms())
        live.timer = self.ctx.clock.callLater(delay_ms / 1000.0, self._due, live)

    def _commit(self, qid: int) -> None:
        """Commit ``CID_RMQ_SYS_REVIVE_GROUP``'s offset on revive queue ``qid``."""
        live = self._by_queue.get(qid)
        if live:
            done = min(live) - 1
        else:
            done = self.ctx.store.get_max_offset_in_queue(self.revive_topic, qid) - 1
        offsets = self.ctx.consumer_offsets
        if done >= 0 and done > offsets.query_offset(names.REVIVE_GROUP, self.revive_topic, qid):
            offsets.commit_offset(names.LOCAL_HOST, names.REVIVE_GROUP, self.revive_topic, qid,
                                  done)

    # --- revival --------------------------------------------------------------------------------
    def _due(self, live: LiveCheckPoint) -> None:
        live.timer = None
        if self.live.get((live.revive_qid, live.offset)) is not live:
            return
        try:
            self.revive(live)
        except Exception:
            log.exception("revive of %s failed", live.ck)
            self._retry_later(live)

    def _retry_later(self, live: LiveCheckPoint) -> None:
        intervals = names.CK_REWRITE_INTERVALS_S
        wait_s = intervals[min(live.attempts, len(intervals) - 1)]
        live.attempts += 1
        self._schedule(live, extra_ms=self.ctx.now_ms() - live.ck.revive_time + wait_s * 1000)

    def revive(self, live: LiveCheckPoint) -> None:
        """``mergeAndRevive`` + ``reviveMsgFromCk`` for one due check point."""
        ctx = self.ctx
        ck = live.ck
        normal = names.parse_normal_topic_of_group(ck.topic, ck.cid) \
            if ck.topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX) else ck.topic
        revived: list[int] = []
        if ctx.topic_config.select_topic_config(normal) is None:
            log.warning("reviveQueueId=%d, can not get normal topic %s, then continue",
                        live.revive_qid, ck.topic)
        elif ctx.subscription_groups.find_subscription_group_config(ck.cid) is None:
            log.warning("reviveQueueId=%d, can not get cid %s, then continue", live.revive_qid,
                        ck.cid)
        else:
            for offset in ck.unacked_offsets():
                message = self._biz_message(ck, offset)
                if message is None:
                    log.warning("reviveQueueId=%d, can not get biz msg %s@%d offset %d",
                                live.revive_qid, ck.topic, ck.queue_id, offset)
                    continue
                if not self._revive_retry(ck, message):
                    self._retry_later(live)
                    return
                ck.ack(offset)
                revived.append(offset)
        if revived:
            done = BatchAckMsg(start_offset=ck.start_offset, consumer_group=ck.cid,
                               topic=ck.topic, queue_id=ck.queue_id, pop_time=ck.pop_time,
                               ack_offset_list=revived)
            done.broker_name = ck.broker_name
            self._put(ack_record(done, self.revive_topic, live.revive_qid, ck.revive_time,
                                 ctx.store_host, ctx.now_ms()))
        self._untrack(live)
        self._commit(live.revive_qid)

    def _biz_message(self, ck: PopCheckPoint, offset: int) -> MessageRecord | None:
        """``getBizMessage``: the message at ``offset`` of the check point's queue."""
        store = self.ctx.store
        units = store.get_consume_queue_units(ck.topic, ck.queue_id, offset, 1)
        if not units:
            return None
        return store.look_message_by_offset(units[0][0])

    def _revive_retry(self, ck: PopCheckPoint, message: MessageRecord) -> bool:
        """``PopReviveService.reviveRetry``."""
        ctx = self.ctx
        if ck.topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
            topic = ck.topic
        else:
            topic = names.pop_retry_topic(ck.topic, ck.cid,
                                          ctx.setting("enable_retry_topic_v2",
                                                      names.ENABLE_RETRY_TOPIC_V2))
        props = dict(message.properties)
        if message.reconsume_times == 0 or names.PROPERTY_FIRST_POP_TIME not in props:
            props[names.PROPERTY_FIRST_POP_TIME] = str(ck.pop_time)
        record = MessageRecord(
            topic=topic,
            body=message.body,
            queue_id=0,
            flag=message.flag,
            properties=props,
            sys_flag=message.sys_flag,
            born_timestamp=message.born_timestamp,
            born_host=ctx.store_host,
            store_host=ctx.store_host,
            reconsume_times=message.reconsume_times + 1,
        )
        ensure_pop_retry_topic(ctx.topic_config, ctx.consumer_offsets, topic, ck.cid)
        if self._put(record) is None:
            return False
        ctx.stats.on_put(topic, 1, len(record.body))
        if self.on_revived is not None:
            self.on_revived(topic, 0)
        return True
