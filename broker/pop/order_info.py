"""``ConsumerOrderInfoManager``: orderly POP's per-queue lock (Apache RocketMQ 5,
``broker/offset/ConsumerOrderInfoManager.java``), persisted in ``config/consumerOrderInfo.json``.

An orderly POP (``order=true``) of queue ``(topic, group, queueId)`` records what it returned
(:class:`OrderInfo`: pop time, invisible time, the offsets). Until each of those offsets is
acknowledged or its invisible time has passed, the queue is blocked for that group
(:meth:`check_block`), so nobody gets later messages. When it becomes visible again the next pop
re-reads from the committed offset; offsets returned again count one more consume attempt
(``offsetConsumedCount``), reported in the response's ``orderCountInfo``. An ACK sets the
offset's bit (:meth:`commit_and_next`) and gives the offset to commit: the first unacknowledged
one, or one past the batch when all are.

The JSON document is fastjson's (``{"table": {"topic@group": {"<queueId>": {...}}}}`` with the
``OrderInfo`` field names ``popTime i o ot oc l cm a``). It is written every few seconds by the
broker and at shutdown (Java: with the consumer offsets), so a restart keeps the lock and the
attempt counts (a crash may lose the last seconds of them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.configs.base import ConfigManager, config_file_path
from rocketmq_emu.broker.pop.boot import CONSUMER_ORDER_INFO_JSON
from rocketmq_emu.broker.pop.extra_info import InfoBuilder

log = logging.getLogger(__name__)

#: ``ConsumerOrderInfoManager.CLEAN_SPAN_FROM_LAST``: entries idle this long are dropped.
CLEAN_SPAN_FROM_LAST_MS = 24 * 3600 * 1000


def _offset_list(queue_offsets: Iterable[int]) -> list[int]:
    """``OrderInfo.buildOffsetList``: the first offset, then each later one minus the first."""
    offsets = list(queue_offsets)
    if not offsets:
        return []
    first = offsets[0]
    return [first] + [o - first for o in offsets[1:]]


@dataclass
class OrderInfo:
    """``ConsumerOrderInfoManager.OrderInfo``."""

    pop_time: int = 0
    invisible_time: int | None = None  # i
    offset_list: list[int] = field(default_factory=list)  # o
    offset_next_visible_time: dict[int, int] | None = None  # ot
    offset_consumed_count: dict[int, int] | None = None  # oc
    last_consume_timestamp: int = 0  # l
    commit_offset_bit: int = 0  # cm
    attempt_id: str | None = None  # a

    def queue_offset(self, index: int) -> int:
        """``getQueueOffset``."""
        return self.offset_list[0] if index == 0 else self.offset_list[0] + self.offset_list[index]

    def queue_offsets(self) -> list[int]:
        return [self.queue_offset(i) for i in range(len(self.offset_list))]

    def is_not_ack(self, index: int) -> bool:
        """``isNotAck``."""
        return not self.commit_offset_bit & (1 << index)

    def need_block(self, attempt_id: str | None, current_invisible_time: int, now_ms: int) -> bool:
        """``needBlock``: an unacknowledged offset still invisible (a retry with the same
        attempt id is let through)."""
        if not self.offset_list:
            return False
        if self.attempt_id is not None and self.attempt_id == attempt_id:
            return False
        if self.invisible_time is None or self.invisible_time <= 0:
            self.invisible_time = current_invisible_time
        for i in range(len(self.offset_list)):
            if self.is_not_ack(i):
                visible_at = self.pop_time + self.invisible_time
                if self.offset_next_visible_time:
                    visible_at = self.offset_next_visible_time.get(self.queue_offset(i),
                                                                   visible_at)
                if now_ms < visible_at:
                    return True
        return False

    def next_offset(self) -> int:
        """``getNextOffset``: first unacknowledged offset, or one past the last; -2 if empty."""
        if not self.offset_list:
            return -2
        for i in range(len(self.offset_list)):
            if self.is_not_ack(i):
                return self.queue_offset(i)
        return self.queue_offset(len(self.offset_list) - 1) + 1

    def merge_offset_consumed_count(self, pre_attempt_id: str | None, pre_offset_list: list[int],
                                    prev: dict[int, int] | None) -> None:
        """``mergeOffsetConsumedCount``: offsets popped again count one more attempt."""
        prev = prev or {}
        if pre_attempt_id is not None and pre_attempt_id == self.attempt_id:
            self.offset_consumed_count = prev
            return
        before = set(OrderInfo(offset_list=pre_offset_list).queue_offsets()) \
            if pre_offset_list else set()
        counts: dict[int, int] = {}
        for offset in self.queue_offsets():
            if offset in before:
                counts[offset] = prev.get(offset, 0) + 1
        self.offset_consumed_count = counts

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"a": self.attempt_id, "cm": self.commit_offset_bit,
                               "i": self.invisible_time, "l": self.last_consume_timestamp,
                               "o": self.offset_list}
        if self.offset_consumed_count is not None:
            doc["oc"] = {str(k): v for k, v in self.offset_consumed_count.items()}
        if self.offset_next_visible_time is not None:
            doc["ot"] = {str(k): v for k, v in self.offset_next_visible_time.items()}
        doc["popTime"] = self.pop_time
        return {k: v for k, v in doc.items() if v is not None}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> OrderInfo:
        def int_map(value: Any) -> dict[int, int] | None:
            return None if value is None else {int(k): int(v) for k, v in value.items()}

        inv = doc.get("i", doc.get("invisibleTime"))
        return cls(
            pop_time=int(doc.get("popTime", 0)),
            invisible_time=None if inv is None else int(inv),
            offset_list=[int(o) for o in doc.get("o", doc.get("offsetList")) or []],
            offset_next_visible_time=int_map(doc.get("ot", doc.get("offsetNextVisibleTime"))),
            offset_consumed_count=int_map(doc.get("oc", doc.get("offsetConsumedCount"))),
            last_consume_timestamp=int(doc.get("l", doc.get("lastConsumeTimestamp", 0))),
            commit_offset_bit=int(doc.get("cm", doc.get("commitOffsetBit", 0))),
            attempt_id=doc.get("a", doc.get("attemptId")),
        )


class ConsumerOrderInfoManager(ConfigManager):
    """Order info by ``topic@group`` and queue id; ``now_ms`` is the business clock."""

    def __init__(self, path: str, now_ms: Callable[[], int]) -> None:
        super().__init__(path)
        self.now_ms = now_ms
        self.table: dict[str, dict[int, OrderInfo]] = {}
        #: ``fn(topic, group, queue_id, info)`` after a change (e.g. to schedule an unblock).
        self.on_update: Callable[[str, str, int, OrderInfo], None] | None = None

    @classmethod
    def for_store(cls, store_root: str, now_ms: Callable[[], int]) -> ConsumerOrderInfoManager:
        """The manager of ``{storePathRootDir}/config/consumerOrderInfo.json``."""
        return cls(config_file_path(store_root, CONSUMER_ORDER_INFO_JSON), now_ms)

    @staticmethod
    def key(topic: str, group: str) -> str:
        """``buildKey``: ``topic@group``."""
        return f"{topic}@{group}"

    def get(self, topic: str, group: str, queue_id: int) -> OrderInfo | None:
        return self.table.get(self.key(topic, group), {}).get(queue_id)

    def _changed(self, topic: str, group: str, queue_id: int, info: OrderInfo) -> None:
        if self.on_update is not None:
            self.on_update(topic, group, queue_id, info)

    def update(self, attempt_id: str | None, topic: str, group: str, queue_id: int,
               pop_time: int, invisible_time: int, queue_offsets: list[int],
               order_info: InfoBuilder) -> None:
        """``update``: record a pop and append its ``orderCountInfo`` entries (one per offset
        with a count, then the queue's minimum for older SDKs)."""
        qs = self.table.setdefault(self.key(topic, group), {})
        info = OrderInfo(pop_time, invisible_time, _offset_list(queue_offsets), None, None,
                         self.now_ms(), 0, attempt_id)
        old = qs.get(queue_id)
        if old is not None:
            info.merge_offset_consumed_count(old.attempt_id, old.offset_list,
                                             old.offset_consumed_count)
        qs[queue_id] = info
        counts = info.offset_consumed_count
        if counts:
            for offset, times in counts.items():
                order_info.add_queue_offset_order_count(topic, queue_id, offset, times)
            minimum = min(counts.values()) if len(counts) == len(info.offset_list) else 0
        else:
            minimum = 0
        order_info.add_queue_id_order_count(topic, queue_id, minimum)
        self._changed(topic, group, queue_id, info)

    def check_block(self, attempt_id: str | None, topic: str, group: str, queue_id: int,
                    invisible_time: int) -> bool:
        """``checkBlock``: whether the queue is locked by an earlier orderly pop."""
        info = self.get(topic, group, queue_id)
        return info is not None and info.need_block(attempt_id, invisible_time, self.now_ms())

    def clear_block(self, topic: str, group: str, queue_id: int) -> None:
        """``clearBlock``."""
        self.table.get(self.key(topic, group), {}).pop(queue_id, None)

    def commit_and_next(self, topic: str, group: str, queue_id: int, queue_offset: int,
                        pop_time: int) -> int:
        """``commitAndNext``: mark ``queue_offset`` acknowledged; the offset to commit, -1 for
        an offset not in the batch (illegal), -2 for a stale pop time (nothing to commit)."""
        info = self.get(topic, group, queue_id)
        if info is None:
            return queue_offset + 1
        if not info.offset_list:
            return -1
        if pop_time != info.pop_time:
            log.warning("popTime is not equal to orderInfo saved. key: %s, offset: %d, "
                        "popTime: %d", self.key(topic, group), queue_offset, pop_time)
            return -2
        offsets = info.queue_offsets()
        if queue_offset not in offsets:
            return -1
        info.commit_offset_bit |= 1 << offsets.index(queue_offset)
        info.last_consume_timestamp = self.now_ms()
        self._changed(topic, group, queue_id, info)
        return info.next_offset()

    def update_next_visible_time(self, topic: str, group: str, queue_id: int, queue_offset: int,
                                 pop_time: int, next_visible_time: int) -> None:
        """``updateNextVisibleTime`` (CHANGE_MESSAGE_INVISIBLETIME of an orderly message)."""
        info = self.get(topic, group, queue_id)
        if info is None or pop_time != info.pop_time:
            log.warning("orderInfo of %s queue %d absent or of another pop",
                        self.key(topic, group), queue_id)
            return
        if info.offset_next_visible_time is None:
            info.offset_next_visible_time = {}
        info.offset_next_visible_time[queue_offset] = next_visible_time
        self._changed(topic, group, queue_id, info)

    def visible_at(self, info: OrderInfo) -> int | None:
        """When the queue's block ends: the earliest time every unacknowledged offset is
        visible (None when nothing blocks)."""
        times = []
        for i in range(len(info.offset_list)):
            if info.is_not_ack(i):
                at = info.pop_time + (info.invisible_time or 0)
                if info.offset_next_visible_time:
                    at = info.offset_next_visible_time.get(info.queue_offset(i), at)
                times.append(at)
        return max(times) if times else None

    # --- persistence ------------------------------------------------------------------------
    def _auto_clean(self) -> None:
        now = self.now_ms()
        for key in list(self.table):
            qs = self.table[key]
            for qid in [q for q, i in qs.items()
                        if now - i.last_consume_timestamp > CLEAN_SPAN_FROM_LAST_MS]:
                del qs[qid]
            if not qs:
                del self.table[key]

    def encode(self) -> dict[str, Any]:
        self._auto_clean()
        return {"table": {key: {str(q): i.to_json() for q, i in qs.items()}
                          for key, qs in self.table.items()}}

    def decode(self, doc: Any) -> None:
        table = (doc or {}).get("table") or {}
        for key, qs in table.items():
            for qid, info in (qs or {}).items():
                try:
                    self.table.setdefault(key, {})[int(qid)] = OrderInfo.from_json(info)
                except (ValueError, TypeError, KeyError, AttributeError) as exc:
                    self.skip_entry("orderInfo", f"{key}/{qid}", exc)
