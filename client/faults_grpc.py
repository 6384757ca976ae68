"""The gRPC side of fault injection and request recording: RocketMQ 5's MessagingService RPC names
(:func:`grpc_rpc_names`, :func:`parse_rpc`), the error answers' status vocabularies
(:func:`parse_grpc_status`, :func:`parse_status_code`), and :class:`GrpcFaults`, the interceptor and
observer a :class:`~rocketmq_emu.client.faults.FaultInjector` puts on a
:class:`~rocketmq_emu.broker.grpc.server.GrpcServerFactory`.

The rules and the request log stay the injector's (:mod:`rocketmq_emu.client.faults`: which rules
hit gRPC calls, what a call's record holds); :class:`GrpcFaults` reaches them through the
:class:`RuleStore` protocol. Their types live in :mod:`rocketmq_emu.client.fault_rules`, which
both modules import: this module never imports :mod:`~rocketmq_emu.client.faults` (it imports
this one). The actions on a gRPC call:

  ``drop``           never answered (the client's deadline ends it);
  ``drop_response``  processed (the message IS stored, a received message IS invisible) and never
                     answered; a Telemetry stream is dropped unprocessed;
  ``delay``          a unary call (SendMessage, AckMessage, ...) is processed and answered
                     ``delay`` seconds late; ReceiveMessage's responses are held and sent ``delay``
                     seconds after the handler ended; Telemetry starts ``delay`` seconds late;
  ``error``          answered at once without processing: with the gRPC status ``grpc_status``
                     (UNAVAILABLE, 14, ...) if given, else OK with an ``apache.rocketmq.v2.Status``
                     in the response: ``status_code`` (a v2 Code: TOO_MANY_REQUESTS, 50001, ...), or
                     ``error_code`` mapped by the proxy's ``ResponseBuilder.buildCode`` table
                     (SYSTEM_BUSY: TOO_MANY_REQUESTS, anything unknown: INTERNAL_SERVER_ERROR);
  ``close``          the HTTP/2 connection is closed (every call on it ends).

The gRPC messages (protobuf) are imported only when an RPC name or an error answer needs them, so
loading this module leaves protobuf unloaded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet import defer, task

from rocketmq_emu.broker.grpc.call import DROP as GRPC_DROP
from rocketmq_emu.broker.grpc.wire import GrpcError, StatusCode

if TYPE_CHECKING:
    from rocketmq_emu.client.fault_rules import FaultRule, RequestRecord

__all__ = ["GrpcFaults", "RuleStore", "grpc_error", "grpc_rpc_names", "parse_grpc_status",
           "parse_rpc", "parse_status_code"]

# The injector's logger, as before the split: one name for every fault logged.
log = logging.getLogger("rocketmq_emu.client.faults")


def grpc_rpc_names() -> tuple[str, ...]:
    """The RPC names of RocketMQ 5's MessagingService, in declaration order."""
    from rocketmq_emu.broker.grpc import messages

    return tuple(m.name for m in messages.service_methods())


def parse_rpc(value: Any) -> str | None:
    """The MessagingService RPC named ``value`` (case-insensitive: ``sendmessage`` is
    ``SendMessage``), or None if it names none."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    return next((name for name in grpc_rpc_names() if name.lower() == text), None)


def parse_grpc_status(value: int | str) -> int:
    """A gRPC status code from an int, a digit string or a name (UNAVAILABLE)."""
    text = str(value).strip()
    try:
        return int(StatusCode(int(text))) if text.lstrip("-").isdigit() else int(StatusCode[text.upper()])
    except (KeyError, ValueError):
        raise ValueError(f"unknown gRPC status code {value!r}") from None


def parse_status_code(value: int | str) -> int:
    """An ``apache.rocketmq.v2.Code`` from an int, a digit string or a name (TOO_MANY_REQUESTS)."""
    from rocketmq_emu.broker.grpc.status import Code

    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(getattr(Code, text.upper()))
    except AttributeError:
        raise ValueError(f"unknown RocketMQ status code {value!r}") from None


class RuleStore(Protocol):
    """What :class:`GrpcFaults` uses of its :class:`~rocketmq_emu.client.faults.FaultInjector`:
    the reactor that times delays, the clock that stamps records (None: the call event's time),
    whether to record, the first rule with hits left that applies (its hit counted), and the
    request log (a record given the ``call`` it stands for reads its outcome once it ended)."""

    reactor: Any
    clock: Any
    recording: bool

    def _hit(self, applies: Callable[[FaultRule], bool]) -> FaultRule | None: ...

    def _add_record(self, *, call: Any = None, **fields: Any) -> RequestRecord: ...


class GrpcFaults:
    """The gRPC hooks of one injector: each call is recorded by the observer and faulted by the
    interceptor (both run in the reactor thread, the observer first, in the same tick)."""

    def __init__(self, store: RuleStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        # gRPC calls told to the observer, waiting for the interceptor (same tick).
        self._pending: dict[int, RequestRecord] = {}

    def hooks(self, factory: Any, server: str) -> tuple[Callable[[Any, Any], Any],
                                                        Callable[[Any], None]]:
        """The (interceptor, observer) to add to ``factory``, a GrpcServerFactory; its calls are
        recorded as served by ``server``."""

        def interceptor(call: Any, request: Any) -> Any:
            return self.intercept(factory, call, request)

        def observer(event: Any) -> None:
            self.observe(server, event)

        return interceptor, observer

    def clear(self) -> None:
        """Forget the calls observed but not yet intercepted (the request log was cleared)."""
        with self._lock:
            self._pending.clear()

    def observe(self, server: str, event: Any) -> None:
        """Record the call of ``event`` (a CallEvent); its outcome is read once it ended."""
        store = self.store
        if not store.recording:
            return
        metadata = {k: v for k, v in event.metadata.metadata
                    if k.startswith("x-mq-") and isinstance(v, str)}
        request = event.request
        rec = store._add_record(
            target="grpc", server=server, code=0, name=event.rpc, opaque=event.call.stream_id,
            oneway=False, ext_fields=metadata,
            body_len=request.ByteSize() if request is not None and hasattr(request, "ByteSize") else 0,
            peer=f"{event.peer[0]}:{event.peer[1]}",
            time=store.clock.seconds() if store.clock is not None else event.time,
            rpc=event.rpc, client_id=metadata.get("x-mq-client-id"), call=event.call,
        )
        with self._lock:
            self._pending[id(event.call)] = rec

    def match(self, rpc: str) -> FaultRule | None:
        """The first rule with hits left that applies to a call of ``rpc`` (its hit counted)."""
        return self.store._hit(lambda rule: rule.matches_rpc(rpc))

    def intercept(self, factory: Any, call: Any, request: Any) -> Any:
        """The interceptor: None (no rule: the call proceeds), GRPC_DROP, an error, a response or
        a Deferred of one, as the matching rule's action says."""
        with self._lock:
            rec = self._pending.pop(id(call), None)
        rule = self.match(call.method.name)
        if rule is None:
            return None
        log.info("fault %s (rule %d) on gRPC %s from %s", rule.action, rule.id, call.method.name,
                 call.connection.peer_addr)
        if rec is not None:
            rec.fault = rule.action
        kind = call.method.kind
        if rule.action == "drop":
            return GRPC_DROP
        if rule.action == "close":
            call.connection.transport.loseConnection()
            return GRPC_DROP
        if rule.action == "error":
            return grpc_error(rule, call)
        reactor = self.store.reactor
        if kind == "stream_stream" or kind == "stream_unary":
            if rule.action == "drop_response":
                return GRPC_DROP
            return task.deferLater(reactor, rule.delay, lambda: None)
        start = time.monotonic()
        handler = factory.handlers[call.method.name]
        if kind == "unary_unary":
            d = defer.maybeDeferred(handler, request, call)
            d.addCallback(_unary_answer)
        else:  # unary_stream: the handler sends into a holder, replayed (or not) below
            held = _HeldCall(call)
            d = defer.maybeDeferred(handler, request, held).addCallback(lambda _: held)
        if rule.action == "delay":
            d.addCallback(lambda result: task.deferLater(reactor, rule.delay, lambda: result))

        def answer(result: Any) -> Any:
            if rec is not None:
                rec.latency_ms = (time.monotonic() - start) * 1000
            if rule.action == "drop_response":
                return GRPC_DROP
            if isinstance(result, _HeldCall):
                result.replay()
                return GRPC_DROP  # the call is finished already: the transport ignores this
            return result

        return d.addCallback(answer)


def grpc_error(rule: FaultRule, call: Any) -> Any:
    """The error answer of ``rule`` to ``call``: a GrpcError with the rule's ``grpc_status``, else
    the RPC's response with an ``apache.rocketmq.v2.Status`` (``status_code``, or ``error_code``
    mapped as the proxy does; INTERNAL if the response has no status)."""
    from rocketmq_emu.broker.grpc.status import Code, build_status, remoting_code

    if rule.grpc_status is not None:
        code = StatusCode(rule.grpc_status)
        return GrpcError(code, rule.remark or f"[rmq-emu fault] {code.name}")
    status = rule.status_code if rule.status_code is not None else remoting_code(rule.error_code)
    response = call.method.response()
    if "status" not in response.DESCRIPTOR.fields_by_name:
        return GrpcError(StatusCode.INTERNAL, rule.remark or f"[rmq-emu fault] {Code.name(status)}")
    response.status.CopyFrom(build_status(status, rule.remark or f"[rmq-emu fault] {Code.name(status)}"))
    return response


def _unary_answer(response: Any) -> Any:
    """A unary handler's answer for an interceptor to return (None would re-run the chain)."""
    if response is None:
        raise GrpcError(StatusCode.INTERNAL, "Completed without a response")
    return response


class _HeldCall:
    """The ServerCall a fault rule hands a server-streaming handler: what the handler sends and
    its finish are kept (:meth:`replay` writes them to the real call later); everything else is
    the real call's."""

    def __init__(self, call: Any) -> None:
        self._call = call
        self._sent: list[Any] = []
        self._status: tuple[Any, str] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)

    @property
    def finished(self) -> bool:
        """The handler finished the call (as far as it can tell)."""
        return self._status is not None or self._call.finished

    @property
    def active(self) -> bool:
        """Neither finished by the handler nor ended on the real call."""
        return self._status is None and self._call.active

    def send(self, message: Any) -> bool:
        """Keep ``message`` for :meth:`replay`."""
        if not self.active:
            return False
        self._sent.append(message)
        return True

    def finish(self, code: Any = 0, message: str = "") -> bool:
        """Keep the status for :meth:`replay`."""
        if not self.active:
            return False
        self._status = (code, message)
        return True

    def abort(self, error: Exception) -> bool:
        """Keep a GrpcError's status (UNKNOWN for another exception) for :meth:`replay`."""
        return self.finish(getattr(error, "code", 2), getattr(error, "message", str(error)))

    def replay(self) -> None:
        """Send what the handler sent, then its status (OK if it set none)."""
        call = self._call
        for message in self._sent:
            call.send(message)
        code, message = self._status if self._status is not None else (0, "")
        call.finish(code, message)
