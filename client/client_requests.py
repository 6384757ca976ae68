"""Requests brokers send to consumers (Java ``ClientRemotingProcessor``), beyond
NOTIFY_CONSUMER_IDS_CHANGED (handled by :class:`rocketmq_emu.client.instance.ClientInstance`) and
RESET_CONSUMER_CLIENT_OFFSET / GET_CONSUMER_STATUS_FROM_CLIENT (:mod:`rocketmq_emu.client.offset_reset`):

* GET_CONSUMER_RUNNING_INFO (307): properties, subscriptions and per-queue state
  (``ConsumerRunningInfo``);
* CONSUME_MESSAGE_DIRECTLY (309): consume one message now with the listener and report
  (``ConsumeMessageDirectlyResult``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RequestDispatcher
from rocketmq_emu.client.message import decode_messages

log = logging.getLogger(__name__)


def register(dispatcher: RequestDispatcher, consumers: dict[str, Any]) -> None:
    """Answer 307 and 309 for the consumers (group -> consumer) of one client."""
    handlers = ClientRequestHandlers(consumers)
    dispatcher.register(RequestCode.GET_CONSUMER_RUNNING_INFO, handlers.running_info)
    dispatcher.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, handlers.consume_directly)


class ClientRequestHandlers:
    """Handlers bound to the client's consumer table."""

    def __init__(self, consumers: dict[str, Any]) -> None:
        self.consumers = consumers

    def _consumer(self, group: str) -> Any:
        return self.consumers.get(group)

    def running_info(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        consumer = self._consumer(cmd.ext_fields.get("consumerGroup", ""))
        if consumer is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"The Consumer Group <{cmd.ext_fields.get('consumerGroup')}> not "
                                "exist in this consumer")
        props = {
            "PROP_CONSUME_TYPE": consumer.consume_type,
            "PROP_CONSUMEORDERLY": str(consumer.orderly).lower(),
            "PROP_NAMESERVER_ADDR": ";".join(consumer.instance.namesrv_addrs),
            "PROP_CLIENT_VERSION": "V4_9_8",
            "PROP_CONSUMER_START_TIMESTAMP": str(getattr(consumer, "start_timestamp", 0)),
            "messageModel": consumer.message_model,
            "consumeFromWhere": consumer.consume_from_where,
            "consumerGroup": consumer.group,
        }
        items = []
        for mq, pq in sorted(consumer.process_queues.items()):
            items.append((mq, {
                "commitOffset": consumer.offsets.get(mq, -1),
                "cachedMsgCount": 0,
                "locked": bool(pq.locked),
                "droped": bool(pq.dropped),
                "lastLockTimestamp": int(pq.lock_time * 1000),
                "transactionMsgCount": 0,
            }))
        body = (
            '{"mqTable":' + jsonutil.dumps_object_keyed(
                (mq.to_json(), v) for mq, v in items).decode()
            + ',"properties":' + jsonutil.dumps(props).decode()
            + ',"statusTable":{}'
            + ',"subscriptionSet":' + jsonutil.dumps(
                [s.to_json() for s in consumer.subscriptions.values()]).decode()
            + "}"
        ).encode()
        return cmd.response(ResponseCode.SUCCESS, body=body)

    def consume_directly(self, cmd: RemotingCommand, conn: Any) -> Any:
        ext = cmd.ext_fields
        consumer = self._consumer(ext.get("consumerGroup", ""))
        if consumer is None or consumer.listener is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"The Consumer Group <{ext.get('consumerGroup')}> not exist in "
                                "this consumer")
        try:
            msgs = decode_messages(cmd.body, ext.get("brokerName", ""))
        except Exception as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"undecodable message: {exc}")
        start = time.monotonic()
        d = defer.maybeDeferred(consumer.consume_directly, msgs)

        def done(outcome: Any) -> RemotingCommand:
            if isinstance(outcome, Exception) or hasattr(outcome, "getErrorMessage"):
                result, remark = "CR_THROW_EXCEPTION", str(getattr(outcome, "value", outcome))
            else:
                result, remark = ("CR_SUCCESS" if outcome else "CR_LATER"), None
            body = jsonutil.dumps({
                "autoCommit": True, "consumeResult": result, "order": bool(consumer.orderly),
                "remark": remark, "spentTimeMills": int((time.monotonic() - start) * 1000),
            })
            return cmd.response(ResponseCode.SUCCESS, body=body)

        return d.addBoth(done)
