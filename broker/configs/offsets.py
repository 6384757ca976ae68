"""``config/consumerOffset.json`` and ``config/delayOffset.json``.

* Consumer offsets (RocketMQ ``broker/offset/ConsumerOffsetManager.java``)::

      {"offsetTable": {"TopicTest@group_a": {"0": 12, "1": 5}}}

  keys ``<topic>@<group>``, queue id -> next offset to consume. RocketMQ (fastjson) writes the
  queue ids unquoted (``{0:12}``); both forms are read, quoted ones are written.
* Delay offsets (``store/schedule/ScheduleMessageService.java``, ``DelayOffsetSerializeWrapper``)::

      {"offsetTable": {"1": 0, "3": 17}}

  delay level -> consume-queue offset of ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1``.

Neither persists on every change: the broker flushes them on a timer (RocketMQ: every 5 s /
10 s, ``flushConsumerOffsetInterval`` / ``flushDelayOffsetInterval``) and at shutdown.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.configs.base import ConfigManager, is_blank

log = logging.getLogger(__name__)

#: ``ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR``.
TOPIC_GROUP_SEPARATOR = "@"


def _offset(value: Any) -> int:
    """A stored offset (fastjson writes longs); ``true`` or ``1.5`` is not one."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise TypeError(f"offset must be an integer, got {value!r}")
    return int(value)


def _queue_id(key: Any) -> int:
    """A queue id or delay level key: ``0`` (fastjson) or ``"0"`` (quoted)."""
    return int(key)


class ConsumerOffsetManager(ConfigManager):
    """Committed consumer offsets per ``topic@group`` and queue id."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.offset_table: dict[str, dict[int, int]] = {}

    @staticmethod
    def key(topic: str, group: str) -> str:
        """``topic@group``."""
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    # --- JSON -------------------------------------------------------------------------------
    def encode(self) -> dict[str, Any]:
        """``{"offsetTable": {...}}`` with queue ids in ascending order."""
        return {
            "offsetTable": {
                k: {str(q): off for q, off in sorted(table.items())}
                for k, table in self.offset_table.items()
            }
        }

    def decode(self, doc: Any) -> None:
        """Replace the table by the file's; a key that is not ``topic@group`` with both parts
        non-blank, or a queue entry that is not ``queueId: offset``, is skipped."""
        def parse_key(key: str, queues: Any) -> dict[str, Any]:
            topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
            if not sep or is_blank(topic) or is_blank(group):
                raise ValueError("not <topic>@<group>")
            if not isinstance(queues, dict):
                raise TypeError(f"expected an object of queue offsets, got {queues!r}")
            return queues

        table = self.decode_table(doc.get("offsetTable"), "consumer offsets", parse_key)
        self.offset_table = {}
        for key, queues in table.items():
            parsed = self.decode_table(
                {str(q): v for q, v in queues.items()}, f"{key} queue",
                lambda q, v: (_queue_id(q), _offset(v)))
            self.offset_table[key] = dict(parsed.values())

    # --- offsets ----------------------------------------------------------------------------
    def commit_offset(
        self, client_host: str, group: str, topic: str, queue_id: int, offset: int
    ) -> None:
        """Store ``offset`` (UPDATE_CONSUMER_OFFSET / pull's commitOffset).

        A smaller offset than the stored one is accepted (a reset) and logged, as in Java. A
        blank topic or group is not stored (logged): 4.9.8's ``ConsumerOffsetManager`` keeps
        ``"T@"``, an entry no consumer can query and the loader here skips.
        """
        if is_blank(topic) or is_blank(group):
            log.warning("ignoring consumer offset with a blank topic or group: client %s "
                        "group %r topic %r queue %d offset %d",
                        client_host, group, topic, queue_id, offset)
            return
        table = self.offset_table.setdefault(self.key(topic, group), {})
        prev = table.get(queue_id)
        if prev is not None and offset < prev:
            log.warning("update consumer offset less than store: client %s group %s topic %s "
                        "queue %d requested %d stored %d",
                        client_host, group, topic, queue_id, offset, prev)
        table[queue_id] = offset

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 if none."""
        table = self.offset_table.get(self.key(topic, group))
        if table is None:
            return -1
        return table.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        """Every queue's committed offset of ``group`` on ``topic`` (a copy)."""
        return dict(self.offset_table.get(self.key(topic, group), {}))

    def _split(self, key: str) -> tuple[str, str] | None:
        topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
        return (topic, group) if sep else None

    def which_topic_by_consumer(self, group: str) -> set[str]:
        """Topics ``group`` has offsets on."""
        return {p[0] for k in self.offset_table if (p := self._split(k)) and p[1] == group}

    def which_group_by_topic(self, topic: str) -> set[str]:
        """Groups with offsets on ``topic``."""
        return {p[1] for k in self.offset_table if (p := self._split(k)) and p[0] == topic}

    def query_min_offset_in_all_groups(
        self, topic: str, filter_groups: set[str] | None = None
    ) -> dict[int, int]:
        """Per queue, the smallest offset any group (except ``filter_groups``) committed on
        ``topic`` (``queryMinOffsetInAllGroup``)."""
        result: dict[int, int] = {}
        for k, table in self.offset_table.items():
            p = self._split(k)
            if not p or p[0] != topic or (filter_groups and p[1] in filter_groups):
                continue
            for qid, off in table.items():
                result[qid] = min(off, result.get(qid, off))
        return result

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> None:
        """Copy ``src_group``'s offsets on ``topic`` to ``dest_group`` (``cloneOffset``)."""
        table = self.offset_table.get(self.key(topic, src_group))
        if table is not None:
            self.offset_table[self.key(topic, dest_group)] = dict(table)

    def remove_offset(self, topic: str, group: str) -> bool:
        """Forget one ``topic@group``; False if absent."""
        return self.offset_table.pop(self.key(topic, group), None) is not None

    def delete_group(self, group: str) -> int:
        """Forget every offset of ``group`` (``removeOffset(group)``); returns keys removed."""
        doomed = [k for k in self.offset_table if (p := self._split(k)) and p[1] == group]
        for k in doomed:
            del self.offset_table[k]
        return len(doomed)

    def delete_topic(self, topic: str) -> int:
        """Forget every offset on ``topic`` (topic deletion); returns keys removed."""
        doomed = [k for k in self.offset_table if (p := self._split(k)) and p[0] == topic]
        for k in doomed:
            del self.offset_table[k]
        return len(doomed)


class DelayOffsetManager(ConfigManager):
    """Progress of each delay level through ``SCHEDULE_TOPIC_XXXX`` (level -> queue offset)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.offset_table: dict[int, int] = {}

    def encode(self) -> dict[str, Any]:
        """``{"offsetTable": {level: offset}}`` with levels ascending."""
        return {"offsetTable": {str(k): v for k, v in sorted(self.offset_table.items())}}

    def decode(self, doc: Any) -> None:
        """Replace the table by the file's; an entry that is not ``level: offset`` is skipped."""
        table = self.decode_table(doc.get("offsetTable"), "delay level",
                                  lambda k, v: (_queue_id(k), _offset(v)))
        self.offset_table = dict(table.values())

    def query_offset(self, level: int) -> int:
        """The level's next offset to deliver, 0 if none yet (``ScheduleMessageService.start``)."""
        return self.offset_table.get(level, 0)

    def update_offset(self, level: int, offset: int) -> None:
        """Record the level's progress (``ScheduleMessageService.updateOffset``)."""
        self.offset_table[level] = offset
