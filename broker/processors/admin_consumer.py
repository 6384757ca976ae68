"""Admin requests the broker relays to consumers (``AdminBrokerProcessor`` / ``Broker2Client``,
4.9.8): GET_CONSUMER_RUNNING_INFO (307), CONSUME_MESSAGE_DIRECTLY (309) and
INVOKE_BROKER_TO_RESET_OFFSET (222 → RESET_CONSUMER_CLIENT_OFFSET 220 to each member)."""

from __future__ import annotations

import logging
from typing import Any

from broker.message import decode_offset_msg_id
from broker.processors.admin import fastjson_mq_map
from broker.processors.context import BrokerContext
from broker.remoting.codes import RequestCode, ResponseCode
from broker.remoting.command import RemotingCommand
from broker.remoting.headers import ResetOffsetRequestHeader

log = logging.getLogger(__name__)

#: ``Broker2Client.callClient`` timeout (ms in Java: 10000 for running info / direct consume).
CALL_CLIENT_TIMEOUT_S = 10.0


class AdminConsumerProcessor:
    """Handlers for 307, 309 and 222."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
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

    def reset_offset(self, cmd: RemotingCommand, conn: Any) -> Any:
        """222: compute each queue's offset for ``timestamp`` (-1: the end) and tell every
        member of the group with RESET_CONSUMER_CLIENT_OFFSET (``Broker2Client.resetOffset``);
        the members then commit the new offsets themselves."""
        ctx = self.ctx
        h = ResetOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        tc = ctx.topic_config.select_topic_config(h.topic)
        if tc is None:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR,
                f"[reset-offset] reset offset failed, no topic in this broker. [topic={h.topic}]")
        table = []
        for qid in range(tc.write_queue_nums):
            consumer_offset = ctx.consumer_offsets.query_offset(h.group, h.topic, qid)
            if consumer_offset == -1:
                return cmd.response(ResponseCode.SYSTEM_ERROR,
                                    f"THe consumer group <{h.group}> not exist")
            if h.timestamp == -1:
                target = ctx.store.get_max_offset_in_queue(h.topic, qid)
            else:
                target = ctx.store.get_offset_in_queue_by_time(h.topic, qid, h.timestamp)
            target = max(target, 0)
            chosen = target if (h.is_force or target < consumer_offset) else consumer_offset
            table.append(({"brokerName": ctx.broker_name, "queueId": qid, "topic": h.topic},
                          chosen))
        body = b'{"offsetTable":' + fastjson_mq_map(table) + b"}"
        info = ctx.consumer_manager.get_consumer_group_info(h.group)
        if info is None or not info.channel_info_table:
            return cmd.response(
                ResponseCode.SYSTEM_ERROR,
                f"Consumer not online, so can not reset offset, Group: {h.group} "
                f"Topic: {h.topic} Timestamp: {h.timestamp}")
        for channel in info.all_channels():
            request = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
                {"topic": h.topic, "group": h.group, "timestamp": str(h.timestamp),
                 "isForce": "false"}, body, oneway=True)
            try:
                channel.send_oneway(request)
            except Exception:
                log.exception("[reset-offset] reset offset failed. group=%s", h.group)
        return cmd.response(ResponseCode.SUCCESS, body=body)

