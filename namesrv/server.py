"""A name server on a TCP port: ``NameServer(reactor, port, host).start()``.

Wires :class:`~namesrv.route_info.RouteInfoManager`, :class:`~namesrv.kvconfig.KVConfigManager`
and :class:`~namesrv.processor.NamesrvProcessor` onto a
:class:`~broker.remoting.protocol.RemotingServerFactory` (Java ``NamesrvController``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.remoting.protocol import (
    DEFAULT_MAX_LENGTH,
    RemotingServerFactory,
    RequestDispatcher,
)
from rocketmq_emu.broker.tls.config import DEFAULT_TLS, TlsConfig
from rocketmq_emu.namesrv.kvconfig import KVConfigManager
from rocketmq_emu.namesrv.processor import NamesrvProcessor
from rocketmq_emu.namesrv.route_info import (
    BROKER_CHANNEL_EXPIRED_SECONDS,
    SCAN_INITIAL_DELAY_SECONDS,
    SCAN_PERIOD_SECONDS,
    RouteInfoManager,
)

log = logging.getLogger(__name__)

DEFAULT_PORT = 9876


class NameServer:
    """A RocketMQ-compatible name server.

    ``port=0`` picks a free port; after :meth:`start` fires, :attr:`port` holds the bound port and
    :attr:`addr` ``"host:port"``. ``kv_config_path`` persists KV config (memory only if None).
    """

    def __init__(
        self,
        reactor: Any,
        port: int = DEFAULT_PORT,
        host: str = "0.0.0.0",
        kv_config_path: str | os.PathLike[str] | None = None,
        broker_expire_seconds: float = BROKER_CHANNEL_EXPIRED_SECONDS,
        scan_period_seconds: float = SCAN_PERIOD_SECONDS,
        max_length: int = DEFAULT_MAX_LENGTH,
        order_message_enable: bool = False,
        tls: TlsConfig | None = DEFAULT_TLS,
    ) -> None:
        self.reactor = reactor
        self.host = host
        self.port = port
        self.scan_period_seconds = scan_period_seconds
        self.route_info = RouteInfoManager(reactor, broker_expire_seconds)
        self.kv_config = KVConfigManager(kv_config_path)
        self.dispatcher = RequestDispatcher(reactor)
        self.processor = NamesrvProcessor(
            self.route_info,
            self.kv_config,
            config={
                "listenPort": str(port),
                "orderMessageEnable": str(order_message_enable).lower(),
            },
            order_message_enable=order_message_enable,
        )
        self.processor.register(self.dispatcher)
        self.factory = RemotingServerFactory(self.dispatcher, reactor, max_length)
        #: ``tls.*`` settings (Java: the name server's ``TlsSystemConfig``; RocketMQ's default is
        #: permissive); None: no TLS switch on the port at all.
        self.tls = tls
        self._tls_switch: Any = None
        self._listening: Any = None
        #: A :class:`~rocketmq_emu.broker.recording.recorder.Recorder` (``rmq-emu up --record``).
        self.recorder: Any = None

    @property
    def addr(self) -> str:
        """``host:port`` clients should use (127.0.0.1 when listening on all interfaces)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "", "::") else self.host
        return f"{host}:{self.port}"

    def start(self) -> defer.Deferred:
        """Load KV config, listen, start the broker expiry scan; fires with self."""
        self.kv_config.load()

        def listening(port: Any) -> NameServer:
            self._listening = port
            self.port = port.getHost().port
            self.processor.config["listenPort"] = str(self.port)
            self.route_info.start_scanning(SCAN_INITIAL_DELAY_SECONDS, self.scan_period_seconds)
            log.info("name server listening on %s:%d", self.host, self.port)
            return self

        factory: Any = self.factory
        if self.recorder is not None:
            factory = self.recorder.wrap(factory, lambda: self.port)
        if self.tls is not None:
            from rocketmq_emu.broker.tls.sniff import listen_factory

            factory = self._tls_switch = listen_factory(factory, self.tls, self.reactor,
                                                        "name server")
        # reactor.listenTCP (IPv4 or IPv6 by the interface) rather than an endpoint: importing
        # twisted.internet.endpoints imports OpenSSL whenever pyOpenSSL is installed.
        return defer.maybeDeferred(
            self.reactor.listenTCP, self.port, factory, interface=self.host,
        ).addCallback(listening)

    @defer.inlineCallbacks
    def stop(self) -> Any:
        """Stop the scan, stop listening, close connections, persist KV config."""
        self.route_info.stop_scanning()
        if self._listening is not None:
            port, self._listening = self._listening, None
            yield defer.maybeDeferred(port.stopListening)
        if self._tls_switch is not None:
            self._tls_switch.close_pending()
        yield self.factory.close_all()
        self.kv_config.persist()
