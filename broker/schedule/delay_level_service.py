"""Delay levels (RocketMQ 4.x ``ScheduleMessageService``): enqueue transform and delivery.

Enqueue (:func:`transform_delay_message`, called by the send processor before the put):
a message with ``DELAY = n > 0`` (transaction type NOT or COMMIT) gets ``REAL_TOPIC`` /
``REAL_QID``, its properties string recomputed while it still contains ``DELAY``, and is
stored on ``SCHEDULE_TOPIC_XXXX`` queue ``n - 1`` (n clamped to the maximum level). The consume
queue's tagsCode of such a record is its deliver time, ``storeTimestamp + delay(n)``: the
store computes it with :func:`rocketmq_emu.broker.delay_levels.deliver_time_ms`.

Delivery (:class:`DelayLevelService`): one timer per level reads the level's queue from the
offset persisted in ``config/delayOffset.json``; a due message is restored to its real
topic/queue as a new commitlog record (:func:`message_timeup`) and the offset advances; the
timer then re-arms for the exact deliver time of the next message (RocketMQ polls every
100 ms; a level's deliver times are monotonic, so one ``callLater`` per level is enough, and
the store's arrival listener wakes an idle level). A failed re-put is retried after
``retry_delay_ms`` at the same offset, never skipped. Offsets persist every
``flush_interval_ms`` and at shutdown.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet.task import LoopingCall

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.delay_levels import DelayLevels, delay_level_of
from rocketmq_emu.broker.message import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    properties_to_string,
    transaction_type,
)
from rocketmq_emu.broker.schedule.hash_wheel import now_ms
from rocketmq_emu.broker.schedule.offsets import DelayOffsetTable

log = logging.getLogger(__name__)

DELAY_FOR_A_WHILE_MS = 100  # ScheduleMessageService.DELAY_FOR_A_WHILE: retry after a failed put
BATCH = 256  # consume-queue units read per pass; a bigger backlog yields to the reactor


def transform_delay_message(record: MessageRecord, levels: DelayLevels) -> MessageRecord:
    """Reroute a DELAY > 0 message to SCHEDULE_TOPIC_XXXX (in place; returns ``record``).

    Mirrors ``HookUtils.transformDelayLevelMessage`` / R49 ``CommitLog.asyncPutMessage``.
    Timer properties are dropped first, as ``HookUtils.checkIfTimerMessage`` does when a level
    is present. Records without a positive level, or prepared/rollback transaction halves,
    are returned unchanged.
    """
    level = delay_level_of(record)
    if level <= 0:
        return record
    if transaction_type(record.sys_flag) not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
        return record
    props = dict(record.properties)
    for key in (PROPERTY_TIMER_DELIVER_MS, PROPERTY_TIMER_DELAY_SEC, PROPERTY_TIMER_DELAY_MS):
        props.pop(key, None)
    if level > levels.max_level:
        level = levels.max_level
        props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
    props[PROPERTY_REAL_TOPIC] = record.topic
    props[PROPERTY_REAL_QUEUE_ID] = str(record.queue_id)
    record.set_properties(props)  # the string is recomputed with DELAY still in it
    record.topic = RMQ_SYS_SCHEDULE_TOPIC
    record.queue_id = DelayLevels.queue_id(level)
    return record


def message_timeup(record: MessageRecord) -> MessageRecord:
    """The record to re-put when a delayed message is due (``ScheduleMessageService.messageTimeup``).

    Same body, flag, sysFlag, born timestamp/host, store host, reconsumeTimes; topic and queue
    from REAL_TOPIC / REAL_QID. Quirk kept on purpose: Java computes the properties string
    before removing DELAY, so the stored string still carries DELAY, REAL_TOPIC and REAL_QID
    (consumers see them); only the in-memory map loses DELAY.
    """
    props = dict(record.properties)
    props_str = record.properties_str
    props.pop(PROPERTY_DELAY_TIME_LEVEL, None)
    for key in (PROPERTY_TIMER_DELIVER_MS, PROPERTY_TIMER_DELAY_SEC):  # R5 clears these too
        props.pop(key, None)
    real_topic = record.properties.get(PROPERTY_REAL_TOPIC, record.topic)
    try:
        real_qid = int(record.properties.get(PROPERTY_REAL_QUEUE_ID, "0"))
    except ValueError:
        real_qid = 0
    new = record.derive(real_topic, real_qid, props)
    # A record built in memory (not decoded) has no string yet: the map still holds DELAY.
    new.properties_str = props_str if props_str is not None else properties_to_string(
        record.properties
    )
    return new


def put_ok(result: Any) -> bool:
    """True when a PutMessageResult reports PUT_OK (enum or plain string status)."""
    status = getattr(result, "status", result)
    return getattr(status, "name", status) == "PUT_OK"


class DelayLevelService:
    """One precise timer per delay level over ``SCHEDULE_TOPIC_XXXX``."""

    def __init__(
        self,
        store: Any,
        clock: Any,
        levels: DelayLevels,
        offsets: DelayOffsetTable,
        flush_interval_ms: int = 10_000,
        retry_delay_ms: int = DELAY_FOR_A_WHILE_MS,
    ) -> None:
        self.store = store
        self.clock = clock
        self.levels = levels
        self.offsets = offsets
        self.flush_interval_ms = flush_interval_ms
        self.retry_delay_ms = retry_delay_ms
        self._calls: dict[int, Any] = {}
        self._persist_loop: LoopingCall | None = None
        self._running = False
        self._dirty = False
        self.delivered = 0
        self.dropped = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Arm every level at once (pending messages due during downtime go out now)."""
        self._running = True
        for level in range(1, self.levels.max_level + 1):
            self._arm(level, 0.0)
        loop = LoopingCall(self.persist)
        loop.clock = self.clock
        loop.start(self.flush_interval_ms / 1000.0, now=False)
        self._persist_loop = loop

    def shutdown(self) -> None:
        """Cancel the timers and persist the offsets."""
        self._running = False
        for call in self._calls.values():
            if call.active():
                call.cancel()
        self._calls.clear()
        if self._persist_loop is not None and self._persist_loop.running:
            self._persist_loop.stop()
        self.persist(force=True)

    def persist(self, force: bool = False) -> None:
        """Write ``config/delayOffset.json`` (periodically only when an offset moved)."""
        if not (force or self._dirty):
            return
        self._dirty = False
        try:
            self.offsets.persist()
        except Exception:
            log.exception("persisting delay offsets failed")

    # -- arrival -----------------------------------------------------------------------------
    def on_arrival(self, queue_id: int, tags_code: int) -> None:
        """A message arrived on SCHEDULE_TOPIC_XXXX ``queue_id``: wake the level if idle."""
        level = DelayLevels.level(queue_id)
        if not self._running or not 1 <= level <= self.levels.max_level:
            return
        call = self._calls.get(level)
        if call is None or not call.active():
            self._arm_at(level, tags_code)

    # -- delivery ----------------------------------------------------------------------------
    def _arm(self, level: int, delay_s: float) -> None:
        call = self._calls.get(level)
        if call is not None and call.active():
            call.cancel()
        self._calls[level] = self.clock.callLater(max(delay_s, 0.0), self._deliver, level)

    def _arm_at(self, level: int, deliver_ms: int) -> None:
        delay = deliver_ms / 1000.0 - self.clock.seconds()
        # Never wake before the store clock reads deliver_ms (float rounding): >= 1 ms if future.
        if deliver_ms > now_ms(self.clock):
            delay = max(delay, 0.001)
        self._arm(level, delay)

    def _deliver(self, level: int) -> None:
        self._calls.pop(level, None)
        if not self._running:
            return
        try:
            self._deliver_batch(level)
        except Exception:
            log.exception("delay level %d: delivery failed; retrying", level)
            self._arm(level, self.retry_delay_ms / 1000.0)

    def _deliver_batch(self, level: int) -> None:
        store = self.store
        queue_id = DelayLevels.queue_id(level)
        delay_ms = self.levels.delay_ms(level)
        offset = self.offsets.get(level)
        min_offset = store.get_min_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id)
        if offset < min_offset:
            log.warning("delay level %d: offset %d below min %d, correcting", level, offset,
                        min_offset)
            offset = min_offset
            self.offsets.set(level, offset)
        units = store.get_consume_queue_units(RMQ_SYS_SCHEDULE_TOPIC, queue_id, offset, BATCH)
        if not units:
            return  # idle until the arrival listener wakes us
        for commitlog_offset, _size, tags in units:
            now = now_ms(self.clock)
            deliver_ms = tags
            if deliver_ms > now + delay_ms:  # clock-skew guard (correctDeliverTimestamp)
                deliver_ms = now
            if deliver_ms > now:
                self._arm_at(level, deliver_ms)
                return
            record = store.look_message_by_offset(commitlog_offset)
            if record is None:
                log.error("delay level %d: no message at commitlog offset %d (queue offset %d);"
                          " skipped", level, commitlog_offset, offset)
            else:
                restored = message_timeup(record)
                if restored.topic == RMQ_SYS_TRANS_HALF_TOPIC:
                    log.error("delay level %d: dropping message for %s at offset %d", level,
                              RMQ_SYS_TRANS_HALF_TOPIC, commitlog_offset)
                    self.dropped += 1
                else:
                    result = store.put_message(restored)
                    if not put_ok(result):
                        log.warning("delay level %d: re-put of offset %d failed (%s); retrying",
                                    level, offset, getattr(result, "status", result))
                        self._arm(level, self.retry_delay_ms / 1000.0)
                        return
                    self.delivered += 1
            offset += 1
            self.offsets.set(level, offset)
            self._dirty = True
        # Batch exhausted: continue on the next reactor turn so a backlog does not starve it.
        self._arm(level, 0.0)
