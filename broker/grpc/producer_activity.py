"""Producers: SendMessage, EndTransaction and ForwardMessageToDeadLetterQueue (5.x proxy
``SendMessageActivity``, ``ProducerProcessor``, ``EndTransactionActivity``,
``ForwardMessageToDLQActivity``), each turned into the broker's remoting request."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.channel import TransactionData
from rocketmq_emu.broker.grpc.context import ProxyContext
from rocketmq_emu.broker.grpc.convert import (
    PROPERTY_SHARDING_KEY,
    TRANSACTION_PREPARED_TYPE,
    send_header,
    send_properties,
    send_sys_flag,
)
from rocketmq_emu.broker.grpc.proxy_state import ProxyState
from rocketmq_emu.broker.grpc.status import (
    Code,
    ProxyError,
    build_status,
    ok_status,
    remoting_code,
    set_ok,
)
from rocketmq_emu.broker.grpc.validate import validate_consumer_group, validate_topic
from rocketmq_emu.broker.message import decode_offset_msg_id, properties_to_string
from rocketmq_emu.broker.pop.extra_info import ReceiptHandle
from rocketmq_emu.broker.processors.batch_codec import BatchMessage, encode_batch
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.topic_message_type import check_message_type

log = logging.getLogger(__name__)

# MessageSysFlag transaction types, END_TRANSACTION's commitOrRollback.
TRANSACTION_NOT_TYPE = 0
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
#: send statuses the proxy reports with their own code (``convertToSendMessageResponse``).
_SEND_STATUS_CODES = {
    ResponseCode.FLUSH_DISK_TIMEOUT: ("MASTER_PERSISTENCE_TIMEOUT", "FLUSH_DISK_TIMEOUT"),
    ResponseCode.FLUSH_SLAVE_TIMEOUT: ("SLAVE_PERSISTENCE_TIMEOUT", "FLUSH_SLAVE_TIMEOUT"),
    ResponseCode.SLAVE_NOT_AVAILABLE: ("HA_NOT_AVAILABLE", "SLAVE_NOT_AVAILABLE"),
}


@functools.cache
def _response_class() -> Any:
    return messages.message_class("SendMessageResponse")


def decode_handle(handle: str) -> ReceiptHandle:
    """``ReceiptHandle.decode``; a malformed handle is INVALID_RECEIPT_HANDLE."""
    try:
        return ReceiptHandle.decode(handle)
    except (ValueError, IndexError) as exc:
        raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is not valid") from exc


class ProducerActivity:
    """The producer RPCs over a :class:`ProxyState`."""

    def __init__(self, state: ProxyState,
                 latest_handle: Callable[[ProxyContext, str, str, str], str] | None = None) -> None:
        self.state = state
        #: ``removeReceiptHandle``: the latest handle of a message under automatic renewal.
        self.latest_handle = latest_handle or (lambda ctx, group, msg_id, handle: handle)

    def send_message(self, ctx: ProxyContext, request: Any) -> Any:
        """``SendMessageActivity.sendMessage`` → SEND_MESSAGE (10) to the chosen queue's broker;
        the response, or a Deferred of it when the broker answers later (synchronous flush)."""
        if not request.messages:
            raise ProxyError(Code.MESSAGE_CORRUPTED, "no message to send")
        first = request.messages[0]
        topic = first.topic.name
        validate_topic(topic)
        now = self.state.now_ms()
        # The topic is the producer group (for transaction check-back), as in the proxy.
        props = [send_properties(first, topic, ctx.remote_address, now)]
        for message in request.messages[1:]:
            if message.topic != first.topic:
                raise ProxyError(Code.MESSAGE_CORRUPTED, "topic in message is not same")
            props.append(send_properties(message, topic, ctx.remote_address, now))
        sys_flag = send_sys_flag(first)
        configs = self.state.routes.topic_configs(topic)
        conflict = check_message_type(topic, configs[0][1], props[0])
        if conflict is not None:
            raise ProxyError(conflict.code, conflict.grpc_message)
        group = props[0].get(PROPERTY_SHARDING_KEY) if len(props) == 1 else None
        queue = self.state.routes.select_for_send(topic, group, configs)
        header = send_header(topic, queue.queue_id, sys_flag, props, now)
        if len(props) > 1:
            body = encode_batch([BatchMessage(0, m.body, properties_to_string(p))
                                 for m, p in zip(request.messages, props, strict=True)])
        else:
            body = first.body
        cmd = self.state.request(ctx, RequestCode.SEND_MESSAGE, header, body)
        channel = self.state.conn(ctx)
        return self.state.invoke_then(
            queue.broker_name, cmd, channel,
            lambda answer: self._send_response(answer, props, queue.broker_name, topic, sys_flag))

    def _send_response(self, answer: Any, props: list[dict[str, str]], broker_name: str,
                       topic: str, sys_flag: int) -> Any:
        response = _response_class()()
        code = answer.code if answer is not None else ResponseCode.SYSTEM_ERROR
        if code in _SEND_STATUS_CODES:
            grpc_code, status_name = _SEND_STATUS_CODES[code]
            status = build_status(getattr(Code, grpc_code),
                                  f"send message failed, sendStatus={status_name}")
            for _ in props:
                response.entries.add().status.CopyFrom(status)
            response.status.CopyFrom(status)
            return response
        if code != ResponseCode.SUCCESS:
            # LocalMessageService: any other code is a ProxyException INTERNAL_SERVER_ERROR.
            remark = answer.remark if answer is not None else "no response"
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, remark or str(code))
        ext = answer.ext_fields
        queue_offset = int(ext.get("queueOffset", "0"))
        transaction_id = ext.get("transactionId")
        # 5.3 SendResultEntry.recall_handle: the broker's answer for a timer message.
        recall_handle = ext.get("recallHandle") or ""
        prepared = sys_flag & TRANSACTION_PREPARED_TYPE
        offset_ids = ext.get("msgId", "").split(",") if prepared else ()
        for index, p in enumerate(props):
            entry = response.entries.add()
            set_ok(entry.status)
            entry.offset = queue_offset + index
            uniq_key = p["UNIQ_KEY"]
            entry.message_id = uniq_key
            # 5.x SendMessageProcessor answers transactionId = the message's UNIQ_KEY.
            entry.transaction_id = transaction_id or uniq_key
            entry.recall_handle = recall_handle
            if prepared and index < len(offset_ids):
                self._remember_transaction(broker_name, topic, queue_offset,
                                           offset_ids[index], entry.transaction_id)
        set_ok(response.status)
        return response

    def _remember_transaction(self, broker_name: str, group: str, queue_offset: int,
                              offset_msg_id: str, transaction_id: str) -> None:
        """``ProducerProcessor.fillTransactionData``."""
        try:
            _host, _port, commit_log_offset = decode_offset_msg_id(offset_msg_id)
        except ValueError:
            log.warning("fillTransactionData failed: bad msgId %r", offset_msg_id)
            return
        self.state.transactions.add(TransactionData(broker_name, group, queue_offset,
                                                    commit_log_offset, transaction_id))

    def end_transaction(self, ctx: ProxyContext, request: Any) -> Any:
        """``EndTransactionActivity`` → END_TRANSACTION (37, oneway) with the data remembered
        at the send or at the check-back."""
        validate_topic(request.topic.name)
        if not request.transaction_id.strip():
            raise ProxyError(Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        resolutions = messages.protocol().enum_descriptor("TransactionResolution").values_by_number
        resolution = resolutions[request.resolution].name if request.resolution in resolutions \
            else ""
        commit_or_rollback = {"COMMIT": TRANSACTION_COMMIT_TYPE,
                              "ROLLBACK": TRANSACTION_ROLLBACK_TYPE}.get(resolution,
                                                                        TRANSACTION_NOT_TYPE)
        sources = messages.protocol().enum_descriptor("TransactionSource").values_by_name
        from_check = request.source == sources["SOURCE_SERVER_CHECK"].number
        topic = request.topic.name
        data = self.state.transactions.poll(topic, request.transaction_id)
        if data is None:
            # ProxyExceptionCode.TRANSACTION_DATA_NOT_FOUND has no gRPC code of its own.
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, "cannot found transaction data")
        header = {
            "producerGroup": data.producer_group,
            "tranStateTableOffset": data.tran_state_table_offset,
            "commitLogOffset": data.commit_log_offset,
            "commitOrRollback": commit_or_rollback,
            "fromTransactionCheck": "true" if from_check else "false",
            "msgId": request.message_id,
            "transactionId": request.transaction_id,
            "topic": topic,
        }
        cmd = self.state.request(ctx, RequestCode.END_TRANSACTION, header, oneway=True)
        self.state.invoke(data.broker_name, cmd, self.state.conn(ctx))
        response = messages.message_class("EndTransactionResponse")()
        response.status.CopyFrom(ok_status())
        return response

    async def forward_to_dlq(self, ctx: ProxyContext, request: Any) -> Any:
        """``ForwardMessageToDLQActivity``: CONSUMER_SEND_MSG_BACK (36) with delayLevel -1 and
        maxReconsumeTimes 0 (straight to ``%DLQ%group``), then an ack of the message."""
        validate_topic(request.topic.name)
        validate_consumer_group(request.group.name)
        group, topic = request.group.name, request.topic.name
        handle_string = self.latest_handle(ctx, group, request.message_id,
                                           request.receipt_handle)
        answer = await send_to_dlq(self.state, ctx, handle_string, request.message_id, group,
                                   topic)
        code = answer.code if answer is not None else ResponseCode.SYSTEM_ERROR
        remark = answer.remark if answer is not None else None
        response = messages.message_class("ForwardMessageToDeadLetterQueueResponse")()
        # ResponseBuilder.buildStatus(int, String): the remark, else the code as text.
        response.status.CopyFrom(build_status(remoting_code(code), remark or str(code)))
        return response


async def send_to_dlq(state: ProxyState, ctx: ProxyContext, handle_string: str, msg_id: str,
                      group: str, topic: str) -> Any:
    """``ProducerProcessor.forwardMessageToDeadLetterQueue``: CONSUMER_SEND_MSG_BACK (36) with
    delayLevel -1 and maxReconsumeTimes 0 (straight to ``%DLQ%group``), then, if it succeeded,
    an ACK_MESSAGE of the message; the send-back's answer. Used by the RPC and by
    ReceiveMessage's TO_DLQ filter result."""
    handle = decode_handle(handle_string)
    if handle.commit_log_offset < 0:
        raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "commit log offset is empty")
    header = {
        "offset": handle.commit_log_offset,
        "group": group,
        "delayLevel": -1,
        "originMsgId": msg_id,
        "originTopic": handle.real_topic(topic, group),
        "maxReconsumeTimes": 0,
    }
    channel = state.conn(ctx)
    cmd = state.request(ctx, RequestCode.CONSUMER_SEND_MSG_BACK, header)
    answer = await state.invoke(handle.broker_name, cmd, channel)
    if answer is not None and answer.code == ResponseCode.SUCCESS:
        ack = state.request(ctx, RequestCode.ACK_MESSAGE,
                            ack_header(handle, handle_string, group, topic))
        await state.invoke(handle.broker_name, ack, channel)
    return answer


def ack_header(handle: ReceiptHandle, handle_string: str, group: str,
               topic: str) -> dict[str, Any]:
    """``ConsumerProcessor.ackMessage``'s ACK_MESSAGE header for a receipt handle (the broker
    gets the handle's whole string as ``extraInfo``)."""
    return {
        "consumerGroup": group,
        "topic": handle.real_topic(topic, group),
        "queueId": handle.queue_id,
        "extraInfo": handle_string,
        "offset": handle.offset,
    }
