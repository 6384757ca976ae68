"""Dispatch of incoming requests by request code, with interceptors and observers.

Sans-IO apart from Deferreds: a :class:`RequestDispatcher` is handed a decoded request and a
connection object and returns what to answer. Handlers never raise into the reactor: exceptions
become SYSTEM_ERROR responses (Java ``NettyRemotingAbstract.processRequestCommand``); an unknown
code is answered REQUEST_CODE_NOT_SUPPORTED with Java's remark. Every request goes through
:meth:`RequestDispatcher.dispatch`: there is no second route to a handler.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.python.failure import Failure

from rocketmq_emu.broker.remoting.codes import SERIALIZE_JSON, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

log = logging.getLogger(__name__)


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


#: Returned by an interceptor (directly or through a Deferred): swallow the request, no answer.
DROP: Any = _Drop()


@dataclass(slots=True)
class RequestEvent:
    """What an observer sees for every incoming request."""

    time: float
    code: int
    opaque: int
    flag: int
    ext_fields: dict[str, str]
    body_len: int
    peer: tuple[str, int]
    conn: Any
    #: The request itself (language, version, serialize type, body).
    command: RemotingCommand


Handler = Callable[[RemotingCommand, Any], Any]
Interceptor = Callable[[RemotingCommand, Any], Any]


def default_clock() -> IReactorTime:
    """The global reactor, imported only when no clock was given."""
    from twisted.internet import reactor

    return reactor  # type: ignore[return-value]


def is_deferred(result: Any) -> bool:
    """Whether a handler's or interceptor's ``result`` is a Deferred (else a command, DROP or
    None). A command is the common answer: the type test first spares most requests the
    Deferred isinstance, an ABC check (Deferred is an Awaitable)."""
    return type(result) is not RemotingCommand and isinstance(result, defer.Deferred)


def error_response(request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
    """An error answer; Java writes error paths in the server default (JSON)."""
    resp = request.response(code, remark)
    resp.serialize_type = SERIALIZE_JSON
    return resp


def not_supported(request: RemotingCommand) -> RemotingCommand:
    """REQUEST_CODE_NOT_SUPPORTED with Java's remark text."""
    return error_response(
        request,
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        f" request type {request.code} not supported",
    )


class RequestDispatcher:
    """Routes incoming requests to handlers by request code.

    ``handler(cmd, conn)`` returns a :class:`RemotingCommand`, a Deferred of one, or None (no
    reply). Interceptors run first, in order: ``fn(cmd, conn)`` returns None (continue), a
    RemotingCommand (answer with it), :data:`DROP` (no answer) or a Deferred of any of those.
    Observers are called with a :class:`RequestEvent` for every request.
    """

    def __init__(self, clock: IReactorTime | None = None) -> None:
        self._clock = clock
        self._handlers: dict[int, Handler] = {}
        self._default: Handler | None = None
        self._interceptors: list[Interceptor] = []
        self._observers: list[Callable[[RequestEvent], None]] = []
        #: Told of each request the server pushes to a client (``fn(cmd, conn)``).
        self.push_observers: list[Callable[[RemotingCommand, Any], None]] = []

    @property
    def clock(self) -> IReactorTime:
        if self._clock is None:
            self._clock = default_clock()
        return self._clock

    def register(self, code: int, handler: Handler) -> None:
        """Handle requests with ``code`` (replaces an earlier handler)."""
        self._handlers[int(code)] = handler

    def register_on_first_use(self, code: int, load: Callable[[], object]) -> None:
        """Handle ``code`` by a handler loaded at its first request: that request calls
        ``load()``, which must :meth:`register` the real handler for ``code`` (replacing this
        one), then goes to it as every later request does. For request areas an idle broker
        never uses, so their modules are not imported at start; ``load`` may be shared by several
        codes and dispatchers (it runs once per dispatcher at most, while this stands)."""

        def first_use(cmd: RemotingCommand, conn: Any) -> Any:
            load()
            handler = self._handlers.get(cmd.code, self._default)
            if handler is first_use:
                raise RuntimeError(f"loading request code {cmd.code} registered no handler")
            return not_supported(cmd) if handler is None else handler(cmd, conn)

        self._handlers[int(code)] = first_use

    def register_default(self, handler: Handler | None) -> None:
        """Handle every code without its own handler (None: REQUEST_CODE_NOT_SUPPORTED)."""
        self._default = handler

    def handler_for(self, code: int) -> Handler | None:
        """The handler registered for ``code`` (or the default handler)."""
        return self._handlers.get(code, self._default)

    def add_interceptor(self, fn: Interceptor) -> None:
        """Run ``fn(cmd, conn)`` before the handler (fault injection, recording)."""
        self._interceptors.append(fn)

    def remove_interceptor(self, fn: Interceptor) -> None:
        """Undo :meth:`add_interceptor` (no error if absent)."""
        if fn in self._interceptors:
            self._interceptors.remove(fn)

    def proceed(self, cmd: RemotingCommand, conn: Any, after: Interceptor | None = None) -> Any:
        """Run the interceptors that follow ``after`` (all of them if None or not installed), then
        the handler. For an interceptor that wants to see or reshape the answer of the rest of
        the chain; returns RemotingCommand | Deferred | None (None: no answer)."""
        try:
            start = self._interceptors.index(after) + 1 if after is not None else 0
        except ValueError:
            start = 0
        return self._intercept(cmd, conn, start)

    def add_observer(self, fn: Callable[[RequestEvent], None]) -> None:
        """Call ``fn(event)`` for every incoming request before anything else."""
        self._observers.append(fn)

    def remove_observer(self, fn: Callable[[RequestEvent], None]) -> None:
        """Undo :meth:`add_observer` (no error if absent)."""
        if fn in self._observers:
            self._observers.remove(fn)

    def pushed(self, cmd: RemotingCommand, conn: Any) -> None:
        """The server sent request ``cmd`` to the client of ``conn`` (a transaction check, a
        consumer-ids notice): tell the push observers."""
        for fn in list(self.push_observers):
            try:
                fn(cmd, conn)
            except Exception:
                log.exception("push observer %r failed", fn)

    def dispatch(self, cmd: RemotingCommand, conn: Any) -> Any:
        """Process one request; returns RemotingCommand | Deferred | None and never raises."""
        if self._observers:
            event = RequestEvent(
                self.clock.seconds(),
                cmd.code,
                cmd.opaque,
                cmd.flag,
                cmd.ext_fields,
                len(cmd.body),
                getattr(conn, "peer", ("", 0)),
                conn,
                cmd,
            )
            for fn in list(self._observers):
                try:
                    fn(event)
                except Exception:
                    log.exception("request observer %r failed", fn)
        if self._interceptors:
            return self._intercept(cmd, conn, 0)
        return self._call_handler(cmd, conn)

    def _intercept(self, cmd: RemotingCommand, conn: Any, start: int) -> Any:
        interceptors = self._interceptors
        for i in range(start, len(interceptors)):
            try:
                result = interceptors[i](cmd, conn)
            except Exception as exc:
                return self.handler_failed(cmd, conn, exc)
            if result is None:
                continue
            if result is DROP:
                return None
            if is_deferred(result):
                return result.addCallback(self._after_interceptor, cmd, conn, i + 1).addErrback(
                    self._failure, cmd, conn
                )
            return result
        return self._call_handler(cmd, conn)

    def _after_interceptor(self, result: Any, cmd: RemotingCommand, conn: Any, nxt: int) -> Any:
        if result is None:
            return self._intercept(cmd, conn, nxt)
        if result is DROP:
            return None
        return result

    def _call_handler(self, cmd: RemotingCommand, conn: Any) -> Any:
        handler = self._handlers.get(cmd.code, self._default)
        if handler is None:
            log.warning(
                "%s: request type %d not supported", getattr(conn, "peer_addr", "?"), cmd.code
            )
            return not_supported(cmd)
        try:
            result = handler(cmd, conn)
        except Exception as exc:
            return self.handler_failed(cmd, conn, exc)
        if is_deferred(result):
            return result.addErrback(self._failure, cmd, conn)
        return result

    def _failure(self, failure: Failure, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        exc = failure.value
        log.error(
            "handler for code %d from %s failed: %s",
            cmd.code,
            getattr(conn, "peer_addr", "?"),
            failure.getTraceback(),
        )
        return error_response(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    def handler_failed(self, cmd: RemotingCommand, conn: Any, exc: Exception) -> RemotingCommand:
        """The answer to ``cmd`` when its handler raised ``exc``: SYSTEM_ERROR naming the
        exception, with the traceback logged."""
        log.exception(
            "handler for code %d from %s failed", cmd.code, getattr(conn, "peer_addr", "?")
        )
        return error_response(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
