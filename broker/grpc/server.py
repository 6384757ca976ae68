"""gRPC server transport: HTTP/2 (the ``h2`` library, sans-IO) on a Twisted protocol.

Twisted owns the loop: no asyncio, no grpcio server, no thread. :class:`GrpcServerFactory` holds
the handlers (by RPC name), interceptors and observers and builds one :class:`GrpcProtocol` per
TCP connection; every HTTP/2 stream naming a served method becomes a
:class:`~rocketmq_emu.broker.grpc.call.ServerCall`. The gRPC framing is
:mod:`~rocketmq_emu.broker.grpc.wire`'s (pure codecs); this module moves bytes and runs calls.

Handlers, by the method's kind (``messages.Method.kind``)::

    unary_unary:   fn(request, call) -> response | Deferred[response]   (raise GrpcError to fail)
    unary_stream:  fn(request, call) -> None | Deferred   (call.send() each response; OK Trailers
                   when it returns / the Deferred fires, unless the handler finished the call)
    stream_stream, stream_unary:
                   fn(call) -> observer with .on_message(msg), .on_half_close(), .on_cancel()

A handler's Deferred failing with GrpcError ends the call with its code; any other exception
(raised or in a Deferred) ends it UNKNOWN and is logged. A handler's Deferred is never cancelled
by the transport (it may be shared with the broker's long polls): a cancelled call runs its cancel
callbacks and whatever the Deferred fires with later is dropped.

Per call, in order: observers (every call to a served method, told at once: ``CallEvent``), then
interceptors ``fn(call, request)`` (``request`` None for client-streaming methods) returning None
(proceed), a GrpcError (raised or returned: the call fails with it), :data:`DROP` (never answer),
a response message (answer with it, OK), or a Deferred of any of these; then the handler.
A unary request is handled once its END_STREAM arrives.

Behaviours (grpc doc/PROTOCOL-HTTP2.md; grpc-java's messages where it has one):

* unknown path or a method without a handler: UNIMPLEMENTED, Trailers-Only; a bad Request-Headers
  block gets what ``wire.parse_request_headers`` says (405/415/400, INTERNAL);
* a bad Length-Prefixed-Message (flag, truncated at END_STREAM, over ``max_message_size``) or a
  request that is not valid protobuf: INTERNAL / RESOURCE_EXHAUSTED ("Invalid protobuf byte
  sequence") on that stream only; a unary method's stream with no or two requests: INTERNAL
  ("Half-closed without a request", "Too many requests");
* ``grpc-timeout``: a deadline on the factory's clock; at it the call is cancelled and answered
  DEADLINE_EXCEEDED;
* RST_STREAM from the client or the connection's loss: the call is cancelled, nothing more is
  written for it;
* flow control: received DATA is acknowledged as it is consumed (so a message larger than the
  window streams in); outgoing DATA waits for the peer's window (WINDOW_UPDATE, SETTINGS);
  MAX_CONCURRENT_STREAMS 1000 (long polls hold streams); messages up to 130 MiB, the proxy's
  ``grpcMaxInboundMessageSize``; PINGs are acknowledged (h2) and never limited;
* a client that is not HTTP/2 (remoting bytes, HTTP/1.1): the connection is closed with one log
  line; an HTTP/2 protocol error closes the connection (h2's GOAWAY) with one log line;
* :meth:`GrpcServerFactory.close_all`: every call in flight is answered UNAVAILABLE ("the server
  is shutting down": the SDKs retry it elsewhere or later; waiting for long polls would hold a
  shutdown for up to their 20-30 s), then GOAWAY and close; new streams are refused.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    RemoteSettingsChanged,
    RequestReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import ProtocolError, StreamClosedError
from h2.settings import SettingCodes, Settings
from twisted.internet import defer
from twisted.internet.interfaces import IAddress, IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure

from rocketmq_emu.broker.grpc.call import DROP, CallEvent, RawPayload, ServerCall, StreamObserver
from rocketmq_emu.broker.grpc.hpack_plain import PlainEncoder
from rocketmq_emu.broker.grpc.runner import CLIENT_STREAMING, CallRunner, Interceptor
from rocketmq_emu.broker.grpc.streams import StreamWriter
from rocketmq_emu.broker.grpc.wire import (
    GrpcError,
    MessageDecoder,
    RequestHeaders,
    RequestRejected,
    StatusCode,
    parse_request_headers,
    parse_timeout,
    trailers_only,
)
from rocketmq_emu.broker.remoting.dispatcher import default_clock

__all__ = [
    "DROP", "DEFAULT_MAX_CONCURRENT_STREAMS", "MAX_INBOUND_MESSAGE_SIZE", "CallEvent",
    "GrpcProtocol", "GrpcServerFactory", "Handler", "Interceptor", "Observer", "RawPayload",
    "ServerCall", "StreamObserver",
]

log = logging.getLogger(__name__)

#: RocketMQ's proxy: ``ProxyConfig.grpcMaxInboundMessageSize`` = 130 * 1024 * 1024.
MAX_INBOUND_MESSAGE_SIZE = 130 * 1024 * 1024
#: Streams a client may hold open on one connection (h2's default is 100; a consumer's long
#: polls and telemetry streams hold theirs).
DEFAULT_MAX_CONCURRENT_STREAMS = 1000
#: Per-stream receive window (SETTINGS_INITIAL_WINDOW_SIZE) and the connection's: grpc-java's
#: 1 MiB per stream; more on the connection so concurrent uploads do not wait on each other.
DEFAULT_STREAM_WINDOW = 1 << 20
DEFAULT_CONNECTION_WINDOW = 16 << 20
#: The HTTP/2 default windows (RFC 9113 6.9.2).
_H2_DEFAULT_WINDOW = 65535

Handler = Callable[..., Any]
Observer = Callable[[CallEvent], None]

#: Outgoing headers are this module's own (valid, lower-case): h2 need not check them again.
#: Incoming ones are checked by ``wire.parse_request_headers`` (what gRPC needs: :method, :path,
#: :scheme, content-type, te...); h2's generic HTTP checks cost a tenth of a call's CPU.
_H2_CONFIG = H2Configuration(client_side=False, header_encoding=None,
                             validate_outbound_headers=False, normalize_outbound_headers=False,
                             validate_inbound_headers=False, normalize_inbound_headers=False)
_SHUTDOWN_MESSAGE = "the server is shutting down"
#: Distinct Request-Headers blocks (without grpc-timeout) remembered per connection.
_HEADER_CACHE_LIMIT = 256


@functools.lru_cache(maxsize=1024)
def _timeout(value: bytes) -> float:
    """A grpc-timeout value in seconds; RequestRejected (INTERNAL) if malformed."""
    try:
        return parse_timeout(value.decode("latin-1"))
    except ValueError as exc:
        raise RequestRejected(StatusCode.INTERNAL, str(exc)) from None


class GrpcServerFactory(Factory):
    """Builds a :class:`GrpcProtocol` per connection; holds handlers, interceptors, observers.

    ``handlers`` maps RPC names (``"SendMessage"``) to handlers of ``methods`` (default:
    MessagingService's, ``messages.service_methods()``); a served method without a handler is
    answered UNIMPLEMENTED. ``clock`` times deadlines and stamps observer events (default: the
    reactor). The method objects only need ``name``, ``path``, ``kind`` and ``request`` /
    ``response`` classes with ``FromString``/``SerializeToString`` (:class:`RawPayload` keeps
    requests as bytes, for tests).
    """

    protocol = None  # type: ignore[assignment]  # buildProtocol makes GrpcProtocol itself

    def __init__(self, handlers: Mapping[str, Handler], clock: IReactorTime | None = None, *,
                 methods: Iterable[Any] | None = None,
                 max_message_size: int = MAX_INBOUND_MESSAGE_SIZE,
                 max_concurrent_streams: int = DEFAULT_MAX_CONCURRENT_STREAMS,
                 stream_window: int = DEFAULT_STREAM_WINDOW,
                 connection_window: int = DEFAULT_CONNECTION_WINDOW) -> None:
        if methods is None:
            from rocketmq_emu.broker.grpc.messages import service_methods

            methods = service_methods()
        self.all_methods: dict[str, Any] = {m.name: m for m in methods}
        self.handlers: dict[str, Handler] = {}
        #: Served methods by ``:path`` (those with a handler).
        self.methods: dict[str, Any] = {}
        for name, handler in handlers.items():
            self.register(name, handler)
        self._clock = clock
        self.max_message_size = max_message_size
        self.max_concurrent_streams = max_concurrent_streams
        self.stream_window = stream_window
        self.connection_window = connection_window
        self.connections: set[GrpcProtocol] = set()
        self.closing = False
        self._interceptors: tuple[Interceptor, ...] = ()
        self._observers: tuple[Observer, ...] = ()
        self._ids = itertools.count(1)

    @property
    def clock(self) -> IReactorTime:
        """The clock deadlines run on."""
        if self._clock is None:
            self._clock = default_clock()
        return self._clock

    def register(self, name: str, handler: Handler) -> None:
        """Serve RPC ``name`` with ``handler`` (replaces an earlier one); ValueError if the
        methods have no such RPC."""
        method = self.all_methods.get(name)
        if method is None:
            raise ValueError(f"no RPC {name!r} among {sorted(self.all_methods)}")
        self.handlers[name] = handler
        self.methods[method.path] = method

    def add_interceptor(self, fn: Interceptor) -> None:
        """Run ``fn(call, request)`` before every handler (after earlier interceptors)."""
        self._interceptors = (*self._interceptors, fn)

    def remove_interceptor(self, fn: Interceptor) -> None:
        """Undo :meth:`add_interceptor` (no error if absent)."""
        self._interceptors = tuple(f for f in self._interceptors if f != fn)

    def add_observer(self, fn: Observer) -> None:
        """Call ``fn(CallEvent)`` for every call to a served method, before the interceptors."""
        self._observers = (*self._observers, fn)

    def remove_observer(self, fn: Observer) -> None:
        """Undo :meth:`add_observer` (no error if absent)."""
        self._observers = tuple(f for f in self._observers if f != fn)

    def buildProtocol(self, addr: IAddress) -> GrpcProtocol:  # noqa: N802 - Twisted's name
        """One protocol per accepted connection."""
        return GrpcProtocol(self, next(self._ids))

    def close_all(self) -> defer.Deferred:
        """Shut every connection down (calls in flight answered UNAVAILABLE, GOAWAY, close);
        connections made later are closed at once. Fires when all are closed."""
        self.closing = True
        waits = [conn.when_closed() for conn in list(self.connections)]
        for conn in list(self.connections):
            conn.shutdown()
        return defer.gatherResults(waits).addCallback(lambda _: None)


class GrpcProtocol(CallRunner, StreamWriter, Protocol):
    """One HTTP/2 connection serving gRPC calls (``call.connection`` of each of its calls).

    ``peer`` ``(host, port)``; ``connection_id`` (``"host:port#n"``, unique in the factory);
    ``calls`` (stream id -> ServerCall, the streams still open); :meth:`add_close_callback`,
    :meth:`when_closed`.
    """

    def __init__(self, factory: GrpcServerFactory, number: int) -> None:
        self.factory = factory
        self.clock = factory.clock
        self.number = number
        self.peer: tuple[str, int] = ("", 0)
        self.connection_id = f"#{number}"
        self.calls: dict[int, ServerCall] = {}
        self.closed = False
        self._h2: H2Connection | None = None
        self._receiving = False
        self._frames_seen = False
        self._goaway_sent = False
        self._header_cache: dict[tuple[tuple[bytes, bytes], ...], RequestHeaders] = {}
        self._close_callbacks: list[Callable[[GrpcProtocol], Any]] = []
        self._closed_waiters: list[defer.Deferred] = []

    def __repr__(self) -> str:
        return f"<GrpcProtocol {self.connection_id} calls={len(self.calls)}>"

    @property
    def peer_addr(self) -> str:
        """``host:port`` of the client."""
        return f"{self.peer[0]}:{self.peer[1]}"

    def add_close_callback(self, fn: Callable[[GrpcProtocol], Any]) -> None:
        """Call ``fn(conn)`` once when the connection closes (at once if it is closed)."""
        if self.closed:
            fn(self)
        else:
            self._close_callbacks.append(fn)

    def when_closed(self) -> defer.Deferred:
        """A Deferred firing (with this connection) once the connection is closed."""
        if self.closed:
            return defer.succeed(self)
        d: defer.Deferred = defer.Deferred()
        self._closed_waiters.append(d)
        return d

    # --- connection ------------------------------------------------------------------------------
    def connectionMade(self) -> None:  # noqa: N802 - Twisted's name
        """Send our SETTINGS (and the connection window) at once, as a server must."""
        address = self.transport.getPeer()
        self.peer = (getattr(address, "host", ""), getattr(address, "port", 0))
        self.connection_id = f"{self.peer_addr}#{self.number}"
        factory = self.factory
        factory.connections.add(self)
        h2 = H2Connection(config=_H2_CONFIG)
        h2.local_settings = Settings(client=False, initial_values={
            SettingCodes.MAX_CONCURRENT_STREAMS: factory.max_concurrent_streams,
            SettingCodes.INITIAL_WINDOW_SIZE: factory.stream_window,
            SettingCodes.MAX_HEADER_LIST_SIZE: H2Connection.DEFAULT_MAX_HEADER_LIST_SIZE,
        })
        h2.encoder = PlainEncoder()
        h2.initiate_connection()
        if factory.connection_window > _H2_DEFAULT_WINDOW:
            h2.increment_flow_control_window(factory.connection_window - _H2_DEFAULT_WINDOW)
        self._h2 = h2
        self._write_out()
        if factory.closing:
            self.shutdown()

    def connectionLost(self, reason: Failure | None = None) -> None:  # noqa: N802
        """Cancel every call still open; tell the close callbacks and waiters."""
        if self.closed:
            return
        self.closed = True
        self.factory.connections.discard(self)
        calls = list(self.calls.values())
        self.calls.clear()
        for call in calls:
            self._drop(call)
        callbacks, self._close_callbacks = self._close_callbacks, []
        for fn in callbacks:
            try:
                fn(self)
            except Exception:
                log.exception("%s: close callback %r failed", self.connection_id, fn)
        waiters, self._closed_waiters = self._closed_waiters, []
        for d in waiters:
            d.callback(self)

    def shutdown(self) -> None:
        """Answer every call in flight UNAVAILABLE, send GOAWAY and close the connection."""
        if self.closed or self._h2 is None:
            return
        for call in list(self.calls.values()):
            if call.active:
                self._abort(call, StatusCode.UNAVAILABLE, _SHUTDOWN_MESSAGE)
        if not self._goaway_sent:
            self._goaway_sent = True
            try:
                self._h2.close_connection(ErrorCodes.NO_ERROR)
            except ProtocolError:
                pass
        self._write_out()
        self.transport.loseConnection()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        """Feed h2, act on its events, then write what they produced in one write."""
        h2 = self._h2
        if h2 is None or self.closed:
            return
        self._receiving = True
        try:
            try:
                events = h2.receive_data(data)
            except ProtocolError as exc:
                self._protocol_error(exc, data)
                return
            self._frames_seen = True
            on = _EVENT_HANDLERS
            for event in events:
                handler = on.get(type(event))
                if handler is not None:
                    handler(self, event)
        finally:
            self._receiving = False
        self._write_out()

    def _protocol_error(self, exc: ProtocolError, data: bytes) -> None:
        if not self._frames_seen and "preamble" in str(exc).lower():
            log.warning("closing connection from %s: not an HTTP/2 client (first bytes %r)",
                        self.peer_addr, bytes(data[:16]))
        else:
            log.warning("closing connection from %s: HTTP/2 protocol error: %s", self.peer_addr, exc)
        self._goaway_sent = True
        self._write_out()  # h2's GOAWAY, if it queued one
        self.transport.loseConnection()

    def _write_out(self) -> None:
        h2 = self._h2
        if h2 is None or self.closed:
            return
        data = h2.data_to_send()
        if data:
            self.transport.write(data)

    def _io_done(self) -> None:
        """After writing outside dataReceived (a Deferred fired, a timer ran): flush now."""
        if not self._receiving:
            self._write_out()

    # --- h2 events -----------------------------------------------------------------------------
    def _on_request(self, event: RequestReceived) -> None:
        h2 = self._h2
        sid = event.stream_id
        if self._goaway_sent or self.factory.closing:
            h2.reset_stream(sid, ErrorCodes.REFUSED_STREAM)
            return
        factory = self.factory
        try:
            headers = self._parse_headers(event.headers)
            method = factory.methods[headers.path]
            decoder = MessageDecoder(factory.max_message_size, headers.encoding)
        except RequestRejected as rejected:
            log.debug("%s: stream %d rejected: %s", self.peer_addr, sid, rejected)
            self._reject(sid, rejected.response(), event.stream_ended is not None)
            return
        except GrpcError as error:
            self._reject(sid, trailers_only(error.code, error.message), event.stream_ended is not None)
            return
        call = ServerCall(self, sid, method, headers)
        call._decoder = decoder
        self.calls[sid] = call
        if headers.timeout is not None:
            call.deadline = self.clock.seconds() + headers.timeout
            if headers.timeout <= 0:
                self._abort(call, StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
                return
            call._timer = self.clock.callLater(headers.timeout, self._deadline_expired, call)
        if method.kind in CLIENT_STREAMING:
            self._start(call, None)

    def _parse_headers(self, raw: list[tuple[bytes, bytes]]) -> RequestHeaders:
        """``wire.parse_request_headers``, remembered per connection: a client sends the same
        block call after call but for ``grpc-timeout``, which is parsed on its own."""
        timeout = None
        key = []
        for field in raw:
            if field[0] == b"grpc-timeout":
                timeout = timeout or field  # the first one, as parse_request_headers takes
            else:
                key.append(field)
        cache = self._header_cache
        cache_key = tuple(key)
        parsed = cache.get(cache_key)
        if parsed is None:
            parsed = parse_request_headers(key, self.factory.methods)
            if len(cache) < _HEADER_CACHE_LIMIT:
                cache[cache_key] = parsed
        if timeout is None:
            return parsed
        return dataclasses.replace(parsed, timeout=_timeout(timeout[1]))

    def _reject(self, sid: int, headers: list[tuple[str, str]], client_closed: bool) -> None:
        h2 = self._h2
        h2.send_headers(sid, headers, end_stream=True)
        if not client_closed:
            try:  # the client's END_STREAM may be among the frames not yet handled
                h2.reset_stream(sid, ErrorCodes.NO_ERROR)
            except (StreamClosedError, ProtocolError):
                pass

    def _on_data(self, event: DataReceived) -> None:
        sid = event.stream_id
        try:
            # Consumed at once (decoded below), so the peer may send on: large messages stream.
            self._h2.acknowledge_received_data(event.flow_controlled_length, sid)
        except (StreamClosedError, ProtocolError):
            pass
        call = self.calls.get(sid)
        if call is None or call.finished or call.cancelled:
            return
        try:
            payloads = call._decoder.feed(event.data)
        except GrpcError as error:
            self._abort(call, error.code, error.message)
            return
        parse = call.method.request.FromString
        for payload in payloads:
            try:
                message = parse(payload)
            except Exception:
                self._abort(call, StatusCode.INTERNAL, "Invalid protobuf byte sequence")
                return
            self._deliver(call, message)
            if call.finished or call.cancelled:
                return

    def _deliver(self, call: ServerCall, message: Any) -> None:
        if call.method.kind in CLIENT_STREAMING:
            if not call._started:
                call._requests.append(message)
            elif call._observer is not None:
                self._notify(call, call._observer.on_message, message)
        elif call._requests:
            self._abort(call, StatusCode.INTERNAL, "Too many requests")
        else:
            call._requests.append(message)

    def _on_stream_ended(self, event: StreamEnded) -> None:
        call = self.calls.get(event.stream_id)
        if call is None:
            return
        call.client_closed = True
        if call.finished or call.cancelled:
            if call._trailers is None and not call._out:
                self.calls.pop(call.stream_id, None)
            return
        if call._decoder.pending:
            self._abort(call, StatusCode.INTERNAL, "Encountered end-of-stream mid-frame")
        elif call.method.kind in CLIENT_STREAMING:
            if call._started and call._observer is not None:
                self._notify(call, call._observer.on_half_close)
        elif not call._requests:
            self._abort(call, StatusCode.INTERNAL, "Half-closed without a request")
        else:
            self._start(call, call._requests.pop())

    def _on_reset(self, event: StreamReset) -> None:
        call = self.calls.pop(event.stream_id, None)
        if call is not None:
            log.debug("%s: %r reset by the client (error code %s)", self.peer_addr, call,
                      event.error_code)
            self._drop(call)

    def _on_window(self, event: WindowUpdated) -> None:
        if event.stream_id:
            call = self.calls.get(event.stream_id)
            if call is not None and (call._out or call._trailers is not None):
                self._flush(call)
        else:
            self._flush_all()

    def _on_settings(self, event: RemoteSettingsChanged) -> None:
        if SettingCodes.INITIAL_WINDOW_SIZE in event.changed_settings:
            self._flush_all()

    def _on_terminated(self, event: ConnectionTerminated) -> None:
        log.debug("%s: GOAWAY from the client (error code %s)", self.peer_addr, event.error_code)

    def _flush_all(self) -> None:
        for call in list(self.calls.values()):
            if call._out or call._trailers is not None:
                self._flush(call)

    def _deadline_expired(self, call: ServerCall) -> None:
        call._timer = None
        if call.active:
            log.debug("%r: deadline exceeded", call)
            self._abort(call, StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
            self._io_done()

    def _abort(self, call: ServerCall, code: StatusCode, message: str) -> None:
        """End a call on the transport's behalf: Trailers with ``code``, then it is cancelled."""
        if call.finished or call.cancelled:
            return
        call.status = (code, message)
        if not self.closed:
            self.finish_call(call, code, message)
        call._mark_cancelled()

    def _drop(self, call: ServerCall) -> None:
        """The stream is gone (RST_STREAM, connection lost): cancel without writing."""
        call._out.clear()
        call._trailers = None
        call._mark_cancelled()



_EVENT_HANDLERS: dict[type, Callable[[GrpcProtocol, Any], None]] = {
    RequestReceived: GrpcProtocol._on_request,
    DataReceived: GrpcProtocol._on_data,
    StreamEnded: GrpcProtocol._on_stream_ended,
    StreamReset: GrpcProtocol._on_reset,
    WindowUpdated: GrpcProtocol._on_window,
    RemoteSettingsChanged: GrpcProtocol._on_settings,
    ConnectionTerminated: GrpcProtocol._on_terminated,
}
