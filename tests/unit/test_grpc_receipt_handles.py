"""Automatic renewal of held messages' invisible time (the proxy's ReceiptHandleManager), on a
task.Clock with a recording CHANGE_MESSAGE_INVISIBLETIME."""

from __future__ import annotations

import pytest
from twisted.internet import task

from rocketmq_emu.broker.grpc.receipt_handles import (
    RENEW_MAX_TIME_MS,
    ReceiptHandleManager,
)
from rocketmq_emu.broker.pop.extra_info import ReceiptHandle


def handle(pop_time: int, invisible: int = 60_000) -> str:
    """A receipt handle popped at ``pop_time`` for ``invisible`` ms."""
    return ReceiptHandle(0, pop_time, invisible, 1, "0", "broker-a", 0, 5, 100).encode()


class Rig:
    """A manager whose business time is the task.Clock's, with every change recorded."""

    def __init__(self) -> None:
        self.clock = task.Clock()
        self.changes: list[tuple[str, int]] = []
        self.online = True
        self.manager = ReceiptHandleManager(self.clock, self.now, self.change,
                                            lambda client, group: self.online,
                                            lambda group, times: 10_000 + times)

    def now(self) -> int:
        return int(self.clock.seconds() * 1000)

    async def change(self, group: str, topic: str, current: str, invisible: int) -> str:
        self.changes.append((current, invisible))
        return handle(self.now(), invisible)

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.manager.scan()


@pytest.fixture
def rig() -> Rig:
    """A fresh rig with one message held by client C of group G."""
    r = Rig()
    r.manager.add("C", "G", "T", "M1", handle(0), 0)
    return r


def test_nothing_is_renewed_before_it_is_due(rig):
    """A handle more than 10 s from its end is left alone."""
    rig.advance(45)
    assert rig.changes == []


def test_handle_due_within_ten_seconds_is_renewed_by_a_minute(rig):
    """The first renewal gives one more minute (RenewStrategyPolicy 1m 3m 5m ...)."""
    rig.advance(51)
    assert rig.changes == [(handle(0), 60_000)]


def test_second_renewal_gives_three_minutes(rig):
    """Renewals follow 1m, then 3m."""
    rig.advance(51)
    rig.advance(55)
    assert [c[1] for c in rig.changes] == [60_000, 180_000]


def test_ack_uses_the_latest_handle_and_stops_renewal(rig):
    """remove() hands back the renewed handle; nothing is renewed after it."""
    rig.advance(51)
    tracked = rig.manager.remove("C", "G", "M1", handle(0))
    assert tracked.current == handle(51_000, 60_000)
    rig.advance(120)
    assert len(rig.changes) == 1


def test_messages_of_a_client_gone_are_released_after_a_second(rig):
    """A client no longer in its group: its messages become visible 1 s later."""
    rig.online = False
    rig.advance(5)
    assert rig.changes == [(handle(0), 1000)]
    assert len(rig.manager) == 0


def test_renewal_stops_after_three_hours_with_the_retry_backoff(rig):
    """Past renewMaxTimeMillis the message is released with the group's retry delay."""
    rig.clock.advance(RENEW_MAX_TIME_MS / 1000)
    rig.manager.scan()
    assert rig.changes == [(handle(0), 10_000)]
    assert len(rig.manager) == 0
