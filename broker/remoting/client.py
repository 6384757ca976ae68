"""Outgoing remoting connections: a pool keyed by ``"host:port"`` (Java ``NettyRemotingClient``).

Used by the broker (register with the name server, push to clients), by ``client/`` and by tests.
A connection that closes is dropped from the pool; the next ``invoke`` reconnects.

A plain connection the server resets before answering anything fails its requests with
:class:`UnansweredCloseError`: that is what a port with ``tls.server.mode=enforcing`` does to a
plain client (Java ``NettyRemotingServer``'s ``HandshakeHandler`` closes it at the first byte;
the emulator aborts it), so tools can name the cause. A clean close (a fault rule's ``close``)
is not taken for one.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer
from twisted.internet.error import ConnectionDone
from twisted.internet.protocol import ClientCreator

from rocketmq_emu.broker.message import is_ipv6, split_addr
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import (
    DEFAULT_MAX_LENGTH,
    RemotingConnectionError,
    RemotingProtocol,
    RemotingTimeoutError,
    RequestDispatcher,
)

log = logging.getLogger(__name__)


class UnansweredCloseError(RemotingConnectionError):
    """The server closed a plain connection without answering any of its requests: the sign
    of a port enforcing TLS. ``addr`` is the server's ``host:port``."""

    def __init__(self, addr: str) -> None:
        super().__init__(f"{addr} closed the connection without answering: is the server "
                         f"enforcing TLS (tls.server.mode=enforcing)?")
        self.addr = addr


class ClientConnection(RemotingProtocol):
    """A pooled client connection; remembers whether the peer closed it cleanly (a reset is
    how a port enforcing TLS turns a plain connection away)."""

    closed_cleanly = False

    def connectionLost(self, reason: Any = None) -> None:  # noqa: N802 (Twisted API)
        self.closed_cleanly = reason is None or reason.check(ConnectionDone) is not None
        super().connectionLost(reason)


class RemotingClient:
    """Pool of :class:`RemotingProtocol` connections, one per ``"host:port"``.

    ``dispatcher`` answers requests the servers push to us (e.g. NOTIFY_CONSUMER_IDS_CHANGED).
    """

    def __init__(
        self,
        reactor: Any,
        dispatcher: RequestDispatcher | None = None,
        max_length: int = DEFAULT_MAX_LENGTH,
        connect_timeout: float = 3.0,
        tls: Any = None,
    ) -> None:
        self.reactor = reactor
        self.dispatcher = dispatcher if dispatcher is not None else RequestDispatcher(reactor)
        self.max_length = max_length
        self.connect_timeout = connect_timeout
        #: None: plain connections; else an ``IOpenSSLClientConnectionCreator`` that every
        #: connection uses (Java ``NettyClientConfig.useTLS``, see broker.tls.context).
        self.tls = tls
        self._conns: dict[str, RemotingProtocol] = {}
        #: Plain connections that have answered a request (the others may be refused by a
        #: server enforcing TLS: see :class:`UnansweredCloseError`).
        self._answered: set[RemotingProtocol] = set()
        self._connecting: dict[str, list[defer.Deferred]] = {}
        self._closed = False

    def connection(self, addr: str) -> defer.Deferred:
        """A Deferred firing with the open connection to ``addr`` (connecting if needed)."""
        if self._closed:
            return defer.fail(RemotingConnectionError("client is closed"))
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            return defer.succeed(conn)
        waiter: defer.Deferred = defer.Deferred()
        waiters = self._connecting.get(addr)
        if waiters is not None:
            waiters.append(waiter)
            return waiter
        self._connecting[addr] = [waiter]
        try:
            host, port = split_addr(addr)
        except ValueError:
            del self._connecting[addr]
            return defer.fail(RemotingConnectionError(f"bad address {addr!r}"))
        if self.tls is not None:
            connecting = self._connect_tls(host, port)
        else:
            # reactor.connectTCP rather than twisted.internet.endpoints: with pyOpenSSL
            # installed, importing endpoints imports twisted.internet.ssl and OpenSSL (~30 ms
            # of every start).
            connecting = ClientCreator(
                self.reactor, ClientConnection, self.dispatcher, self.reactor, self.max_length,
            ).connectTCP(host, port, timeout=self.connect_timeout)
        connecting.addCallbacks(
            self._connected, self._connect_failed, callbackArgs=(addr,), errbackArgs=(addr,)
        )
        return waiter

    def _connect_tls(self, host: str, port: int) -> defer.Deferred:
        from twisted.internet.endpoints import (
            TCP4ClientEndpoint,
            TCP6ClientEndpoint,
            connectProtocol,
            wrapClientTLS,
        )

        endpoint_cls = TCP6ClientEndpoint if _is_v6(host) else TCP4ClientEndpoint
        endpoint = wrapClientTLS(self.tls, endpoint_cls(self.reactor, host, port,
                                                        timeout=self.connect_timeout))
        proto = RemotingProtocol(self.dispatcher, self.reactor, self.max_length)
        return connectProtocol(endpoint, proto)

    def _connected(self, proto: RemotingProtocol, addr: str) -> None:
        waiters = self._connecting.pop(addr, [])
        if self._closed:
            proto.close()
            for w in waiters:
                w.errback(RemotingConnectionError("client is closed"))
            return
        self._conns[addr] = proto
        proto.add_close_callback(lambda c: self._forget(addr, c))
        for w in waiters:
            w.callback(proto)

    def _connect_failed(self, failure: Any, addr: str) -> None:
        waiters = self._connecting.pop(addr, [])
        reason = failure.value
        log.debug("connect to %s failed: %s", addr, reason)
        for w in waiters:
            w.errback(RemotingConnectionError(f"cannot connect to {addr}: {reason}"))

    def _forget(self, addr: str, conn: RemotingProtocol) -> None:
        self._answered.discard(conn)
        if self._conns.get(addr) is conn:
            del self._conns[addr]

    def invoke(self, addr: str, cmd: RemotingCommand, timeout: float = 3.0) -> defer.Deferred:
        """Send ``cmd`` to ``addr``; fires with the response RemotingCommand.

        Fails with RemotingConnectionError (cannot connect / closed) or RemotingTimeoutError.
        """
        d = self.connection(addr)
        d.addCallback(self._send, cmd, timeout)
        return d

    def _send(self, conn: RemotingProtocol, cmd: RemotingCommand,
              timeout: float) -> defer.Deferred:
        d = conn.send_request(cmd, timeout, self.reactor)
        if self.tls is None and conn not in self._answered:
            d.addCallbacks(self._answer, self._unanswered, callbackArgs=(conn,),
                           errbackArgs=(conn,))
        return d

    def _answer(self, resp: RemotingCommand, conn: RemotingProtocol) -> RemotingCommand:
        if not conn.closed:
            self._answered.add(conn)
        return resp

    def _unanswered(self, failure: Any, conn: RemotingProtocol) -> Any:
        if failure.check(RemotingConnectionError) and conn.closed \
                and not getattr(conn, "closed_cleanly", True) and conn not in self._answered:
            raise UnansweredCloseError(conn.peer_addr)
        return failure

    def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> defer.Deferred:
        """Send ``cmd`` as oneway; fires (with None) once written, or fails if no connection."""
        d = self.connection(addr)
        d.addCallback(lambda conn: conn.send_oneway(cmd))
        return d

    def close_connection(self, addr: str) -> None:
        """Close the pooled connection to ``addr`` (if any)."""
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.close()

    def close(self) -> defer.Deferred:
        """Close every connection; fires when all are closed. Later invokes fail."""
        self._closed = True
        conns = list(self._conns.values())
        self._conns.clear()
        self._answered.clear()
        waits = [c.when_closed() for c in conns]
        for c in conns:
            c.close()
        return defer.DeferredList(waits)


def _is_v6(host: str) -> bool:
    try:
        return is_ipv6(host)
    except ValueError:
        return False  # a host name: let the IPv4 endpoint resolve it


__all__ = [
    "RemotingClient",
    "RemotingConnectionError",
    "RemotingTimeoutError",
    "UnansweredCloseError",
]
