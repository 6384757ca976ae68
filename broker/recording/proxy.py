"""A recording proxy in front of a real name server and its brokers (``rmq-emu proxy``): the
Twisted edge of :mod:`.proxy_frames`.

Clients are pointed at the proxy's name server port. Each client connection gets a connection
of its own to the upstream, and the bytes go both ways unchanged, except the route and cluster
answers. Their broker addresses are replaced by a port of the proxy's own for each broker (with
its VIP channel at port - 2, as the broker's). So the client's connections to the brokers come
through the proxy too, and a :class:`~.recorder.Recorder` wrapped around every listening port
records what ``rmq-emu up --record`` records: the bytes each server port read and wrote, as the
client saw them. ``rmq-emu replay`` then plays that session against the emulator (or back
against a real broker).

An upstream that refuses a connection or closes it is one log line naming the client, and the
client's connection is closed, as a broker going away closes it. Not relayed: a message id
(``offsetMsgId``) names the broker's own address; a client that connects to it (a query by id)
goes around the proxy.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer
from twisted.internet.protocol import Factory, Protocol

from rocketmq_emu.broker.recording.format import FrameSplitter
from rocketmq_emu.broker.recording.plan import VIP_PORT_OFFSET
from rocketmq_emu.broker.recording.proxy_frames import ROUTE_CODES, rewritten
from rocketmq_emu.broker.remoting.codes import FLAG_ONEWAY, FLAG_RESPONSE
from rocketmq_emu.broker.remoting.command import RemotingCommand, RemotingCommandError
from rocketmq_emu.broker.remoting.listen import listen_broker_ports

log = logging.getLogger(__name__)


class RecordingProxy:
    """Listens for clients on ``host:port`` (0: a free port) as the name server ``upstream``
    (``HOST:PORT``); ``recorder`` records every port; ``tls`` (an OpenSSL client connection
    creator) speaks TLS to the upstream."""

    def __init__(self, reactor: Any, upstream: str, host: str = "127.0.0.1", port: int = 0,
                 recorder: Any = None, tls: Any = None) -> None:
        self.reactor = reactor
        self.upstream = upstream
        self.host = host
        self.port = port
        self.recorder = recorder
        self.tls = tls
        #: Upstream broker address -> the proxy's address for it.
        self.brokers: dict[str, str] = {}
        self._ports: list[Any] = []
        self.connections: set[RelayProtocol] = set()

    @property
    def namesrv(self) -> str:
        """``host:port`` clients use as their name server."""
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        """Listen as the name server (CannotListenError if the port is taken)."""
        listening = self.reactor.listenTCP(self.port, self._factory(self.upstream, lambda: self.port),
                                           interface=self.host)
        self._ports.append(listening)
        self.port = listening.getHost().port

    def broker_address(self, upstream_addr: str) -> str:
        """The proxy's address for the broker at ``upstream_addr``: a port (and its VIP pair at
        port - 2) listened on the first time the broker is named."""
        known = self.brokers.get(upstream_addr)
        if known is not None:
            return known
        host, _, port_text = upstream_addr.rpartition(":")
        upstream_port = int(port_text)
        ports: dict[str, int] = {}
        main, vip = listen_broker_ports(
            self.reactor, self.host, 0,
            self._factory(upstream_addr, lambda: ports["main"]),
            self._factory(f"{host}:{upstream_port - VIP_PORT_OFFSET}", lambda: ports["vip"]))
        ports["main"], ports["vip"] = main.getHost().port, vip.getHost().port
        self._ports += [main, vip]
        self.brokers[upstream_addr] = address = f"{self.host}:{ports['main']}"
        log.info("proxy: broker %s relayed on %s (VIP %d)", upstream_addr, address, ports["vip"])
        return address

    def _factory(self, upstream: str, port: Any) -> Any:
        factory = Factory.forProtocol(lambda: RelayProtocol(self, upstream))
        return self.recorder.wrap(factory, port) if self.recorder is not None else factory

    def stop(self) -> defer.Deferred:
        """Stop listening and close every relayed connection."""
        for conn in list(self.connections):
            conn.transport.loseConnection()
        waits = [defer.maybeDeferred(p.stopListening) for p in self._ports]
        self._ports.clear()
        return defer.gatherResults(waits).addCallback(lambda _: None)


class RelayProtocol(Protocol):
    """One client connection, relayed to ``upstream`` over a connection of its own."""

    def __init__(self, proxy: RecordingProxy, upstream: str) -> None:
        self.proxy = proxy
        self.upstream = upstream
        self.upstream_side: UpstreamProtocol | None = None
        self.pending: list[bytes] = []
        self.requests = FrameSplitter()
        #: Opaques of the route and cluster requests waiting for their answer.
        self.route_opaques: set[int] = set()
        self.closed = False

    @property
    def client(self) -> str:
        peer = self.transport.getPeer()
        return f"{getattr(peer, 'host', '?')}:{getattr(peer, 'port', '?')}"

    def connectionMade(self) -> None:  # noqa: N802 - Twisted's name
        self.proxy.connections.add(self)
        from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol, wrapClientTLS

        host, _, port = self.upstream.rpartition(":")
        endpoint: Any = TCP4ClientEndpoint(self.proxy.reactor, host, int(port), timeout=10)
        if self.proxy.tls is not None:
            endpoint = wrapClientTLS(self.proxy.tls, endpoint)
        connectProtocol(endpoint, UpstreamProtocol(self)).addCallbacks(
            self._upstream_up, self._upstream_refused)

    def _upstream_up(self, side: UpstreamProtocol) -> None:
        if self.closed:
            side.transport.loseConnection()
            return
        self.upstream_side = side
        for data in self.pending:
            side.transport.write(data)
        self.pending.clear()

    def _upstream_refused(self, failure: Any) -> None:
        log.warning("proxy: upstream %s refused the connection of client %s: %s", self.upstream,
                    self.client, failure.getErrorMessage())
        self.transport.loseConnection()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        for frame in self.requests.feed(data):
            try:
                cmd = RemotingCommand.decode(frame)
            except RemotingCommandError:
                continue  # relayed as is: the upstream answers it as it would
            if cmd.code in ROUTE_CODES and not cmd.flag & (FLAG_RESPONSE | FLAG_ONEWAY):
                self.route_opaques.add(cmd.opaque)
        if self.upstream_side is not None:
            self.upstream_side.transport.write(data)
        else:
            self.pending.append(data)

    def from_upstream(self, frame: bytes) -> None:
        """A whole frame from the upstream: to the client, route answers rewritten."""
        if self.route_opaques:
            try:
                cmd = RemotingCommand.decode(frame)
            except RemotingCommandError:
                cmd = None
            if cmd is not None and cmd.flag & FLAG_RESPONSE and cmd.opaque in self.route_opaques:
                self.route_opaques.discard(cmd.opaque)
                frame = rewritten(frame, self.proxy.broker_address)
        self.transport.write(frame)

    def upstream_closed(self, reason: Any) -> None:
        """The upstream closed its side: close the client's, as a broker going away does."""
        if not self.closed:
            log.warning("proxy: upstream %s closed the connection of client %s: %s",
                        self.upstream, self.client, reason.getErrorMessage())
            self.transport.loseConnection()

    def connectionLost(self, reason: Any = None) -> None:  # noqa: N802 - Twisted's name
        self.closed = True
        self.proxy.connections.discard(self)
        if self.upstream_side is not None:
            self.upstream_side.transport.loseConnection()


class UpstreamProtocol(Protocol):
    """The proxy's connection to the upstream for one client connection."""

    def __init__(self, relay: RelayProtocol) -> None:
        self.relay = relay
        self.answers = FrameSplitter()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        for frame in self.answers.feed(data):
            self.relay.from_upstream(frame)

    def connectionLost(self, reason: Any = None) -> None:  # noqa: N802 - Twisted's name
        self.relay.upstream_closed(reason)
