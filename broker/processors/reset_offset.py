"""INVOKE_BROKER_TO_RESET_OFFSET (222) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223):
``AdminBrokerProcessor.resetOffset`` / ``getConsumerStatus`` and ``Broker2Client`` of Apache
RocketMQ 4.9.8.

Reset by time: for each write queue of the topic the offset is the one of the timestamp
(``getOffsetInQueueByTime``; ``-1`` means the max offset), kept only if it is before the group's
committed offset unless ``isForce``; RESET_CONSUMER_CLIENT_OFFSET (220, oneway) carries the table
to every client of the group; the response body is the same ``ResetOffsetBody``. As in RocketMQ
5.x (``assignResetOffset``), the broker's own offset table is updated too, so a group whose
clients are offline (CONSUMER_NOT_ONLINE, as 4.9.8 answers) still restarts from there.
Broadcasting groups keep offsets client-side: they get the 220 push, their (absent) broker
offsets are neither required nor written.

The bodies (``ResetOffsetBody``, ``ResetOffsetBodyForC`` for C++ admin requests, fastjson's
``Map<MessageQueue, V>``) are :mod:`rocketmq_emu.broker.remoting.bodies`, shared with the client.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.bodies import (
    MQKey,
    decode_mq_map,
    encode_mq_map,
    encode_offset_table,
    encode_offset_table_for_c,
)
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import ResetOffsetRequestHeader

log = logging.getLogger(__name__)

#: ``MQVersion.Version.V3_0_7_SNAPSHOT.ordinal()``: clients older than this cannot reset.
V3_0_7_SNAPSHOT = 28
CLIENT_CALL_TIMEOUT_S = 5.0


# --- the processor ------------------------------------------------------------------------------
class ResetOffsetProcessor:
    """Handlers for 222 and 223."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.get_consumer_status,
        }

    def compute_offsets(self, topic: str, group: str, timestamp: int, is_force: bool,
                        broadcasting: bool) -> tuple[dict[MQKey, int] | None, str | None]:
        """The reset table, or (None, remark) when the topic or group is unknown."""
        ctx = self.ctx
        tc = ctx.topic_config.select_topic_config(topic)
        if tc is None:
            log.error("[reset-offset] reset offset failed, no topic in this broker. topic=%s",
                      topic)
            return None, f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}"
        table: dict[MQKey, int] = {}
        for qid in range(tc.write_queue_nums):
            consumer_offset = ctx.consumer_offsets.query_offset(group, topic, qid)
            if consumer_offset == -1 and not broadcasting:
                return None, f"THe consumer group <{group}> not exist"
            if timestamp == -1:
                ts_offset = ctx.store.get_max_offset_in_queue(topic, qid)
            else:
                ts_offset = ctx.store.get_offset_in_queue_by_time(topic, qid, timestamp)
            if ts_offset < 0:
                log.warning("reset offset is invalid. topic=%s, queueId=%d, timeStampOffset=%d",
                            topic, qid, ts_offset)
                ts_offset = 0
            mq = (topic, ctx.broker_name, qid)
            if broadcasting or is_force or ts_offset < consumer_offset:
                table[mq] = ts_offset
            else:
                table[mq] = consumer_offset
        return table, None

    def reset_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """222: compute, store (clustering groups), push 220 to the group's clients."""
        ctx = self.ctx
        h = ResetOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        topic, group, timestamp = h.topic, h.group, int(h.timestamp)
        is_force = bool(h.is_force)
        log.info("[reset-offset] reset offset started by %s. topic=%s, group=%s, timestamp=%d, "
                 "isForce=%s", getattr(conn, "peer_addr", "?"), topic, group, timestamp, is_force)
        cgi = ctx.consumer_manager.get_consumer_group_info(group)
        broadcasting = cgi is not None and cgi.message_model == "BROADCASTING"
        table, remark = self.compute_offsets(topic, group, timestamp, is_force, broadcasting)
        if table is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, remark)
        if not broadcasting:
            for (t, _b, qid), offset in table.items():
                ctx.consumer_offsets.commit_offset(getattr(conn, "peer_addr", "admin"), group, t,
                                                   qid, offset)
        is_c = str(cmd.language).upper().endswith("CPP")
        body = encode_offset_table_for_c(table) if is_c else encode_offset_table(table)
        request = RemotingCommand.request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            {"topic": topic, "group": group, "timestamp": str(timestamp),
             "isForce": "true" if is_force else "false"},
            body, oneway=True)
        if cgi is None or not cgi.channel_info_table:
            info = (f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                    f"Timestamp: {timestamp}")
            log.error(info)
            return cmd.response(ResponseCode.CONSUMER_NOT_ONLINE, info)
        for channel, info in list(cgi.channel_info_table.items()):
            if 0 < info.version < V3_0_7_SNAPSHOT:
                return cmd.response(ResponseCode.SYSTEM_ERROR,
                                    f"the client does not support this feature. version="
                                    f"{info.version}")
            try:
                channel.send_oneway(request)
                log.info("[reset-offset] reset offset success. topic=%s, group=%s, clientId=%s",
                         topic, group, info.client_id)
            except Exception as exc:
                log.error("[reset-offset] reset offset exception. topic=%s, group=%s, error=%s",
                          topic, group, exc)
        return cmd.response(ResponseCode.SUCCESS, body=encode_offset_table(table))

    def get_consumer_status(self, cmd: RemotingCommand, conn: Any) -> Any:
        """223: ask each client (221, sync) for its offsets; body ``{"consumerTable":...}``."""
        ext = cmd.ext_fields
        topic, group = ext.get("topic"), ext.get("group")
        if not topic or not group:
            missing = "topic" if not topic else "group"
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"the custom field <{missing}> is null")
        origin = ext.get("clientAddr") or ""
        cgi = self.ctx.consumer_manager.get_consumer_group_info(group)
        if cgi is None or not cgi.channel_info_table:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"No Any Consumer online in the consumer group: [{group}]")
        return defer.ensureDeferred(self._collect(cmd, topic, group, origin, cgi))

    async def _collect(self, cmd: RemotingCommand, topic: str, group: str, origin: str,
                       cgi: Any) -> RemotingCommand:
        tables: dict[str, str] = {}
        for channel, info in list(cgi.channel_info_table.items()):
            if origin and origin != info.client_id:
                continue
            request = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
                                              {"topic": topic, "group": group})
            try:
                resp = await channel.send_request(request, CLIENT_CALL_TIMEOUT_S)
            except Exception as exc:
                log.error("[get-consumer-status] get consumer status exception. topic=%s, "
                          "group=%s, error=%s", topic, group, exc)
                continue
            if resp.code == ResponseCode.SUCCESS and resp.body:
                try:
                    doc = loads_lenient(resp.body)
                    queues = decode_mq_map(doc.get("messageQueueTable"))
                except Exception as exc:
                    log.warning("bad GetConsumerStatusBody from %s: %s", info.client_id, exc)
                    continue
                tables[info.client_id] = encode_mq_map(
                    {mq: int(v) for mq, v in queues.items()})
            if origin:
                break
        inner = ",".join(f"{jsonutil.dumps(cid).decode()}:{t}" for cid, t in tables.items())
        body = ('{"consumerTable":{' + inner + '},"messageQueueTable":{}}').encode("utf-8")
        return cmd.response(ResponseCode.SUCCESS, body=body)
