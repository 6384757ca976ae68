"""Running one gRPC call once its request (or, for client streaming, its headers) arrived:
observers, the interceptor chain, then the handler by its kind, and what the handler's result
or exception means. A mixin of :class:`~rocketmq_emu.broker.grpc.server.GrpcProtocol`; the
behaviours are documented in that module."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import defer
from twisted.python.failure import Failure

from rocketmq_emu.broker.grpc.call import DROP, CallEvent, ServerCall
from rocketmq_emu.broker.grpc.wire import GrpcError, StatusCode

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

__all__ = ["CLIENT_STREAMING", "CallRunner", "Interceptor"]

log = logging.getLogger("rocketmq_emu.broker.grpc.server")

#: Method kinds whose handler takes the call and returns a stream observer.
CLIENT_STREAMING = frozenset({"stream_stream", "stream_unary"})

Interceptor = Callable[[ServerCall, Any], Any]


class CallRegistry(Protocol):
    """What the runner needs of the server factory (GrpcServerFactory, a layer above: typed
    here so that this module imports nothing of it)."""

    handlers: dict[str, Any]
    _observers: tuple[Callable[[CallEvent], Any], ...]
    _interceptors: tuple[Interceptor, ...]


class CallRunner:
    """Observers, interceptors and the handler of each call (mixin of GrpcProtocol)."""

    factory: CallRegistry
    clock: IReactorTime
    connection_id: str

    def _io_done(self) -> None:  # pragma: no cover - GrpcProtocol's
        raise NotImplementedError

    def _start(self, call: ServerCall, request: Any) -> None:
        factory = self.factory
        if factory._observers:
            event = CallEvent(time=self.clock.seconds(), rpc=call.method.name,
                              path=call.method.path, peer=call.peer,
                              connection_id=self.connection_id, metadata=call.metadata,
                              request=request, call=call)
            for fn in factory._observers:
                try:
                    fn(event)
                except Exception:
                    log.exception("observer %r failed on %r", fn, call)
        if factory._interceptors:
            self._intercept(call, request, factory._interceptors, 0)
        else:
            self._run_handler(call, request)

    def _intercept(self, call: ServerCall, request: Any, chain: tuple[Interceptor, ...],
                   index: int) -> None:
        for at in range(index, len(chain)):
            try:
                result = chain[at](call, request)
            except Exception as exc:
                self._handler_error(call, exc, f"interceptor {chain[at]!r}")
                return
            if result is None:
                continue
            if isinstance(result, defer.Deferred):
                result.addCallback(self._intercepted, call, request, chain, at + 1)
                result.addErrback(self._handler_failed, call)
                return
            self._intercepted(result, call, request, chain, at + 1)
            return
        self._run_handler(call, request)

    def _intercepted(self, result: Any, call: ServerCall, request: Any,
                     chain: tuple[Interceptor, ...], index: int) -> None:
        if call.finished or call.cancelled:
            return
        if result is None:
            self._intercept(call, request, chain, index)
        elif isinstance(result, GrpcError):
            call.finish(result.code, result.message)
        elif result is DROP:
            call._started = True  # client-streamed requests are dropped from now on
            call._requests.clear()
        elif isinstance(result, bytes) or isinstance(result, call.method.response):
            call.send(result)
            call.finish()
        else:
            log.error("interceptor answered %r to %r; failing the call", result, call)
            call.finish(StatusCode.UNKNOWN, f"interceptor answered {type(result).__name__}")
        self._io_done()

    def _run_handler(self, call: ServerCall, request: Any) -> None:
        call._started = True
        handler = self.factory.handlers[call.method.name]
        kind = call.method.kind
        try:
            result = handler(call) if kind in CLIENT_STREAMING else handler(request, call)
        except Exception as exc:
            self._handler_error(call, exc, "handler")
            return
        if kind == "unary_unary":
            if isinstance(result, defer.Deferred):
                result.addCallbacks(self._unary_result, self._handler_failed,
                                    callbackArgs=(call,), errbackArgs=(call,))
            else:
                self._unary_result(result, call)
        elif kind == "unary_stream":
            if isinstance(result, defer.Deferred):
                result.addCallbacks(self._stream_result, self._handler_failed,
                                    callbackArgs=(call,), errbackArgs=(call,))
            else:
                self._stream_result(result, call)
        elif call.active:
            call._observer = result
            if result is not None:
                queued, call._requests = call._requests, []
                for message in queued:
                    self._notify(call, result.on_message, message)
                    if not call.active:
                        return
                if call.client_closed:
                    self._notify(call, result.on_half_close)

    def _unary_result(self, response: Any, call: ServerCall) -> None:
        if call.finished or call.cancelled:
            return
        if response is None:
            call.finish(StatusCode.INTERNAL, "Completed without a response")
        else:
            call.send(response)
            call.finish()
        self._io_done()

    def _stream_result(self, _: Any, call: ServerCall) -> None:
        if call.active:
            call.finish()
            self._io_done()

    def _notify(self, call: ServerCall, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self._handler_error(call, exc, "stream observer")

    def _handler_error(self, call: ServerCall, exc: BaseException, who: str) -> None:
        if isinstance(exc, GrpcError):
            call.finish(exc.code, exc.message)
        elif call.active:
            log.error("%s of %r failed", who, call, exc_info=exc)
            call.finish(StatusCode.UNKNOWN,
                        f"Application error processing RPC: {type(exc).__name__}: {exc}")
        self._io_done()

    def _handler_failed(self, failure: Failure, call: ServerCall) -> None:
        if call.finished or call.cancelled:
            log.debug("%r: result after the end: %s", call, failure.getErrorMessage())
            return
        self._handler_error(call, failure.value, "handler")
