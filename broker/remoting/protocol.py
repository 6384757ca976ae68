"""Twisted edge of the remoting protocol: framing, correlation by opaque, dispatch by code.

One :class:`RemotingProtocol` class serves both directions: a broker/name-server connection answers
requests through a :class:`RequestDispatcher` and can push requests to the peer
(NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE); a client connection sends requests and may
answer the server's. Frames are cut from a ``bytearray`` (measurements.md: half the cost of
``Int32StringReceiver``) and the replies produced while handling one read go out in one write.

Requests are routed by :class:`~broker.remoting.dispatcher.RequestDispatcher` (re-exported here
with ``DROP``, ``RequestEvent``, ``error_response``); a malformed frame closes only its connection.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure

from rocketmq_emu.broker.remoting.close_events import CloseEvents
from rocketmq_emu.broker.remoting.codes import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    SERIALIZE_JSON,
    ResponseCode,
)
from rocketmq_emu.broker.remoting.command import (
    FRAME_LENGTH,
    MIN_FRAME_LENGTH,
    RemotingCommand,
    RemotingCommandError,
    decode_frame_at,
    next_opaque,
)

# Re-exported: the dispatcher lives in its own module but is part of this module's API.
from rocketmq_emu.broker.remoting.dispatcher import (  # noqa: F401
    DROP,
    Handler,
    Interceptor,
    RequestDispatcher,
    RequestEvent,
    default_clock,
    error_response,
    is_deferred,
    not_supported,
)

log = logging.getLogger(__name__)

#: Netty ``LengthFieldBasedFrameDecoder`` max frame (com.rocketmq.remoting.frameMaxLength).
DEFAULT_MAX_LENGTH = 16 * 1024 * 1024




class RemotingTimeoutError(Exception):
    """No response arrived for a request within its timeout."""


class RemotingConnectionError(Exception):
    """The connection closed (or was never open) before a response arrived."""


class RemotingProtocol(Protocol):
    """One remoting connection (either side).

    Attributes handlers may use: ``peer`` ``(host, port)``, ``peer_addr`` ``"host:port"``,
    ``client_id`` (from the last ``clientID`` ext field; handlers may set it), ``language`` and
    ``version`` of the last request, :meth:`add_close_callback`.
    """

    def __init__(
        self,
        dispatcher: RequestDispatcher | None = None,
        clock: IReactorTime | None = None,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        self.dispatcher = dispatcher if dispatcher is not None else RequestDispatcher(clock)
        self._clock = clock
        self.max_length = max_length
        self.peer: tuple[str, int] = ("", 0)
        self.client_id: str | None = None
        self.language: str | None = None
        self.version: int | None = None
        self.connected = False
        self.closed = False
        self._buf = bytearray()
        self._out: list[bytes] | None = None
        self._pending: dict[int, tuple[defer.Deferred, Any]] = {}
        self._close_events = CloseEvents(self)

    # --- attributes ----------------------------------------------------------------------------
    @property
    def clock(self) -> IReactorTime:
        if self._clock is None:
            self._clock = default_clock()
        return self._clock

    @property
    def peer_addr(self) -> str:
        """``host:port`` of the other side."""
        return f"{self.peer[0]}:{self.peer[1]}"

    def add_close_callback(self, fn: Callable[[RemotingProtocol], None]) -> None:
        """Call ``fn(conn)`` once when the connection closes (at once if already closed)."""
        self._close_events.add_callback(fn)

    def when_closed(self) -> defer.Deferred:
        """A Deferred that fires (with this connection) once the connection is closed."""
        return self._close_events.when_closed()

    def close(self) -> None:
        """Close the connection after pending writes."""
        if self.transport is not None and not self.closed:
            self.transport.loseConnection()

    # --- Twisted callbacks ---------------------------------------------------------------------
    def connectionMade(self) -> None:
        self.connected = True
        # NettyRemotingServer / NettyRemotingClient: childOption(TCP_NODELAY, true). Without
        # it, Nagle holds a reply written while an earlier one is unacknowledged until the
        # peer's (delayed) ACK: milliseconds per round trip for a pipelining client.
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            try:
                set_no_delay(True)
            except OSError:  # not a TCP socket (UNIX socket in a test...)
                pass
        peer = self.transport.getPeer()
        self.peer = (getattr(peer, "host", str(peer)), getattr(peer, "port", 0))
        factory = getattr(self, "factory", None)
        if factory is not None and hasattr(factory, "connections"):
            factory.connections.add(self)

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
        self.connected = False
        self.closed = True
        factory = getattr(self, "factory", None)
        if factory is not None and hasattr(factory, "connections"):
            factory.connections.discard(self)
        pending, self._pending = self._pending, {}
        for opaque, (d, timer) in pending.items():
            if timer.active():
                timer.cancel()
            d.errback(
                RemotingConnectionError(
                    f"connection to {self.peer_addr} closed before the response to opaque {opaque}"
                )
            )
        self._close_events.fire()

    def dataReceived(self, data: bytes) -> None:
        """Cut the whole frames out of what arrived, decode and handle each in order, and write
        the replies produced meanwhile in one write (NettyDecoder, then the processors)."""
        buf = self._buf
        # Common case: nothing buffered, so cut frames straight out of ``data`` (one copy each).
        src: bytes | bytearray
        if buf:
            buf += data
            src = buf
        else:
            src = data
        size = len(src)
        pos = 0
        out: list[bytes] = []
        self._out = out
        bad: str | None = None
        try:
            while size - pos >= FRAME_LENGTH.size:
                (length,) = FRAME_LENGTH.unpack_from(src, pos)
                if length < MIN_FRAME_LENGTH or length + FRAME_LENGTH.size > self.max_length:
                    bad = (f"frame length {length} outside [{MIN_FRAME_LENGTH}, "
                           f"{self.max_length - FRAME_LENGTH.size}]")
                    break
                end = pos + FRAME_LENGTH.size + length
                if end > size:
                    break
                try:
                    cmd = decode_frame_at(src, pos + FRAME_LENGTH.size, end)
                except RemotingCommandError as exc:
                    bad = str(exc)
                    break
                pos = end
                try:
                    self._handle(cmd)
                except Exception:
                    log.exception("%s: failed to process code %d", self.peer_addr, cmd.code)
                if self.closed:
                    break
        finally:
            self._out = None
            if bad is not None:
                buf.clear()
            elif src is buf:
                del buf[:pos]
            elif pos < size:
                buf += memoryview(data)[pos:]
            if out and self.transport is not None:
                self.transport.write(b"".join(out))
        if bad is not None:
            log.warning("closing connection from %s: malformed frame: %s", self.peer_addr, bad)
            self.transport.loseConnection()

    # --- incoming ------------------------------------------------------------------------------
    def _handle(self, cmd: RemotingCommand) -> None:
        if cmd.flag & FLAG_RESPONSE:
            entry = self._pending.pop(cmd.opaque, None)
            if entry is None:
                log.debug("%s: response for unknown opaque %d", self.peer_addr, cmd.opaque)
                return
            d, timer = entry
            if timer.active():
                timer.cancel()
            d.callback(cmd)
            return
        self.language = cmd.language
        self.version = cmd.version
        client_id = cmd.ext_fields.get("clientID")
        if client_id:
            self.client_id = client_id
        result = self.dispatcher.dispatch(cmd, self)
        if result is None:
            return
        if is_deferred(result):
            result.addCallback(self._reply, cmd).addErrback(self._reply_failed, cmd)
        else:
            self._reply(result, cmd)

    def _reply(self, resp: Any, req: RemotingCommand) -> None:
        if resp is None or req.flag & FLAG_ONEWAY:
            return
        try:
            resp.opaque = req.opaque
            resp.flag |= FLAG_RESPONSE
            if req.serialize_type == SERIALIZE_JSON:
                # CPP and ali-ons ignore the serialize-type byte: JSON in, JSON out.
                resp.serialize_type = SERIALIZE_JSON
            self._write(resp)
        except Exception as exc:
            # A response that cannot be encoded still gets an answer (not a client timeout).
            log.exception("cannot encode the response to code %d from %s", req.code, self.peer_addr)
            self._write(
                error_response(req, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
            )

    def _reply_failed(self, failure: Failure, req: RemotingCommand) -> None:
        log.error(
            "could not answer code %d from %s: %s", req.code, self.peer_addr, failure.getTraceback()
        )

    # --- outgoing ------------------------------------------------------------------------------
    def _write(self, cmd: RemotingCommand) -> None:
        if self.closed or self.transport is None:
            log.debug("%s closed: dropping frame code %d", self.peer_addr, cmd.code)
            return
        head = cmd.encode_prefix_and_header()
        out = self._out
        if out is not None:
            out.append(head)
            if cmd.body:
                out.append(cmd.body)
        elif cmd.body:
            self.transport.writeSequence((head, cmd.body))
        else:
            self.transport.write(head)

    def send_command(self, cmd: RemotingCommand) -> None:
        """Write any command as is (e.g. a response built out of band)."""
        self._write(cmd)

    def send_oneway(self, cmd: RemotingCommand) -> None:
        """Send a request that gets no response (flag bit 1 is set)."""
        cmd.flag |= FLAG_ONEWAY
        self._write(cmd)
        if self.dispatcher.push_observers:
            self.dispatcher.pushed(cmd, self)

    def send_request(
        self, cmd: RemotingCommand, timeout: float = 3.0, reactor: IReactorTime | None = None
    ) -> defer.Deferred:
        """Send a request; the Deferred fires with the response or fails with
        :class:`RemotingTimeoutError` / :class:`RemotingConnectionError`."""
        if self.closed or self.transport is None:
            return defer.fail(RemotingConnectionError(f"connection to {self.peer_addr} is closed"))
        clock = reactor if reactor is not None else self.clock
        while cmd.opaque in self._pending:
            # Two requests may never share an opaque on one connection (hand-built commands).
            cmd.opaque = next_opaque()
        opaque = cmd.opaque

        def cancel(_: defer.Deferred) -> None:
            entry = self._pending.pop(opaque, None)
            if entry is not None and entry[1].active():
                entry[1].cancel()

        d: defer.Deferred = defer.Deferred(cancel)
        timer = clock.callLater(timeout, self._timed_out, opaque, cmd.code, timeout)
        self._pending[opaque] = (d, timer)
        self._write(cmd)
        if self.dispatcher.push_observers:
            self.dispatcher.pushed(cmd, self)
        return d

    def _timed_out(self, opaque: int, code: int, timeout: float) -> None:
        entry = self._pending.pop(opaque, None)
        if entry is not None:
            entry[0].errback(
                RemotingTimeoutError(
                    f"no response from {self.peer_addr} to code {code} opaque {opaque} "
                    f"within {timeout:g} s"
                )
            )

    @property
    def pending_count(self) -> int:
        """Requests sent on this connection still waiting for a response."""
        return len(self._pending)


class RemotingServerFactory(Factory):
    """Server factory: every accepted connection gets a RemotingProtocol on ``dispatcher``.

    ``connections`` holds the open connections (to push requests or close them at stop).
    """

    protocol = RemotingProtocol

    def __init__(
        self,
        dispatcher: RequestDispatcher,
        clock: IReactorTime | None = None,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        self.dispatcher = dispatcher
        self.clock = clock
        self.max_length = max_length
        self.connections: set[RemotingProtocol] = set()

    def buildProtocol(self, addr: Any) -> RemotingProtocol:
        proto = RemotingProtocol(self.dispatcher, self.clock, self.max_length)
        proto.factory = self
        return proto

    def close_all(self) -> defer.Deferred:
        """Close every open connection; fires when all are closed."""
        waits = [conn.when_closed() for conn in list(self.connections)]
        for conn in list(self.connections):
            conn.close()
        return defer.DeferredList(waits)
