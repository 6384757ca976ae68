"""The rewrite of a sent message that carries schedule properties, before the put (RocketMQ
``HookUtils.handleScheduleMessage``): the send processor calls it, and so do the schedule tests.

Timer properties (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS) send the message to
``rmq_sys_wheel_timer`` when the timer service runs; then DELAY > 0 sends it to
``SCHEDULE_TOPIC_XXXX``. A message with both keeps only its level (``checkIfTimerMessage``).
Pure: the caller passes the time and the level table.
"""

from __future__ import annotations

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.delay_levels import DelayLevels
from rocketmq_emu.broker.schedule.delay_level_service import transform_delay_message
from rocketmq_emu.broker.schedule.timer_message import (
    DEFAULT_TIMER_MAX_DELAY_SEC,
    transform_timer_message,
)


def transform_for_put(
    record: MessageRecord,
    now_ms: int,
    levels: DelayLevels,
    *,
    timer_enabled: bool = True,
    timer_max_delay_sec: int = DEFAULT_TIMER_MAX_DELAY_SEC,
) -> MessageRecord:
    """Reroute ``record`` (in place; returns it) to the timer topic, then the schedule topic.

    ``timer_enabled`` False (``timerWheelEnable=false``) leaves timer properties alone.
    Raises :class:`~rocketmq_emu.broker.schedule.timer_message.TimerMessageError` for a timer
    message due more than ``timer_max_delay_sec`` ahead.
    """
    if timer_enabled:
        transform_timer_message(record, now_ms, timer_max_delay_sec)
    return transform_delay_message(record, levels)
