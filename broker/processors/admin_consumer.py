"""Admin requests the broker relays to one consumer (``AdminBrokerProcessor.callConsumer`` /
``Broker2Client.callClient``, 4.9.8): GET_CONSUMER_RUNNING_INFO (307) and
CONSUME_MESSAGE_DIRECTLY (309). Offset reset (222) lives in :mod:`rocketmq_emu.broker.processors.reset_offset`."""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.message import decode_offset_msg_id
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

log = logging.getLogger(__name__)

#: ``Broker2Client.callClient`` timeout (ms in Java: 10000 for running info / direct consume).
CALL_CLIENT_TIMEOUT_S = 10.0


class AdminConsumerProcessor:
    """Handlers for 307 and 309."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
        }

    def _call_consumer(self, code: int, cmd: RemotingCommand, group: str,
                       client_id: str) -> Any:
        """``callConsumer``: forward the request to one client and relay its answer."""
        info = self.ctx.consumer_manager.find_channel(group, client_id)
        if info is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"The Consumer <{group}> <{client_id}> not online")
        forward = RemotingCommand.request(code, dict(cmd.ext_fields), cmd.body)

        def relayed(resp: RemotingCommand) -> RemotingCommand:
            return cmd.response(resp.code, resp.remark, resp.ext_fields, resp.body)

        def failed(failure: Any) -> RemotingCommand:
            name = type(failure.value).__name__
            if "Timeout" in name:
                return cmd.response(
                    ResponseCode.CONSUME_MSG_TIMEOUT,
                    f"consumer <{group}> <{client_id}> Timeout: {failure.getErrorMessage()}")
            return cmd.response(
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {failure.getErrorMessage()}")

        d = info.channel.send_request(forward, CALL_CLIENT_TIMEOUT_S)
        return d.addCallbacks(relayed, failed)

    def get_consumer_running_info(self, cmd: RemotingCommand, conn: Any) -> Any:
        """307: ask one consumer for its ConsumerRunningInfo."""
        ext = cmd.ext_fields
        return self._call_consumer(RequestCode.GET_CONSUMER_RUNNING_INFO, cmd,
                                   ext.get("consumerGroup", ""), ext.get("clientId", ""))

    def consume_message_directly(self, cmd: RemotingCommand, conn: Any) -> Any:
        """309: hand one stored message (by offset msgId) to a consumer to consume now."""
        ext = dict(cmd.ext_fields)
        ext["brokerName"] = self.ctx.broker_name
        body = cmd.body
        try:
            _, _, offset = decode_offset_msg_id(ext.get("msgId", ""))
            body = self.ctx.store.read_raw(offset)
        except Exception as exc:
            log.warning("consumeMessageDirectly: cannot load %s: %s", ext.get("msgId"), exc)
        forwarded = RemotingCommand(code=cmd.code, language=cmd.language, version=cmd.version,
                                    opaque=cmd.opaque, flag=cmd.flag, remark=cmd.remark,
                                    ext_fields=ext, body=body,
                                    serialize_type=cmd.serialize_type)
        return self._call_consumer(RequestCode.CONSUME_MESSAGE_DIRECTLY, forwarded,
                                   ext.get("consumerGroup", ""), ext.get("clientId", ""))
