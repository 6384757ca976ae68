"""gRPC server transport: HTTP/2 (:mod:`~rocketmq_emu.broker.grpc.http2`, sans-IO) on a Twisted
protocol.

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

* a malformed HTTP/2 request (RFC 9113 8.1-8.3, ``http2_request.check_request``: upper-case or
  connection-specific fields, bad or misplaced pseudo-headers, DATA that disagrees with
  content-length; malformed trailers are the connection's) is reset with PROTOCOL_ERROR and never
  served; a header list over SETTINGS_MAX_HEADER_LIST_SIZE (8 KiB) likewise;
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
  ``grpcMaxInboundMessageSize``; PINGs are acknowledged and never limited;
* a client that is not HTTP/2 (remoting bytes, HTTP/1.1): the connection is closed with one log
  line; an HTTP/2 protocol error closes the connection (GOAWAY with its error code) with one log
  line; a stream error resets that stream only (RST_STREAM), cancelling its call;
* :meth:`GrpcServerFactory.close_all`: every call in flight is answered UNAVAILABLE ("the server
  is shutting down": the SDKs retry it elsewhere or later; waiting for long polls would hold a
  shutdown for up to their 20-30 s), then GOAWAY and close; new streams are refused.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IAddress, IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure

from rocketmq_emu.broker.grpc.call import DROP, CallEvent, RawPayload, ServerCall, StreamObserver
from rocketmq_emu.broker.grpc.deadlines import Deadlines
from rocketmq_emu.broker.grpc.flow import ConnectionFlow
from rocketmq_emu.broker.grpc.http2 import H2ServerConnection
from rocketmq_emu.broker.grpc.http2_frames import ErrorCode
from rocketmq_emu.broker.grpc.http2_request import MalformedRequest, check_request, content_length
from rocketmq_emu.broker.grpc.runner import CLIENT_STREAMING, CallRunner, Interceptor
from rocketmq_emu.broker.grpc.send_timeout import SEND_TIMEOUT
from rocketmq_emu.broker.grpc.streams import StreamWriter, as_bytes
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
from rocketmq_emu.broker.remoting.close_events import CloseEvents
from rocketmq_emu.broker.remoting.dispatcher import default_clock

__all__ = [
    "DROP", "DEFAULT_MAX_CONCURRENT_STREAMS", "MAX_INBOUND_MESSAGE_SIZE", "CallEvent",
    "GrpcProtocol", "GrpcServerFactory", "Handler", "Interceptor", "Observer", "RawPayload",
    "ServerCall", "StreamObserver",
]

log = logging.getLogger(__name__)

#: RocketMQ's proxy: ``ProxyConfig.grpcMaxInboundMessageSize`` = 130 * 1024 * 1024.
MAX_INBOUND_MESSAGE_SIZE = 130 * 1024 * 1024
#: Header blocks one connection's read is handled for in one reactor turn; the rest of the read
#: waits for the next turn, so one client packing a read with thousands of streams (Rapid
#: Reset, HPACK bombs) does not hold the others' calls for the whole of it (issue 27).
BLOCKS_PER_READ = 32
#: Streams a client may hold open on one connection (grpc-java's Netty default is unlimited,
#: h2's 100; a consumer's long polls and telemetry streams hold theirs).
DEFAULT_MAX_CONCURRENT_STREAMS = 1000
#: Per-stream receive window (SETTINGS_INITIAL_WINDOW_SIZE) and the connection's: grpc-java's
#: 1 MiB per stream; more on the connection so concurrent uploads do not wait on each other.
DEFAULT_STREAM_WINDOW = 1 << 20
DEFAULT_CONNECTION_WINDOW = 16 << 20
#: SETTINGS_MAX_HEADER_LIST_SIZE: grpc-java's ``GrpcUtil.DEFAULT_MAX_HEADER_LIST_SIZE`` (8 KiB,
#: the proxy's maxInboundMetadataSize); a request over it is reset, the connection kept.
DEFAULT_MAX_HEADER_LIST_SIZE = 8192

Handler = Callable[..., Any]
Observer = Callable[[CallEvent], None]

_SHUTDOWN_MESSAGE = "the server is shutting down"
#: Distinct Request-Headers blocks (without the fields below) remembered per connection.
_HEADER_CACHE_LIMIT = 256
#: Fields whose value changes call after call: ``grpc-timeout``, and the 5.x SDKs' request id,
#: signing time and signature (rocketmq-clients' Signature: x-mq-request-id is a fresh UUID,
#: authorization signs x-mq-date-time). Plain Custom-Metadata (not ``-bin``), so they need no
#: parsing and are left out of the block cached per connection.
_PER_REQUEST = frozenset({b"grpc-timeout", b"x-mq-request-id", b"x-mq-date-time", b"authorization"})


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
                 connection_window: int = DEFAULT_CONNECTION_WINDOW,
                 send_timeout: float = SEND_TIMEOUT,
                 blocks_per_read: int = BLOCKS_PER_READ) -> None:
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
        #: Seconds a connection's output may wait on its client (broker/grpc/send_timeout.py).
        self.send_timeout = send_timeout
        #: Header blocks (new calls) a connection handles per reactor turn (see BLOCKS_PER_READ).
        self.blocks_per_read = blocks_per_read
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


class GrpcProtocol(ConnectionFlow, CallRunner, StreamWriter, Protocol):
    """One HTTP/2 connection serving gRPC calls (``call.connection`` of each of its calls).

    ``peer`` ``(host, port)``; ``connection_id`` (``"host:port#n"``, unique in the factory);
    ``calls`` (stream id -> ServerCall, the calls not yet finished or cancelled); ``h2`` (the
    :class:`~rocketmq_emu.broker.grpc.http2.H2ServerConnection`, whose listener this is);
    :meth:`add_close_callback`, :meth:`when_closed`.
    """

    def __init__(self, factory: GrpcServerFactory, number: int) -> None:
        self.factory = factory
        self.clock = factory.clock
        self.number = number
        self.peer: tuple[str, int] = ("", 0)
        self.connection_id = f"#{number}"
        self.calls: dict[int, ServerCall] = {}
        self.closed = False
        self.h2: H2ServerConnection | None = None
        self._receiving = False
        self._shut = False
        #: Parsed blocks by field list: (headers, pseudo-header count, content-length).
        self._header_cache: dict[tuple[tuple[bytes, bytes], ...],
                                 tuple[RequestHeaders, int, int | None]] = {}
        #: content-length still expected on a stream that announced one (RFC 9113 8.1.1).
        self._content_left: dict[int, int] = {}
        self._deadlines = Deadlines(self.clock, self._deadline_expired)
        self._close_events = CloseEvents(self)
        self._init_flow()

    def __repr__(self) -> str:
        return f"<GrpcProtocol {self.connection_id} calls={len(self.calls)}>"

    @property
    def peer_addr(self) -> str:
        """``host:port`` of the client."""
        return f"{self.peer[0]}:{self.peer[1]}"

    def add_close_callback(self, fn: Callable[[GrpcProtocol], Any]) -> None:
        """Call ``fn(conn)`` once when the connection closes (at once if it is closed)."""
        self._close_events.add_callback(fn)

    def when_closed(self) -> defer.Deferred:
        """A Deferred firing (with this connection) once the connection is closed."""
        return self._close_events.when_closed()

    # --- connection ------------------------------------------------------------------------------
    def connectionMade(self) -> None:  # noqa: N802 - Twisted's name
        """Send our SETTINGS (and the connection window) at once, as a server must."""
        address = self.transport.getPeer()
        self.peer = (getattr(address, "host", ""), getattr(address, "port", 0))
        self.connection_id = f"{self.peer_addr}#{self.number}"
        factory = self.factory
        factory.connections.add(self)
        h2 = H2ServerConnection(self, max_concurrent_streams=factory.max_concurrent_streams,
                                stream_window=factory.stream_window,
                                connection_window=factory.connection_window,
                                max_header_list_size=DEFAULT_MAX_HEADER_LIST_SIZE,
                                blocks_per_read=factory.blocks_per_read)
        h2.initiate()
        self.h2 = h2
        # A streaming producer: the transport says when its buffer fills (a client that does
        # not read), and the connection then counts the ACKs it queues (http2.MAX_QUEUED_ACKS).
        self.transport.registerProducer(self, True)
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
            call._mark_cancelled()
        self._send_timeout.stop()
        self._deadlines.settle()
        self._close_events.fire()

    def shutdown(self) -> None:
        """Answer every call in flight UNAVAILABLE, send GOAWAY and close the connection."""
        if self.closed or self.h2 is None:
            return
        for call in list(self.calls.values()):
            if call.active:
                self._abort(call, StatusCode.UNAVAILABLE, _SHUTDOWN_MESSAGE)
        self.h2.close(ErrorCode.NO_ERROR)
        self._write_out()
        self._shut = True  # what the client sends from now on is not read (we are closing)
        self.transport.loseConnection()

    # --- the HTTP/2 connection's callbacks (http2.Listener) ------------------------------------------
    def on_request(self, sid: int, raw: list[tuple[bytes, bytes]], end_stream: bool) -> None:
        """A new stream: its Request-Headers make a call (or are answered at once)."""
        factory = self.factory
        if factory.closing:
            self.h2.reset_stream(sid, ErrorCode.REFUSED_STREAM)
            return
        try:
            headers, expected = self._parse_headers(raw)
            if expected and end_stream:
                raise MalformedRequest(f"content-length {expected} without DATA (RFC 9113 8.1.1)")
            method = factory.methods[headers.path]
            decoder = MessageDecoder(factory.max_message_size, headers.encoding)
        except RequestRejected as rejected:
            log.debug("%s: stream %d rejected: %s", self.peer_addr, sid, rejected)
            self._reject(sid, rejected.response())
            return
        except GrpcError as error:
            self._reject(sid, trailers_only(error.code, error.message))
            return
        except MalformedRequest as malformed:  # RFC 9113 8.1.1: never served
            self._malformed(sid, malformed)
            return
        call = ServerCall(self, sid, method, headers)
        call._decoder = decoder
        call.client_closed = end_stream
        self.calls[sid] = call
        if expected is not None and not end_stream:
            self._expect_content(sid, expected)
        if headers.timeout is not None:
            call.deadline = self.clock.seconds() + headers.timeout
            if headers.timeout <= 0:
                self._abort(call, StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
                return
            self._deadlines.add(call)
        if method.kind in CLIENT_STREAMING:
            self._start(call, None)
        elif end_stream:
            self._abort(call, StatusCode.INTERNAL, "Half-closed without a request")

    def _parse_headers(self, raw: list[tuple[bytes, bytes]]) -> tuple[RequestHeaders, int | None]:
        """``http2_request.check_request`` then ``wire.parse_request_headers``, remembered per
        connection, and the request's content-length: a client sends the same block call after
        call but for ``grpc-timeout`` and the 5.x SDKs' per-request fields (:data:`_PER_REQUEST`),
        which are taken on their own (those metadata go after the rest). MalformedRequest for a
        malformed HTTP/2 request (RFC 9113 8.1.1), before the gRPC rules."""
        per_request = _PER_REQUEST
        key = tuple([field for field in raw if field[0] not in per_request])
        cache = self._header_cache
        entry = cache.get(key)
        if entry is None:
            check_request(key)
            entry = (parse_request_headers(list(key), self.factory.methods),
                     sum(1 for name, _ in key if name[:1] == b":"), content_length(key))
            if len(cache) < _HEADER_CACHE_LIMIT:
                cache[key] = entry
        parsed, pseudo_count, expected = entry
        if len(key) == len(raw):
            return parsed, expected
        timeout = None
        varying: list[tuple[str, str | bytes]] = []
        for at, (name, value) in enumerate(raw):
            if name not in per_request:
                continue
            if at < pseudo_count:  # a pseudo-header comes after this regular field
                raise MalformedRequest(f"pseudo-header after {name.decode()!r} (RFC 9113 8.3)")
            if name == b"grpc-timeout":
                if timeout is None:  # the first one, as parse_request_headers takes
                    timeout = value
            else:
                varying.append((name.decode("latin-1"), value.decode("latin-1").strip()))
        return parsed.with_request_fields(
            parsed.timeout if timeout is None else _timeout(timeout),
            (*parsed.metadata, *varying) if varying else parsed.metadata), expected

    def _malformed(self, sid: int, malformed: MalformedRequest) -> None:
        """RFC 9113 8.1.1: a malformed request is a stream error of type PROTOCOL_ERROR."""
        log.debug("%s: stream %d malformed: %s", self.peer_addr, sid, malformed)
        self._content_left.pop(sid, None)
        call = self.calls.pop(sid, None)
        if call is not None:
            call._mark_cancelled()
        self.h2.reset_stream(sid, ErrorCode.PROTOCOL_ERROR)

    def _reject(self, sid: int, headers: list[tuple[str, str]]) -> None:
        """Answer a stream with one HEADERS block (END_STREAM); the connection stops a client
        still sending with RST_STREAM(NO_ERROR)."""
        self.h2.send_headers(sid, as_bytes(headers), end_stream=True)

    def on_data(self, sid: int, data: bytes, end_stream: bool) -> None:
        """DATA (already credited back by the connection: consumed here at once, so a message
        larger than the window streams in); END_STREAM ends the request."""
        call = self.calls.get(sid)
        if call is None:
            return
        if self._content_left and sid in self._content_left \
                and not self._count_content(sid, len(data), end_stream):
            return
        if data and not (call.finished or call.cancelled):
            try:
                payloads = call._decoder.feed(data)
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
        if end_stream:
            self._stream_ended(call)

    def _expect_content(self, sid: int, expected: int) -> None:
        """Count the stream's DATA against its content-length. Entries of calls that ended
        before the client's END_STREAM are dropped once there are more than streams."""
        left = self._content_left
        left[sid] = expected
        if len(left) > self.factory.max_concurrent_streams:
            for stale in [s for s in left if s not in self.calls]:
                del left[stale]

    def _count_content(self, sid: int, size: int, end_stream: bool) -> bool:
        """DATA against the stream's content-length (8.1.1); False once it disagrees (reset)."""
        left = self._content_left[sid] - size
        if left < 0 or (end_stream and left):
            self._malformed(sid, MalformedRequest("DATA disagrees with content-length (RFC 9113 8.1.1)"))
            return False
        if end_stream:
            del self._content_left[sid]
        else:
            self._content_left[sid] = left
        return True

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

    def _stream_ended(self, call: ServerCall) -> None:
        call.client_closed = True
        if call.finished or call.cancelled:
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

    def on_reset(self, sid: int, error_code: int) -> None:
        """The client's RST_STREAM (or a stream error): the call is cancelled, nothing written."""
        self._content_left.pop(sid, None)
        call = self.calls.pop(sid, None)
        if call is not None:
            log.debug("%s: %r reset (error code %s)", self.peer_addr, call, error_code)
            call._mark_cancelled()

    def on_goaway(self, error_code: int, debug: bytes) -> None:
        """The client is going away: its open calls carry on until it closes."""
        log.debug("%s: GOAWAY from the client (error code %s %r)", self.peer_addr, error_code, debug)

    def _deadline_expired(self, call: ServerCall) -> None:
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
