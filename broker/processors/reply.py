"""SEND_REPLY_MESSAGE (324) / SEND_REPLY_MESSAGE_V2 (325): request-reply messaging.

Mirrors ``ReplyMessageProcessor`` (4.9.8): the replier's message is pushed to the requesting
client's connection (found by the ``REPLY_TO_CLIENT`` client id among registered producers)
with PUSH_REPLY_MESSAGE_TO_CLIENT (326, a request the client answers), then stored on its topic
(``storeReplyMessageEnable``, default true). The response is SUCCESS only if the push succeeded.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import (
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_PUSH_REPLY_TIME,
    properties_to_string,
    string_to_properties,
)
from rocketmq_emu.broker.processors.common import put_status_response, status_name
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import SendMessageRequestHeader

log = logging.getLogger(__name__)

#: ``Broker2Client.callClient`` timeout.
PUSH_TIMEOUT_S = 3.0


class ReplyMessageProcessor(SendMessageProcessor):
    """Handlers for 324 and 325."""

    def __init__(self, ctx: BrokerContext, rng: random.Random | None = None) -> None:
        super().__init__(ctx, rng)

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.SEND_REPLY_MESSAGE: self.process_reply,
            RequestCode.SEND_REPLY_MESSAGE_V2: self.process_reply,
        }

    def process_reply(self, cmd: RemotingCommand, conn: Any) -> Any:
        """Push the reply to the requester, store it, answer the replier."""
        ctx = self.ctx
        header = SendMessageRequestHeader.from_request(cmd.code, cmd.ext_fields)
        ext = {"MSG_REGION": self.region_id, "TRACE_ON": self.trace_on}
        tc = self._msg_check(cmd, conn, header, ext)
        if type(tc) is RemotingCommand:
            return tc
        queue_id = self._queue_id(header, tc)
        props = string_to_properties(header.properties or "")
        record = MessageRecord(
            topic=header.topic, body=cmd.body, queue_id=queue_id, flag=header.flag,
            properties=dict(props), sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp, born_host=conn.peer,
            store_host=ctx.store_host, reconsume_times=header.reconsume_times or 0,
        )
        # msgInner.setPropertiesString(requestHeader.getProperties()): stored as sent.
        record.properties_str = header.properties or ""
        d = self._push(cmd, conn, header, props)
        d.addCallback(self._after_push, cmd, record, queue_id, ext)
        return d

    def _push(self, cmd: RemotingCommand, conn: Any, header: SendMessageRequestHeader,
              props: dict[str, str]) -> defer.Deferred:
        """PUSH_REPLY_MESSAGE_TO_CLIENT; fires with ``(ok, remark)``."""
        ctx = self.ctx
        sender = props.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if sender is None:
            log.warning("REPLY_TO_CLIENT is null, can not reply message")
            return defer.succeed(
                (False, f"reply message properties[{PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"))
        channel = ctx.producer_manager.find_channel(sender)
        if channel is None:
            remark = f"push reply message fail, channel of <{sender}> not found."
            log.warning(remark)
            return defer.succeed((False, remark))
        pushed = dict(props)
        pushed[PROPERTY_PUSH_REPLY_TIME] = str(ctx.now_ms())
        push_ext = {
            "producerGroup": header.producer_group,
            "topic": header.topic,
            "defaultTopic": header.default_topic,
            "defaultTopicQueueNums": str(header.default_topic_queue_nums),
            "queueId": str(header.queue_id),
            "sysFlag": str(header.sys_flag),
            "bornTimestamp": str(header.born_timestamp),
            "flag": str(header.flag),
            "properties": properties_to_string(pushed),
            "unitMode": "true" if header.unit_mode else "false",
            # InetSocketAddress.toString() of an address built from an IP literal.
            # ReplyMessageProcessor.pushReplyMessage: getHostAddress() + ":" + port, no "/".
            "bornHost": conn.peer_addr,
            "storeHost": ctx.broker_addr,
            "storeTimestamp": str(ctx.now_ms()),
        }
        if header.reconsume_times is not None:
            push_ext["reconsumeTimes"] = str(header.reconsume_times)
        request = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push_ext,
                                          cmd.body)
        fail = f"push reply message to {sender}fail."  # sic: RocketMQ's remark has no space

        def answered(resp: RemotingCommand) -> tuple[bool, str]:
            if resp.code == ResponseCode.SUCCESS:
                return True, ""
            log.warning("push reply message to <%s> return fail, response remark: %s", sender,
                        resp.remark)
            return False, fail

        def failed(failure: Any) -> tuple[bool, str]:
            log.warning("push reply message to <%s> fail. %s", sender, failure.getErrorMessage())
            return False, fail

        return channel.send_request(request, PUSH_TIMEOUT_S).addCallbacks(answered, failed)

    def _after_push(self, outcome: tuple[bool, str], cmd: RemotingCommand,
                    record: MessageRecord, queue_id: int, ext: dict[str, str]) -> Any:
        ok, remark = outcome
        ext = dict(ext)
        if ok:
            code, remark = ResponseCode.SUCCESS, None
            # "set to zero to avoid client decoding exception" (ReplyMessageProcessor)
            ext.update(msgId="0", queueId=str(queue_id), queueOffset="0")
        else:
            code = ResponseCode.SYSTEM_ERROR
        if self.ctx.setting("store_reply_message_enable", True):
            result = self.ctx.store.put_message(record)
            _, _, put_ok = put_status_response(result.status, self.max_message_size)
            if put_ok:
                self.ctx.stats.on_put(record.topic, 1, len(record.body))
                ext.update(msgId=self._msg_id(result.append), queueId=str(queue_id),
                           queueOffset=str(result.append.queue_offset))
            else:
                log.warning("storing reply message on %s failed: %s", record.topic,
                            status_name(result.status))
        if cmd.is_oneway:
            return None
        return cmd.response(code, remark, ext)
