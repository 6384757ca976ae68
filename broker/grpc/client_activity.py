"""Clients and routes: QueryRoute, QueryAssignment, Heartbeat, Telemetry and
NotifyClientTermination (5.x proxy ``RouteActivity`` and ``ClientActivity``)."""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.context import ProxyContext
from rocketmq_emu.broker.grpc.proxy_state import ProxyState
from rocketmq_emu.broker.grpc.settings import is_fifo_group
from rocketmq_emu.broker.grpc.status import Code, ProxyError, build_status, ok_status
from rocketmq_emu.broker.grpc.validate import validate_consumer_group, validate_topic
from rocketmq_emu.broker.grpc.wire import StatusCode

log = logging.getLogger(__name__)


def _client_type(name: str) -> int:
    return messages.protocol().enum_descriptor("ClientType").values_by_name[name].number


class ClientActivity:
    """The route and client RPCs over a :class:`ProxyState`."""

    def __init__(self, state: ProxyState) -> None:
        self.state = state

    # --- routes ------------------------------------------------------------------------------
    def query_route(self, ctx: ProxyContext, request: Any) -> Any:
        """``RouteActivity.queryRoute``."""
        validate_topic(request.topic.name)
        response = messages.message_class("QueryRouteResponse")()
        response.message_queues.extend(self.state.routes.query_route(request.topic,
                                                                     request.endpoints))
        response.status.CopyFrom(ok_status())
        return response

    def query_assignment(self, ctx: ProxyContext, request: Any) -> Any:
        """``RouteActivity.queryAssignment``: FIFO groups get every queue, others one
        assignment per broker."""
        validate_topic(request.topic.name)
        validate_consumer_group(request.group.name)
        fifo = is_fifo_group(self.state.group_config(request.group.name))
        assignments = self.state.routes.query_assignment(request.topic, request.endpoints, fifo)
        response = messages.message_class("QueryAssignmentResponse")()
        if not assignments:
            response.status.CopyFrom(build_status(Code.FORBIDDEN, "no readable queue"))
        else:
            response.assignments.extend(assignments)
            response.status.CopyFrom(ok_status())
        return response

    # --- clients -----------------------------------------------------------------------------
    def heartbeat(self, ctx: ProxyContext, request: Any) -> Any:
        """``ClientActivity.heartbeat``: refresh the producer or consumer registration."""
        response = messages.message_class("HeartbeatResponse")()
        settings = self.state.settings.get(ctx.client_id)
        if settings is None:
            response.status.CopyFrom(build_status(
                Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client"))
            return response
        kind = settings.client_type
        if kind == _client_type("PRODUCER"):
            for topic in settings.publishing.topics:
                self.state.register_producer(ctx, topic.name)
        elif kind in (_client_type("PUSH_CONSUMER"), _client_type("SIMPLE_CONSUMER")):
            validate_consumer_group(request.group.name)
            self.state.register_consumer(ctx, request.group.name, kind,
                                         settings.subscription.subscriptions, False)
        else:
            response.status.CopyFrom(build_status(Code.UNRECOGNIZED_CLIENT_TYPE,
                                                  _client_type_name(kind)))
            return response
        response.status.CopyFrom(ok_status())
        return response

    def notify_client_termination(self, ctx: ProxyContext, request: Any) -> Any:
        """``ClientActivity.notifyClientTermination``: forget the client's settings and
        unregister it from every broker."""
        response = messages.message_class("NotifyClientTerminationResponse")()
        settings = self.state.settings.remove(ctx.client_id)
        if settings is None:
            response.status.CopyFrom(build_status(
                Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client"))
            return response
        kind = settings.client_type
        if kind == _client_type("PRODUCER"):
            channels = self.state.channels.remove(ctx.client_id)
            for channel in channels:
                broker = self.state.brokers().get(channel.broker_name)
                if broker is None:
                    continue
                for topic in settings.publishing.topics:
                    broker.ctx.producer_manager.unregister_producer(topic.name, channel)
        elif kind in (_client_type("PUSH_CONSUMER"), _client_type("SIMPLE_CONSUMER")):
            validate_consumer_group(request.group.name)
            for channel in self.state.channels.remove(ctx.client_id):
                broker = self.state.brokers().get(channel.broker_name)
                if broker is not None:
                    broker.ctx.consumer_manager.unregister_consumer(request.group.name, channel)
        else:
            response.status.CopyFrom(build_status(Code.UNRECOGNIZED_CLIENT_TYPE,
                                                  _client_type_name(kind)))
            return response
        response.status.CopyFrom(ok_status())
        return response

    def telemetry(self, call: Any) -> TelemetryObserver:
        """``ClientActivity.telemetry``: the observer of one Telemetry stream."""
        return TelemetryObserver(self.state, call)


def _client_type_name(number: int) -> str:
    values = messages.protocol().enum_descriptor("ClientType").values_by_number
    return values[number].name if number in values else str(number)


class TelemetryObserver:
    """One Telemetry stream: Settings in, merged Settings out; the stream stays open so the
    broker can reach the client (transaction check-back)."""

    def __init__(self, state: ProxyState, call: Any) -> None:
        self.state = state
        self.call = call
        self.client_id = ""

    def _ctx(self) -> ProxyContext:
        return ProxyContext.from_call(self.call, self.state.clock.seconds())

    def on_message(self, command: Any) -> None:
        """A TelemetryCommand from the client."""
        try:
            if command.WhichOneof("command") == "settings":
                self._settings(command)
            # thread_stack_trace / verify_message_result answer requests this server never
            # sends (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY relays): nothing waits.
        except Exception as exc:
            self._failed(exc)

    def _settings(self, command: Any) -> None:
        ctx = self._ctx()
        ctx.require_client_id()
        self.client_id = ctx.client_id
        settings = command.settings
        case = settings.WhichOneof("pub_sub")
        if case == "publishing":
            for topic in settings.publishing.topics:
                validate_topic(topic.name)
                self.state.register_producer(ctx, topic.name, telemetry=self.call)
        elif case == "subscription":
            group = settings.subscription.group.name
            validate_consumer_group(group)
            self.state.register_consumer(ctx, group, settings.client_type,
                                         settings.subscription.subscriptions, True,
                                         telemetry=self.call)
        else:
            self.call.finish(StatusCode.INVALID_ARGUMENT,
                             "there is no publishing or subscription data in settings")
            return
        self.state.settings.update(ctx.client_id, settings)
        reply = messages.message_class("TelemetryCommand")()
        reply.status.CopyFrom(ok_status())
        reply.settings.CopyFrom(self.state.settings.get(ctx.client_id))
        self.call.send(reply)

    def _failed(self, exc: Exception) -> None:
        """``processTelemetryException``: the stream ends INVALID_ARGUMENT for a client error
        (a Code from BAD_REQUEST up to INTERNAL_ERROR), else INTERNAL (logged)."""
        if isinstance(exc, ProxyError) and Code.BAD_REQUEST <= exc.code < Code.INTERNAL_ERROR:
            code = StatusCode.INVALID_ARGUMENT
        else:
            code = StatusCode.INTERNAL
            log.warning("process client telemetryCommand failed", exc_info=exc)
        self.call.finish(code, f"process client telemetryCommand failed. {exc}")

    def on_half_close(self) -> None:
        """The client closed its side: complete the stream."""
        self._ended()
        if not self.call.cancelled:
            self.call.finish(StatusCode.OK)

    def on_cancel(self) -> None:
        """The stream broke (client gone, deadline)."""
        self._ended()

    def _ended(self) -> None:
        if self.client_id:
            for channel in self.state.channels.channels_of(self.client_id):
                channel.telemetry_ended(self.call)
