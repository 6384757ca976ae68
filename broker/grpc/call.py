"""One gRPC call on the server: what a handler sees (:class:`ServerCall`) and what observers see
(:class:`CallEvent`).

A :class:`ServerCall` is created by :class:`~rocketmq_emu.broker.grpc.server.GrpcProtocol` for
every HTTP/2 stream whose Request-Headers name a served method. Handlers answer through it
(:meth:`ServerCall.send`, :meth:`ServerCall.finish`); the protocol frames, flow-controls and
writes. Once a call is finished or cancelled every later ``send``/``finish`` is a no-op, so a
handler whose client went away never writes to a dead stream and need not check first.

"Cancelled" means the call ended by anything other than its handler: the client's RST_STREAM,
the connection's loss, the deadline (``grpc-timeout``), a request the transport could not decode,
or the server's shutdown. Cancel callbacks (and a stream handler's ``on_cancel``) run once, then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rocketmq_emu.broker.grpc.wire import RequestHeaders, StatusCode

if TYPE_CHECKING:
    from rocketmq_emu.broker.grpc.messages import Method

__all__ = ["DROP", "CallConnection", "CallEvent", "DeadlineWatch", "RawPayload", "ServerCall",
           "StreamObserver"]

log = logging.getLogger(__name__)


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


#: Returned by an interceptor (directly or through a Deferred): leave the call unanswered; it
#: ends only by the client's cancel, its deadline or the connection's loss (a lost answer).
DROP: Any = _Drop()


class StreamObserver(Protocol):
    """What a ``stream_stream`` (or ``stream_unary``) handler returns: told of each request."""

    def on_message(self, message: Any) -> None:
        """One request message, decoded with the method's request class."""

    def on_half_close(self) -> None:
        """The client sent END_STREAM: no more requests (the call stays open for responses)."""

    def on_cancel(self) -> None:
        """The call was cancelled (see the module docstring); nothing more can be sent."""


class CallConnection(Protocol):
    """What a call needs of its connection (:class:`~rocketmq_emu.broker.grpc.server.GrpcProtocol`,
    a layer above: typed here so that this module imports nothing of it)."""

    peer: tuple[str, int]
    connection_id: str
    clock: Any
    transport: Any

    def send_message(self, call: ServerCall, payload: bytes | bytearray | memoryview) -> None:
        """Frame ``payload`` as one gRPC message on the call's stream."""

    def finish_call(self, call: ServerCall, code: StatusCode, message: str) -> None:
        """End the call's stream with its status."""


class DeadlineWatch(Protocol):
    """What a call needs of the deadlines watching it (:class:`~rocketmq_emu.broker.grpc.
    deadlines.Deadlines`, which imports this module)."""

    def discard(self, call: ServerCall) -> None:
        """Stop watching ``call``."""


class RawPayload(bytes):
    """A stand-in message class for bytes-level methods (tests): ``FromString`` keeps the payload
    as bytes; :meth:`ServerCall.send` takes ``bytes`` as an already serialized message."""

    @classmethod
    def FromString(cls, payload: bytes) -> bytes:  # noqa: N802 - protobuf's name
        """The payload, unchanged."""
        return bytes(payload)


@dataclass(slots=True)
class CallEvent:
    """What an observer is told of every call to a served method, before any interceptor.

    ``request`` is the decoded request of a unary-request call, None for a client-streaming one
    (told when its headers arrive); ``time`` is the factory's clock.
    """

    time: float
    rpc: str
    path: str
    peer: tuple[str, int]
    connection_id: str
    metadata: RequestHeaders
    request: Any
    call: ServerCall


class ServerCall:
    """One call: its method, Request-Headers, peer and deadline; the handler answers through it.

    Attributes: ``method`` (messages.Method: ``.name``, ``.path``, ``.request``, ``.response``,
    ``.kind``), ``metadata`` (wire.RequestHeaders), ``peer`` ``(host, port)``, ``deadline``
    (factory clock seconds, or None without ``grpc-timeout``), ``connection`` (the
    :class:`~rocketmq_emu.broker.grpc.server.GrpcProtocol`; ``.connection_id``), ``stream_id``,
    ``cancelled``, ``finished``; ``initial_metadata`` and ``trailing_metadata`` are lists of
    ``(name, value)`` a handler may append to before the first ``send`` / the ``finish``.
    """

    __slots__ = (
        "method", "metadata", "peer", "connection", "stream_id", "deadline", "cancelled",
        "finished", "initial_metadata", "trailing_metadata", "status", "client_closed",
        "_cancel_callbacks", "_deadlines", "_decoder", "_requests", "_started", "_observer",
        "_headers_sent",
    )

    def __init__(self, connection: CallConnection, stream_id: int, method: Method,
                 metadata: RequestHeaders, deadline: float | None = None) -> None:
        self.method = method
        self.metadata = metadata
        self.connection = connection
        self.peer: tuple[str, int] = connection.peer
        self.stream_id = stream_id
        self.deadline = deadline
        self.cancelled = False
        self.finished = False
        #: The status the call ended with (None while it runs).
        self.status: tuple[StatusCode, str] | None = None
        #: The client has sent END_STREAM.
        self.client_closed = False
        self.initial_metadata: list[tuple[str, str | bytes]] = []
        self.trailing_metadata: list[tuple[str, str | bytes]] = []
        self._cancel_callbacks: list[Callable[[ServerCall], Any]] = []
        #: The connection's deadlines while they watch this call (None: no deadline, or ended).
        self._deadlines: DeadlineWatch | None = None
        self._decoder: Any = None
        # Requests waiting for the handler (unary: until END_STREAM; streams: until started).
        self._requests: list[Any] = []
        self._started = False
        self._observer: Any = None
        self._headers_sent = False

    def __repr__(self) -> str:
        return (f"<ServerCall {self.method.name} stream {self.stream_id} from "
                f"{self.peer[0]}:{self.peer[1]}{' cancelled' if self.cancelled else ''}"
                f"{' finished' if self.finished else ''}>")

    @property
    def rpc(self) -> str:
        """The RPC name, e.g. ``SendMessage``."""
        return self.method.name

    @property
    def active(self) -> bool:
        """Neither finished nor cancelled: ``send``/``finish`` still write."""
        return not (self.finished or self.cancelled)

    def time_remaining(self) -> float | None:
        """Seconds until the deadline on the factory's clock (None: no deadline; may be <= 0)."""
        if self.deadline is None:
            return None
        return self.deadline - self.connection.clock.seconds()

    def add_cancel_callback(self, fn: Callable[[ServerCall], Any]) -> None:
        """Call ``fn(call)`` once if the call is cancelled (at once if it already is). Not called
        when the handler finishes the call itself."""
        if self.cancelled:
            fn(self)
        elif not self.finished:
            self._cancel_callbacks.append(fn)

    def send(self, message: Any) -> bool:
        """Send one response message (a protobuf message, or ``bytes`` already serialized).
        Response-Headers go out before the first. False (nothing sent) once the call is over."""
        if self.finished or self.cancelled:
            log.debug("%r: dropping a message sent after the end", self)
            return False
        payload = message if isinstance(message, bytes | bytearray | memoryview) \
            else message.SerializeToString()
        self.connection.send_message(self, payload)
        return True

    def finish(self, code: StatusCode | int = StatusCode.OK, message: str = "") -> bool:
        """End the call with ``code``/``message`` in Trailers (Trailers-Only if nothing was sent).
        False (nothing sent) if the call was already over."""
        if self.finished or self.cancelled:
            return False
        self.finished = True
        status = code if type(code) is StatusCode else StatusCode(code)
        self.status = (status, message)
        self._end_deadline()
        self._cancel_callbacks.clear()
        self.connection.finish_call(self, status, message)
        return True

    def abort(self, error: Exception) -> bool:
        """``finish`` with a GrpcError's code and message (UNKNOWN for any other exception)."""
        code = getattr(error, "code", StatusCode.UNKNOWN)
        text = getattr(error, "message", None)
        return self.finish(code, text if text is not None else f"{type(error).__name__}: {error}")

    # --- for the protocol ------------------------------------------------------------------------
    def _end_deadline(self) -> None:
        """The call ended: its deadline no longer runs."""
        if self._deadlines is not None:
            self._deadlines.discard(self)

    def _mark_cancelled(self) -> None:
        """Mark the call cancelled; run the cancel callbacks and the observer's ``on_cancel``."""
        if self.finished or self.cancelled:
            return
        self.cancelled = True
        self._end_deadline()
        self._requests.clear()
        callbacks, self._cancel_callbacks = self._cancel_callbacks, []
        for fn in callbacks:
            try:
                fn(self)
            except Exception:
                log.exception("%r: cancel callback %r failed", self, fn)
        observer, self._observer = self._observer, None
        if observer is not None:
            try:
                observer.on_cancel()
            except Exception:
                log.exception("%r: on_cancel failed", self)
