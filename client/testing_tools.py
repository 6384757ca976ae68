"""Helpers of the test harness: test-sized store settings, broker names, free ports, unique
names, waiting, and the message collector
(re-exported by :mod:`rocketmq_emu.client.testing`)."""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

from twisted.internet import defer, task

from rocketmq_emu.client.blocking import BlockingPushConsumer, run_blocking
from rocketmq_emu.client.instance import default_reactor
from rocketmq_emu.client.message import MessageExt

#: Small files so a test store costs kilobytes, not the production 1 GiB commitlog.
TEST_BROKER_SETTINGS: dict[str, Any] = {
    "mapped_file_size_commit_log": 8 * 1024 * 1024,
    "mapped_file_size_consume_queue": 30_000 * 20,
    "max_hash_slot_num": 50_000,
    "max_index_num": 200_000,
}


def broker_names(first: str, count: int) -> list[str]:
    """``count`` broker names: ``first``, then ``broker-b``, ``broker-c``, ... (skipping
    ``first``)."""
    names = [first]
    i = 1
    while len(names) < count:
        candidate = f"broker-{chr(ord('a') + i)}" if i < 26 else f"broker-{i}"
        if candidate not in names:
            names.append(candidate)
        i += 1
    return names


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A currently free TCP port."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_broker_port(host: str = "127.0.0.1") -> int:
    """A free port P with P - 2 free as well (the broker's VIP channel)."""
    for _ in range(500):
        port = free_port(host)
        if port > 2000 and _port_free(port - 2, host):
            return port
    raise RuntimeError("no free port pair found for the broker")


def unique(prefix: str) -> str:
    """``prefix_<8 hex>``: a topic or group name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


class MessageCollector:
    """A push consumer that keeps what it receives: :meth:`wait_for` blocks until enough came."""

    def __init__(self, cluster: Any, consumer: BlockingPushConsumer) -> None:
        self.cluster = cluster
        self.consumer = consumer
        self.messages: list[MessageExt] = []
        self._waiters: list[tuple[int, defer.Deferred]] = []

    def _on_messages(self, msgs: list[MessageExt], ctx: Any) -> bool:
        self.messages.extend(msgs)
        still = []
        for n, d in self._waiters:
            if len(self.messages) >= n and not d.called:
                d.callback(None)
            elif not d.called:
                still.append((n, d))
        self._waiters = still
        return True

    def wait_for_async(self, count: int, timeout: float = 10.0) -> defer.Deferred:
        """Fires with the first ``count`` messages (or fails with ``defer.TimeoutError``)."""
        if len(self.messages) >= count:
            return defer.succeed(self.messages[:count])
        d: defer.Deferred = defer.Deferred()
        self._waiters.append((count, d))
        d.addTimeout(timeout, default_reactor())
        return d.addCallback(lambda _: self.messages[:count])

    def wait_for(self, count: int, timeout: float = 10.0) -> list[MessageExt]:
        """Block until ``count`` messages arrived; returns them."""
        return run_blocking(self.wait_for_async, count, timeout, timeout=timeout + 5)

    def bodies(self) -> list[bytes]:
        """Bodies received so far."""
        return [m.body for m in self.messages]

    def stop(self) -> None:
        """Shut the consumer down."""
        self.consumer.shutdown()


def wait_until(predicate: Any, timeout: float = 15.0, what: str = "the condition",
               interval: float = 0.05) -> Any:
    """Block until ``predicate()`` is truthy (the reactor keeps running meanwhile); returns its
    value, or raises AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        run_blocking(task.deferLater, default_reactor(), interval, lambda: None)
