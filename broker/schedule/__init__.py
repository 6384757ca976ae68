"""Delayed delivery: RocketMQ delay levels, retries / dead letters, arbitrary-time timers.

API for the broker (send processor, CONSUMER_SEND_MSG_BACK processor, controller)::

    from rocketmq_emu.broker.schedule import ScheduleConfig, ScheduleServices, TimerMessageError

    services = ScheduleServices(store, reactor, ScheduleConfig(store_path_root_dir=root))
    services.load()      # after store.load(): recover schedule_log, cursors
    services.start()     # after store.start(): registers store.add_arrival_listener, arms timers
    ...
    services.shutdown()  # before store.shutdown(): persists delayOffset.json and checkpoint

Send path (processor, before ``store.put_message``; see :mod:`.enqueue`)::

    try:
        transform_for_put(record, now_ms, levels,          # timer -> rmq_sys_wheel_timer,
                          timer_enabled=timer_service_runs)  # DELAY -> SCHEDULE_TOPIC_XXXX
    except TimerMessageError as exc:
        return response(MESSAGE_ILLEGAL, remark=str(exc))

The consume-queue tagsCode of a ``SCHEDULE_TOPIC_XXXX`` record (its deliver time) is computed
by the store itself with :func:`rocketmq_emu.broker.delay_levels.deliver_time_ms`, from the same
``messageDelayLevel`` table (formats layer, below both).

CONSUMER_SEND_MSG_BACK::

    back = services.send_back(original, group, delay_level, max_reconsume_times, version,
                              retry_max_times=group_cfg.retry_max_times,
                              retry_queue_nums=group_cfg.retry_queue_nums)
    transform_delay_message(back.record, levels)   # routes DELAY via the schedule topic
    store.put_message(back.record)

Modules: enqueue (the send-path rewrite), delay_level_service (4.x levels), retry (send-back routing),
timer_message (R5 timer transform/convert), timer_service + timer_loader (replayer, loader,
dispatcher), schedule_log / dispatch_log / checkpoint (our crc32c-protected formats),
hash_wheel (timing wheel), offsets (delayOffset.json).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL, DelayLevels
from rocketmq_emu.broker.message import RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC
from rocketmq_emu.broker.schedule.delay_level_service import (
    DelayLevelService,
    transform_delay_message,
)
from rocketmq_emu.broker.schedule.enqueue import transform_for_put
from rocketmq_emu.broker.schedule.offsets import delay_offset_table
from rocketmq_emu.broker.schedule.retry import SendBack, build_send_back_record
from rocketmq_emu.broker.schedule.timer_message import TimerMessageError, transform_timer_message
from rocketmq_emu.broker.schedule.timer_service import TimerConfig, TimerService

__all__ = [
    "ScheduleConfig",
    "ScheduleServices",
    "SendBack",
    "TimerConfig",
    "TimerMessageError",
    "transform_for_put",
    "transform_delay_message",
    "transform_timer_message",
]


@dataclass
class ScheduleConfig:
    """Settings (broker.conf names in comments)."""

    store_path_root_dir: str = "."  # storePathRootDir
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL  # messageDelayLevel
    flush_delay_offset_interval_ms: int = 10_000  # flushDelayOffsetInterval
    timer: TimerConfig = field(default_factory=TimerConfig)


class ScheduleServices:
    """Delay levels + timer service over one store, on one clock."""

    #: The only topics :meth:`on_arrival` acts on.
    ARRIVAL_TOPICS = frozenset({RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC})

    def __init__(self, store: Any, clock: Any, config: ScheduleConfig | None = None) -> None:
        self.store = store
        self.clock = clock
        self.config = config or ScheduleConfig()
        self.levels = DelayLevels.parse(self.config.message_delay_level)
        root = self.config.store_path_root_dir
        offsets = delay_offset_table(store, os.path.join(root, "config", "delayOffset.json"))
        self.delay = DelayLevelService(store, clock, self.levels, offsets,
                                       self.config.flush_delay_offset_interval_ms)
        self.timer = TimerService(store, clock, root, self.config.timer)
        self._listening = False

    def load(self) -> bool:
        """Recover the timer's files and cursors."""
        return self.timer.load()

    def start(self) -> None:
        """Register the arrival listener (for :data:`ARRIVAL_TOPICS` only) and start both
        services."""
        if not self._listening:
            self.store.add_arrival_listener(self.on_arrival, topics=self.ARRIVAL_TOPICS)
            self._listening = True
        self.delay.start()
        self.timer.start()

    def shutdown(self) -> None:
        """Stop timers; persist delayOffset.json and the timer checkpoint."""
        self.delay.shutdown()
        self.timer.shutdown()

    # -- hooks -------------------------------------------------------------------------------
    def on_arrival(self, topic: str, queue_id: int, queue_offset: int, tags_code: int,
                   record: Any = None) -> None:
        """Store arrival listener: wakes the delay level or the timer replayer."""
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            self.delay.on_arrival(queue_id, tags_code)
        elif topic == TIMER_TOPIC:
            self.timer.on_arrival(queue_id, queue_offset, record)

    def send_back(self, original: MessageRecord, group: str, delay_level: int = 0,
                  max_reconsume_times: int | None = None, request_version: int = 0,
                  **kwargs: Any) -> SendBack:
        """The record CONSUMER_SEND_MSG_BACK stores (see :mod:`rocketmq_emu.broker.schedule.retry`)."""
        return build_send_back_record(original, group, delay_level, max_reconsume_times,
                                      request_version, **kwargs)
