"""The gRPC endpoint of a cluster: the MessagingService over its running brokers, listening on
one port (``grpcServerPort``, 8081 by default as the 5.x proxy's)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet import defer

from rocketmq_emu.broker.grpc.acl_switch import install_if_enabled
from rocketmq_emu.broker.grpc.server import GrpcServerFactory
from rocketmq_emu.broker.grpc.service import MessagingService

if TYPE_CHECKING:
    from rocketmq_emu.broker.tls.config import TlsConfig

log = logging.getLogger(__name__)

class GrpcEndpoint:
    """Serve ``MessagingService`` for ``brokers()`` (name → running BrokerController) on
    ``host:port`` (0 picks a free port); liveness (deadlines, long polls) on ``reactor``."""

    def __init__(self, reactor: Any, host: str, port: int,
                 brokers: Callable[[], dict[str, Any]], tls: TlsConfig | None = None) -> None:
        self.reactor = reactor
        self.host = host
        self.port = port
        self.brokers = brokers
        self.service = MessagingService(brokers, lambda: self.port, reactor)
        self.factory = GrpcServerFactory(self.service.handlers(), reactor)
        #: ``tls.*`` settings, the brokers' (the 5.x proxy serves TLS with the same keys).
        self.tls = tls
        self._tls_switch: Any = None
        self._listening: Any = None

    @property
    def address(self) -> str:
        """``host:port`` clients connect to."""
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        """Listen (CannotListenError if the port is taken)."""
        if self._listening is not None:
            return
        # ACL 1.0 (aclEnable=true): the proxy's AuthenticationInterceptor; nothing added otherwise.
        install_if_enabled(self.factory, self.brokers())
        factory: Any = self.factory
        if self.tls is not None:
            from rocketmq_emu.broker.tls.sniff import listen_factory

            # gRPC clients over TLS insist on ALPN "h2".
            factory = self._tls_switch = listen_factory(self.factory, self.tls, self.reactor,
                                                        "gRPC", alpn=(b"h2",))
        self._listening = self.reactor.listenTCP(self.port, factory, interface=self.host)
        self.port = self._listening.getHost().port
        self.service.start()
        log.info("gRPC MessagingService listening on %s", self.address)

    def stop(self) -> defer.Deferred:
        """Answer the calls in flight, close the connections and stop listening."""
        listening, self._listening = self._listening, None
        self.service.stop()
        if self._tls_switch is not None:
            self._tls_switch.close_pending()
        waits = [defer.maybeDeferred(self.factory.close_all)]
        if listening is not None:
            waits.append(defer.maybeDeferred(listening.stopListening))
        return defer.DeferredList(waits)
