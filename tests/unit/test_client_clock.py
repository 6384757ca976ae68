"""The controllable clock: follow mode tracks the (fake) reactor, advance fires what is due."""

from __future__ import annotations

import pytest
from twisted.internet import task
from twisted.internet.interfaces import IReactorTime

from rocketmq_emu.client.clock import ControllableClock


def make(mode: str = "follow") -> tuple[task.Clock, ControllableClock]:
    real = task.Clock()
    real.advance(1000.0)
    return real, ControllableClock(mode, reactor=real)


def test_provides_ireactortime():
    """The clock can stand in for the reactor's time functions."""
    assert IReactorTime.providedBy(make()[1])


def test_follow_mode_tracks_real_time_plus_offset():
    """In follow mode seconds() moves with the reactor and advance adds an offset."""
    real, clock = make()
    assert clock.seconds() == 1000.0
    real.advance(5)
    assert clock.seconds() == 1005.0
    clock.advance(3600)
    assert clock.seconds() == 4605.0
    assert clock.offset == 3600.0


def test_follow_mode_fires_timers_in_real_time():
    """A timer fires when the real reactor reaches its wall delay."""
    real, clock = make()
    fired = []
    clock.callLater(2.0, fired.append, "x")
    real.advance(1.9)
    assert fired == []
    real.advance(0.2)
    assert fired == ["x"]


def test_advance_fires_due_calls_early_in_order():
    """advance() fires every due call at once, in due order, not the later ones."""
    real, clock = make()
    fired = []
    clock.callLater(7200, fired.append, "2h")
    clock.callLater(10, fired.append, "10s")
    clock.callLater(9000, fired.append, "late")
    assert clock.advance(7200) == 2
    assert fired == ["10s", "2h"]
    assert clock.pending() == 1


def test_advance_fires_calls_scheduled_by_firing_calls_when_due():
    """A call scheduled with delay 0 by a firing call fires in the same advance."""
    real, clock = make()
    fired = []
    clock.callLater(5, lambda: clock.callLater(0, fired.append, "chained"))
    clock.advance(10)
    assert fired == ["chained"]


def test_manual_mode_stands_still():
    """In manual mode time does not move with the reactor and nothing fires by itself."""
    real, clock = make("manual")
    fired = []
    clock.callLater(1, fired.append, 1)
    real.advance(100)
    assert clock.seconds() == 1000.0 and fired == []
    clock.advance(1)
    assert clock.seconds() == 1001.0 and fired == [1]


def test_cancel_and_reset():
    """Cancelled calls never fire; reset moves a call."""
    real, clock = make()
    fired = []
    c1 = clock.callLater(1, fired.append, 1)
    c2 = clock.callLater(1, fired.append, 2)
    c1.cancel()
    c2.reset(10)
    real.advance(5)
    assert fired == []
    real.advance(6)
    assert fired == [2]
    assert clock.getDelayedCalls() == []


def test_failing_call_does_not_stop_the_others():
    """An exception in one timer is logged and the next timers still fire."""
    real, clock = make()
    fired = []
    clock.callLater(1, lambda: 1 / 0)
    clock.callLater(2, fired.append, "ok")
    clock.advance(3)
    assert fired == ["ok"]


def test_set_mode_keeps_the_reading():
    """Switching modes does not jump the clock."""
    real, clock = make()
    clock.advance(50)
    clock.set_mode("manual")
    real.advance(10)
    assert clock.seconds() == 1050.0
    clock.set_mode("follow")
    real.advance(1)
    assert clock.seconds() == 1051.0


def test_bad_mode_and_negative_advance_are_refused():
    """Unknown modes and moving backwards raise ValueError."""
    with pytest.raises(ValueError):
        ControllableClock("warp", reactor=task.Clock())
    with pytest.raises(ValueError):
        make()[1].advance(-1)


def test_from_wall_reads_a_real_stamp_on_the_clocks_time_line():
    """A real (wall) time before an advance reads with the offset then; after it, with the
    offset now; so a stamp from before an advance has aged by it and one after has not."""
    real, clock = make()
    real.advance(10)
    clock.advance(120)
    real.advance(10)
    assert clock.from_wall(1000.0) == 1000.0
    assert clock.from_wall(1005.0) == 1005.0
    assert clock.from_wall(1010.0) == 1010.0  # the advance's own instant: before it
    assert clock.from_wall(1010.5) == 1130.5
    assert clock.from_wall(1020.0) == 1140.0 == clock.seconds()


def test_from_wall_in_manual_mode_reads_the_standing_time():
    """In manual mode the clock stood still between advances, whatever the wall did."""
    real, clock = make("manual")
    real.advance(50)
    clock.advance(30)
    real.advance(50)
    assert clock.from_wall(1020.0) == 1000.0
    assert clock.from_wall(1070.0) == 1030.0
    assert clock.from_wall(1200.0) == 1030.0


def test_from_wall_across_a_change_of_mode():
    """Switching to manual stops the reading at the switch; back to follow it moves again."""
    real, clock = make()
    real.advance(10)
    clock.set_mode("manual")
    real.advance(10)
    clock.set_mode("follow")
    real.advance(10)
    assert clock.from_wall(1005.0) == 1005.0
    assert clock.from_wall(1015.0) == 1010.0
    assert clock.from_wall(1025.0) == 1015.0
