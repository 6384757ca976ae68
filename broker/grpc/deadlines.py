"""The ``grpc-timeout`` deadlines of one connection's calls, on one timer.

A timer per call (``callLater`` when the call starts, ``cancel`` when it ends) cost a delayed
call's creation and removal for every unary call, which nearly all end long before their
deadline. :class:`Deadlines` keeps the calls in a heap by deadline and one timer armed at the
earliest deadline of a call still running: a call that ends only counts down (its heap entry is
dropped lazily, when it reaches the top or the heap is compacted), and the timer is re-armed only
when it fires or when a call with an earlier deadline starts. When no call with a deadline is
left at the end of a read (:meth:`Deadlines.settle`), the timer is cancelled and the heap
emptied: nothing stays scheduled on the clock for a connection without calls.

A call expires exactly when its own timer would have fired: the timer is armed with the
earliest deadline's delay, and on firing every call whose deadline is at or before that one (or
the clock) expires.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twisted.internet.interfaces import IDelayedCall, IReactorTime

    from rocketmq_emu.broker.grpc.call import ServerCall

__all__ = ["Deadlines"]

#: The heap is rebuilt from the running calls when ended calls' entries outnumber them by this
#: factor (plus a floor), so memory stays proportional to the calls in flight.
_COMPACT_FACTOR = 2
_COMPACT_FLOOR = 64


class Deadlines:
    """Deadlines of one connection's calls (see the module docstring).

    ``expire(call)`` is called for each call whose deadline passes while it runs; it must end
    the call (which calls :meth:`discard`).
    """

    __slots__ = ("_clock", "_expire", "_heap", "_live", "_timer", "_due", "_order")

    def __init__(self, clock: IReactorTime, expire: Callable[[ServerCall], object]) -> None:
        self._clock = clock
        self._expire = expire
        #: (deadline, tie-breaker, call); ended calls' entries stay until popped or compacted.
        self._heap: list[tuple[float, int, ServerCall]] = []
        #: Calls added and not yet discarded.
        self._live = 0
        self._timer: IDelayedCall | None = None
        #: The deadline the timer is armed for.
        self._due = 0.0
        self._order = itertools.count()

    def __len__(self) -> int:
        """Calls with a deadline still running."""
        return self._live

    def add(self, call: ServerCall) -> None:
        """Watch ``call.deadline`` (set, in the future); the call reports its end with
        :meth:`discard` (``call._deadlines`` is set to this object)."""
        deadline = call.deadline
        call._deadlines = self
        self._live += 1
        heap = self._heap
        if len(heap) > _COMPACT_FACTOR * self._live + _COMPACT_FLOOR:
            heap[:] = [entry for entry in heap if entry[2]._deadlines is self]
            heapq.heapify(heap)
        heapq.heappush(heap, (deadline, next(self._order), call))
        if self._timer is None or deadline < self._due:
            self._arm(deadline)

    def discard(self, call: ServerCall) -> None:
        """``call`` ended (finished or cancelled): it no longer expires."""
        call._deadlines = None
        self._live -= 1

    def settle(self) -> None:
        """Cancel the timer and empty the heap if no call with a deadline is left. The owner
        calls this once its read (or its write outside a read) is done, not at each call's
        end: unary calls answered in the read that brought them would otherwise arm and
        cancel the timer once a call."""
        if self._live:
            return
        self._heap.clear()
        timer, self._timer = self._timer, None
        if timer is not None and timer.active():
            timer.cancel()

    def _arm(self, deadline: float) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._due = deadline
        self._timer = self._clock.callLater(max(deadline - self._clock.seconds(), 0.0), self._fire)

    def _fire(self) -> None:
        """Expire every running call due by now; re-arm for the earliest one left."""
        self._timer = None
        # The timer's own time is "now + (deadline - now)", which rounding may put an ulp
        # before the deadline it was armed for: that deadline counts as passed.
        now = max(self._clock.seconds(), self._due)
        heap = self._heap
        expired: list[ServerCall] = []
        while heap:
            deadline, _, call = heap[0]
            if call._deadlines is not self:  # ended: dropped lazily
                heapq.heappop(heap)
            elif deadline <= now:
                heapq.heappop(heap)
                expired.append(call)
            else:
                break
        for call in expired:
            if call._deadlines is self:  # an earlier expiry may have ended it
                self._expire(call)
                if call._deadlines is self:  # expire() should have ended it
                    self.discard(call)
        while heap and heap[0][2]._deadlines is not self:
            heapq.heappop(heap)
        if heap and self._timer is None:
            self._arm(heap[0][0])
