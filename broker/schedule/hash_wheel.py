"""An in-memory hashed timing wheel driven by an ``IReactorTime`` clock.

Entries are hashed into slots by their tick, ``ceil(due_ms / tick_ms)``, so a slot fires at
its tick's time, which is never before any of its entries is due (lateness <= one tick plus
reactor latency). Only occupied slots exist (a dict keyed by tick) and a heap orders them, so
the wheel arms a single ``callLater`` for the next occupied slot instead of waking every tick:
an empty wheel costs nothing, and a ``task.Clock`` can jump two years in one ``advance``.

Within and across slots, due entries fire in (due_ms, insertion order): the callback gets one
ordered batch per wake-up. The wheel holds only what the loader gives it (the buckets within
the loaded horizon); QMQ's ``HashedWheelTimer`` ticks every 500 ms, RocketMQ 5's timer every
1000 ms, ours defaults to 10 ms.

Nothing sleeps; the wheel never reads wall time, only ``clock.seconds()``.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def now_ms(clock: Any) -> int:
    """The clock in ms, computed exactly as the store computes storeTimestamp."""
    return int(clock.seconds() * 1000)


class HashedWheel:
    """Timing wheel: ``add(due_ms, item)``; ``on_fire(list of (due_ms, item))`` runs when due."""

    def __init__(
        self,
        clock: Any,
        on_fire: Callable[[list[tuple[int, Any]]], None],
        tick_ms: int = 10,
    ) -> None:
        if tick_ms < 1:
            raise ValueError("tick_ms must be >= 1")
        self.clock = clock
        self.on_fire = on_fire
        self.tick_ms = tick_ms
        self._slots: dict[int, list[tuple[int, int, Any]]] = {}
        self._ticks: list[int] = []  # heap of occupied ticks
        self._counter = itertools.count()
        self._call = None
        self._armed_tick: int | None = None
        self._size = 0
        self._running = False

    def __len__(self) -> int:
        return self._size

    def start(self) -> None:
        """Begin firing (entries added before start wait until now)."""
        self._running = True
        self._arm()

    def stop(self) -> None:
        """Stop firing; entries stay in the wheel."""
        self._running = False
        self._cancel()

    def clear(self) -> None:
        """Drop every entry (used when the process state is discarded)."""
        self._slots.clear()
        self._ticks.clear()
        self._size = 0
        self._cancel()

    def add(self, due_ms: int, item: Any) -> None:
        """Schedule ``item`` at ``due_ms`` (absolute, ms); a past time fires on the next wake."""
        tick = -(-due_ms // self.tick_ms)
        slot = self._slots.get(tick)
        if slot is None:
            slot = self._slots[tick] = []
            heapq.heappush(self._ticks, tick)
        slot.append((due_ms, next(self._counter), item))
        self._size += 1
        if self._running and (self._armed_tick is None or tick < self._armed_tick):
            self._arm()

    def next_due_tick_ms(self) -> int | None:
        """Time (ms) of the next occupied slot, or None when empty."""
        return self._ticks[0] * self.tick_ms if self._ticks else None

    # -- internals -------------------------------------------------------------------------------
    def _cancel(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        self._armed_tick = None

    def _arm(self, min_delay: float = 0.0) -> None:
        self._cancel()
        if not self._running or not self._ticks:
            return
        tick = self._ticks[0]
        delay = max(min_delay, tick * self.tick_ms / 1000.0 - self.clock.seconds())
        self._armed_tick = tick
        self._call = self.clock.callLater(delay, self._fire)

    def _fire(self) -> None:
        self._call = None
        self._armed_tick = None
        now = now_ms(self.clock)
        ticks = self._ticks
        batch: list[tuple[int, int, Any]] = []
        while ticks and ticks[0] * self.tick_ms <= now:
            tick = heapq.heappop(ticks)
            batch.extend(self._slots.pop(tick))
        if batch:
            self._size -= len(batch)
            batch.sort(key=lambda e: (e[0], e[1]))
            try:
                self.on_fire([(due, item) for due, _, item in batch])
            except Exception:
                log.exception("timing wheel callback failed for %d entries", len(batch))
            self._arm()
        else:
            # Float rounding woke us a hair early: try again in a millisecond.
            self._arm(min_delay=0.001)
