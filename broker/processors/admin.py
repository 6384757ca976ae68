"""Admin requests (``AdminBrokerProcessor``, 4.9.8): topics, subscription groups, stats and
runtime info as ``mqadmin`` and the dashboards read them.

17 UPDATE_AND_CREATE_TOPIC, 215 DELETE_TOPIC_IN_BROKER, 21 GET_ALL_TOPIC_CONFIG,
23 GET_TOPIC_NAME_LIST, 26 GET_BROKER_CONFIG, 28 GET_BROKER_RUNTIME_INFO, 202 GET_TOPIC_STATS_INFO,
208 GET_CONSUME_STATS, 203 GET_CONSUMER_CONNECTION_LIST, 204 GET_PRODUCER_CONNECTION_LIST,
43 GET_ALL_CONSUMER_OFFSET, 45 GET_ALL_DELAY_OFFSET, 201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
200 UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 207 DELETE_SUBSCRIPTIONGROUP,
300 QUERY_TOPIC_CONSUME_BY_WHO, 305 GET_SYSTEM_TOPIC_LIST_FROM_BROKER.

Bodies holding a ``Map<MessageQueue, ...>`` are written the way fastjson writes them, with JSON
objects as keys (``{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}``, apache/rocketmq#3389):
that is what Java's tools parse back into MessageQueue keys.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker import inspection, jsonutil
from rocketmq_emu.broker.configs.subscription import SubscriptionGroupConfig
from rocketmq_emu.broker.configs.topics import TopicConfig
from rocketmq_emu.broker.processors.admin_topic_attributes import update_topic_with_attributes
from rocketmq_emu.broker.processors.client_manage import BodyError, parse_json_body
from rocketmq_emu.broker.processors.common import is_system_topic, validate_topic
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import CURRENT_VERSION, RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
)
from rocketmq_emu.broker.topic_attributes import AttributeRequestError

log = logging.getLogger(__name__)

#: ``MQVersion.getVersionDesc(CURRENT_VERSION)``.
VERSION_DESC = "V4_9_8"


def _mq(topic: str, broker_name: str, queue_id: int) -> dict[str, Any]:
    return {"brokerName": broker_name, "queueId": queue_id, "topic": topic}


class AdminBrokerProcessor:
    """Admin handlers; ``on_topics_changed()`` is called after a topic is created or deleted
    (the controller re-registers with the name servers then)."""

    def __init__(self, ctx: BrokerContext,
                 on_topics_changed: Callable[[], Any] | None = None) -> None:
        self.ctx = ctx
        self.on_topics_changed = on_topics_changed
        #: The Configuration's DataVersion reported by GET_BROKER_CONFIG.
        self.config_version = 0
        self.config_timestamp = ctx.now_ms()

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RequestCode.GET_TOPIC_NAME_LIST: self.get_topic_name_list,
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
            RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
            RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_subscription_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: self.get_system_topic_list,
        }

    def _changed(self) -> None:
        if self.on_topics_changed is not None:
            try:
                self.on_topics_changed()
            except Exception:
                log.exception("re-registering after a topic change failed")

    # --- topics ----------------------------------------------------------------------------
    def update_and_create_topic(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """17: create or replace a topic's config, then re-register with the name servers."""
        h = CreateTopicRequestHeader.from_ext_fields(cmd.ext_fields)
        topic = h.topic
        remark = validate_topic(topic)
        if remark is not None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, remark)
        if is_system_topic(topic) or topic in self.ctx.topic_config.system_topics:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"The topic[{topic}] is conflict with system topic.")
        tc = TopicConfig(
            topic, read_queue_nums=h.read_queue_nums, write_queue_nums=h.write_queue_nums,
            perm=h.perm, topic_filter_type=h.topic_filter_type or "SINGLE_TAG",
            topic_sys_flag=h.topic_sys_flag or 0, order=bool(h.order),
        )
        refused = update_topic_with_attributes(
            self.ctx.topic_config, tc, h.attributes,
            getattr(self.ctx.config, "enable_mixed_message_type", False))
        if refused is not None:
            log.warning("updateAndCreateTopic %s by %s refused: %s", topic, conn.peer_addr,
                        refused[1])
            return cmd.response(*refused)
        log.info("updateAndCreateTopic called by %s: %s", conn.peer_addr, tc)
        self._changed()
        return cmd.response(ResponseCode.SUCCESS)

    def delete_topic(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """215: forget the topic's config, consume queues and offsets."""
        h = DeleteTopicRequestHeader.from_ext_fields(cmd.ext_fields)
        log.info("deleteTopic called by %s: %s", conn.peer_addr, h.topic)
        self.ctx.topic_config.delete_topic_config(h.topic)
        self.ctx.store.delete_topic(h.topic)
        self.ctx.consumer_offsets.delete_topic(h.topic)
        self._changed()
        return cmd.response(ResponseCode.SUCCESS)

    def get_all_topic_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """21: the TopicConfigSerializeWrapper."""
        wrapper = self.ctx.topic_config.build_topic_config_serialize_wrapper()
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(wrapper))

    def get_topic_name_list(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """23: ``{"topicList":[...]}`` of this broker's topics."""
        names = sorted(self.ctx.topic_config.topic_config_table)
        return cmd.response(ResponseCode.SUCCESS,
                            body=jsonutil.dumps({"topicList": names}))

    def get_system_topic_list(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """305: ``{"topicList":[...]}`` of the broker's system topics."""
        names = sorted(self.ctx.topic_config.system_topics)
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps({"topicList": names}))

    # --- config / runtime ------------------------------------------------------------------
    def get_broker_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """26: every setting as Java properties text; header ``version`` = the data version."""
        config = self.ctx.config
        lines = []
        if dataclasses.is_dataclass(config):
            from rocketmq_emu.broker.config import java_key

            for f in dataclasses.fields(config):
                if not f.metadata.get("property", True):
                    continue  # e.g. tls: JVM system properties in Java, not BrokerConfig's
                value = getattr(config, f.name)
                if value is None:
                    value = ""
                elif isinstance(value, bool):
                    value = "true" if value else "false"
                lines.append(f"{java_key(f)}={value}\n")
        dv = {"counter": self.config_version, "timestamp": self.config_timestamp}
        return cmd.response(ResponseCode.SUCCESS, ext_fields={"version": jsonutil.dumps(
            dv).decode()}, body="".join(lines).encode("utf-8"))

    def update_broker_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """25: ``key=value`` lines applied to the running config (``Configuration.update``).

        Values are parsed like ``broker.conf``; settings read only at start (ports, paths)
        change in the config object but take effect at the next start, as in RocketMQ.
        """
        from rocketmq_emu.broker.config import ConfigError, config_from_properties
        from rocketmq_emu.broker.properties import load_properties

        try:
            props = load_properties(cmd.body.decode("utf-8"))
            loaded = config_from_properties(props, "UPDATE_BROKER_CONFIG")
        except (ConfigError, UnicodeDecodeError, ValueError) as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
        for name in loaded.explicit:
            setattr(self.ctx.config, name, getattr(loaded.config, name))
        log.info("updateBrokerConfig called by %s: %s", conn.peer_addr, sorted(props))
        self.config_version += 1
        self.config_timestamp = self.ctx.now_ms()
        return cmd.response(ResponseCode.SUCCESS)

    def runtime_info(self) -> dict[str, str]:
        """``AdminBrokerProcessor.prepareRuntimeInfo`` with the store's counters."""
        ctx = self.ctx
        store = ctx.store
        stats = ctx.stats
        now = ctx.now_ms()
        root = getattr(getattr(store, "config", None), "store_path_root_dir", ".")
        try:
            usage = shutil.disk_usage(root if os.path.exists(root) else ".")
            capacity = f"Total : {usage.total}, Free : {usage.free}."
            ratio = f"{usage.used / usage.total:.6f}" if usage.total else "0"
        except OSError:
            capacity, ratio = "Total : 0, Free : 0.", "0"
        max_phy = store.max_physical_offset
        min_phy = store.min_physical_offset
        table = {
            "brokerVersionDesc": VERSION_DESC,
            "brokerVersion": str(CURRENT_VERSION),
            "bootTimestamp": str(ctx.boot_timestamp),
            "runtime": f"[ {(now - ctx.boot_timestamp) // 1000} seconds ]",
            "msgPutTotalYesterdayMorning": "0",
            "msgPutTotalTodayMorning": "0",
            "msgPutTotalTodayNow": str(stats.put_total),
            "msgGetTotalYesterdayMorning": "0",
            "msgGetTotalTodayMorning": "0",
            "msgGetTotalTodayNow": str(stats.get_total),
            "putMessageTimesTotal": str(stats.put_total),
            "putMessageSizeTotal": str(stats.put_size_total),
            "putTps": "0.0 0.0 0.0",
            "getFoundTps": "0.0 0.0 0.0",
            "getMissTps": "0.0 0.0 0.0",
            "getTotalTps": "0.0 0.0 0.0",
            "getTransferedTps": "0.0 0.0 0.0",
            "sendThreadPoolQueueSize": "0",
            "sendThreadPoolQueueCapacity": "10000",
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueCapacity": "100000",
            "queryThreadPoolQueueSize": "0",
            "queryThreadPoolQueueCapacity": "20000",
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueHeadWaitTimeMills": "0",
            "dispatchBehindBytes": "0",
            "pageCacheLockTimeMills": "0",
            "earliestMessageTimeStamp": str(self._earliest_message_time(min_phy, max_phy)),
            "startAcceptSendRequestTimeStamp": "0",
            "remainTransientStoreBufferNumbs": "0",
            "remainHowManyDataToFlush": "0 B",
            "commitLogMinOffset": str(min_phy),
            "commitLogMaxOffset": str(max_phy),
            "commitLogDirCapacity": capacity,
            "commitLogDiskRatio": ratio,
            "consumeQueueDiskRatio": ratio,
        }
        return table

    def _earliest_message_time(self, min_phy: int, max_phy: int) -> int:
        if max_phy <= min_phy:
            return -1
        try:
            return int(self.ctx.store.store_time_at(min_phy))
        except Exception:
            return -1

    def get_broker_runtime_info(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """28: KVTable ``{"table":{...}}`` with RocketMQ's key names."""
        return cmd.response(ResponseCode.SUCCESS,
                            body=jsonutil.dumps({"table": self.runtime_info()}))

    # --- stats -----------------------------------------------------------------------------
    def get_topic_stats_info(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """202: min/max offsets and last update time of each write queue."""
        h = GetTopicStatsInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        ctx = self.ctx
        tc = ctx.topic_config.select_topic_config(h.topic)
        if tc is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        table = [(_mq(h.topic, ctx.broker_name, q["queueId"]),
                  {"lastUpdateTimestamp": q["lastUpdateTimestamp"], "maxOffset": q["maxOffset"],
                   "minOffset": q["minOffset"]})
                 for q in inspection.queue_stats(ctx, h.topic, tc.write_queue_nums)]
        body = b'{"offsetTable":' + jsonutil.dumps_object_keyed(table) + b"}"
        return cmd.response(ResponseCode.SUCCESS, body=body)

    def get_consume_stats(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """208: broker vs consumer offset of each queue the group consumes."""
        h = GetConsumeStatsRequestHeader.from_ext_fields(cmd.ext_fields)
        ctx = self.ctx
        table = [(_mq(q["topic"], ctx.broker_name, q["queueId"]),
                  {"brokerOffset": q["brokerOffset"], "consumerOffset": q["consumerOffset"],
                   "lastTimestamp": q["lastTimestamp"]})
                 for q in inspection.consume_stats(ctx, h.consumer_group, h.topic or None)]
        body = b'{"consumeTps":0.0,"offsetTable":' + jsonutil.dumps_object_keyed(table) + b"}"
        return cmd.response(ResponseCode.SUCCESS, body=body)

    # --- connections -----------------------------------------------------------------------
    def get_consumer_connection_list(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """203: the group's connections, consume settings and subscriptions."""
        h = GetConsumerConnectionListRequestHeader.from_ext_fields(cmd.ext_fields)
        info = self.ctx.consumer_manager.get_consumer_group_info(h.consumer_group)
        if info is None:
            return cmd.response(ResponseCode.CONSUMER_NOT_ONLINE,
                                f"the consumer group[{h.consumer_group}] not online")
        body = {
            "connectionSet": [inspection.connection(c) for c in info.channel_info_table.values()],
            "consumeFromWhere": info.consume_from_where,
            "consumeType": info.consume_type,
            "messageModel": info.message_model,
            "subscriptionTable": {t: s.to_json() for t, s in info.subscription_table.items()},
        }
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(body))

    def get_producer_connection_list(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """204: the producer group's connections."""
        group = cmd.ext_fields.get("producerGroup", "")
        channels = self.ctx.producer_manager.group_channel_table.get(group)
        if not channels:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"the producer group[{group}] not exist")
        body = {"connectionSet": [inspection.connection(c) for c in channels.values()]}
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(body))

    # --- offsets / groups ------------------------------------------------------------------
    def get_all_consumer_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """43: consumerOffset.json's content."""
        return cmd.response(ResponseCode.SUCCESS,
                            body=jsonutil.dumps(self.ctx.consumer_offsets.encode()))

    def get_all_delay_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """45: delayOffset.json's content."""
        manager = self.ctx.delay_offsets
        if manager is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                "Get all delay offset from master error.")
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(manager.encode()))

    def get_all_subscription_group(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """201: subscriptionGroup.json's content."""
        return cmd.response(ResponseCode.SUCCESS,
                            body=jsonutil.dumps(self.ctx.subscription_groups.encode()))

    def update_subscription_group(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """200: create or replace a group's config from a SubscriptionGroupConfig body.

        RocketMQ 5's fields (``consumeMessageOrderly``, ``groupRetryPolicy``) are kept; the body's
        ``attributes`` is a modification applied to the group's current ones, and a refused one
        answers SYSTEM_ERROR with the ``RuntimeException`` text 5.x's remoting layer sends (its
        first stack frame left out)."""
        try:
            doc = parse_json_body(cmd, "SubscriptionGroupConfig")
            cfg = SubscriptionGroupConfig.from_json(doc)
        except (BodyError, TypeError, ValueError) as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
        log.info("updateAndCreateSubscriptionGroup called by %s: %s", conn.peer_addr, cfg)
        try:
            self.ctx.subscription_groups.update_subscription_group_config(cfg)
        except AttributeRequestError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"java.lang.RuntimeException: {exc}")
        return cmd.response(ResponseCode.SUCCESS)

    def delete_subscription_group(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """207: forget a group (and its offsets when ``cleanOffset``, 4.9.8: ``removeOffset``)."""
        h = DeleteSubscriptionGroupRequestHeader.from_ext_fields(cmd.ext_fields)
        self.ctx.subscription_groups.delete_subscription_group_config(h.group_name)
        if h.clean_offset or h.remove_offset:
            self.ctx.consumer_offsets.delete_group(h.group_name)
        return cmd.response(ResponseCode.SUCCESS)

    def query_topic_consume_by_who(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """300: groups subscribed to the topic or holding offsets on it."""
        topic = cmd.ext_fields.get("topic", "")
        groups = self.ctx.consumer_manager.query_topic_consume_by_who(topic)
        groups |= self.ctx.consumer_offsets.which_group_by_topic(topic)
        return cmd.response(ResponseCode.SUCCESS,
                            body=jsonutil.dumps({"groupList": sorted(groups)}))
