"""A name server and its broker(s) in one process, built from a :class:`ClusterSpec`: the one
production wiring.

``rmq-emu up`` runs one (with or without ``--control-port``), ``rmq-emu broker`` one without
a name server; the test harness
(``rocketmq_emu.client.testing.EmbeddedCluster``, the pytest fixtures) builds its clusters with
it too, adding clients, a temporary store and small files on top. Nothing else constructs the
name server and brokers of a cluster::

    cluster = Cluster(up_spec(cfg, "127.0.0.1", 9876), reactor)
    yield cluster.start()        # name server listening, brokers started and registered
    yield cluster.restart_broker()
    yield cluster.stop()         # brokers unregister and flush their stores, then the name server

Two things can be plugged in at construction, for whoever drives the cluster (the control API,
the harness):

* ``business_clock``: the brokers' clock for business time (store timestamps, delay levels,
  retries, timers; ``BrokerController(business_clock=...)``); liveness stays on the reactor.
  None (the CLI without ``--control-port``): the reactor for both.
* ``hooks``: objects with ``attach(target, dispatcher, name)`` / ``detach(name)``
  (:class:`DispatcherHooks`, e.g. ``client.faults.FaultInjector``), told of every request
  dispatcher as its server comes and goes, so interceptors and observers (fault rules, the request
  log) follow broker restarts.

This module never imports ``client/``: the broker does not depend on the client.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import defer

from rocketmq_emu.broker.conformance.monitor import ConformanceMonitor

if TYPE_CHECKING:
    from rocketmq_emu.broker.config import BrokerConfig
    from rocketmq_emu.broker.controller import BrokerController
    from rocketmq_emu.broker.grpc.endpoint import GrpcEndpoint
    from rocketmq_emu.namesrv.server import NameServer

log = logging.getLogger(__name__)


class DispatcherHooks(Protocol):
    """Told of each server's request dispatcher(s): ``target`` is "broker" or "namesrv",
    ``name`` the broker's name (None for the name server, whose hooks go by "namesrv")."""

    def attach(self, target: str, dispatcher: Any, name: str | None = None) -> None: ...

    def detach(self, name: str) -> None: ...


@dataclass
class ClusterSpec:
    """What to run: a name server on ``host:namesrv_port`` (0 picks a free port) and one broker
    per BrokerConfig of ``brokers`` (each with its own ``brokerName``, ``listenPort`` and
    ``storePathRootDir``; ``namesrvAddr`` is set to this cluster's name server at start).
    ``namesrv_port=None`` runs the brokers alone, registering with their own ``namesrvAddr``
    (``rmq-emu broker``).

    ``namesrv_kv_config`` persists the name server's KV config (memory only if None);
    ``store_dir`` is the store root reported to users (default: the first broker's store);
    ``grpc_port`` serves RocketMQ 5's gRPC MessagingService for the cluster's brokers on
    ``host:grpc_port`` (0 picks a free port; None: no gRPC endpoint).
    """

    brokers: list[BrokerConfig]
    host: str = "127.0.0.1"
    namesrv_port: int | None = 9876
    namesrv_kv_config: str | None = None
    store_dir: str | None = None
    grpc_port: int | None = None
    #: Record every remoting byte of the name server and broker ports to this file.
    record: str | None = None
    #: Check what clients send against the Java client (:mod:`rocketmq_emu.broker.conformance`);
    #: the first broker's ``conformanceEnable=false`` turns it off too.
    conformance: bool = True
    #: Write ``conformance.json`` and ``conformance.html`` here when the cluster stops.
    conformance_report: str | None = None


def broker_spec(cfg: BrokerConfig, host: str, grpc_port: int | None = None) -> ClusterSpec:
    """``rmq-emu broker``'s: the broker of ``cfg`` alone, registering with its ``namesrvAddr``."""
    return ClusterSpec(brokers=[cfg], host=host, namesrv_port=None, grpc_port=grpc_port)


def up_spec(cfg: BrokerConfig, host: str, namesrv_port: int,
            grpc_port: int | None = None) -> ClusterSpec:
    """``rmq-emu up``'s cluster: the broker of ``cfg`` and a name server keeping its KV config in
    ``<store>/namesrv/kvConfig.json``."""
    root = cfg.store_path_root_dir
    return ClusterSpec(brokers=[cfg], host=host, namesrv_port=namesrv_port,
                       namesrv_kv_config=os.path.join(root, "namesrv", "kvConfig.json"),
                       store_dir=root, grpc_port=grpc_port)


@dataclass
class BrokerSlot:
    """One broker of a cluster. Its name, port and store survive stop/start: each start builds a
    new BrokerController from a copy of ``template``; ``config`` is the running (or last) one's."""

    template: BrokerConfig
    controller: BrokerController | None = None
    config: BrokerConfig | None = None
    port: int = field(init=False)
    #: The VIP channel's port once started (None: ``listenPort - 2``).
    vip_port: int | None = None

    def __post_init__(self) -> None:
        self.port = self.template.listen_port

    @property
    def name(self) -> str:
        """``brokerName``."""
        return self.template.broker_name

    @property
    def store_dir(self) -> Path:
        """``storePathRootDir``."""
        return Path(self.template.store_path_root_dir)

    @property
    def running(self) -> bool:
        """Whether the broker is started (or starting)."""
        return self.controller is not None


class Cluster:
    """A name server and brokers built from ``spec`` on ``reactor`` (see module docstring).

    Lifecycle methods return Deferreds and must run in the reactor thread. Broker methods take
    the broker's name (None: the first broker).
    """

    def __init__(self, spec: ClusterSpec, reactor: Any = None, *, business_clock: Any = None,
                 hooks: Sequence[DispatcherHooks] = ()) -> None:
        if not spec.brokers:
            raise ValueError("a cluster needs at least one broker")
        names = [c.broker_name for c in spec.brokers]
        if len(set(names)) != len(names):
            raise ValueError(f"broker names must differ: {names}")
        if reactor is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self.spec = spec
        self.reactor = reactor
        self.host = spec.host
        self.business_clock = business_clock
        self.hooks = list(hooks)
        #: The conformance findings of the cluster's clients (None: ``spec.conformance`` off).
        self.conformance: ConformanceMonitor | None = None
        if spec.conformance and spec.brokers[0].conformance_enable:
            self.conformance = ConformanceMonitor(
                reactor, store_of=self.broker_store,
                max_message_size=spec.brokers[0].max_message_size)
            self.hooks.insert(0, self.conformance)
        self.slots = [BrokerSlot(cfg) for cfg in spec.brokers]
        self.namesrv: NameServer | None = None
        self._namesrv_port = spec.namesrv_port
        self.grpc: GrpcEndpoint | None = None
        #: The recording of ``spec.record`` while the cluster runs.
        self.recorder: Any = None
        self._running: dict[str, BrokerController] | None = None

    # --- addresses and parts --------------------------------------------------------------------
    @property
    def namesrv_addr(self) -> str | None:
        """``host:port`` of the name server (what the brokers register with); None without one."""
        if self._namesrv_port is None:
            return None
        return f"{self.host}:{self._namesrv_port}"

    def slot(self, name: str | None = None) -> BrokerSlot:
        """The broker called ``name`` (the first if None); KeyError if there is none."""
        if name is None:
            return self.slots[0]
        for slot in self.slots:
            if slot.name == name:
                return slot
        raise KeyError(f"no broker {name!r} in this cluster ({[s.name for s in self.slots]})")

    @property
    def grpc_endpoint(self) -> str | None:
        """``host:port`` of the gRPC MessagingService (None without one)."""
        return self.grpc.address if self.grpc is not None else None

    def running_brokers(self) -> dict[str, BrokerController]:
        """Broker name -> controller of every started broker (what the gRPC endpoint serves,
        asked on every call: kept until a broker starts or stops)."""
        if self._running is None:
            self._running = {s.name: s.controller for s in self.slots
                             if s.controller is not None and s.controller.running}
        return self._running

    @property
    def broker(self) -> BrokerController | None:
        """The first broker's controller (None while it is stopped)."""
        return self.slots[0].controller

    @property
    def broker_addr(self) -> str:
        """``host:port`` of the first broker."""
        return f"{self.host}:{self.slots[0].port}"

    @property
    def broker_addrs(self) -> dict[str, str]:
        """Broker name -> ``host:port`` it listens on."""
        return {s.name: f"{self.host}:{s.port}" for s in self.slots}

    @property
    def store_dir(self) -> Path:
        """The store root."""
        return Path(self.spec.store_dir) if self.spec.store_dir else self.slots[0].store_dir

    def broker_store(self, name: str | None = None) -> Any:
        """The MessageStore of the broker called ``name`` (None while it is stopped)."""
        controller = self.slot(name).controller
        return controller.store if controller is not None else None

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> defer.Deferred:
        """Start the name server, then each broker; fires with self. On a failure what started
        is stopped again and the failure is passed on unchanged (the CLI names its cause)."""
        return defer.ensureDeferred(self._start())

    async def _start(self) -> Cluster:
        from rocketmq_emu.namesrv.server import NameServer

        try:
            if self.spec.record and self.recorder is None:
                from rocketmq_emu.broker.recording.recorder import Recorder

                self.recorder = Recorder(self.spec.record)
            if self._namesrv_port is not None:
                self.namesrv = NameServer(self.reactor, self._namesrv_port, self.host,
                                          kv_config_path=self.spec.namesrv_kv_config,
                                          tls=self._tls())
                self.namesrv.recorder = self.recorder
                await self.namesrv.start()
                self._namesrv_port = self.namesrv.port
                for hooks in self.hooks:
                    hooks.attach("namesrv", self.namesrv.dispatcher)
            for slot in self.slots:
                await self._start_broker(slot)
            if self.spec.grpc_port is not None:
                from rocketmq_emu.broker.grpc.endpoint import GrpcEndpoint

                self.grpc = GrpcEndpoint(self.reactor, self.host, self.spec.grpc_port,
                                         self.running_brokers, tls=self._tls())
                self.grpc.start()
                for hooks in self.hooks:
                    hooks.attach("grpc", self.grpc.factory)
        except BaseException:
            try:
                await self._stop()
            except Exception:
                log.exception("stopping the cluster after a failed start failed")
            raise
        return self

    def _tls(self) -> Any:
        """The TLS settings of the name server and the gRPC endpoint: the first broker's
        ``tls.*`` keys (in Java all of a host's processes read the same JVM properties)."""
        return self.spec.brokers[0].tls if self.spec.brokers else None

    def stop(self) -> defer.Deferred:
        """Stop the brokers (last first; each unregisters and flushes its store), then the name
        server. Every part is stopped even if one fails; the first failure is then raised."""
        return defer.ensureDeferred(self._stop())

    async def _stop(self) -> None:
        failures: list[BaseException] = []
        grpc, self.grpc = self.grpc, None
        if grpc is not None:
            self._detach("grpc")
            try:
                await grpc.stop()
            except Exception as e:
                failures.append(e)
        for slot in reversed(self.slots):
            try:
                await self._stop_broker(slot)
            except Exception as e:
                failures.append(e)
        namesrv, self.namesrv = self.namesrv, None
        if namesrv is not None:
            self._detach("namesrv")
            try:
                await defer.maybeDeferred(namesrv.stop)
            except Exception as e:
                failures.append(e)
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            recorder.close()
        if self.spec.conformance_report and self.conformance is not None:
            from rocketmq_emu.broker.conformance.report import write_report

            try:
                paths = write_report(self.conformance.snapshot(), self.spec.conformance_report)
                log.info("conformance report: %s", ", ".join(map(str, paths)))
            except OSError as e:
                log.error("cannot write the conformance report to %s: %s",
                          self.spec.conformance_report, e)
        if failures:
            raise failures[0]

    # --- brokers --------------------------------------------------------------------------------
    def _make_broker(self, slot: BrokerSlot) -> BrokerController:
        from rocketmq_emu.broker.controller import BrokerController

        cfg = copy.copy(slot.template)
        cfg.listen_port = slot.port
        if self.namesrv_addr is not None:
            cfg.namesrv_addr = self.namesrv_addr
        slot.config = cfg
        broker = BrokerController(cfg, reactor=self.reactor, host=self.host,
                                  business_clock=self.business_clock, vip_port=slot.vip_port)
        broker.recorder = self.recorder
        return broker

    async def _start_broker(self, slot: BrokerSlot) -> None:
        if slot.controller is not None:
            return
        broker = slot.controller = self._make_broker(slot)
        # Hooked before the start, so the start's own requests are seen (and can be faulted).
        for hooks in self.hooks:
            hooks.attach("broker", broker.dispatcher, slot.name)
            hooks.attach("broker", broker.vip_dispatcher, slot.name)
        try:
            await defer.maybeDeferred(broker.start)
        except BaseException:
            slot.controller = None
            self._detach(slot.name)
            try:
                # Not started, so stop() only closes a store that was loaded (its lock, its files).
                await defer.maybeDeferred(broker.stop)
            except Exception:
                log.exception("closing broker %s after a failed start failed", slot.name)
            raise
        # listenPort 0: a restart keeps the ports it got.
        slot.port, slot.vip_port = broker.port, broker.vip_port
        self._running = None

    async def _stop_broker(self, slot: BrokerSlot) -> None:
        broker, slot.controller = slot.controller, None
        self._running = None
        if broker is None:
            return
        self._detach(slot.name)
        await defer.maybeDeferred(broker.stop)

    def _detach(self, name: str) -> None:
        for hooks in self.hooks:
            hooks.detach(name)

    def start_broker(self, name: str | None = None) -> defer.Deferred:
        """Start a stopped broker again on its store and port (nothing if it runs)."""
        return defer.ensureDeferred(self._start_broker(self.slot(name)))

    def stop_broker(self, name: str | None = None) -> defer.Deferred:
        """Stop a broker, keeping its store and port for :meth:`start_broker`."""
        return defer.ensureDeferred(self._stop_broker(self.slot(name)))

    def restart_broker(self, name: str | None = None) -> defer.Deferred:
        """Stop and start a broker on its store."""
        return defer.ensureDeferred(self._restart(self.slot(name)))

    async def _restart(self, slot: BrokerSlot) -> None:
        await self._stop_broker(slot)
        await self._start_broker(slot)

    # --- connection faults ----------------------------------------------------------------------
    @staticmethod
    def _factories(server: Any) -> list[Any]:
        return [f for attr in ("factory", "vip_factory") if (f := getattr(server, attr, None))]

    def close_connections(self, target: str = "broker", name: str | None = None) -> defer.Deferred:
        """Close every client connection to ``target`` ("broker": all brokers, or the one called
        ``name``; "namesrv"; or a broker's name); clients reconnect on their next request."""
        if target == "namesrv":
            servers: list[Any] = [self.namesrv]
        elif name is not None or target not in ("broker", "any"):
            servers = [self.slot(name or target).controller]
        else:
            servers = [s.controller for s in self.slots]
        waits = [defer.maybeDeferred(f.close_all) for srv in servers if srv is not None
                 for f in self._factories(srv)]
        return defer.DeferredList(waits)

    def make_unreachable(self, name: str | None = None) -> defer.Deferred:
        """Stop listening on a broker's ports and drop its connections: connects are refused
        until :meth:`make_reachable`. The broker keeps running (timers, store)."""
        return defer.ensureDeferred(self._unreachable(self.slot(name)))

    async def _unreachable(self, slot: BrokerSlot) -> None:
        broker = slot.controller
        if broker is None:
            return
        await defer.maybeDeferred(broker.stop_listening)
        for factory in self._factories(broker):
            await factory.close_all()

    def make_reachable(self, name: str | None = None) -> defer.Deferred:
        """Listen again on a broker's ports (undo :meth:`make_unreachable`)."""
        broker = self.slot(name).controller
        if broker is None:
            return defer.succeed(None)
        return defer.maybeDeferred(broker.start_listening)
