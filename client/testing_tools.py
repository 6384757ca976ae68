"""Helpers of the test harness: test-sized store settings, broker names, free ports, unique
names, waiting, the message collector and the hook telling the harness's consumers of new topics
(re-exported by :mod:`rocketmq_emu.client.testing`)."""

from __future__ import annotations

import os
import random
import socket
import time
import uuid
from typing import Any

from twisted.internet import defer, task

from rocketmq_emu.broker.config import snake_to_camel
from rocketmq_emu.broker.remoting.codes import RequestCode
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

#: The same settings as ``broker.conf`` lines, for ``rmq-emu up -c`` / ``rmq-emu broker -c``
#: run as a subprocess (a test's store of a few MB, not 1 GiB reserved for the commitlog).
TEST_BROKER_CONF: str = "".join(
    f"{snake_to_camel(name)}={value}\n" for name, value in TEST_BROKER_SETTINGS.items())


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


#: The lowest port :func:`free_port` hands out (above the well-known and most registered ones).
PORT_FLOOR = 10_000


def _port_span() -> tuple[int, int]:
    """[low, high) of the ports :func:`free_port` picks from: below the kernel's ephemeral
    range, and under pytest-xdist the worker's own share of it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            high = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        high = 32_768  # Linux's default lower bound
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw3"
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if worker[2:].isdigit() and count > 0:
        share = (high - PORT_FLOOR) // count
        low = PORT_FLOOR + int(worker[2:]) * share
        return low, low + share
    return PORT_FLOOR, high


#: Ports :func:`free_port` handed out lately (port -> ``time.monotonic()``). A server started
#: with one binds it a moment later (a JVM: seconds later), and until then the port still looks
#: free: servers started together (a Spark master and its workers, an emulator and the gRPC
#: port its caller picked) once got the same one.
_HANDED_OUT: dict[int, float] = {}
#: How long a handed-out port is not handed out again.
HANDED_OUT_S = 120.0


def _handed_out(port: int, now: float) -> bool:
    when = _HANDED_OUT.get(port)
    return when is not None and now - when < HANDED_OUT_S


def _hand_out(port: int, now: float) -> int:
    if len(_HANDED_OUT) > 1024:  # forget the expired ones now and then
        for old in [p for p, t in _HANDED_OUT.items() if now - t >= HANDED_OUT_S]:
            del _HANDED_OUT[old]
    _HANDED_OUT[port] = now
    return port


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now, for a server a test starts a moment later.

    Picked at random below the kernel's ephemeral range, where no outgoing connection (of any
    process) can take it in that moment, as one bound to port 0 could be; under pytest-xdist
    from the worker's own share of that range, so parallel workers never pick the same one; and
    never one this process handed out in the last :data:`HANDED_OUT_S` seconds, which may not
    be bound yet."""
    low, high = _port_span()
    now = time.monotonic()
    if high - low > 100:
        for _ in range(200):
            port = random.randrange(low, high)
            if not _handed_out(port, now) and _port_free(port, host):
                return _hand_out(port, now)
    with socket.socket() as s:  # the range is all taken or tiny: any free port
        s.bind((host, 0))
        return _hand_out(s.getsockname()[1], now)


def free_broker_port(host: str = "127.0.0.1") -> int:
    """A free port P with P - 2 free as well (the broker's VIP channel), neither handed out
    lately."""
    for _ in range(500):
        port = free_port(host)
        now = time.monotonic()
        if port > 2000 and not _handed_out(port - 2, now) and _port_free(port - 2, host):
            _hand_out(port - 2, now)
            return port
    raise RuntimeError("no free port pair found for the broker")


def unique(prefix: str) -> str:
    """``prefix_<8 hex>``: a topic or group name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


class RegistrationHints:
    """A cluster hook (``attach`` / ``detach``, see :class:`rocketmq_emu.broker.cluster.Cluster`)
    that watches the name server for REGISTER_BROKER (103): a broker registers on the reactor
    turn after it creates a topic (and every 30 s). Then each consumer of ``clients`` (the
    harness's) looks up its missing routes at once (``look_up_missing_routes``), so a collector
    made before its topic gets the first message milliseconds after the send that creates it,
    however long it waited. Only an in-process observer: the name server answers as before."""

    def __init__(self, reactor: Any, clients: list[Any]) -> None:
        self.reactor = reactor
        self.clients = clients
        self._dispatcher: Any = None

    def attach(self, target: str, dispatcher: Any, name: str | None = None) -> None:
        """Observe the name server's requests (brokers and gRPC are not watched)."""
        if target == "namesrv":
            self._dispatcher = dispatcher
            dispatcher.add_observer(self._observe)

    def detach(self, name: str) -> None:
        """Stop observing when the name server goes."""
        if name == "namesrv" and self._dispatcher is not None:
            self._dispatcher.remove_observer(self._observe)
            self._dispatcher = None

    def _observe(self, event: Any) -> None:
        if event.code == RequestCode.REGISTER_BROKER:
            # Observers run before the handler: look once the registration is in the table.
            self.reactor.callLater(0, self._hint)

    def _hint(self) -> None:
        for client in list(self.clients):
            look = getattr(getattr(client, "_target", client), "look_up_missing_routes", None)
            if look is not None:
                look()


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
