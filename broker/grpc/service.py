"""``apache.rocketmq.v2.MessagingService``: the RPC handlers the gRPC transport serves
(5.x proxy ``GrpcMessagingApplication`` in Local mode).

Every unary RPC answers gRPC status OK with its outcome in the response's ``status``; an error
raised while serving becomes that status (``writeResponse`` / ``ResponseBuilder``). Each RPC is
turned into the broker's remoting request and dispatched as a remoting client's would be.
PullMessage, UpdateOffset, GetOffset, QueryOffset and SyncLiteSubscription have no handler: the
transport answers UNIMPLEMENTED, as a 5.3 proxy does. RecallMessage is served as 5.3 serves it
(the broker's RECALL_MESSAGE, :mod:`~rocketmq_emu.broker.grpc.recall_activity`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import CoroutineType
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.client_activity import ClientActivity
from rocketmq_emu.broker.grpc.consumer_activity import ConsumerActivity
from rocketmq_emu.broker.grpc.context import ProxyContext
from rocketmq_emu.broker.grpc.producer_activity import ProducerActivity
from rocketmq_emu.broker.grpc.proxy_state import ProxyState
from rocketmq_emu.broker.grpc.recall_activity import RecallActivity
from rocketmq_emu.broker.grpc.status import status_of

#: The unary RPCs, by name: (activity attribute, method, response message).
_UNARY = {
    "QueryRoute": ("client", "query_route", "QueryRouteResponse"),
    "Heartbeat": ("client", "heartbeat", "HeartbeatResponse"),
    "QueryAssignment": ("client", "query_assignment", "QueryAssignmentResponse"),
    "NotifyClientTermination": ("client", "notify_client_termination",
                                "NotifyClientTerminationResponse"),
    "SendMessage": ("producer", "send_message", "SendMessageResponse"),
    "EndTransaction": ("producer", "end_transaction", "EndTransactionResponse"),
    "ForwardMessageToDeadLetterQueue": ("producer", "forward_to_dlq",
                                        "ForwardMessageToDeadLetterQueueResponse"),
    "AckMessage": ("consumer", "ack_message", "AckMessageResponse"),
    "ChangeInvisibleDuration": ("consumer", "change_invisible_duration",
                                "ChangeInvisibleDurationResponse"),
    "RecallMessage": ("recall", "recall_message", "RecallMessageResponse"),
}


class MessagingService:
    """The handlers for a :class:`~rocketmq_emu.broker.grpc.server.GrpcServerFactory` over the
    brokers ``brokers()`` returns (name → running BrokerController)."""

    def __init__(self, brokers: Callable[[], dict[str, Any]], grpc_port: Callable[[], int],
                 clock: Any) -> None:
        self.state = ProxyState(brokers, grpc_port, clock)
        self.client = ClientActivity(self.state)
        self.consumer = ConsumerActivity(self.state)
        self.producer = ProducerActivity(self.state, self.consumer.latest_handle)
        self.recall = RecallActivity(self.state)

    def start(self) -> None:
        """Start the periodic work (renewal of held messages' invisible time)."""
        self.consumer.handles.start()

    def stop(self) -> None:
        """Stop the periodic work."""
        self.consumer.handles.stop()

    def handlers(self) -> dict[str, Any]:
        """RPC name → handler."""
        out: dict[str, Any] = {name: self._unary(*spec) for name, spec in _UNARY.items()}
        out["ReceiveMessage"] = self._receive
        out["Telemetry"] = self.client.telemetry
        return out

    def _context(self, call: Any) -> ProxyContext:
        return ProxyContext.from_call(call, self.state.clock.seconds())

    def _unary(self, activity: str, method: str, response: str) -> Any:
        fn = getattr(getattr(self, activity), method)

        def failed(exc: BaseException) -> Any:
            out = messages.message_class(response)()
            out.status.CopyFrom(status_of(exc))
            return out

        def handle(request: Any, call: Any) -> Any:
            # A response, or a Deferred of one; errors become the response's status.
            try:
                ctx = self._context(call)
                ctx.require_client_id()
                result = fn(ctx, request)
            except Exception as exc:
                return failed(exc)
            # A type check, not hasattr(result, "__await__"): on a protobuf response that
            # raises and catches an AttributeError inside, on every call.
            if isinstance(result, CoroutineType):
                result = defer.ensureDeferred(result)
            if isinstance(result, defer.Deferred):
                return result.addErrback(lambda f: failed(f.value))
            return result

        handle.__name__ = method
        return handle

    def _receive(self, request: Any, call: Any) -> defer.Deferred:
        def run() -> Any:
            ctx = self._context(call)
            ctx.require_client_id()
            return defer.ensureDeferred(self.consumer.receive_message(ctx, request, call))

        def failed(failure: Any) -> None:
            out = messages.message_class("ReceiveMessageResponse")()
            out.status.CopyFrom(status_of(failure.value))
            call.send(out)

        return defer.maybeDeferred(run).addErrback(failed)
