"""PULL_MESSAGE (11): ``PullMessageProcessor`` of Apache RocketMQ 4.9.8.

Checks (broker/topic readable, queue id, subscription group), the subscription (from the request
when sysFlag bit 0x4 is set, else from the group's heartbeat), the store read with tags-code
filtering, the status → response-code table of protocol.md §3.2, the commit offset carried in
the pull (bit 0x1, first pass only) and long polling (bit 0x2, :mod:`rocketmq_emu.broker.longpoll`).
The response body is the concatenation of the raw commitlog records. A PULL_OFFSET_MOVED answer
also stores an ``OffsetMovedEvent`` on the ``OFFSET_MOVED_EVENT`` system topic, as a master does.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.client_manager import SUB_ALL, SubscriptionData
from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.filter.message_filter import pull_filter
from rocketmq_emu.broker.processors.common import FAQ_SUGGESTION, PERM_READ, status_name
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import PullMessageRequestHeader

log = logging.getLogger(__name__)

#: ``TopicValidator.RMQ_SYS_OFFSET_MOVED_EVENT``.
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"

# PullSysFlag
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8

_FOUND = "FOUND"
_MOVED_UNLESS_ZERO = ("NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE")
_CODE_BY_STATUS = {
    "FOUND": ResponseCode.SUCCESS,
    "MESSAGE_WAS_REMOVING": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "NO_MATCHED_MESSAGE": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "OFFSET_FOUND_NULL": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_BADLY": ResponseCode.PULL_OFFSET_MOVED,
    "OFFSET_OVERFLOW_ONE": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_TOO_SMALL": ResponseCode.PULL_OFFSET_MOVED,
}


class PullMessageProcessor:
    """Handler for 11."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {RequestCode.PULL_MESSAGE: self.process}

    def process(self, cmd: RemotingCommand, conn: Any) -> Any:
        """First pass: may park the pull (returns a Deferred) when nothing is there yet."""
        return self.process_request(cmd, conn, allow_suspend=True)

    def execute_when_wakeup(self, cmd: RemotingCommand, conn: Any) -> Any:
        """Second pass of a parked pull (``executeRequestWhenWakeup``): never parks again."""
        return self.process_request(cmd, conn, allow_suspend=False)

    def process_request(self, cmd: RemotingCommand, conn: Any, allow_suspend: bool) -> Any:
        """``PullMessageProcessor.processRequest(channel, request, brokerAllowSuspend)``."""
        ctx = self.ctx
        h = PullMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        group, topic, queue_id = h.consumer_group, h.topic, h.queue_id
        if not ctx.setting("broker_permission", 6) & PERM_READ:
            return cmd.response(ResponseCode.NO_PERMISSION,
                                f"the broker[{ctx.store_host[0]}] pulling message is forbidden")
        sgc = ctx.subscription_groups.find_subscription_group_config(group)
        if sgc is None:
            return cmd.response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist, {FAQ_SUGGESTION}")
        if not sgc.consume_enable:
            return cmd.response(ResponseCode.NO_PERMISSION,
                                f"subscription group no permission, {group}")
        sys_flag = h.sys_flag
        has_suspend = bool(sys_flag & FLAG_SUSPEND)
        has_commit = bool(sys_flag & FLAG_COMMIT_OFFSET)
        has_subscription = bool(sys_flag & FLAG_SUBSCRIPTION)
        tc = ctx.topic_config.select_topic_config(topic)
        if tc is None:
            log.error("the topic %s not exist, consumer: %s", topic, conn.peer_addr)
            return cmd.response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {FAQ_SUGGESTION}")
        if not tc.perm & PERM_READ:
            return cmd.response(ResponseCode.NO_PERMISSION,
                                f"the topic[{topic}] pulling message is forbidden")
        if queue_id < 0 or queue_id >= tc.read_queue_nums:
            info = (f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                    f"topicConfig.readQueueNums:[{tc.read_queue_nums}] "
                    f"consumer:[/{conn.peer_addr}]")  # channel.remoteAddress(): "/ip:port"
            log.warning(info)
            return cmd.response(ResponseCode.SYSTEM_ERROR, info)

        if has_subscription:
            sub = SubscriptionData.build(topic, h.subscription, h.expression_type, h.sub_version)
        else:
            cgi = ctx.consumer_manager.get_consumer_group_info(group)
            if cgi is None:
                log.warning("the consumer's group info not exist, group: %s", group)
                return cmd.response(ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                    f"the consumer's group info not exist{FAQ_SUGGESTION}")
            if not sgc.consume_broadcast_enable and cgi.message_model == "BROADCASTING":
                return cmd.response(ResponseCode.NO_PERMISSION,
                                    f"the consumer group[{group}] can not consume by broadcast way")
            sub = cgi.subscription_table.get(topic)
            if sub is None:
                log.warning("the consumer's subscription not exist, group: %s, topic: %s",
                            group, topic)
                return cmd.response(ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                    f"the consumer's subscription not exist{FAQ_SUGGESTION}")
            if sub.sub_version < h.sub_version:
                log.warning("the broker's subscription is not latest, group: %s %s",
                            group, sub.sub_string)
                return cmd.response(ResponseCode.SUBSCRIPTION_NOT_LATEST,
                                    "the consumer's subscription not latest")
        # SQL92 (broker.filter): compile the expression (23 / 27 when it does not compile).
        record_filter, filter_error = pull_filter(sub, has_subscription)
        if filter_error is not None:
            return cmd.response(*filter_error)
        if sub.expression_type != "TAG" and not ctx.setting("enable_property_filter", False):
            return cmd.response(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by "
                f"{sub.expression_type}")

        tags_filter = None
        if not sub.class_filter_mode and sub.expression_type == "TAG" and \
                sub.sub_string != SUB_ALL:
            tags_filter = sub.matches_tags_code
        if record_filter is None:
            result = ctx.store.get_message(group, topic, queue_id, h.queue_offset,
                                           h.max_msg_nums, tags_filter)
        else:
            result = ctx.store.get_message(group, topic, queue_id, h.queue_offset,
                                           h.max_msg_nums, tags_filter,
                                           record_filter=record_filter)
        status = status_name(result.status)
        if status in _MOVED_UNLESS_ZERO:
            code = ResponseCode.PULL_OFFSET_MOVED if h.queue_offset != 0 else \
                ResponseCode.PULL_NOT_FOUND
        else:
            code = _CODE_BY_STATUS.get(status, ResponseCode.PULL_NOT_FOUND)
        ext = {
            "suggestWhichBrokerId": "0",
            "nextBeginOffset": str(result.next_begin_offset),
            "minOffset": str(result.min_offset),
            "maxOffset": str(result.max_offset),
        }

        # Commit offset (brokerAllowSuspend && hasCommitOffsetFlag && not a slave).
        if allow_suspend and has_commit:
            ctx.consumer_offsets.commit_offset(conn.peer_addr, group, topic, queue_id,
                                               h.commit_offset)

        if code == ResponseCode.SUCCESS:
            ctx.stats.on_get(group, topic, len(result.messages))
            return cmd.response(code, status, ext, b"".join(result.messages))
        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and has_suspend:
            timeout = h.suspend_timeout_millis
            long_polling = ctx.setting("long_polling_enable", True)
            if not long_polling:
                timeout = ctx.setting("short_polling_time_mills", 1000)
            if ctx.hold_service is not None:
                return ctx.hold_service.suspend(
                    cmd, conn, topic, queue_id, h.queue_offset, timeout,
                    None if tags_filter is None else sub, wake_on_arrival=long_polling)
        if code == ResponseCode.PULL_OFFSET_MOVED:
            self._offset_moved_event(group, topic, queue_id, h.queue_offset,
                                     result.next_begin_offset)
            log.warning("PULL_OFFSET_MOVED: correction offset. topic=%s, groupId=%s, "
                        "queueId=%d, requestOffset=%d, newOffset=%s, status=%s", topic, group,
                        queue_id, h.queue_offset, result.next_begin_offset, status)
        return cmd.response(code, status, ext)

    def _offset_moved_event(self, group: str, topic: str, queue_id: int, requested: int,
                            new_offset: int) -> None:
        """``generateOffsetMovedEvent``: record the correction on ``OFFSET_MOVED_EVENT``."""
        ctx = self.ctx
        event = {
            "consumerGroup": group,
            "messageQueue": {"brokerName": ctx.broker_name, "queueId": queue_id, "topic": topic},
            "offsetNew": new_offset,
            "offsetRequest": requested,
        }
        record = MessageRecord(
            topic=OFFSET_MOVED_EVENT,
            body=jsonutil.dumps(event),
            queue_id=0,
            # setTags + setKeys + setDelayTimeLevel(0)
            properties={"TAGS": group, "KEYS": group, "DELAY": "0"},
            born_timestamp=ctx.now_ms(),
            born_host=ctx.store_host,
            store_host=ctx.store_host,
        )
        try:
            result = ctx.store.put_message(record)
        except Exception:
            log.exception("generateOffsetMovedEvent failed")
            return
        if status_name(result.status) != "PUT_OK":
            log.warning("generateOffsetMovedEvent: %s", status_name(result.status))
