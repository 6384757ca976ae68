"""Specification of the hashed timing wheel on a fake clock."""

from __future__ import annotations

from twisted.internet.task import Clock

from rocketmq_emu.broker.schedule.hash_wheel import HashedWheel


def make(tick_ms=10):
    clock = Clock()
    fired: list[tuple[int, int, object]] = []  # (clock ms at fire, due, item)
    wheel = HashedWheel(clock, lambda batch: fired.extend(
        (int(clock.seconds() * 1000), due, item) for due, item in batch), tick_ms=tick_ms)
    wheel.start()
    return clock, wheel, fired


def test_entries_fire_in_due_order_no_earlier_than_due():
    """Entries fire in due-time order, never before due and within one tick after."""
    clock, wheel, fired = make()
    for due in (505, 1, 250, 999, 250, 12):
        wheel.add(due, due)
    for _ in range(1100):
        clock.advance(0.001)
    assert [d for _, d, _ in fired] == [1, 12, 250, 250, 505, 999]
    assert all(due <= at <= due + 10 for at, due, _ in fired)
    assert len(wheel) == 0


def test_empty_wheel_arms_no_timer():
    """An empty wheel schedules nothing (it never polls)."""
    clock, wheel, _ = make()
    assert clock.getDelayedCalls() == []


def test_far_future_entry_needs_one_wake_up():
    """One advance of two years fires a two-year entry with a single timer call."""
    clock, wheel, fired = make()
    two_years = 2 * 365 * 86_400_000
    wheel.add(two_years, "x")
    assert len(clock.getDelayedCalls()) == 1
    clock.advance(two_years / 1000)
    assert fired == [(two_years, two_years, "x")]


def test_earlier_entry_rearms_the_timer():
    """Adding an entry due before the armed slot moves the timer earlier."""
    clock, wheel, fired = make()
    wheel.add(10_000, "late")
    wheel.add(100, "early")
    clock.advance(0.1)
    assert [i for _, _, i in fired] == ["early"]


def test_past_entry_fires_on_next_wake():
    """An entry already due fires at once (delay 0)."""
    clock, wheel, fired = make()
    clock.advance(5)
    wheel.add(10, "past")
    clock.advance(0)
    assert [i for _, _, i in fired] == ["past"]


def test_stopped_wheel_keeps_entries():
    """A stopped wheel fires nothing until started again."""
    clock, wheel, fired = make()
    wheel.add(50, "a")
    wheel.stop()
    clock.advance(1)
    assert fired == [] and len(wheel) == 1
    wheel.start()
    clock.advance(0)
    assert [i for _, _, i in fired] == ["a"]
