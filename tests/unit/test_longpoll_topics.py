"""PullRequestHoldService.topics: the live set gating the store's arrival listener."""

from __future__ import annotations

from twisted.internet.task import Clock

from rocketmq_emu.broker.longpoll import PullRequestHoldService
from rocketmq_emu.broker.remoting.command import RemotingCommand


class Conn:
    """A connection the hold service can watch for closing."""

    def __init__(self) -> None:
        self.closed = False
        self.callbacks: list = []

    def add_close_callback(self, fn) -> None:
        self.callbacks.append(fn)

    def close(self) -> None:
        self.closed = True
        for fn in self.callbacks:
            fn(self)


def service() -> tuple[PullRequestHoldService, Clock]:
    clock = Clock()
    return PullRequestHoldService(clock, lambda cmd, conn: cmd.response(0)), clock


def park(hold, conn, topic: str, queue_id: int = 0, timeout_ms: int = 15_000):
    return hold.suspend(RemotingCommand.request(11, {}), conn, topic, queue_id, 0, timeout_ms)


def test_a_parked_pull_adds_its_topic():
    """Parking a pull puts its topic in ``topics``."""
    hold, _ = service()
    park(hold, Conn(), "T")
    assert hold.topics == {"T"}


def test_topic_stays_while_another_queue_of_it_waits():
    """Waking the pulls of one queue keeps the topic while another of its queues waits."""
    hold, _ = service()
    park(hold, Conn(), "T", 0)
    park(hold, Conn(), "T", 1)
    hold.notify_message_arriving("T", 0, 1)
    assert hold.topics == {"T"}
    hold.notify_message_arriving("T", 1, 1)
    assert hold.topics == set()


def test_timeout_of_the_last_pull_removes_the_topic():
    """The topic leaves ``topics`` when its last parked pull times out."""
    hold, clock = service()
    park(hold, Conn(), "T", timeout_ms=1000)
    park(hold, Conn(), "U", timeout_ms=5000)
    clock.advance(1.0)
    assert hold.topics == {"U"}


def test_closed_connection_removes_its_topics():
    """A closed connection's parked pulls go, and with them topics nobody else waits on."""
    hold, _ = service()
    gone, stays = Conn(), Conn()
    park(hold, gone, "T")
    park(hold, gone, "U")
    park(hold, stays, "U", 1)
    gone.close()
    assert hold.topics == {"U"}


def test_shutdown_empties_topics():
    """Shutdown answers every parked pull and leaves no topic."""
    hold, _ = service()
    park(hold, Conn(), "T")
    hold.shutdown()
    assert hold.topics == set() and hold.table == {}
