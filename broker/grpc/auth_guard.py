"""ACL 1.0 wired into the gRPC transport (the 5.x proxy's ``AuthenticationInterceptor``).

:func:`install` is called only when a broker has ``aclEnable=true``
(:mod:`~rocketmq_emu.broker.grpc.acl_switch`): it adds an interceptor on
the :class:`~rocketmq_emu.broker.grpc.server.GrpcServerFactory` (unary and server-streaming
calls: their one request) and wraps the Telemetry handler so each TelemetryCommand is checked,
as Java checks every message in ``onMessage``. With ACL off nothing is installed and no call
pays for it. The accounts are the broker's (``AclService``: plain_acl.yml, reloaded by its file
watch and by the ACL admin codes), passed in as a callable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker.acl.config import AclConfig
from rocketmq_emu.broker.grpc.auth import DATE_TIME, SESSION_TOKEN, Refusal, authenticate
from rocketmq_emu.broker.grpc.wire import GrpcError, StatusCode

log = logging.getLogger(__name__)

def _error(refusal: Refusal, call: Any) -> GrpcError:
    if refusal.internal:
        log.error("gRPC ACL: %r failed: %s", call, refusal.reason)
        return GrpcError(StatusCode.INTERNAL, refusal.reason)
    # Java: StatusRuntimeException(Status.PERMISSION_DENIED), no description, no log line; the
    # client learns nothing more, so the reason is logged here (INFO) for whoever runs the tests.
    log.info("gRPC ACL: %r refused: %s", call, refusal.reason)
    return GrpcError(StatusCode.PERMISSION_DENIED, "")


class GrpcAclGuard:
    """The check of each request message of a call against ``accounts()``."""

    def __init__(self, accounts: Callable[[], AclConfig]) -> None:
        self.accounts = accounts

    def refuse(self, call: Any, request: Any) -> GrpcError | None:
        """None if ``request`` (a message of ``call``) may proceed, else the error to end with."""
        metadata = call.metadata
        headers = metadata.mq_headers
        refusal = authenticate(self.accounts(), call.method.name, request, metadata.authorization,
                               headers.get(DATE_TIME), headers.get(SESSION_TOKEN), call.peer[0])
        return None if refusal is None else _error(refusal, call)

    def interceptor(self, call: Any, request: Any) -> GrpcError | None:
        """The factory interceptor: client-streaming calls (``request`` None) are checked per
        message by :meth:`wrap_streaming` instead."""
        if request is None:
            return None
        return self.refuse(call, request)

    def wrap_streaming(self, handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """A client-streaming handler whose observer sees only messages that pass."""

        def guarded(call: Any) -> Any:
            return _GuardedObserver(self, call, handler(call))

        guarded.__name__ = getattr(handler, "__name__", "guarded")
        return guarded


class _GuardedObserver:
    """Checks every message before the handler's observer gets it; a refusal ends the call
    (``GlobalExceptionInterceptor.closeWithException``) and cancels the inner observer."""

    def __init__(self, guard: GrpcAclGuard, call: Any, inner: Any) -> None:
        self.guard = guard
        self.call = call
        self.inner = inner

    def on_message(self, message: Any) -> None:
        error = self.guard.refuse(self.call, message)
        if error is None:
            self.inner.on_message(message)
            return
        self.call.finish(error.code, error.message)
        on_cancel = getattr(self.inner, "on_cancel", None)
        if on_cancel is not None:
            on_cancel()

    def on_half_close(self) -> None:
        self.inner.on_half_close()

    def on_cancel(self) -> None:
        self.inner.on_cancel()


def install(factory: Any, accounts: Callable[[], AclConfig]) -> GrpcAclGuard:
    """Guard every call of ``factory``: the interceptor, and Telemetry checked per message."""
    guard = GrpcAclGuard(accounts)
    factory.add_interceptor(guard.interceptor)
    telemetry = factory.handlers.get("Telemetry")
    if telemetry is not None:
        factory.register("Telemetry", guard.wrap_streaming(telemetry))
    return guard
