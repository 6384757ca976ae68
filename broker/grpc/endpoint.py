"""The gRPC endpoint of a cluster: the MessagingService over its running brokers, listening on
one port (``grpcServerPort``, 8081 by default as the 5.x proxy's)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.grpc.server import GrpcServerFactory
from rocketmq_emu.broker.grpc.service import MessagingService

log = logging.getLogger(__name__)

class GrpcEndpoint:
    """Serve ``MessagingService`` for ``brokers()`` (name → running BrokerController) on
    ``host:port`` (0 picks a free port); liveness (deadlines, long polls) on ``reactor``."""

    def __init__(self, reactor: Any, host: str, port: int,
                 brokers: Callable[[], dict[str, Any]]) -> None:
        self.reactor = reactor
        self.host = host
        self.port = port
        self.service = MessagingService(brokers, lambda: self.port, reactor)
        self.factory = GrpcServerFactory(self.service.handlers(), reactor)
        self._listening: Any = None

    @property
    def address(self) -> str:
        """``host:port`` clients connect to."""
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        """Listen (CannotListenError if the port is taken)."""
        if self._listening is not None:
            return
        self._listening = self.reactor.listenTCP(self.port, self.factory, interface=self.host)
        self.port = self._listening.getHost().port
        self.service.start()
        log.info("gRPC MessagingService listening on %s", self.address)

    def stop(self) -> defer.Deferred:
        """Answer the calls in flight, close the connections and stop listening."""
        listening, self._listening = self._listening, None
        self.service.stop()
        waits = [defer.maybeDeferred(self.factory.close_all)]
        if listening is not None:
            waits.append(defer.maybeDeferred(listening.stopListening))
        return defer.DeferredList(waits)
