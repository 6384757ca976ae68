"""Plain and TLS on one port, told apart by the first byte (Java ``NettyRemotingServer``'s
``HandshakeHandler``).

A connection's first read decides: 0x16 (a TLS handshake record) gets TLS in permissive and
enforcing mode (a :class:`~twisted.protocols.tls.TLSMemoryBIOProtocol` around the server's own
protocol) and is closed in disabled mode; anything else goes to the plain protocol, or is closed
in enforcing mode. Each refusal is one log line. The buffered first read is then replayed and
the chosen protocol takes the transport over, so a plain connection pays nothing after its first
read.

A TLS handshake that does not finish within :data:`HANDSHAKE_TIMEOUT_S` (Netty
``SslHandler``'s 10 s) is aborted; handshakes run in the reactor like any read, so a stalled or
failed one never holds up other connections.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet.protocol import Factory, Protocol

from rocketmq_emu.broker.tls.config import NEEDS_EXTRA, TlsConfig, TlsMode

log = logging.getLogger(__name__)

#: ``HandshakeHandler.HANDSHAKE_MAGIC_CODE``: a TLS record of type handshake.
HANDSHAKE_MAGIC_CODE = 0x16
#: Netty ``SslHandler``'s default ``handshakeTimeoutMillis``.
HANDSHAKE_TIMEOUT_S = 10.0


class FirstByteProtocol(Protocol):
    """Holds a new connection until its first bytes arrive, then hands it to the plain or the
    TLS protocol (or closes it) as the factory's mode says."""

    def __init__(self, factory: TlsSwitchFactory, addr: Any) -> None:
        self.switch = factory
        self.addr = addr
        self.inner: Any = None
        self._timeout: Any = None

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted API)
        if self.inner is not None:  # the transport could not be taken over
            self.inner.dataReceived(data)
            return
        if not data:
            return
        mode = self.switch.config.mode
        peer = self.transport.getPeer()
        if data[0] == HANDSHAKE_MAGIC_CODE:
            if mode is TlsMode.DISABLED:
                log.warning("%s: TLS handshake from %s refused: TLS is disabled on this port",
                            self.switch.name, _addr(peer))
                self.transport.abortConnection()
                return
            try:
                tls = self.switch.tls_factory()
            except ImportError:  # the default permissive mode without the [tls] extra
                log.warning("%s: TLS handshake from %s refused: %s", self.switch.name,
                            _addr(peer), NEEDS_EXTRA)
                self.transport.abortConnection()
                return
            inner = tls.buildProtocol(self.addr)
            if inner is None:
                self.transport.abortConnection()
                return
            self._timeout = self.switch.clock.callLater(
                self.switch.handshake_timeout, self._check_handshake, inner, peer)
        else:
            if mode is TlsMode.ENFORCING:
                log.warning("%s: plain connection from %s refused: TLS is enforced on this port",
                            self.switch.name, _addr(peer))
                self.transport.abortConnection()
                return
            inner = self.switch.plain.buildProtocol(self.addr)
            if inner is None:
                self.transport.abortConnection()
                return
        self.inner = inner
        self.switch.pending.discard(self)
        if self._timeout is None and getattr(self.transport, "protocol", None) is self:
            # A plain connection: tcp.Connection delivers reads and the loss to .protocol, so
            # step out of the way. A TLS one keeps this wrapper to cancel its deadline.
            self.transport.protocol = inner
        inner.makeConnection(self.transport)
        inner.dataReceived(data)

    def _check_handshake(self, tls: Any, peer: Any) -> None:
        self._timeout = None
        try:
            finished = tls.getHandle().get_peer_finished() is not None
        except Exception:  # no TLS connection (already torn down)
            return
        if not finished:
            log.warning("%s: TLS handshake from %s not finished in %g s; closed",
                        self.switch.name, _addr(peer), self.switch.handshake_timeout)
            tls.abortConnection()

    def connectionLost(self, reason: Any = None) -> None:  # noqa: N802 (Twisted API)
        self.switch.pending.discard(self)
        self.cancel_timeout()
        if self.inner is not None:
            self.inner.connectionLost(reason)

    def connectionMade(self) -> None:  # noqa: N802 (Twisted API)
        self.switch.pending.add(self)

    def cancel_timeout(self) -> None:
        """Forget the handshake deadline (the connection is gone, or the server stopping)."""
        if self._timeout is not None and self._timeout.active():
            self._timeout.cancel()
        self._timeout = None


def _addr(peer: Any) -> str:
    host, port = getattr(peer, "host", "?"), getattr(peer, "port", "?")
    return f"{host}:{port}"


class TlsSwitchFactory(Factory):
    """Listens in place of ``plain`` (the server's own factory, left unchanged: its connection
    bookkeeping and ``close_all`` go on working) and builds a :class:`FirstByteProtocol` per
    connection; ``alpn`` is offered to TLS clients (``h2`` for gRPC)."""

    def __init__(self, plain: Any, config: TlsConfig, clock: Any, name: str = "server",
                 alpn: tuple[bytes, ...] = (),
                 handshake_timeout: float | None = None) -> None:
        self.plain = plain
        self.config = config
        self.clock = clock
        self.name = name
        self.alpn = alpn
        #: Seconds a TLS handshake may take (None: :data:`HANDSHAKE_TIMEOUT_S` as it is now).
        self.handshake_timeout = HANDSHAKE_TIMEOUT_S if handshake_timeout is None \
            else handshake_timeout
        #: Connections whose first byte has not arrived (closed by :meth:`close_pending`).
        self.pending: set[FirstByteProtocol] = set()
        self._tls: Any = None
        self._context: Any = None

    def context_factory(self) -> Any:
        """The server's :class:`~broker.tls.context.ServerContextFactory` (imports pyOpenSSL)."""
        if self._context is None:
            from rocketmq_emu.broker.tls.context import ServerContextFactory

            self._context = ServerContextFactory(self.config, self.alpn)
        return self._context

    def prepare(self) -> None:
        """Build the context now when it reads files, so a bad certificate or key stops the
        start (test mode keeps its certificate for the first TLS connection: a fast start)."""
        if self.config.mode is not TlsMode.DISABLED and not self.config.test_mode:
            self.context_factory().getContext()

    def tls_factory(self) -> Any:
        """``TLSMemoryBIOFactory`` around the plain factory (made on first TLS connection)."""
        if self._tls is None:
            from twisted.protocols.tls import TLSMemoryBIOFactory

            self._tls = TLSMemoryBIOFactory(self.context_factory(), False, self.plain)
        return self._tls

    def buildProtocol(self, addr: Any) -> FirstByteProtocol:  # noqa: N802 (Twisted API)
        proto = FirstByteProtocol(self, addr)
        proto.factory = self
        return proto

    def close_pending(self) -> None:
        """Close the connections still waiting for their first byte (at server stop; the
        others belong to the plain factory, which closes them)."""
        for proto in list(self.pending):
            proto.cancel_timeout()
            if proto.transport is not None:
                proto.transport.abortConnection()
        self.pending.clear()


def listen_factory(plain: Any, config: TlsConfig | None, clock: Any, name: str,
                   alpn: tuple[bytes, ...] = ()) -> Any:
    """The factory to listen with: ``plain`` itself without TLS settings, else a prepared
    :class:`TlsSwitchFactory` around it."""
    if config is None:
        return plain
    switch = TlsSwitchFactory(plain, config, clock, name, alpn)
    switch.prepare()
    log.info("%s: %s", name, config.describe())  # NettyRemotingServer.loadSslContext's line
    return switch
