"""HEART_BEAT (34), UNREGISTER_CLIENT (35), CHECK_CLIENT_CONFIG (46), LOCK_BATCH_MQ (41),
UNLOCK_BATCH_MQ (42).

Mirrors ``ClientManageProcessor`` and the lock handlers of ``AdminBrokerProcessor`` (4.9.8).
Heartbeat bodies come from Java/ali-ons with enum names and from the C++ clients with enum
ordinals (``"consumeType":1``) and a trailing newline; both register the same way.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.client_manager import (
    CONSUME_FROM_WHERE,
    CONSUME_TYPES,
    MESSAGE_MODELS,
    ClientChannelInfo,
    SubscriptionData,
    enum_name,
    mq_from_json,
    mq_to_json,
)
from rocketmq_emu.broker.filter.message_filter import check_client_config
from rocketmq_emu.broker.processors.common import PERM_READ, PERM_WRITE
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import UnregisterClientRequestHeader
from rocketmq_emu.broker.schedule.retry import retry_topic

log = logging.getLogger(__name__)


class BodyError(ValueError):
    """A JSON body that is missing or not the expected shape."""


def parse_json_body(cmd: RemotingCommand, what: str) -> dict[str, Any]:
    """The request body as a JSON object; BodyError naming ``what`` otherwise."""
    if not cmd.body:
        raise BodyError(f"{what} body is empty")
    try:
        doc = jsonutil.loads(cmd.body)
    except Exception as exc:
        raise BodyError(f"{what} body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BodyError(f"{what} body is not a JSON object")
    return doc


class ClientManageProcessor:
    """Handlers for 34, 35, 46, 41, 42."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.HEART_BEAT: self.heart_beat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
        }

    def heart_beat(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """34: register the client's producer and consumer groups on this connection."""
        ctx = self.ctx
        try:
            data = parse_json_body(cmd, "HeartbeatData")
        except BodyError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
        client_id = str(data.get("clientID") or "")
        if client_id and hasattr(conn, "client_id"):
            conn.client_id = client_id
        info = ClientChannelInfo(conn, client_id, cmd.language, cmd.version)
        for consumer in data.get("consumerDataSet") or []:
            group = str(consumer.get("groupName") or "")
            if not group:
                continue
            sgc = ctx.subscription_groups.find_subscription_group_config(group)
            notify = True
            if sgc is not None:
                notify = sgc.notify_consumer_ids_changed_enable
                topic_sys_flag = 0x2 if consumer.get("unitMode") else 0
                ctx.topic_config.create_topic_in_send_message_back_method(
                    retry_topic(group), sgc.retry_queue_nums, PERM_WRITE | PERM_READ,
                    topic_sys_flag)
            subs = [SubscriptionData.from_json(s) for s in consumer.get("subscriptionDataSet")
                    or [] if isinstance(s, dict)]
            changed = ctx.consumer_manager.register_consumer(
                group,
                ClientChannelInfo(conn, client_id, cmd.language, cmd.version),
                enum_name(consumer.get("consumeType"), CONSUME_TYPES),
                enum_name(consumer.get("messageModel"), MESSAGE_MODELS),
                enum_name(consumer.get("consumeFromWhere"), CONSUME_FROM_WHERE),
                subs,
                notify,
            )
            if changed:
                log.info("registerConsumer info changed %s %s", group, client_id)
        for producer in data.get("producerDataSet") or []:
            group = str(producer.get("groupName") or "")
            if group:
                ctx.producer_manager.register_producer(group, info)
        return cmd.response(ResponseCode.SUCCESS)

    def unregister_client(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """35: a client shutting down leaves its producer and/or consumer group."""
        ctx = self.ctx
        h = UnregisterClientRequestHeader.from_ext_fields(cmd.ext_fields)
        if h.producer_group is not None:
            ctx.producer_manager.unregister_producer(h.producer_group, conn)
        if h.consumer_group is not None:
            # C++ producers (PyPI rocketmq 0.4.4) send consumerGroup="" at shutdown: a blank
            # group is looked up (None, notify on) but never created, unlike 4.9.8's
            # SubscriptionGroupManager.findSubscriptionGroupConfig.
            sgc = ctx.subscription_groups.find_subscription_group_config(h.consumer_group)
            notify = sgc.notify_consumer_ids_changed_enable if sgc is not None else True
            ctx.consumer_manager.unregister_consumer(h.consumer_group, conn, notify)
        return cmd.response(ResponseCode.SUCCESS)

    def check_client_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """46: sent for non-TAG subscriptions; SQL92 needs ``enablePropertyFilter``."""
        try:
            body = parse_json_body(cmd, "CheckClientRequestBody")
        except BodyError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
        sub = body.get("subscriptionData") or {}
        if not isinstance(sub, dict):
            return cmd.response(ResponseCode.SUCCESS)
        # SQL92 gate + compile check (broker.filter.message_filter).
        code, remark = check_client_config(
            sub, bool(self.ctx.setting("enable_property_filter", False)))
        if code == ResponseCode.SUBSCRIPTION_PARSE_FAILED:
            log.warning("Client %s@%s filter message, but failed to compile expression! sub=%s, "
                        "error=%s", body.get("clientId"), body.get("group"), sub, remark)
        return cmd.response(code, remark)

    def lock_batch_mq(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """41: lock queues for an orderly consumer; answers the queues it now holds."""
        try:
            body = parse_json_body(cmd, "LockBatchRequestBody")
        except BodyError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
        mqs = [mq_from_json(m) for m in body.get("mqSet") or [] if isinstance(m, dict)]
        locked = self.ctx.lock_manager.try_lock_batch(
            str(body.get("consumerGroup") or ""), mqs, str(body.get("clientId") or ""))
        out = jsonutil.dumps({"lockOKMQSet": [mq_to_json(mq) for mq in locked]})
        return cmd.response(ResponseCode.SUCCESS, body=out)

    def unlock_batch_mq(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """42: release queues (often oneway)."""
        try:
            body = parse_json_body(cmd, "UnlockBatchRequestBody")
        except BodyError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
        mqs = [mq_from_json(m) for m in body.get("mqSet") or [] if isinstance(m, dict)]
        self.ctx.lock_manager.unlock_batch(
            str(body.get("consumerGroup") or ""), mqs, str(body.get("clientId") or ""))
        return cmd.response(ResponseCode.SUCCESS)
