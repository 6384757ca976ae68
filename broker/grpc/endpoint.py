"""The gRPC endpoint of a cluster: the MessagingService over its running brokers, listening on
one port (``grpcServerPort``, 8081 by default as the 5.x proxy's).

Pay for what is used: the port listens from the start, but the gRPC server, the service and the
RocketMQ 5 messages (protobuf) are imported and built by the first connection
(:class:`LazyGrpcFactory`), so a cluster no 5.x SDK talks to never loads them. With ACL on
(``aclEnable=true``) they are built at start: the guard goes on every call from the first, and a
bad ``plain_acl.yml`` stops the start as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet import defer
from twisted.internet.protocol import Factory

from rocketmq_emu.broker.grpc.acl_switch import acl_settings, install_if_enabled

if TYPE_CHECKING:
    from rocketmq_emu.broker.grpc.server import GrpcServerFactory
    from rocketmq_emu.broker.grpc.service import MessagingService
    from rocketmq_emu.broker.tls.config import TlsConfig

log = logging.getLogger(__name__)


class LazyGrpcFactory(Factory):
    """Stands for the endpoint's :class:`~rocketmq_emu.broker.grpc.server.GrpcServerFactory`
    until something needs it: ``build()`` makes it at the first connection (or the first use of
    an attribute this class does not keep itself, :meth:`load`). Interceptors and observers added before are
    kept and handed over in order; :meth:`close_all` on a factory never built has nothing to
    close."""

    def __init__(self, build: Callable[[], GrpcServerFactory]) -> None:
        self._build = build
        self._real: GrpcServerFactory | None = None
        self._interceptors: list[Any] = []
        self._observers: list[Any] = []

    @property
    def loaded(self) -> bool:
        """Whether the gRPC server factory has been built."""
        return self._real is not None

    def load(self) -> GrpcServerFactory:
        """The gRPC server factory (built now if it is not yet)."""
        if self._real is None:
            real = self._build()
            for fn in self._interceptors:
                real.add_interceptor(fn)
            for fn in self._observers:
                real.add_observer(fn)
            self._interceptors, self._observers = [], []
            self._real = real
        return self._real

    def add_interceptor(self, fn: Any) -> None:
        """``GrpcServerFactory.add_interceptor``, kept until the factory is built."""
        if self._real is None:
            self._interceptors.append(fn)
        else:
            self._real.add_interceptor(fn)

    def remove_interceptor(self, fn: Any) -> None:
        """``GrpcServerFactory.remove_interceptor`` (no error if absent)."""
        if self._real is None:
            self._interceptors = [f for f in self._interceptors if f != fn]
        else:
            self._real.remove_interceptor(fn)

    def add_observer(self, fn: Any) -> None:
        """``GrpcServerFactory.add_observer``, kept until the factory is built."""
        if self._real is None:
            self._observers.append(fn)
        else:
            self._real.add_observer(fn)

    def remove_observer(self, fn: Any) -> None:
        """``GrpcServerFactory.remove_observer`` (no error if absent)."""
        if self._real is None:
            self._observers = [f for f in self._observers if f != fn]
        else:
            self._real.remove_observer(fn)

    def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 - Twisted's name
        """The gRPC server's protocol for a new connection (the first one builds the server).
        If the server cannot be built, the connection is closed and the error logged; the
        other ports go on serving."""
        try:
            factory = self.load()
        except Exception:
            log.exception("gRPC: cannot serve the connection from %s", addr)
            return None
        return factory.buildProtocol(addr)

    def close_all(self) -> defer.Deferred:
        """``GrpcServerFactory.close_all``; nothing to close if it was never built."""
        if self._real is None:
            return defer.succeed(None)
        return self._real.close_all()

    def __getattr__(self, name: str) -> Any:
        # Only for what this class does not define (handlers, register, connections...).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.load(), name)


class GrpcEndpoint:
    """Serve ``MessagingService`` for ``brokers()`` (name → running BrokerController) on
    ``host:port`` (0 picks a free port); liveness (deadlines, long polls) on ``reactor``."""

    def __init__(self, reactor: Any, host: str, port: int,
                 brokers: Callable[[], dict[str, Any]], tls: TlsConfig | None = None) -> None:
        self.reactor = reactor
        self.host = host
        self.port = port
        self.brokers = brokers
        self._service: MessagingService | None = None
        #: The factory the port listens with: the gRPC server, built by the first connection.
        self.factory = LazyGrpcFactory(self._build)
        #: ``tls.*`` settings, the brokers' (the 5.x proxy serves TLS with the same keys).
        self.tls = tls
        self._tls_switch: Any = None
        self._listening: Any = None
        #: Whether the brokers had ACL on at start (the gRPC guard is installed then).
        self._acl = False

    @property
    def address(self) -> str:
        """``host:port`` clients connect to."""
        return f"{self.host}:{self.port}"

    @property
    def service(self) -> MessagingService:
        """The MessagingService (built now, with the server, if no connection has come yet)."""
        self.factory.load()
        assert self._service is not None
        return self._service

    def _build(self) -> GrpcServerFactory:
        """Import and build the service and the server (the first connection, or the start
        with ACL on)."""
        from rocketmq_emu.broker.grpc.server import GrpcServerFactory
        from rocketmq_emu.broker.grpc.service import MessagingService

        service = MessagingService(self.brokers, lambda: self.port, self.reactor)
        factory = GrpcServerFactory(service.handlers(), self.reactor)
        if self._acl:
            # ACL 1.0 (aclEnable=true): the proxy's AuthenticationInterceptor.
            install_if_enabled(factory, self.brokers())
        self._service = service
        if self._listening is not None:
            service.start()
        return factory

    def start(self) -> None:
        """Listen (CannotListenError if the port is taken)."""
        if self._listening is not None:
            return
        self._acl = acl_settings(self.brokers())[0]
        if self._acl:
            self.factory.load()  # built now: a bad plain_acl.yml is a start error
        factory: Any = self.factory
        if self.tls is not None:
            from rocketmq_emu.broker.tls.sniff import listen_factory

            # gRPC clients over TLS insist on ALPN "h2".
            factory = self._tls_switch = listen_factory(self.factory, self.tls, self.reactor,
                                                        "gRPC", alpn=(b"h2",))
        self._listening = self.reactor.listenTCP(self.port, factory, interface=self.host)
        self.port = self._listening.getHost().port
        if self._service is not None:
            self._service.start()
        log.info("gRPC MessagingService listening on %s", self.address)

    def stop(self) -> defer.Deferred:
        """Answer the calls in flight, close the connections and stop listening."""
        listening, self._listening = self._listening, None
        if self._service is not None:
            self._service.stop()
        if self._tls_switch is not None:
            self._tls_switch.close_pending()
        waits = [defer.maybeDeferred(self.factory.close_all)]
        if listening is not None:
            waits.append(defer.maybeDeferred(listening.stopListening))
        return defer.DeferredList(waits)
