"""``EmbeddedCluster``: a name server and a broker in this process, on free loopback ports, with a
temporary store and a controllable clock, for tests.

Blocking use (any test, script or REPL)::

    with EmbeddedCluster(clock="manual") as cluster:
        producer = cluster.producer()
        producer.send(Message("T", b"hi", delay_level=18))      # 2 hours
        inbox = cluster.collector("T")
        cluster.clock.advance(7200)
        [msg] = inbox.wait_for(1)

Twisted use (``@pytest_twisted.ensureDeferred`` tests, applications on the reactor): ``await
cluster.start_async()`` / ``await cluster.stop_async()`` and the Twisted clients of
:mod:`client.producer` / :mod:`client.push_consumer` with ``cluster.namesrv_addr``.

Only the broker's timers and timestamps read :attr:`EmbeddedCluster.clock`
(:class:`client.clock.ControllableClock`); sockets, the name server and clients run on the real
reactor. :attr:`EmbeddedCluster.faults` injects faults and records requests
(:mod:`client.faults`); :meth:`stop_broker` / :meth:`start_broker` restart the broker on its
store, :meth:`make_unreachable` / :meth:`make_reachable` close and reopen its ports.
"""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
import uuid
from pathlib import Path
from typing import Any

from twisted.internet import defer

from client.blocking import (
    BlockingAdmin,
    BlockingLitePullConsumer,
    BlockingProducer,
    BlockingPullConsumer,
    BlockingPushConsumer,
    run_blocking,
)
from client.clock import ControllableClock
from client.faults import FaultInjector
from client.instance import default_reactor
from client.message import MessageExt

log = logging.getLogger(__name__)

#: Small files so a test store costs kilobytes, not the production 1 GiB commitlog.
TEST_BROKER_SETTINGS: dict[str, Any] = {
    "mapped_file_size_commit_log": 8 * 1024 * 1024,
    "mapped_file_size_consume_queue": 30_000 * 20,
    "max_hash_slot_num": 50_000,
    "max_index_num": 200_000,
}


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


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


class MessageCollector:
    """A push consumer that keeps what it receives: :meth:`wait_for` blocks until enough came."""

    def __init__(self, cluster: EmbeddedCluster, consumer: BlockingPushConsumer) -> None:
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


class EmbeddedCluster:
    """Name server + broker in-process (see module docstring).

    ``clock`` is ``"follow"`` (default), ``"manual"`` or a :class:`ControllableClock`.
    ``broker_config`` overrides BrokerConfig fields (snake_case, e.g.
    ``{"message_delay_level": "1s 2s"}``); ``config`` is a whole BrokerConfig to start from. ``store_dir`` defaults to a temporary directory
    removed at :meth:`stop` (kept if given). ``control_port`` also serves the HTTP control API.
    """

    def __init__(
        self,
        *,
        clock: str | ControllableClock = "follow",
        store_dir: str | Path | None = None,
        host: str = "127.0.0.1",
        broker_name: str = "broker-a",
        cluster_name: str = "DefaultCluster",
        namesrv_port: int = 0,
        broker_port: int | None = None,
        broker_config: dict[str, Any] | None = None,
        control_port: int | None = None,
        config: Any = None,
        reactor: Any = None,
    ) -> None:
        self.reactor = reactor if reactor is not None else default_reactor()
        self.clock = clock if isinstance(clock, ControllableClock) else ControllableClock(clock, self.reactor)
        self.host = host
        self._own_store = store_dir is None
        self._store_dir = Path(store_dir) if store_dir is not None else None
        self.broker_name = broker_name
        self.cluster_name = cluster_name
        self._namesrv_port = namesrv_port
        self._broker_port = broker_port
        # A given BrokerConfig (rmq-emu up) is used as is; otherwise small test files.
        self.base_config = config
        self.broker_overrides = {} if config is not None else dict(TEST_BROKER_SETTINGS)
        self.broker_overrides.update(broker_config or {})
        self.control_port = control_port
        self.faults = FaultInjector(self.reactor)
        self.namesrv: Any = None
        self.broker: Any = None
        self.broker_config: Any = None
        self.control: Any = None
        self._clients: list[Any] = []
        self._unreachable_ports: list[int] = []
        self.running = False

    # --- addresses ----------------------------------------------------------------------------
    @property
    def namesrv_addr(self) -> str:
        """``host:port`` of the name server."""
        return f"{self.host}:{self._namesrv_port}"

    @property
    def broker_addr(self) -> str:
        """``host:port`` the broker is advertised at."""
        return f"{self.host}:{self._broker_port}"

    @property
    def store_dir(self) -> Path:
        """The broker's store root."""
        assert self._store_dir is not None, "the cluster is not started"
        return self._store_dir

    @property
    def store(self) -> Any:
        """The broker's MessageStore (None while the broker is stopped)."""
        return getattr(self.broker, "store", None) if self.broker is not None else None

    # --- lifecycle (Twisted) ---------------------------------------------------------------------
    def start_async(self) -> defer.Deferred:
        """Start name server, broker (and control API); fires with self."""
        return defer.ensureDeferred(self._start())

    async def _start(self) -> EmbeddedCluster:
        from namesrv.server import NameServer

        if self._store_dir is None:
            self._store_dir = Path(tempfile.mkdtemp(prefix="rmq-emu-store-"))
        self.namesrv = NameServer(self.reactor, self._namesrv_port, self.host)
        await self.namesrv.start()
        self._namesrv_port = self.namesrv.port
        self.faults.attach("namesrv", self.namesrv.dispatcher)
        if self._broker_port is None:
            self._broker_port = free_broker_port(self.host)
        await self._start_broker()
        if self.control_port is not None:
            from client.control_api import serve_control_api

            # The control API is for this machine only: always loopback.
            self.control = serve_control_api(self, self.control_port, "127.0.0.1", self.reactor)
            self.control_port = self.control.getHost().port
        self.running = True
        return self

    def _make_config(self) -> Any:
        import copy

        from broker.config import BrokerConfig

        if self.base_config is not None:
            cfg = copy.copy(self.base_config)
        else:
            cfg = BrokerConfig()
            cfg.broker_name = self.broker_name
            cfg.broker_cluster_name = self.cluster_name
        cfg.listen_port = self._broker_port
        cfg.namesrv_addr = self.namesrv_addr
        cfg.store_path_root_dir = str(self.store_dir)
        for key, value in self.broker_overrides.items():
            if not hasattr(cfg, key):
                raise ValueError(f"BrokerConfig has no setting {key!r}")
            setattr(cfg, key, value)
        return cfg

    async def _start_broker(self) -> None:
        from broker.controller import BrokerController

        self.broker_config = self._make_config()
        broker = BrokerController(self.broker_config, reactor=self.reactor, host=self.host,
                                  clock=self.clock)
        # Business time (store timestamps, delay levels, retries, timers) follows the
        # controllable clock; liveness stays in real time, so advancing hours neither expires
        # clients' channels and queue locks nor ends parked pulls or request timeouts.
        ctx = broker.ctx
        for manager in (ctx.consumer_manager, ctx.producer_manager, ctx.lock_manager):
            manager.clock = self.reactor
        broker.hold_service.clock = self.reactor
        for factory in (broker.factory, broker.vip_factory):
            factory.clock = self.reactor
        self.broker = broker
        self.faults.attach("broker", broker.dispatcher)
        self.faults.attach("broker", broker.vip_dispatcher)
        await defer.maybeDeferred(broker.start)

    def stop_async(self) -> defer.Deferred:
        """Stop clients made by the cluster, the broker (store flushed) and the name server."""
        return defer.ensureDeferred(self._stop())

    async def _stop(self) -> None:
        for c in reversed(self._clients):
            try:
                # The Twisted object behind a blocking wrapper: we are in the reactor here.
                await defer.maybeDeferred(getattr(c, "_target", c).shutdown)
            except Exception:
                log.exception("shutting down %r failed", c)
        self._clients.clear()
        if self.control is not None:
            await defer.maybeDeferred(self.control.stopListening)
            self.control = None
        if self.broker is not None:
            await self._stop_broker()
        if self.namesrv is not None:
            await self.namesrv.stop()
            self.namesrv = None
        self.faults.detach_all()
        self.clock.stop()
        self.running = False
        if self._own_store and self._store_dir is not None:
            shutil.rmtree(self._store_dir, ignore_errors=True)

    async def _stop_broker(self) -> None:
        broker, self.broker = self.broker, None
        for a in list(self.faults._attached):
            if a.target == "broker":
                a.dispatcher.remove_interceptor(a.interceptor)
                a.dispatcher.remove_observer(a.observer)
                self.faults._attached.remove(a)
        await defer.maybeDeferred(broker.stop)

    # --- lifecycle (blocking) --------------------------------------------------------------------
    def start(self) -> EmbeddedCluster:
        """Blocking :meth:`start_async`."""
        return run_blocking(self.start_async, timeout=60)

    def stop(self) -> None:
        """Blocking :meth:`stop_async`."""
        run_blocking(self.stop_async, timeout=60)

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- broker faults ---------------------------------------------------------------------------
    def stop_broker_async(self) -> defer.Deferred:
        """Stop the broker, keeping its store (and ports reserved for :meth:`start_broker`)."""
        return defer.ensureDeferred(self._stop_broker()) if self.broker else defer.succeed(None)

    def start_broker_async(self) -> defer.Deferred:
        """Start a broker again on the same store and ports."""
        return defer.ensureDeferred(self._start_broker()) if self.broker is None else defer.succeed(None)

    async def _restart(self) -> None:
        if self.broker is not None:
            await self._stop_broker()
        await self._start_broker()

    def restart_broker_async(self) -> defer.Deferred:
        """Stop and start the broker on its store."""
        return defer.ensureDeferred(self._restart())

    def stop_broker(self) -> None:
        """Blocking :meth:`stop_broker_async`."""
        run_blocking(self.stop_broker_async, timeout=60)

    def start_broker(self) -> None:
        """Blocking :meth:`start_broker_async`."""
        run_blocking(self.start_broker_async, timeout=60)

    def restart_broker(self) -> None:
        """Blocking :meth:`restart_broker_async`."""
        run_blocking(self.restart_broker_async, timeout=60)

    def close_connections_async(self, target: str = "broker") -> defer.Deferred:
        """Close every client connection to the broker (or ``"namesrv"``); clients reconnect."""
        server = self.broker if target == "broker" else self.namesrv
        if server is None:
            return defer.succeed(None)
        return defer.DeferredList([defer.maybeDeferred(f.close_all) for f in self._factories(server)])

    def close_connections(self, target: str = "broker") -> None:
        """Blocking :meth:`close_connections_async`."""
        run_blocking(self.close_connections_async, target, timeout=30)

    @staticmethod
    def _factories(server: Any) -> list[Any]:
        return [f for name in ("factory", "vip_factory") if (f := getattr(server, name, None))]

    def make_unreachable_async(self) -> defer.Deferred:
        """Stop listening on the broker's ports and drop its connections: connects are refused
        until :meth:`make_reachable`. The broker keeps running (timers, store)."""
        return defer.ensureDeferred(self._unreachable())

    async def _unreachable(self) -> None:
        broker = self.broker
        if broker is None:
            return
        await defer.maybeDeferred(broker.stop_listening)
        for factory in self._factories(broker):
            await factory.close_all()

    def make_reachable_async(self) -> defer.Deferred:
        """Listen again on the broker's ports (undo :meth:`make_unreachable`)."""
        if self.broker is None:
            return defer.succeed(None)
        return defer.maybeDeferred(self.broker.start_listening)

    def make_unreachable(self) -> None:
        """Blocking :meth:`make_unreachable_async`."""
        run_blocking(self.make_unreachable_async, timeout=30)

    def make_reachable(self) -> None:
        """Blocking :meth:`make_reachable_async`."""
        run_blocking(self.make_reachable_async, timeout=30)

    # --- clients (blocking facade) ---------------------------------------------------------------
    def _track(self, client: Any) -> Any:
        self._clients.append(client)
        return client

    def producer(self, group: str | None = None, **kw: Any) -> BlockingProducer:
        """A started blocking producer (shut down with the cluster)."""
        p = BlockingProducer(group or _unique("producer"), self.namesrv_addr, **kw)
        p.start()
        return self._track(p)

    def push_consumer(self, topic: str, listener: Any, group: str | None = None, expression: str = "*",
                      **kw: Any) -> BlockingPushConsumer:
        """A started blocking push consumer of ``topic`` calling ``listener(msgs, ctx)``."""
        kw.setdefault("rebalance_interval", 2.0)
        c = BlockingPushConsumer(group or _unique("consumer"), self.namesrv_addr, listener, **kw)
        c.subscribe(topic, expression)
        c.start()
        return self._track(c)

    def collector(self, topic: str, group: str | None = None, expression: str = "*",
                  **kw: Any) -> MessageCollector:
        """A push consumer that stores what it gets (:class:`MessageCollector`)."""
        kw.setdefault("rebalance_interval", 2.0)
        kw.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
        # The collector's callback never blocks: keep it in the reactor.
        consumer = BlockingPushConsumer(group or _unique("collector"), self.namesrv_addr,
                                        listener_in_reactor=True, **kw)
        collector = MessageCollector(self, consumer)
        consumer.register_listener(collector._on_messages)
        consumer.subscribe(topic, expression)
        consumer.start()
        self._track(consumer)
        return collector

    def pull_consumer(self, group: str | None = None, **kw: Any) -> BlockingPullConsumer:
        """A started blocking pull consumer."""
        c = BlockingPullConsumer(group or _unique("puller"), self.namesrv_addr, **kw)
        c.start()
        return self._track(c)

    def lite_pull_consumer(self, topic: str, group: str | None = None, expression: str = "*",
                           **kw: Any) -> BlockingLitePullConsumer:
        """A started blocking lite pull consumer of ``topic``."""
        kw.setdefault("rebalance_interval", 2.0)
        kw.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
        c = BlockingLitePullConsumer(group or _unique("lite"), self.namesrv_addr, **kw)
        c.subscribe(topic, expression)
        c.start()
        return self._track(c)

    def admin(self) -> BlockingAdmin:
        """A blocking admin client."""
        return self._track(BlockingAdmin(self.namesrv_addr))

    def create_topic(self, topic: str, queue_nums: int = 4, **kw: Any) -> None:
        """Create ``topic`` on the broker (blocking)."""
        admin = BlockingAdmin(self.namesrv_addr)
        try:
            admin.create_topic(topic, queue_nums, broker_addr=self.broker_addr, **kw)
        finally:
            admin.shutdown()

    def reset(self) -> None:
        """Remove fault rules and recorded requests (the store is kept)."""
        self.faults.reset()


def wait_until(predicate: Any, timeout: float = 15.0, what: str = "the condition",
               interval: float = 0.05) -> Any:
    """Block until ``predicate()`` is truthy (the reactor keeps running meanwhile); returns its
    value, or raises AssertionError naming ``what`` after ``timeout`` seconds."""
    import time

    from twisted.internet import task

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        run_blocking(task.deferLater, default_reactor(), interval, lambda: None)
