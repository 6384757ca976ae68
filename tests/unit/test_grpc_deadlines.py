"""broker/grpc/deadlines.py: one timer for a connection's call deadlines, on a task.Clock."""

from __future__ import annotations

from typing import Any

from twisted.internet import task

from rocketmq_emu.broker.grpc.deadlines import Deadlines


class FakeCall:
    """What Deadlines reads and writes of a ServerCall."""

    def __init__(self, name: str, deadline: float) -> None:
        self.name = name
        self.deadline = deadline
        self._deadlines: Any = None

    def end(self) -> None:
        if self._deadlines is not None:
            self._deadlines.discard(self)


def watch(clock: task.Clock) -> tuple[Deadlines, list[str]]:
    expired: list[str] = []

    def expire(call: FakeCall) -> None:
        expired.append(call.name)
        call.end()

    return Deadlines(clock, expire), expired


def test_calls_expire_at_their_deadlines_in_order_on_one_timer() -> None:
    clock = task.Clock()
    deadlines, expired = watch(clock)
    late, early, ended = FakeCall("late", 5.0), FakeCall("early", 2.0), FakeCall("ended", 1.0)
    for call in (late, early, ended):
        deadlines.add(call)  # an earlier deadline re-arms the one timer
    assert len(clock.getDelayedCalls()) == 1 and len(deadlines) == 3
    ended.end()
    clock.advance(1.999)
    assert expired == []
    clock.advance(0.001)
    assert expired == ["early"] and len(clock.getDelayedCalls()) == 1
    clock.advance(3.0)
    assert expired == ["early", "late"] and len(deadlines) == 0
    assert clock.getDelayedCalls() == []


def test_settle_cancels_the_timer_once_no_call_is_left() -> None:
    clock = task.Clock()
    deadlines, expired = watch(clock)
    calls = [FakeCall(str(n), 10.0) for n in range(3)]
    for call in calls:
        deadlines.add(call)
    calls[0].end()
    deadlines.settle()
    assert len(clock.getDelayedCalls()) == 1  # two calls still run
    for call in calls[1:]:
        call.end()
    deadlines.settle()
    assert clock.getDelayedCalls() == [] and expired == []


def test_ended_calls_entries_are_compacted() -> None:
    """Calls that end before their deadline leave entries behind, bounded by the running ones."""
    clock = task.Clock()
    deadlines, expired = watch(clock)
    running = FakeCall("running", 100.0)
    deadlines.add(running)
    for n in range(1000):
        call = FakeCall(str(n), 50.0 + n)
        deadlines.add(call)
        call.end()
    assert len(deadlines._heap) < 100
    clock.advance(100)
    assert expired == ["running"] and clock.getDelayedCalls() == []
