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
:mod:`rocketmq_emu.client.producer` / :mod:`rocketmq_emu.client.push_consumer` with ``cluster.namesrv_addr``.

Only the broker's timers and timestamps read :attr:`EmbeddedCluster.clock`
(:class:`rocketmq_emu.client.clock.ControllableClock`): delay levels, POP invisible times and
revive, delivery timestamps, the business time the gRPC proxy reads; sockets, the name server,
long polls, gRPC deadlines and clients run on the real reactor.

RocketMQ 5's gRPC MessagingService is served too, on a free port: point a 5.x SDK (or a grpcio
client) at :attr:`EmbeddedCluster.grpc_endpoint` (``"127.0.0.1:port"``); ``grpc_port=None`` turns
it off. After a receive, ``cluster.clock.advance(30 * 60)`` makes a message with a 30-minute
invisible time visible again at once. :attr:`EmbeddedCluster.faults` injects faults and records requests
(:mod:`rocketmq_emu.client.faults`); :meth:`stop_broker` / :meth:`start_broker` restart the broker on its
store, :meth:`make_unreachable` / :meth:`make_reachable` close and reopen its ports.

The name server and brokers are the production wiring's (:mod:`rocketmq_emu.broker.cluster`, what
``rmq-emu up`` runs), built with the clock and faults of
:class:`rocketmq_emu.client.control_up.Controls` (what ``rmq-emu up --control-port`` adds); this
module only chooses ports and stores and adds clients.
"""

from __future__ import annotations

import copy
import logging
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twisted.internet import defer
from twisted.internet.error import CannotListenError

from rocketmq_emu.broker.cluster import BrokerSlot, Cluster, ClusterSpec
from rocketmq_emu.broker.tls.config import TlsConfig, TlsMode
from rocketmq_emu.client.blocking import (
    BlockingAdmin,
    BlockingLitePullConsumer,
    BlockingProducer,
    BlockingPullConsumer,
    BlockingPushConsumer,
    in_reactor_context,
    run_blocking,
)
from rocketmq_emu.client.clock import ControllableClock
from rocketmq_emu.client.control_up import Controls
from rocketmq_emu.client.instance import default_reactor
from rocketmq_emu.client.testing_acl import AclHome
from rocketmq_emu.client.testing_dashboard import DashboardAccess
from rocketmq_emu.client.testing_tools import (  # noqa: F401 (re-exported)
    TEST_BROKER_CONF,
    TEST_BROKER_SETTINGS,
    MessageCollector,
    RegistrationHints,
    broker_names,
    free_broker_port,
    free_port,
    unique,
    wait_until,
)

_unique = unique

log = logging.getLogger(__name__)

#: Starts tried with freshly picked broker ports when one was taken in the meantime.
_PORT_ATTEMPTS = 3


class EmbeddedCluster(DashboardAccess):
    """Name server + broker(s) in-process (see module docstring).

    ``clock`` is ``"follow"`` (default), ``"manual"`` or a :class:`ControllableClock`.
    ``brokers`` > 1 starts that many brokers (``broker-a``, ``broker-b``, ...) in the cluster;
    ``broker``, ``broker_addr`` and ``store`` refer to the first, methods taking ``name`` to any.
    ``broker_config`` overrides BrokerConfig fields (snake_case, e.g.
    ``{"message_delay_level": "1s 2s"}``); ``config`` is a whole BrokerConfig to start from.
    ``store_dir`` defaults to a temporary directory removed at :meth:`stop` (kept if given);
    with several brokers each has a sub-directory named after it.
    ``control_port`` also serves the HTTP control API (:mod:`rocketmq_emu.client.control_api`);
    ``namesrv_kv_config`` persists the name server's KV config (memory only by default).
    ``grpc_port`` serves RocketMQ 5's gRPC MessagingService (0, the default: a free port; None:
    no gRPC endpoint); :attr:`grpc_endpoint` is where.
    ``acl`` (plain_acl.yml as YAML text or a mapping) turns ACL 1.0 on: the file is written to a
    temporary ``rocketmqHome`` and ``aclEnable=true`` set (:meth:`update_acl` rewrites it);
    ``credentials`` (``(access_key, secret_key)``) sign the requests of the clients this class
    makes (a client's own ``credentials=`` wins).
    ``tls`` is the ports' ``tls.server.mode`` (``"permissive"``, ``"enforcing"``,
    ``"disabled"``, or a :class:`~rocketmq_emu.broker.tls.config.TlsConfig`; None: RocketMQ's
    default, permissive with the test-mode certificate); with ``"enforcing"`` (however it is
    set: ``tls=``, ``broker_config={"tls": ...}`` or ``config``) the clients this class makes and
    :meth:`create_topic` use TLS (a client's own ``tls=`` wins), as ``tls.enable`` follows the
    mode in RocketMQ; :meth:`tls_certificate_pem` is the certificate a TLS client (a 5.x SDK on
    :attr:`grpc_endpoint`) is to trust. ``strict_conformance`` makes the pytest fixture fail the test at teardown when
    :meth:`conformance` holds an ``error`` finding.

    The name server and brokers are built and run by the production wiring,
    :class:`rocketmq_emu.broker.cluster.Cluster` (:attr:`cluster` once started), with the
    clock and fault injector of :class:`rocketmq_emu.client.control_up.Controls`, as
    ``rmq-emu up --control-port`` runs them; this class adds ports, a temporary store, small
    files and clients on top.
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
        brokers: int = 1,
        broker_config: dict[str, Any] | None = None,
        control_port: int | None = None,
        config: Any = None,
        namesrv_kv_config: str | Path | None = None,
        grpc_port: int | None = 0,
        reactor: Any = None,
        acl: str | Mapping[str, Any] | None = None,
        credentials: Any = None,
        tls: str | TlsConfig | None = None,
        strict_conformance: bool = False,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.reactor = reactor if reactor is not None else default_reactor()
        self.controls = Controls(self.reactor, clock)
        self.clock = self.controls.clock
        self.faults = self.controls.faults
        self.host = host
        self._own_store = store_dir is None
        self._store_dir = Path(store_dir) if store_dir is not None else None
        if config is not None:
            broker_name = config.broker_name
            cluster_name = config.broker_cluster_name
        self.broker_name = broker_name
        self.cluster_name = cluster_name
        self._namesrv_port = namesrv_port
        self.namesrv_kv_config = namesrv_kv_config
        self._broker_names = broker_names(broker_name, brokers)
        self._first_port = broker_port
        # A given BrokerConfig is used as is; otherwise small test files.
        self.base_config = config
        self.broker_overrides = {} if config is not None else dict(TEST_BROKER_SETTINGS)
        #: ACL 1.0: the temporary home of plain_acl.yml (None without ``acl``).
        self.acl_home = AclHome(acl) if acl is not None else None
        if self.acl_home is not None:
            self.broker_overrides.update(self.acl_home.broker_settings())
        if tls is not None:
            self.broker_overrides["tls"] = tls if isinstance(tls, TlsConfig) \
                else TlsConfig(mode=TlsMode(tls))
        self.broker_overrides.update(broker_config or {})
        #: Signs the requests of every client this cluster makes (unless given others).
        self.credentials = credentials
        #: Whether the clients this cluster makes use TLS: as its ports' ``tls.*`` settings
        #: want (:meth:`TlsConfig.tools_use_tls`: enforcing, or ``tls.enable``), whether they
        #: come from ``tls=``, ``broker_config`` or a whole ``config``.
        ports_tls = self.broker_overrides.get("tls", getattr(config, "tls", None))
        self.client_tls = isinstance(ports_tls, TlsConfig) and ports_tls.tools_use_tls()
        self.control_port = control_port
        self._grpc_port = grpc_port
        #: The production cluster (:class:`rocketmq_emu.broker.cluster.Cluster`), once started.
        self.cluster: Cluster | None = None
        self._clients: list[Any] = []
        # The consumers made here look up a missing route when a broker registers topics.
        self._registration_hints = RegistrationHints(self.reactor, self._clients)
        self.running = False
        #: The pytest fixture fails the test at teardown on an ``error`` conformance finding.
        self.strict_conformance = strict_conformance

    # --- addresses and parts (of the production cluster) --------------------------------------------
    def _started(self) -> Cluster:
        if self.cluster is None:
            raise RuntimeError("the cluster is not started")
        return self.cluster

    @property
    def namesrv(self) -> Any:
        """The NameServer (None unless running)."""
        return self.cluster.namesrv if self.cluster is not None else None

    @property
    def namesrv_addr(self) -> str:
        """``host:port`` of the name server."""
        if self.cluster is not None:
            return self.cluster.namesrv_addr
        return f"{self.host}:{self._namesrv_port}"

    @property
    def grpc_endpoint(self) -> str | None:
        """``host:port`` of the gRPC MessagingService (what a 5.x SDK's endpoints are); None
        before the start or with ``grpc_port=None``."""
        return self.cluster.grpc_endpoint if self.cluster is not None else None

    @property
    def slots(self) -> list[BrokerSlot]:
        """The brokers (empty before the start)."""
        return self.cluster.slots if self.cluster is not None else []

    def slot(self, name: str | None = None) -> BrokerSlot:
        """The broker called ``name`` (the first if None)."""
        return self._started().slot(name)

    @property
    def broker(self) -> Any:
        """The first broker's BrokerController (None while it is stopped)."""
        return self.cluster.broker if self.cluster is not None else None

    @property
    def broker_config(self) -> Any:
        """The first broker's BrokerConfig."""
        return self._started().slots[0].config

    @property
    def broker_addr(self) -> str:
        """``host:port`` the first broker is advertised at."""
        return self._started().broker_addr

    @property
    def broker_addrs(self) -> dict[str, str]:
        """Broker name -> advertised ``host:port``."""
        return self._started().broker_addrs

    @property
    def store_dir(self) -> Path:
        """The store root (the first broker's store with one broker)."""
        assert self._store_dir is not None, "the cluster is not started"
        return self._store_dir

    @property
    def store(self) -> Any:
        """The first broker's MessageStore (None while it is stopped)."""
        return self.broker_store()

    def broker_store(self, name: str | None = None) -> Any:
        """The MessageStore of the broker called ``name`` (None while it is stopped)."""
        return self._started().broker_store(name)

    # --- lifecycle (Twisted) ---------------------------------------------------------------------
    def start_async(self) -> defer.Deferred:
        """Start name server, brokers (and control API); fires with self."""
        return defer.ensureDeferred(self._start())

    def _spec(self) -> ClusterSpec:
        """The production cluster's spec: free ports, the store (a sub-directory per broker
        when there are several), test-sized files unless a whole config was given."""
        from rocketmq_emu.broker.config import BrokerConfig

        if self._store_dir is None:
            self._store_dir = Path(tempfile.mkdtemp(prefix="rmq-emu-store-"))
        configs = []
        for i, name in enumerate(self._broker_names):
            if self.base_config is not None:
                cfg = copy.copy(self.base_config)
            else:
                cfg = BrokerConfig()
                cfg.broker_cluster_name = self.cluster_name
            cfg.broker_name = name
            port = self._first_port if i == 0 else None
            cfg.listen_port = port if port is not None else free_broker_port(self.host)
            store = self.store_dir if len(self._broker_names) == 1 else self.store_dir / name
            cfg.store_path_root_dir = str(store)
            for key, value in self.broker_overrides.items():
                if not hasattr(cfg, key):
                    raise ValueError(f"BrokerConfig has no setting {key!r}")
                setattr(cfg, key, value)
            configs.append(cfg)
        kv = str(self.namesrv_kv_config) if self.namesrv_kv_config is not None else None
        return ClusterSpec(brokers=configs, host=self.host, namesrv_port=self._namesrv_port,
                           namesrv_kv_config=kv, store_dir=str(self.store_dir),
                           grpc_port=self._grpc_port)

    async def _start(self) -> EmbeddedCluster:
        for attempt in range(_PORT_ATTEMPTS):
            cluster = self.cluster = self.controls.build(self._spec())
            cluster.hooks.append(self._registration_hints)
            try:
                await cluster.start()
                break
            except CannotListenError:
                # A port picked free a moment ago can be taken by then (the kernel hands the
                # same range to outgoing connections): pick again, unless the caller chose it.
                # Cluster.start has stopped what it started.
                if self._first_port is not None or attempt == _PORT_ATTEMPTS - 1:
                    raise
                log.warning("a picked broker port was taken meanwhile; picking others")
        if self.control_port is not None:
            try:
                self.control_port = self.controls.serve(cluster, self.control_port)
            except Exception:
                await cluster.stop()
                raise
        self.running = True
        return self

    def stop_async(self) -> defer.Deferred:
        """Stop clients made by the cluster, the brokers (stores flushed) and the name server."""
        return defer.ensureDeferred(self._stop())

    async def _stop(self) -> None:
        for c in reversed(self._clients):
            try:
                # The Twisted object behind a blocking wrapper: we are in the reactor here.
                await defer.maybeDeferred(getattr(c, "_target", c).shutdown)
            except Exception:
                log.exception("shutting down %r failed", c)
        self._clients.clear()
        await self.controls.stop_serving()
        if self.cluster is not None:
            await self.cluster.stop()
        self.faults.detach_all()
        self.clock.stop()
        self.running = False
        if self._own_store and self._store_dir is not None:
            shutil.rmtree(self._store_dir, ignore_errors=True)
        if self.acl_home is not None:
            self.acl_home.remove()

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

    # --- broker faults (the production cluster's, plus blocking forms) ----------------------------
    def stop_broker_async(self, name: str | None = None) -> defer.Deferred:
        """Stop a broker (the first by default), keeping its store and port for a restart."""
        return self._started().stop_broker(name)

    def start_broker_async(self, name: str | None = None) -> defer.Deferred:
        """Start a stopped broker again on the same store and port."""
        return self._started().start_broker(name)

    def restart_broker_async(self, name: str | None = None) -> defer.Deferred:
        """Stop and start a broker on its store."""
        return self._started().restart_broker(name)

    def stop_broker(self, name: str | None = None) -> None:
        """Blocking :meth:`stop_broker_async`."""
        run_blocking(self.stop_broker_async, name, timeout=60)

    def start_broker(self, name: str | None = None) -> None:
        """Blocking :meth:`start_broker_async`."""
        run_blocking(self.start_broker_async, name, timeout=60)

    def restart_broker(self, name: str | None = None) -> None:
        """Blocking :meth:`restart_broker_async`."""
        run_blocking(self.restart_broker_async, name, timeout=60)

    def close_connections_async(self, target: str = "broker", name: str | None = None) -> defer.Deferred:
        """Close every client connection to ``target`` ("broker": all brokers, or the one
        called ``name``; "namesrv"); clients reconnect on their next request."""
        return self._started().close_connections(target, name)

    def close_connections(self, target: str = "broker", name: str | None = None) -> None:
        """Blocking :meth:`close_connections_async`."""
        run_blocking(self.close_connections_async, target, name, timeout=30)

    def make_unreachable_async(self, name: str | None = None) -> defer.Deferred:
        """Stop listening on a broker's ports and drop its connections: connects are refused
        until :meth:`make_reachable`. The broker keeps running (timers, store)."""
        return self._started().make_unreachable(name)

    def make_reachable_async(self, name: str | None = None) -> defer.Deferred:
        """Listen again on a broker's ports (undo :meth:`make_unreachable`)."""
        return self._started().make_reachable(name)

    def make_unreachable(self, name: str | None = None) -> None:
        """Blocking :meth:`make_unreachable_async`."""
        run_blocking(self.make_unreachable_async, name, timeout=30)

    def make_reachable(self, name: str | None = None) -> None:
        """Blocking :meth:`make_reachable_async`."""
        run_blocking(self.make_reachable_async, name, timeout=30)

    # --- clients (blocking facade) ---------------------------------------------------------------
    def _track(self, client: Any) -> Any:
        self._clients.append(client)
        return client

    def _client_options(self, kw: dict[str, Any]) -> dict[str, Any]:
        """``kw`` with the cluster's credentials and TLS unless the caller gave their own."""
        if self.credentials is not None:
            kw.setdefault("credentials", self.credentials)
        if self.client_tls:
            kw.setdefault("tls", True)
        return kw

    def update_acl(self, acl: str | Mapping[str, Any]) -> None:
        """Rewrite plain_acl.yml and have every running broker reload it now (the file watch
        would within ``AclFileWatchService``'s interval)."""
        if self.acl_home is None:
            raise RuntimeError("the cluster was started without acl=")
        self.acl_home.write(acl)
        for slot in self.slots:
            if slot.controller is not None and slot.controller.acl is not None:
                slot.controller.acl.poll()

    def producer(self, group: str | None = None, **kw: Any) -> BlockingProducer:
        """A started blocking producer (shut down with the cluster)."""
        p = BlockingProducer(group or _unique("producer"), self.namesrv_addr, **self._client_options(kw))
        p.start()
        return self._track(p)

    def push_consumer(self, topic: str, listener: Any, group: str | None = None, expression: str = "*",
                      expression_type: str = "TAG", **kw: Any) -> BlockingPushConsumer:
        """A started blocking push consumer of ``topic`` calling ``listener(msgs, ctx)``."""
        kw.setdefault("rebalance_interval", 2.0)
        c = BlockingPushConsumer(group or _unique("consumer"), self.namesrv_addr, listener,
                                 **self._client_options(kw))
        c.subscribe(topic, expression, expression_type)
        c.start()
        return self._track(c)

    def collector(self, topic: str, group: str | None = None, expression: str = "*",
                  expression_type: str = "TAG", **kw: Any) -> MessageCollector:
        """A push consumer that stores what it gets (:class:`MessageCollector`). Made before
        its topic exists, it takes the topic's queues as the broker registers the topic, so the
        first message arrives milliseconds after the send that creates it."""
        kw.setdefault("rebalance_interval", 2.0)
        kw.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
        # The collector's callback never blocks: keep it in the reactor.
        consumer = BlockingPushConsumer(group or _unique("collector"), self.namesrv_addr,
                                        listener_in_reactor=True, **self._client_options(kw))
        collector = MessageCollector(self, consumer)
        consumer.register_listener(collector._on_messages)
        consumer.subscribe(topic, expression, expression_type)
        consumer.start()
        self._track(consumer)
        return collector

    def pull_consumer(self, group: str | None = None, **kw: Any) -> BlockingPullConsumer:
        """A started blocking pull consumer."""
        c = BlockingPullConsumer(group or _unique("puller"), self.namesrv_addr, **self._client_options(kw))
        c.start()
        return self._track(c)

    def lite_pull_consumer(self, topic: str, group: str | None = None, expression: str = "*",
                           **kw: Any) -> BlockingLitePullConsumer:
        """A started blocking lite pull consumer of ``topic``."""
        kw.setdefault("rebalance_interval", 2.0)
        kw.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
        c = BlockingLitePullConsumer(group or _unique("lite"), self.namesrv_addr,
                                     **self._client_options(kw))
        c.subscribe(topic, expression)
        c.start()
        return self._track(c)

    def admin(self, **kw: Any) -> BlockingAdmin:
        """A blocking admin client."""
        return self._track(BlockingAdmin(self.namesrv_addr, **self._client_options(kw)))

    def tls_certificate_pem(self) -> bytes:
        """The PEM certificate the cluster's TLS ports present (the test-mode certificate, or
        ``tls.server.certPath``'s), e.g. as a gRPC client's root certificates
        (``grpc.ssl_channel_credentials(cluster.tls_certificate_pem())``). Needs the ``[tls]``
        extra in test mode."""
        from rocketmq_emu.broker.tls.certs import served_certificate_pem

        return served_certificate_pem(self._started().slots[0].template.tls)

    def create_topic(self, topic: str, queue_nums: int = 4, *, broker: str | None = None,
                     **kw: Any) -> None:
        """Create ``topic`` on every running broker, or on the one called ``broker`` (blocking)."""
        names = [broker] if broker is not None else [s.name for s in self.slots if s.running]
        admin = BlockingAdmin(self.namesrv_addr, **self._client_options({}))
        try:
            for name in names:
                admin.create_topic(topic, queue_nums, broker_addr=self.broker_addrs[name], **kw)
        finally:
            admin.shutdown()

    def reset(self) -> None:
        """Remove fault rules, recorded requests and conformance findings (the store is
        kept)."""
        self.faults.reset()
        if self.cluster is not None and self.cluster.conformance is not None:
            self.cluster.conformance.clear()

    def conformance(self, severity: str | None = None) -> list[dict[str, Any]]:
        """The conformance findings so far (also after :meth:`stop`), as ``GET /conformance``
        lists them: what the clients sent that Apache RocketMQ's Java client does not
        (:mod:`rocketmq_emu.broker.conformance`); only those of ``severity`` if given."""
        monitor = self.cluster.conformance if self.cluster is not None else None
        if monitor is None:
            return []
        blocking = self.running and not in_reactor_context()
        findings = (run_blocking(monitor.snapshot, timeout=30) if blocking
                    else monitor.snapshot())["findings"]
        return [f for f in findings if severity is None or f["severity"] == severity]
