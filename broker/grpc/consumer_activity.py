"""Consumers: ReceiveMessage, AckMessage and ChangeInvisibleDuration (5.x proxy
``ReceiveMessageActivity``, ``ReceiveMessageResponseStreamWriter``, ``ConsumerProcessor``,
``PopMessageResultFilterImpl``, ``AckMessageActivity``, ``ChangeInvisibleDurationActivity``)
over the broker's POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.context import ProxyContext
from rocketmq_emu.broker.grpc.convert import duration_ms, set_timestamp_ms, to_grpc_message
from rocketmq_emu.broker.grpc.pop_result import FOUND, POLLING_FULL, read_pop_response
from rocketmq_emu.broker.grpc.producer_activity import ack_header, decode_handle, send_to_dlq
from rocketmq_emu.broker.grpc.proxy_state import ProxyState
from rocketmq_emu.broker.grpc.receipt_handles import ReceiptHandleManager
from rocketmq_emu.broker.grpc.settings import merge_subscription
from rocketmq_emu.broker.grpc.status import (
    Code,
    ProxyError,
    build_status,
    ok_status,
    set_ok,
    status_of,
)
from rocketmq_emu.broker.grpc.validate import (
    DEFAULT_INVISIBLE_TIME_MS,
    MAX_LONG_POLLING_MS,
    MAX_MSG_NUMS_FOR_POP_REQUEST,
    MIN_INVISIBLE_TIME_FOR_RECV_MS,
    MIN_LONG_POLLING_MS,
    validate_consumer_group,
    validate_invisible_time,
    validate_topic,
)
from rocketmq_emu.broker.pop.extra_info import create_handle
from rocketmq_emu.broker.pop.names import PROPERTY_POP_CK
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode

log = logging.getLogger(__name__)

#: ``ReceiveMessageResponseStreamWriter.NACK_INVISIBLE_TIME``: a popped message that could not be
#: written to the client becomes visible again after this.
NACK_INVISIBLE_TIME_MS = 1000
#: ``ConsumeInitMode.MAX``: a new group starts at the queue's end.
CONSUME_INIT_MODE_MAX = 1
#: The 5.0.3 clients were the first to understand ILLEGAL_POLLING_TIME.
_ILLEGAL_POLLING_TIME_SINCE = "5.0.3"


def _status_response(status: Any) -> Any:
    response = messages.message_class("ReceiveMessageResponse")()
    response.status.CopyFrom(status)
    return response


class ConsumerActivity:
    """The consumer RPCs over a :class:`ProxyState`."""

    def __init__(self, state: ProxyState) -> None:
        self.state = state
        #: Handles of messages received with ``auto_renew`` (push consumers), kept invisible.
        self.handles = ReceiptHandleManager(state.clock, state.now_ms, self._renew,
                                            self._online, self._release_delay)

    # --- ReceiveMessage ----------------------------------------------------------------------
    async def receive_message(self, ctx: ProxyContext, request: Any, call: Any) -> None:
        """Stream: a Status, then the messages, then a DeliveryTimestamp (always, as the
        proxy's ``onComplete``); the gRPC status is OK even when the Status is not."""
        try:
            status, found = await self._receive(ctx, request, call)
        except Exception as exc:
            status, found = status_of(exc), []
        if call.cancelled:
            self._nack(ctx, request, found)
        else:
            call.send(_status_response(status))
            for message in found:
                item = messages.message_class("ReceiveMessageResponse")()
                item.message.CopyFrom(message)
                call.send(item)
        end = messages.message_class("ReceiveMessageResponse")()
        set_timestamp_ms(end.delivery_timestamp, self.state.now_ms())
        call.send(end)

    async def _receive(self, ctx: ProxyContext, request: Any, call: Any) -> tuple[Any, list[Any]]:
        settings = self.state.settings.get(ctx.client_id)
        if settings is None:
            # The real proxy fails with INTERNAL_ERROR here (a receive before the Settings);
            # a default consumer's settings serve instead.
            settings = messages.message_class("Settings")()
            merge_subscription(settings, None)
        fifo = settings.subscription.fifo
        max_attempts = settings.backoff_policy.max_attempts
        remaining = ctx.remaining_ms
        if request.HasField("long_polling_timeout"):
            polling = duration_ms(request.long_polling_timeout)
        else:
            polling = (remaining if remaining is not None else MAX_LONG_POLLING_MS) - \
                duration_ms(settings.request_timeout) // 2
        polling = min(max(polling, MIN_LONG_POLLING_MS), MAX_LONG_POLLING_MS)
        if remaining is not None and polling > remaining:
            if remaining >= MIN_LONG_POLLING_MS:
                polling = remaining
            else:
                version = ctx.client_version
                code = Code.BAD_REQUEST if not version or version < _ILLEGAL_POLLING_TIME_SINCE \
                    else Code.ILLEGAL_POLLING_TIME
                return build_status(code, "The deadline time remaining is not enough for "
                                          "polling, please check network condition"), []
        topic, group = request.message_queue.topic.name, request.group.name
        validate_topic(topic)
        validate_consumer_group(group)
        if request.auto_renew:
            # ProxyConfig.enableProxyAutoRenew: the proxy picks the invisible time.
            invisible = DEFAULT_INVISIBLE_TIME_MS
        else:
            invisible = duration_ms(request.invisible_duration)
            validate_invisible_time(invisible, MIN_INVISIBLE_TIME_FOR_RECV_MS)
        try:
            sub = self.state.subscription(topic, request.filter_expression)
        except ProxyError as exc:
            return build_status(Code.ILLEGAL_FILTER_EXPRESSION, exc.message), []
        broker_name = self.state.routes.select_for_receive(topic,
                                                           request.message_queue.broker.name)
        header = {
            "consumerGroup": group,
            "topic": topic,
            "queueId": -1,
            "maxMsgNums": min(request.batch_size, MAX_MSG_NUMS_FOR_POP_REQUEST),
            "invisibleTime": invisible,
            "pollTime": polling,
            "bornTime": self.state.now_ms(),
            "initMode": CONSUME_INIT_MODE_MAX,
            "expType": sub.expression_type,
            "exp": sub.sub_string,
            "order": "true" if fifo else "false",
        }
        if request.HasField("attempt_id"):
            header["attemptId"] = request.attempt_id
        channel = self.state.conn(ctx)
        cmd = self.state.request(ctx, RequestCode.POP_MESSAGE, header)
        answer = await self.state.invoke(broker_name, cmd, channel)
        result = read_pop_response(answer, topic, broker_name, fifo)
        if result.status == POLLING_FULL:
            return build_status(Code.TOO_MANY_REQUESTS, "polling full"), []
        if result.status != FOUND:
            return build_status(Code.MESSAGE_NOT_FOUND, "no new message"), []
        found = []
        for record in result.messages:
            handle = create_handle(record.properties[PROPERTY_POP_CK], record.physical_offset)
            props = dict(record.properties)
            props[PROPERTY_POP_CK] = handle
            record.set_properties(props)
            tags = record.properties.get("TAGS")
            if sub.tags_set and tags not in sub.tags_set:
                # PopMessageResultFilterImpl NO_MATCH: acknowledged and not delivered.
                await self._ack(ctx, broker_name, handle, group, topic)
            elif record.reconsume_times >= max_attempts:
                # TO_DLQ: the proxy forwards it to %DLQ%group and acknowledges it.
                await self._to_dlq(ctx, handle, record, group, topic)
            else:
                message = to_grpc_message(record, topic)
                if request.auto_renew:
                    self.handles.add(ctx.client_id, group, topic,
                                     message.system_properties.message_id, handle,
                                     record.reconsume_times)
                found.append(message)
        if not found:
            return build_status(Code.MESSAGE_NOT_FOUND, "no match message"), []
        return ok_status(), found

    async def _ack(self, ctx: ProxyContext, broker_name: str, handle: str, group: str,
                   topic: str) -> Any:
        parsed = decode_handle(handle)
        cmd = self.state.request(ctx, RequestCode.ACK_MESSAGE,
                                 ack_header(parsed, handle, group, topic))
        return await self.state.invoke(parsed.broker_name, cmd,
                                       self.state.conn(ctx))

    async def _to_dlq(self, ctx: ProxyContext, handle: str, record: Any, group: str,
                      topic: str) -> None:
        answer = await send_to_dlq(self.state, ctx, handle, record.properties.get("UNIQ_KEY", ""),
                                   group, topic)
        if answer is None or answer.code != ResponseCode.SUCCESS:
            log.warning("forward to DLQ failed: %s", getattr(answer, "remark", None))

    def _nack(self, ctx: ProxyContext, request: Any, found: list[Any]) -> None:
        """``processThrowableWhenWriteMessage``: messages popped for a call that is gone become
        visible again after a second."""
        group, topic = request.group.name, request.message_queue.topic.name
        for message in found:
            sp = message.system_properties
            handle = self.latest_handle(ctx, group, sp.message_id, sp.receipt_handle)
            defer.ensureDeferred(self.change(ctx, handle, group, topic, NACK_INVISIBLE_TIME_MS)) \
                .addErrback(lambda f: log.warning("nack failed: %s", f.getErrorMessage()))

    # --- AckMessage ----------------------------------------------------------------------------
    def ack_message(self, ctx: ProxyContext, request: Any) -> Any:
        """``AckMessageActivity.ackMessageOneByOne``: the response, or a Deferred of it if a
        broker answers an ACK_MESSAGE later."""
        validate_topic(request.topic.name)
        validate_consumer_group(request.group.name)
        group, topic = request.group.name, request.topic.name
        response = messages.message_class("AckMessageResponse")()
        pending = []
        for entry in request.entries:
            result = response.entries.add()
            result.message_id = entry.message_id
            result.receipt_handle = entry.receipt_handle
            try:
                handle_string = self.latest_handle(ctx, group, entry.message_id,
                                                   entry.receipt_handle)
                handle = self._valid_handle(handle_string)
                cmd = self.state.request(ctx, RequestCode.ACK_MESSAGE,
                                         ack_header(handle, handle_string, group, topic))
                answer = self.state.invoke_then(
                    handle.broker_name, cmd, self.state.conn(ctx),
                    lambda answer, result=result: _ack_result(result, answer))
            except Exception as exc:
                result.status.CopyFrom(status_of(exc))
                continue
            if isinstance(answer, defer.Deferred):
                pending.append(answer.addErrback(
                    lambda f, result=result: result.status.CopyFrom(status_of(f.value))))
        if pending:
            return defer.DeferredList(pending).addCallback(lambda _: _with_overall(response))
        return _with_overall(response)

    def _valid_handle(self, handle: str) -> Any:
        """``validateReceiptHandle``: parseable and not expired."""
        parsed = decode_handle(handle)
        if parsed.is_expired(self.state.now_ms()):
            raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")
        return parsed

    # --- ChangeInvisibleDuration ---------------------------------------------------------------
    async def change_invisible_duration(self, ctx: ProxyContext, request: Any) -> Any:
        """``ChangeInvisibleDurationActivity``: a new receipt handle for the new pop time."""
        validate_topic(request.topic.name)
        validate_consumer_group(request.group.name)
        invisible = duration_ms(request.invisible_duration)
        validate_invisible_time(invisible)
        group, topic = request.group.name, request.topic.name
        handle_string = self.latest_handle(ctx, group, request.message_id, request.receipt_handle)
        self._valid_handle(handle_string)
        renewed = await self.change(ctx, handle_string, group, topic, invisible)
        response = messages.message_class("ChangeInvisibleDurationResponse")()
        if renewed is not None:
            response.status.CopyFrom(ok_status())
            response.receipt_handle = renewed
        else:
            response.status.CopyFrom(build_status(
                Code.INTERNAL_SERVER_ERROR, "changeInvisibleDuration failed: status is abnormal"))
        return response

    async def change(self, ctx: ProxyContext, handle_string: str, group: str, topic: str,
                     invisible: int) -> str | None:
        """CHANGE_MESSAGE_INVISIBLETIME for a receipt handle: the new handle (the client's
        receipt handle from now on), or None if the broker refused."""
        handle = decode_handle(handle_string)
        header = change_header(handle, handle_string, group, topic, invisible)
        cmd = self.state.request(ctx, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header)
        answer = await self.state.invoke(handle.broker_name, cmd,
                                         self.state.conn(ctx))
        if answer is None or answer.code != ResponseCode.SUCCESS:
            return None
        ext = answer.ext_fields
        # LocalMessageService.changeInvisibleTime: the new handle is the old one with the new
        # pop time, invisible time and revive queue. Java's builder leaves the commit-log offset
        # field 0 there (a later forward to the DLQ then names offset 0); the emulator keeps the
        # message's real offset.
        renewed = dataclasses.replace(
            handle, retrieve_time=int(ext.get("popTime", handle.retrieve_time)),
            invisible_time=int(ext.get("invisibleTime", invisible)),
            revive_queue_id=int(ext.get("reviveQid", handle.revive_queue_id)))
        return create_handle(renewed.encode(), handle.commit_log_offset)

    def latest_handle(self, ctx: ProxyContext, group: str, msg_id: str, handle: str) -> str:
        """``removeReceiptHandle``: a renewed message's latest handle (renewal ends here)."""
        tracked = self.handles.remove(ctx.client_id, group, msg_id, handle)
        return tracked.current if tracked is not None else handle

    # --- renewal (ReceiptHandleManager's callbacks) --------------------------------------------
    async def _renew(self, group: str, topic: str, handle: str, invisible: int) -> str | None:
        ctx = ProxyContext("", "JAVA", "", "", "127.0.0.1:0", None, "RenewMessage")
        return await self.change(ctx, handle, group, topic, invisible)

    def _online(self, client_id: str, group: str) -> bool:
        """``clientIsOffline``'s negation: the client is still a consumer of the group."""
        for broker in self.state.brokers().values():
            info = broker.ctx.consumer_manager.get_consumer_group_info(group)
            if info is not None and info.find_channel(client_id) is not None:
                return True
        return False

    def _release_delay(self, group: str, reconsume_times: int) -> int:
        """The group's retry back-off for a message whose renewal ran out."""
        config = self.state.group_config(group)
        if config is not None and hasattr(config, "group_retry_policy"):
            return int(config.group_retry_policy.retry_policy().next_delay_ms(reconsume_times))
        return 10_000


def change_header(handle: Any, handle_string: str, group: str, topic: str,
                  invisible_ms: int) -> dict[str, Any]:
    """``ConsumerProcessor.changeInvisibleTime``'s CHANGE_MESSAGE_INVISIBLETIME header."""
    return {
        "consumerGroup": group,
        "topic": handle.real_topic(topic, group),
        "queueId": handle.queue_id,
        "extraInfo": handle_string,
        "offset": handle.offset,
        "invisibleTime": invisible_ms,
    }


def _ack_result(result: Any, answer: Any) -> None:
    """``convertToAckMessageResultEntry``: OK for a broker SUCCESS, else "status is abnormal"."""
    if answer is not None and answer.code == ResponseCode.SUCCESS:
        set_ok(result.status)
    else:
        result.status.CopyFrom(build_status(Code.INTERNAL_SERVER_ERROR,
                                            "ack failed: status is abnormal"))


def _with_overall(response: Any) -> Any:
    """The response with its overall status (``setAckResponseStatus``)."""
    response.status.CopyFrom(_overall({entry.status.code for entry in response.entries}))
    return response


def _overall(codes: set[int]) -> Any:
    """``setAckResponseStatus``: one code, or MULTIPLE_RESULTS."""
    if len(codes) > 1:
        return build_status(Code.MULTIPLE_RESULTS, "MULTIPLE_RESULTS")
    if len(codes) == 1:
        code = next(iter(codes))
        return build_status(code, Code.name(code))
    return build_status(Code.INTERNAL_SERVER_ERROR, "ack result is empty")
