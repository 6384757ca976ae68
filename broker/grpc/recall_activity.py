"""RecallMessage (RocketMQ 5.3 proxy ``grpc/v2/producer/RecallMessageActivity``,
``ProducerProcessor.recallMessage``, ``LocalMessageService.recallMessage``), turned into the
broker's RECALL_MESSAGE (370).

In the proxy's order: ``validateTopic``; the topic message type check
(``enableTopicMessageTypeCheck``, on by default), which asks for a DELAY (or MIXED) topic and
answers MESSAGE_PROPERTY_CONFLICT_WITH_TYPE otherwise (an unknown topic is UNSPECIFIED, so it
conflicts too); the handle decoded (an undecodable one is INTERNAL_SERVER_ERROR
``recall handle is invalid``); then RECALL_MESSAGE with topic, handle and broker name to the
handle's broker (the one broker of a Local-mode proxy: here, a broker of another name is
asked by the first running broker, which refuses it as Java's would). The broker's SUCCESS is
``Status{OK}`` with ``message_id`` = its ``msgId``; any other answer is INTERNAL_SERVER_ERROR
with the broker's remark (``LocalMessageService``), e.g. ``recall failed, timestamp invalid``
once the message is due or delivered.
"""

from __future__ import annotations

from typing import Any

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.context import ProxyContext
from rocketmq_emu.broker.grpc.proxy_state import ProxyState
from rocketmq_emu.broker.grpc.status import Code, ProxyError, set_ok
from rocketmq_emu.broker.grpc.validate import validate_topic
from rocketmq_emu.broker.recall_handle import RecallHandleError, decode_handle
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.topic_message_type import TopicMessageType, topic_message_type, validate


class RecallActivity:
    """The RecallMessage RPC over a :class:`ProxyState`."""

    def __init__(self, state: ProxyState) -> None:
        self.state = state

    def recall_message(self, ctx: ProxyContext, request: Any) -> Any:
        """``RecallMessageActivity.recallMessage``: the response, or a Deferred of it."""
        topic = request.topic.name
        validate_topic(topic)
        conflict = validate(topic_message_type(self._topic_config(topic)),
                            TopicMessageType.DELAY)
        if conflict is not None:
            raise ProxyError(conflict.code, conflict.grpc_message)
        try:
            handle = decode_handle(request.recall_handle)
        except RecallHandleError as exc:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, str(exc)) from exc
        broker_name = handle.broker_name
        if broker_name not in self.state.brokers():
            broker_name = sorted(self.state.brokers())[0] if self.state.brokers() else ""
        header = {"topic": topic, "recallHandle": request.recall_handle,
                  "bname": handle.broker_name}
        cmd = self.state.request(ctx, RequestCode.RECALL_MESSAGE, header)
        channel = self.state.conn(ctx)
        return self.state.invoke_then(broker_name, cmd, channel, _recall_response)

    def _topic_config(self, topic: str) -> Any:
        """``MetadataService.getTopicMessageType``'s source: the first broker's config of the
        topic (None when no broker has it)."""
        for _name, broker in sorted(self.state.brokers().items()):
            config = broker.ctx.topic_config.select_topic_config(topic)
            if config is not None:
                return config
        return None


def _recall_response(answer: Any) -> Any:
    """``LocalMessageService.recallMessage`` then the activity's response."""
    code = answer.code if answer is not None else ResponseCode.SYSTEM_ERROR
    if code != ResponseCode.SUCCESS:
        remark = answer.remark if answer is not None else "no response"
        raise ProxyError(Code.INTERNAL_SERVER_ERROR, remark or str(code))
    response = messages.message_class("RecallMessageResponse")()
    set_ok(response.status)
    response.message_id = answer.ext_fields.get("msgId", "")
    return response
