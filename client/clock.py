"""A controllable clock for the embedded broker: time travel for tests.

:class:`ControllableClock` implements ``IReactorTime`` (``seconds``, ``callLater``,
``getDelayedCalls``), so the broker's store, schedule service and timers can take it in place
of the reactor. Network I/O still runs on the real reactor; only timestamps and timers read this
clock. Two modes:

``"follow"`` (default)
    ``seconds()`` is the real reactor's time plus an offset. A timer scheduled with
    ``callLater(d, f)`` also arms one wake-up on the real reactor at the matching wall delay, so
    the broker behaves normally in real time. :meth:`advance` moves the offset forward and fires
    at once every timer that has come due.

``"manual"``
    Time stands still (it starts at the wall time of creation) until :meth:`advance` moves it.
    Nothing fires on its own; this is ``twisted.internet.task.Clock`` with a realistic epoch.

``advance`` has ``task.Clock`` semantics: the clock jumps to the new time first, then fires
every due call in due-time order (a call scheduled by a firing call fires too if it is due).
So ``advance(7200)`` delivers the 2-hour delay level and every arbitrary-time message due by
then in one deterministic step, however the services chain their timers.

:class:`rocketmq_emu.client.control_up.Controls` hands it to the cluster
(``broker.cluster.Cluster(business_clock=...)``; for ``rmq-emu up --control-port`` and the test
harness alike), which gives it to each broker as its clock for business time
(store timestamps, delay levels, retries, timers) and keeps liveness on the real reactor
(heartbeat expiry, queue locks, long-poll suspension, request timeouts).

All methods must run in the reactor thread; :meth:`advance` hops there itself when the reactor
runs in another thread (the blocking facade), so a test may call it from anywhere.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable
from typing import Any

from twisted.internet import base
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from zope.interface import implementer

log = logging.getLogger(__name__)

MODES = ("follow", "manual")
# How many changes of course from_wall() remembers: far more than a test makes, and a stamp
# older than the oldest kept is read with the oldest's course.
MAX_TURNS = 4096


@implementer(IReactorTime)
class ControllableClock:
    """An ``IReactorTime`` whose time can be moved forward on demand (see module docstring)."""

    def __init__(self, mode: str = "follow", reactor: Any = None, start: float | None = None):
        if mode not in MODES:
            raise ValueError(f"clock mode must be one of {MODES}, got {mode!r}")
        if reactor is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self.mode = mode
        self._reactor = reactor
        wall = reactor.seconds()
        # follow: seconds() = wall + offset; manual: seconds() = _manual_now.
        self._offset = 0.0 if start is None else start - wall
        self._manual_now = wall if start is None else start
        self._calls: list[base.DelayedCall] = []
        self._wakeup: Any = None
        self._firing = False
        # Total seconds added by advance(), for reporting (control API, request log).
        self.advanced = 0.0
        # Where the reading changed course (advance, set_mode): wall times and, in step,
        # (reading then, whether it followed the wall from there), for from_wall().
        self._turn_walls: list[float] = [wall]
        self._turns: list[tuple[float, bool]] = [(self.seconds(), mode == "follow")]

    # --- IReactorTime ---------------------------------------------------------------------
    def seconds(self) -> float:
        """The current time of this clock (epoch seconds)."""
        if self.mode == "manual":
            return self._manual_now
        return self._reactor.seconds() + self._offset

    def callLater(self, delay: float, callable: Callable, *args: Any, **kw: Any) -> IDelayedCall:  # noqa: N802
        """Schedule ``callable`` at ``seconds() + delay``; returns a cancellable ``DelayedCall``."""
        if delay < 0:
            delay = 0.0
        call = base.DelayedCall(
            self.seconds() + delay, callable, args, kw, self._cancelled, self._reset,
            seconds=self.seconds,
        )
        self._calls.append(call)
        self._rearm()
        return call

    def getDelayedCalls(self) -> list[IDelayedCall]:  # noqa: N802
        """The pending calls (not yet fired, not cancelled)."""
        return list(self._calls)

    # --- control ----------------------------------------------------------------------------
    def advance(self, seconds: float) -> int:
        """Move time forward by ``seconds`` and fire every call now due; returns how many fired.

        Safe to call from a thread other than the reactor's (it waits for the reactor).
        """
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        if self._needs_hop():
            from twisted.internet.threads import blockingCallFromThread

            return blockingCallFromThread(self._reactor, self._advance, seconds)
        return self._advance(seconds)

    def set_mode(self, mode: str) -> None:
        """Switch between ``"follow"`` and ``"manual"`` keeping the current reading."""
        if mode not in MODES:
            raise ValueError(f"clock mode must be one of {MODES}, got {mode!r}")
        now = self.seconds()
        self.mode = mode
        if mode == "manual":
            self._manual_now = now
        else:
            self._offset = now - self._reactor.seconds()
        self._turned()
        self._rearm()

    @property
    def offset(self) -> float:
        """Seconds this clock is ahead of the real reactor's time."""
        return self.seconds() - self._reactor.seconds()

    def from_wall(self, wall: float) -> float:
        """What this clock read at the real (wall) time ``wall``, epoch seconds.

        Clients stamp what they send with their own clock, which is the real one (a producer's
        ``bornTimestamp``); this puts such a stamp on the broker's time line, so a message born
        before an :meth:`advance` has aged by it and one born after has not.
        """
        # A stamp at the very wall time of a turn was made before it (it came in first).
        i = max(0, bisect.bisect_left(self._turn_walls, wall) - 1)
        reading, follows = self._turns[i]
        return reading + (wall - self._turn_walls[i]) if follows else reading

    def pending(self) -> int:
        """Number of pending calls."""
        return len(self._calls)

    def stop(self) -> None:
        """Cancel the wake-up on the real reactor (pending calls stay pending)."""
        if self._wakeup is not None and self._wakeup.active():
            self._wakeup.cancel()
        self._wakeup = None

    # --- internals --------------------------------------------------------------------------
    def _needs_hop(self) -> bool:
        reactor = self._reactor
        if not getattr(reactor, "running", False):
            return False
        from twisted.python import threadable

        io_thread = getattr(threadable, "ioThread", None)
        return io_thread is not None and io_thread != threading.get_ident()

    def _advance(self, seconds: float) -> int:
        if self.mode == "manual":
            self._manual_now += seconds
        else:
            self._offset += seconds
        self.advanced += seconds
        self._turned()
        return self._run_due()

    def _turned(self) -> None:
        """Note where the reading changed course; the oldest turns go past ``MAX_TURNS``."""
        self._turn_walls.append(self._reactor.seconds())
        self._turns.append((self.seconds(), self.mode == "follow"))
        if len(self._turns) > MAX_TURNS:
            del self._turn_walls[0], self._turns[0]

    def _run_due(self) -> int:
        if self._firing:  # a call advanced the clock: the outer loop picks the rest up
            return 0
        fired = 0
        self._firing = True
        try:
            while True:
                now = self.seconds()
                due = [c for c in self._calls if c.getTime() <= now]
                if not due:
                    break
                call = min(due, key=lambda c: c.getTime())
                self._calls.remove(call)
                call.called = 1
                fired += 1
                try:
                    call.func(*call.args, **call.kw)
                except Exception:
                    # The reactor logs and carries on after a failing timer; so do we.
                    log.exception("error in timer %r fired by the controllable clock", call.func)
        finally:
            self._firing = False
        self._rearm()
        return fired

    def _cancelled(self, call: base.DelayedCall) -> None:
        if call in self._calls:
            self._calls.remove(call)
        self._rearm()

    def _reset(self, call: base.DelayedCall) -> None:
        self._rearm()

    def _rearm(self) -> None:
        """Keep one real-reactor wake-up at the wall time of the earliest pending call."""
        if self.mode == "manual" or self._firing:
            if self.mode == "manual":
                self.stop()
            return
        if not self._calls:
            self.stop()
            return
        earliest = min(c.getTime() for c in self._calls)
        delay = max(0.0, earliest - self.seconds())
        if self._wakeup is not None and self._wakeup.active():
            if abs(self._wakeup.getTime() - (self._reactor.seconds() + delay)) < 1e-4:
                return
            self._wakeup.reset(delay)
            return
        self._wakeup = self._reactor.callLater(delay, self._on_wakeup)

    def _on_wakeup(self) -> None:
        self._wakeup = None
        self._run_due()
