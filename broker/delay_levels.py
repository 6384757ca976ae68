"""Delay levels: RocketMQ's ``messageDelayLevel`` table (``ScheduleMessageService.parseDelayLevel``)
and the deliver time of a delayed record, which the store writes as its consume-queue tagsCode.

``"1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"`` lists one delay per level,
level 1 first; each entry is an integer followed by a unit ``s``, ``m``, ``h`` or ``d``.
Level ``n`` lives in queue ``n - 1`` of ``SCHEDULE_TOPIC_XXXX``; a level above the maximum is
clamped to the maximum (``HookUtils.transformDelayLevelMessage``).

Formats layer, pure: no files, no reactor. The store (dispatch) and the scheduling layer
(enqueue and delivery) both read it, so the table and the tagsCode rule live below both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import PROPERTY_DELAY_TIME_LEVEL

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_ENTRY = re.compile(r"^(\d+)([smhd])$")


class DelayLevelError(ValueError):
    """A ``messageDelayLevel`` string that cannot be parsed; names the bad entry."""


def parse_delay_levels(text: str) -> list[int]:
    """Parse a ``messageDelayLevel`` string into delays in ms, level 1 first."""
    delays = []
    for index, entry in enumerate(text.split(), start=1):
        m = _ENTRY.match(entry.strip().lower())
        if not m:
            raise DelayLevelError(
                f"messageDelayLevel entry {index} {entry!r}: expected <integer><s|m|h|d>"
            )
        delays.append(int(m.group(1)) * _UNIT_MS[m.group(2)])
    if not delays:
        raise DelayLevelError("messageDelayLevel is empty")
    return delays


@dataclass(frozen=True)
class DelayLevels:
    """The parsed level table: ``delay_ms(level)`` for level 1..``max_level``."""

    delays_ms: tuple[int, ...]

    @classmethod
    def parse(cls, text: str = DEFAULT_MESSAGE_DELAY_LEVEL) -> DelayLevels:
        """Build the table from a ``messageDelayLevel`` string."""
        return cls(tuple(parse_delay_levels(text)))

    @property
    def max_level(self) -> int:
        """The highest level (18 with the default table)."""
        return len(self.delays_ms)

    def clamp(self, level: int) -> int:
        """Clamp a positive level to ``max_level`` (levels <= 0 mean "no delay" and pass)."""
        return self.max_level if level > self.max_level else level

    def delay_ms(self, level: int) -> int:
        """Delay of ``level`` in ms, clamping above the maximum; ValueError for level < 1."""
        if level < 1:
            raise ValueError(f"delay level {level} < 1")
        return self.delays_ms[self.clamp(level) - 1]

    @staticmethod
    def queue_id(level: int) -> int:
        """``ScheduleMessageService.delayLevel2QueueId``: level - 1."""
        return level - 1

    @staticmethod
    def level(queue_id: int) -> int:
        """``ScheduleMessageService.queueId2DelayLevel``: queueId + 1."""
        return queue_id + 1


def delay_level_of(record: MessageRecord) -> int:
    """The DELAY property as an int (0 when absent or unparsable, as Java's getDelayTimeLevel)."""
    return delay_level_in(record.properties)


def delay_level_in(properties: dict[str, str]) -> int:
    """:func:`delay_level_of` for a properties map (a batch's header properties)."""
    raw = properties.get(PROPERTY_DELAY_TIME_LEVEL)
    try:
        return int(raw) if raw else 0
    except ValueError:
        return 0


def deliver_time_ms(record: MessageRecord, levels: DelayLevels) -> int:
    """Consume-queue tagsCode of a SCHEDULE_TOPIC_XXXX record: its deliver time in ms.

    ``storeTimestamp + delay(level)``, level from DELAY (clamped), falling back to
    ``queueId + 1``: ``CommitLog.checkMessageAndReturnSize`` computes it this way at dispatch
    (``ScheduleMessageService.computeDeliverTimestamp``).
    """
    level = delay_level_of(record)
    if level <= 0:
        level = DelayLevels.level(record.queue_id)
    return record.store_timestamp + levels.delay_ms(level)
