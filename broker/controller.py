"""``BrokerController``: one broker — store, request processors, listening ports, name-server
registration and housekeeping — wired to a reactor (RocketMQ ``broker/BrokerController.java``).

::

    controller = BrokerController(BrokerConfig(namesrv_addr="127.0.0.1:9876"), reactor=reactor)
    yield controller.start()   # store loaded+started, listening, registered with the name servers
    controller.addr            # "brokerIP1:listenPort" as registered
    yield controller.stop()    # unregister, answer parked pulls, close, flush store, drop abort

It listens on ``listenPort`` and on ``listenPort - 2`` (the VIP channel old Java producers use),
registers with every name server at start, every ``registerNameServerPeriod`` (30 s) and right
after a topic is created or deleted, scans client channels every 10 s (120 s expiry), persists
consumer offsets every 5 s, and runs the delay-level and timer services of :mod:`rocketmq_emu.broker.schedule`.
Two clocks, one by default: ``clock`` (defaults to the reactor) times liveness, i.e. client
channel and queue-lock expiry, parked pulls and request timeouts; ``business_clock`` (defaults to
``clock``) gives the store's timestamps and runs delay levels, retries, timers and housekeeping.
``rmq-emu up`` without ``--control-port`` passes neither; with it, and in the test harness,
``broker.cluster.Cluster`` passes a controllable ``business_clock``, so advancing
hours of business time neither expires clients nor ends parked pulls.
"""

from __future__ import annotations

import logging
import zlib
from typing import Any

from twisted.internet import defer
from twisted.internet.task import LoopingCall

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.configs.base import TOPICS_JSON, ConfigFileError, config_file_path
from rocketmq_emu.broker.configs.topics import TopicConfigManager
from rocketmq_emu.broker.controller_areas import (
    ACL_ADMIN_CODES,
    NOT_ON_VIP,
    POP_CODES,
    RECALL_CODES,
    DeferredAreas,
)
from rocketmq_emu.broker.longpoll import PullRequestHoldService
from rocketmq_emu.broker.pop import boot as pop_boot
from rocketmq_emu.broker.pop import names as pop_names
from rocketmq_emu.broker.processors.admin import AdminBrokerProcessor
from rocketmq_emu.broker.processors.admin_consumer import AdminConsumerProcessor
from rocketmq_emu.broker.processors.admin_stats import AdminStatsProcessor
from rocketmq_emu.broker.processors.admin_store import AdminStoreProcessor
from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.consumer_manage import ConsumerManageProcessor
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.processors.end_transaction import EndTransactionProcessor
from rocketmq_emu.broker.processors.pull import PullMessageProcessor
from rocketmq_emu.broker.processors.query import QueryMessageProcessor
from rocketmq_emu.broker.processors.reply import ReplyMessageProcessor
from rocketmq_emu.broker.processors.reset_offset import ResetOffsetProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.listen import listen_broker_ports
from rocketmq_emu.broker.remoting.protocol import RemotingServerFactory, RequestDispatcher
from rocketmq_emu.broker.store import MessageStore

log = logging.getLogger(__name__)

#: ``ClientHousekeepingService``: scan every 10 s.
CHANNEL_SCAN_PERIOD_S = 10.0
#: ``flushConsumerOffsetInterval``.
FLUSH_CONSUMER_OFFSET_PERIOD_S = 5.0
#: ``registerBrokerTimeoutMills``.
REGISTER_TIMEOUT_S = 6.0



class _BrokerServerFactory(RemotingServerFactory):
    """Server factory that reports every closed connection (``ChannelEventListener.onChannelClose``)."""

    def __init__(self, dispatcher: RequestDispatcher, clock: Any, on_close: Any) -> None:
        super().__init__(dispatcher, clock)
        self.on_close = on_close

    def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 (Twisted API)
        proto = super().buildProtocol(addr)
        proto.add_close_callback(self.on_close)
        return proto


class BrokerController(DeferredAreas):
    """A broker. ``config`` is a :class:`~broker.config.BrokerConfig`; ``host`` the interface to
    listen on (the advertised address is ``brokerIP1``, else this host, loopback for 0.0.0.0)."""

    def __init__(
        self,
        config: BrokerConfig | None = None,
        reactor: Any = None,
        clock: Any = None,
        *,
        business_clock: Any = None,
        host: str = "0.0.0.0",
        store: MessageStore | None = None,
        enable_vip_channel: bool = True,
        vip_port: int | None = None,
        enable_schedule: bool = True,
    ) -> None:
        if reactor is None:
            from twisted.internet import reactor as default_reactor

            reactor = default_reactor
        self.config = config if config is not None else BrokerConfig()
        self.reactor = reactor
        #: Liveness time: client channels, queue locks, parked pulls, request timeouts.
        self.liveness_clock = clock if clock is not None else reactor
        #: Business time: store timestamps, delay levels, retries, timers, housekeeping loops.
        self.clock = business_clock if business_clock is not None else self.liveness_clock
        self.host = host
        self.enable_vip_channel = enable_vip_channel
        #: The VIP channel's port if not ``listenPort - 2`` (a restart keeps the one it got).
        self._vip_request = vip_port
        cfg = self.config
        #: ACL 1.0 (``BrokerController.initialAcl``): only with ``aclEnable=true``; a bad
        #: plain_acl.yml raises AclConfigError here, before the store is opened.
        self.acl: Any = self._make_acl() if cfg.acl_enable else None
        self.store = store if store is not None else MessageStore(
            cfg.to_store_config(host), self.clock, reactor)
        self._configure_managers()
        self.ctx = BrokerContext(cfg, self.store, self.clock,
                                 (cfg.advertised_ip(host), cfg.listen_port),
                                 liveness_clock=self.liveness_clock)
        self.dispatcher = RequestDispatcher(self.clock)
        self.vip_dispatcher = RequestDispatcher(self.clock)
        if self.acl is not None:  # the server's RPCHook: first, before the fault hooks
            self.dispatcher.add_interceptor(self.acl.intercept)
            self.vip_dispatcher.add_interceptor(self.acl.intercept)
        self.send_processor = SendMessageProcessor(self.ctx)
        self.pull_processor = PullMessageProcessor(self.ctx)
        self.processors = [
            self.send_processor,
            self.pull_processor,
            ClientManageProcessor(self.ctx),
            ConsumerManageProcessor(self.ctx),
            QueryMessageProcessor(self.ctx),
            AdminBrokerProcessor(self.ctx, self.schedule_register),
            ReplyMessageProcessor(self.ctx),
            AdminConsumerProcessor(self.ctx),
        ]
        for processor in self.processors:
            self._register_handlers(processor)
        # Transactions and offset reset (issue 7), registered additively.
        self.end_transaction_processor = EndTransactionProcessor(self.ctx)
        self.register_processor(self.end_transaction_processor)
        self.register_processor(ResetOffsetProcessor(self.ctx))
        self._recall: Any = None
        self._load_on_first_use(RECALL_CODES, self._load_recall)  # RocketMQ 5.3 recall
        # The remaining AdminBrokerProcessor codes (303-329).
        self.register_processor(AdminStatsProcessor(self.ctx))
        self.register_processor(AdminStoreProcessor(self.ctx))
        # ACL admin codes 50-54 (answered as Java does with ACL off too).
        self._acl_admin: Any = None
        self._load_on_first_use(ACL_ADMIN_CODES, self._load_acl_admin)
        self.hold_service = PullRequestHoldService(self.liveness_clock,
                                                   self.pull_processor.execute_when_wakeup)
        self.ctx.hold_service = self.hold_service
        # RocketMQ 5 POP (issue 14): processors, revive service, order info, long polling; loaded
        # at the first POP request, or at the start if the store holds POP state.
        self._pop: Any = None
        self._load_on_first_use(POP_CODES, self._load_pop)
        self.store.topic_config.add_change_listener(lambda tc: self.schedule_register())
        self.factory = _BrokerServerFactory(self.dispatcher, self.liveness_clock,
                                            self._on_connection_closed)
        self.vip_factory = _BrokerServerFactory(self.vip_dispatcher, self.liveness_clock,
                                                self._on_connection_closed)
        self.remoting_client = RemotingClient(reactor, tls=self._client_tls())
        self.schedule: Any = None
        if enable_schedule:
            self.schedule = self._make_schedule_services()
        # Held pulls are woken by a store listener called only for topics somebody waits on
        # (each Python call per stored message costs; see bench/send_pull.py); the schedule
        # services register theirs, for their own topics, when they start.
        self.store.add_arrival_listener(self._on_arrival, topics=self.hold_service.topics)
        self._ports: list[Any] = []
        #: A :class:`~rocketmq_emu.broker.recording.recorder.Recorder` (set by the cluster).
        self.recorder: Any = None
        self._tls_switches: list[Any] = []
        self._vip_port: int | None = None
        self._loops: list[LoopingCall] = []
        self._register_call: Any = None
        self.running = False

    def register_processor(self, processor: Any) -> None:
        """Add a processor (an object with ``handlers() -> {code: handler}``, e.g. a
        transaction processor) on the main and VIP channels; replaces earlier handlers."""
        self.processors.append(processor)
        self._register_handlers(processor)

    def _register_handlers(self, processor: Any) -> None:
        for code, handler in processor.handlers().items():
            self.dispatcher.register(code, handler)
            if code not in NOT_ON_VIP:
                self.vip_dispatcher.register(code, handler)

    # --- construction helpers ------------------------------------------------------------------
    def _configure_managers(self) -> None:
        """The store opens its config files with defaults; apply this broker's identity and
        auto-creation switches (``TopicConfigManager(BrokerController)`` builds the system
        topics from them)."""
        cfg = self.config
        root = self.store.config.store_path_root_dir
        topics = TopicConfigManager(
            config_file_path(root, TOPICS_JSON), self.clock,
            broker_name=cfg.broker_name,
            broker_cluster_name=cfg.broker_cluster_name,
            auto_create_topic_enable=cfg.auto_create_topic_enable,
            default_topic_queue_nums=cfg.default_topic_queue_nums,
            cluster_topic_enable=cfg.cluster_topic_enable,
            broker_topic_enable=cfg.broker_topic_enable,
            trace_topic_enable=cfg.trace_topic_enable,
            msg_trace_topic_name=cfg.msg_trace_topic_name,
        )
        if not topics.load():
            raise ConfigFileError(topics.load_error or f"{topics.path}: cannot be loaded")
        self.store.topic_config = topics
        self.store.subscription_groups.auto_create_subscription_group = \
            cfg.auto_create_subscription_group

    def _make_acl(self) -> Any:
        """``PlainAccessValidator`` with the accounts of ``rocketmqHome`` (or ``$ROCKETMQ_HOME``)."""
        from rocketmq_emu.broker.acl.service import AclService, resolve_home

        return AclService(resolve_home(self.config.rocketmq_home), self.config.acl_plain_file)

    def _make_schedule_services(self) -> Any:
        from rocketmq_emu.broker.schedule import ScheduleConfig, ScheduleServices, TimerConfig

        cfg = self.config
        timer = TimerConfig()
        timer.max_delay_sec = int(getattr(cfg, "timer_max_delay_sec", timer.max_delay_sec))
        services = ScheduleServices(self.store, self.clock, ScheduleConfig(
            store_path_root_dir=self.store.config.store_path_root_dir,
            message_delay_level=cfg.message_delay_level,
            timer=timer,
        ))
        if getattr(cfg, "timer_wheel_enable", True):
            self.ctx.timer_service = services.timer
        return services

    # --- identity ------------------------------------------------------------------------------
    @property
    def addr(self) -> str:
        """``brokerIP1:listenPort`` (the address registered and encoded in msgIds)."""
        return self.ctx.broker_addr

    @property
    def port(self) -> int:
        """The main listening port."""
        return self.ctx.store_host[1]

    @property
    def vip_port(self) -> int | None:
        """The VIP channel's port (``listenPort - 2``), if listening."""
        return self._vip_port

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> defer.Deferred:
        """Load and start the store, listen, start services and register; fires with self."""
        return defer.ensureDeferred(self._start())

    async def _start(self) -> BrokerController:
        if not self.store.loaded and not self.store.load():
            raise RuntimeError(f"store did not load: {self.store.load_error}") \
                from self.store.load_error
        self.start_listening()
        self.store.start()
        if self.schedule is not None:
            self.schedule.load()
            self.schedule.start()
        self.end_transaction_processor.start()
        revive_queue_num = int(self.ctx.setting("revive_queue_num", pop_names.REVIVE_QUEUE_NUM))
        if self._pop is None and pop_boot.holds_pop_state(self.store, self.ctx.cluster_name,
                                                          revive_queue_num):
            self._load_pop()  # PopReviveService: revive what an earlier run left
        if self._pop is not None:
            self._pop.start()
        else:
            pop_boot.ensure_revive_topic(self.ctx.topic_config, self.ctx.cluster_name,
                                         revive_queue_num)
        if self.acl is not None:  # AclFileWatchService
            self.acl.start(self.liveness_clock)
        for processor in self.processors:  # e.g. BrokerStatsManager sampling
            for period, fn in getattr(processor, "periodic_tasks", list)():
                self._every(period, fn, now=True)
        self._every(CHANNEL_SCAN_PERIOD_S, self.scan_not_active_channels)
        self._every(FLUSH_CONSUMER_OFFSET_PERIOD_S, self.store.consumer_offsets.persist)
        period = max(getattr(self.config, "register_name_server_period", 30_000), 10_000)
        self._every(period / 1000.0, self.register_broker_all, now=False)
        self.running = True
        log.info("The broker[%s, %s] boot success. serializeType=JSON and name server is %s",
                 self.config.broker_name, self.addr, self.config.namesrv_addr)
        await self.register_broker_all()
        return self

    def start_listening(self) -> None:
        """Listen on ``listenPort`` and on the VIP channel's port, ``listenPort - 2`` (or
        ``vip_port``); 0 binds free ports (see ``broker.remoting.listen``). The ports bound are
        what is registered and advertised."""
        if self._ports:
            return
        cfg = self.config
        vip_factory = None
        if self.enable_vip_channel:
            vip_factory = self._listen_factory(self.vip_factory, lambda: self._vip_port)
        main, vip = listen_broker_ports(
            self.reactor, self.host, cfg.listen_port,
            self._listen_factory(self.factory, lambda: self.port), vip_factory, self._vip_request)
        actual = main.getHost().port
        self._ports = [main] if vip is None else [main, vip]
        cfg.listen_port = actual
        self.ctx.store_host = (self.ctx.store_host[0], actual)
        self.store.config.store_host = self.ctx.broker_addr
        self._vip_port = vip.getHost().port if vip is not None else None
        log.info("broker listening on %s:%d (VIP %s), advertised as %s", self.host, actual,
                 self._vip_port, self.addr)

    def _client_tls(self) -> Any:
        """TLS for the broker's own connections (registering with the name server): Java
        ``BrokerStartup`` turns it on with ``tls.enable``, by default when the mode is
        enforcing; the client trusts any server certificate, as RocketMQ's does in test mode."""
        tls = self.config.tls
        if tls is None or not tls.client_enabled():
            return None
        from rocketmq_emu.broker.tls.context import InsecureClientCreator

        return InsecureClientCreator()

    def _listen_factory(self, factory: Any, port: Any) -> Any:
        """``factory``, recorded when the cluster records (``rmq-emu up --record``), inside the
        TLS switch when ``tls.*`` keys are set (Java ``NettyRemotingServer``'s
        ``HandshakeHandler``); the switch is kept for the stop."""
        if self.recorder is not None:
            factory = self.recorder.wrap(factory, port)
        if self.config.tls is None:
            return factory
        from rocketmq_emu.broker.tls.sniff import listen_factory

        switch = listen_factory(factory, self.config.tls, self.liveness_clock, "broker")
        self._tls_switches.append(switch)
        return switch

    def stop_listening(self) -> defer.Deferred:
        """Stop accepting connections (open ones stay, but those that have not sent their
        first byte to a TLS-configured port yet are closed)."""
        for switch in self._tls_switches:
            switch.close_pending()
        self._tls_switches = []
        ports, self._ports = self._ports, []
        return defer.DeferredList([defer.maybeDeferred(p.stopListening) for p in ports])

    def stop(self) -> defer.Deferred:
        """Unregister, answer parked pulls, close connections, stop services, shut the store
        down (flushed, ``abort`` removed)."""
        return defer.ensureDeferred(self._stop())

    async def _stop(self) -> None:
        if not self.running:
            if not self.store.shutdown_done and self.store.loaded:
                self.store.shutdown()
            return
        self.running = False
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops.clear()
        if self.acl is not None:
            self.acl.stop()
        if self._register_call is not None and self._register_call.active():
            self._register_call.cancel()
        self._register_call = None
        await self.unregister_broker_all()
        self.hold_service.shutdown()
        if self._pop is not None:
            self._pop.stop()
        self.end_transaction_processor.stop()
        await self.stop_listening()
        await self.factory.close_all()
        await self.vip_factory.close_all()
        if self.schedule is not None:
            self.schedule.shutdown()
        self.store.shutdown()
        await self.remoting_client.close()
        log.info("The broker[%s, %s] shutdown OK", self.config.broker_name, self.addr)

    def _every(self, seconds: float, fn: Any, now: bool = False) -> None:
        def tick() -> None:
            try:
                result = fn()
                if isinstance(result, defer.Deferred):
                    result.addErrback(lambda f: log.error("periodic %s failed: %s",
                                                          getattr(fn, "__name__", fn), f))
            except Exception:
                log.exception("periodic task %s failed", getattr(fn, "__name__", fn))

        loop = LoopingCall(tick)
        loop.clock = self.clock
        loop.start(seconds, now=now)
        self._loops.append(loop)

    # --- clients -------------------------------------------------------------------------------
    def scan_not_active_channels(self) -> None:
        """``ClientHousekeepingService``: drop (and close) channels silent for 120 s."""
        expired = self.ctx.consumer_manager.scan_not_active_channel()
        expired += self.ctx.producer_manager.scan_not_active_channel()
        for info in expired:
            close = getattr(info.channel, "close", None)
            if close is not None:
                close()

    def _on_connection_closed(self, conn: Any) -> None:
        self.ctx.consumer_manager.do_channel_close_event(conn)
        self.ctx.producer_manager.do_channel_close_event(conn)

    def _on_arrival(self, topic: str, queue_id: int, queue_offset: int, tags_code: int,
                    record: Any = None) -> None:
        """The store's arrival listener for topics with held pulls: wake those of that queue
        (``NotifyMessageArrivingListener``)."""
        self.hold_service.notify_message_arriving(topic, queue_id, queue_offset + 1, tags_code)

    # --- name server ---------------------------------------------------------------------------
    def schedule_register(self) -> None:
        """Register with the name servers on the next reactor turn (coalesces bursts)."""
        if not self.running:
            return
        if self._register_call is None or not self._register_call.active():
            self._register_call = self.reactor.callLater(0, self._register_now)

    def _register_now(self) -> None:
        self._register_call = None
        self.register_broker_all()

    def register_body(self) -> bytes:
        """``RegisterBrokerBody``: the topic config wrapper and an empty filter server list."""
        wrapper = self.store.topic_config.build_topic_config_serialize_wrapper()
        perm = getattr(self.config, "broker_permission", 6)
        if perm != 6:
            # registerBrokerAll: topics advertise the broker's own (reduced) permission.
            for tc in wrapper["topicConfigTable"].values():
                tc["perm"] = tc["perm"] & perm
        return jsonutil.dumps({"filterServerList": [], "topicConfigSerializeWrapper": wrapper})

    def _register_header(self) -> dict[str, str]:
        cfg = self.config
        ha_ip = getattr(cfg, "broker_ip2", None) or self.ctx.store_host[0]
        return {
            "brokerName": cfg.broker_name,
            "brokerAddr": self.addr,
            "clusterName": cfg.broker_cluster_name,
            "haServerAddr": f"{ha_ip}:{self.port + 1}",
            "brokerId": str(cfg.broker_id),
            "compressed": "false",
        }

    def register_broker_all(self) -> defer.Deferred:
        """REGISTER_BROKER (103) to every name server; fires with the list of
        ``(addr, ok)`` once all answered (failures are logged, never raised)."""
        addrs = self.config.namesrv_addrs()
        if not addrs:
            return defer.succeed([])
        body = self.register_body()
        header = self._register_header()
        # BrokerOuterAPI.registerBrokerAll: the name server checks the body against it.
        header["bodyCrc32"] = str(zlib.crc32(body) & 0x7FFFFFFF)
        calls = []
        for addr in addrs:
            cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(header), body)
            d = self.remoting_client.invoke(addr, cmd, REGISTER_TIMEOUT_S)
            d.addCallback(self._registered, addr)
            d.addErrback(self._register_failed, addr)
            calls.append(d)
        return defer.gatherResults(calls)

    def _registered(self, resp: RemotingCommand, addr: str) -> tuple[str, bool]:
        if resp.code != ResponseCode.SUCCESS:
            log.warning("register broker to name server %s failed: code %d %s", addr,
                        resp.code, resp.remark)
            return addr, False
        log.debug("register broker to name server %s OK", addr)
        self._apply_order_topics(resp.body, addr)
        return addr, True

    def _apply_order_topics(self, body: bytes, addr: str) -> None:
        """The name server answers with its ORDER_TOPIC_CONFIG KV table
        (``TopicConfigManager.updateOrderTopicConfig``). An empty table is taken as "no such
        namespace" (Java's name server then sends no body at all), so it changes nothing."""
        if not body:
            return
        try:
            table = jsonutil.loads(body).get("table") or {}
        except Exception as exc:
            log.warning("register broker: bad KVTable from %s: %s", addr, exc)
            return
        if table:
            self.store.topic_config.update_order_topic_config(set(table))

    @staticmethod
    def _register_failed(failure: Any, addr: str) -> tuple[str, bool]:
        log.warning("register broker to name server %s failed: %s", addr,
                    failure.getErrorMessage())
        return addr, False

    def unregister_broker_all(self) -> defer.Deferred:
        """UNREGISTER_BROKER (104) to every name server (best effort)."""
        cfg = self.config
        calls = []
        for addr in cfg.namesrv_addrs():
            cmd = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, {
                "brokerName": cfg.broker_name, "brokerAddr": self.addr,
                "clusterName": cfg.broker_cluster_name, "brokerId": str(cfg.broker_id)})
            d = self.remoting_client.invoke(addr, cmd, 3.0)
            d.addCallback(lambda resp, a=addr: (a, resp.code == ResponseCode.SUCCESS))
            d.addErrback(self._register_failed, addr)
            calls.append(d)
        return defer.gatherResults(calls) if calls else defer.succeed([])
