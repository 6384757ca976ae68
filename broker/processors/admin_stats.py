"""Admin requests about consumption, queues and producers (``AdminBrokerProcessor``, 4.9.8):

303 QUERY_CONSUME_TIME_SPAN, 308 QUERY_CORRECTION_OFFSET, 314 CLONE_GROUP_OFFSET,
315 VIEW_BROKER_STATS_DATA, 317 GET_BROKER_CONSUME_STATS, 321 QUERY_CONSUME_QUEUE,
328 GET_ALL_PRODUCER_INFO.

Bodies have the keys fastjson writes for the Java body classes (sorted, nulls omitted);
``Map<MessageQueue, ...>`` values use fastjson's object keys (see :mod:`.admin`).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.consumequeue.unit import CQ_STORE_UNIT_SIZE
from rocketmq_emu.broker.processors.admin_stats_items import GROUP_GET_NUMS, BrokerStatsItems
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import (
    CloneGroupOffsetRequestHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    ViewBrokerStatsDataRequestHeader,
)

log = logging.getLogger(__name__)

JAVA_LONG_MAX = 2**63 - 1


def java_date(ms: int) -> str:
    """``UtilAll.formatDate(new Date(ms), YYYY_MM_DD_HH_MM_SS_SSS)``: ``yyyy-MM-dd#HH:mm:ss:SSS``
    in local time (what ``QueueTimeSpan.get*TimeStampStr`` add to the JSON)."""
    dt = datetime.fromtimestamp(ms // 1000)
    return dt.strftime("%Y-%m-%d#%H:%M:%S") + f":{ms % 1000:03d}"


def _mq(topic: str, broker_name: str, queue_id: int) -> dict[str, Any]:
    return {"brokerName": broker_name, "queueId": queue_id, "topic": topic}


class AdminStatsProcessor:
    """Handlers for 303, 308, 314, 315, 317, 321 and 328; ``stats_items`` holds the sampled
    BrokerStatsManager items (the controller runs its ``periodic_tasks``)."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.stats_items = BrokerStatsItems(ctx.stats, ctx.cluster_name, ctx.clock)
        ctx.stats_items = self.stats_items

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.QUERY_CONSUME_TIME_SPAN: self.query_consume_time_span,
            RequestCode.QUERY_CORRECTION_OFFSET: self.query_correction_offset,
            RequestCode.CLONE_GROUP_OFFSET: self.clone_group_offset,
            RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
            RequestCode.GET_BROKER_CONSUME_STATS: self.get_broker_consume_stats,
            RequestCode.QUERY_CONSUME_QUEUE: self.query_consume_queue,
            RequestCode.GET_ALL_PRODUCER_INFO: self.get_all_producer_info,
        }

    def periodic_tasks(self) -> list[tuple[float, Any]]:
        """The stats sampling the broker runs every 10 s / 10 min / 1 h."""
        return self.stats_items.periodic_tasks()

    # --- 303 ---------------------------------------------------------------------------------
    def query_consume_time_span(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """303: per write queue, the first / last store time, the time of the group's last
        consumed message and how long the next one has waited (QueryConsumeTimeSpanBody)."""
        h = QueryConsumeTimeSpanRequestHeader.from_ext_fields(cmd.ext_fields)
        ctx = self.ctx
        store = ctx.store
        topic = h.topic
        tc = ctx.topic_config.select_topic_config(topic)
        if tc is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        spans = []
        for qid in range(tc.write_queue_nums):
            min_time = store.get_earliest_message_time(topic, qid)
            max_off = store.get_max_offset_in_queue(topic, qid)
            max_time = store.get_message_store_timestamp(topic, qid, max_off - 1)
            consumer_offset = ctx.consumer_offsets.query_offset(h.group, topic, qid)
            if consumer_offset > 0:
                consume_time = store.get_message_store_timestamp(topic, qid, consumer_offset - 1)
            else:
                consume_time = min_time
            delay = 0
            if consumer_offset < max_off:
                next_time = store.get_message_store_timestamp(topic, qid, consumer_offset)
                delay = ctx.now_ms() - next_time
            # QueueTimeSpan: fastjson adds the three get*TimeStampStr getters.
            spans.append({
                "consumeTimeStamp": consume_time, "consumeTimeStampStr": java_date(consume_time),
                "delayTime": delay,
                "maxTimeStamp": max_time, "maxTimeStampStr": java_date(max_time),
                "messageQueue": _mq(topic, ctx.broker_name, qid),
                "minTimeStamp": min_time, "minTimeStampStr": java_date(min_time),
            })
        return cmd.response(ResponseCode.SUCCESS,
                            body=jsonutil.dumps({"consumeTimeSpanSet": spans}))

    # --- 308 ---------------------------------------------------------------------------------
    def query_correction_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """308: per queue, the smallest offset of every group but ``filterGroups``; Long.MAX
        where ``compareGroup`` is behind it (QueryCorrectionOffsetBody)."""
        h = QueryCorrectionOffsetHeader.from_ext_fields(cmd.ext_fields)
        offsets = self.ctx.consumer_offsets
        store = self.ctx.store
        # ConsumerOffsetManager.queryMinOffsetInAllGroup removes the filtered groups' entries
        # from its live offsetTable (a Java bug that loses their offsets); they are only
        # skipped here. Offsets below the queue's min offset are ignored, as in Java.
        filtered = {g for g in (h.filter_groups or "").split(",") if g}
        correction: dict[int, int] = {}
        for group in sorted(offsets.which_group_by_topic(h.topic) - filtered):
            for qid, off in offsets.query_offsets(group, h.topic).items():
                if off >= store.get_min_offset_in_queue(h.topic, qid):
                    correction[qid] = min(off, correction.get(qid, off))
        for qid, off in offsets.query_offsets(h.compare_group, h.topic).items():
            if qid in correction:  # Java unboxes a null here (NPE): such queues are skipped
                correction[qid] = JAVA_LONG_MAX if correction[qid] > off else correction[qid]
        body = {"correctionOffsets": dict(sorted(correction.items()))}
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(body))

    # --- 314 ---------------------------------------------------------------------------------
    def clone_group_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """314: copy ``srcGroup``'s offsets (on ``topic``, or on every topic it has offsets
        on) to ``destGroup``; an online group's topics it does not subscribe are skipped."""
        h = CloneGroupOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        ctx = self.ctx
        if h.topic and h.topic.strip():
            topics = {h.topic}
        else:
            topics = ctx.consumer_offsets.which_topic_by_consumer(h.src_group)
        info = ctx.consumer_manager.get_consumer_group_info(h.src_group)
        sub_count = len(info.subscription_table) if info is not None else 0
        for topic in sorted(topics):
            if ctx.topic_config.select_topic_config(topic) is None:
                log.warning("[cloneGroupOffset], topic config not exist, %s", topic)
                continue
            if not h.offline and sub_count > 0 and \
                    ctx.consumer_manager.find_subscription_data(h.src_group, topic) is None:
                log.warning("[cloneGroupOffset], the consumer group[%s], topic[%s] not exist",
                            h.src_group, topic)
                continue
            # AdminBrokerProcessor.cloneGroupOffset passes the header's topic here (null when
            # cloning every topic, which then clones nothing); the loop's topic is meant.
            ctx.consumer_offsets.clone_offset(h.src_group, h.dest_group, topic)
        return cmd.response(ResponseCode.SUCCESS)

    # --- 315 ---------------------------------------------------------------------------------
    def view_broker_stats_data(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """315: one stats item's minute / hour / day window (BrokerStatsData), or SYSTEM_ERROR
        when the broker keeps no such item (see :mod:`.admin_stats_items`)."""
        h = ViewBrokerStatsDataRequestHeader.from_ext_fields(cmd.ext_fields)
        item = self.stats_items.get_stats_item(h.stats_name, h.stats_key)
        if item is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"The stats <{h.stats_name}> <{h.stats_key}> not exist")
        body = {"statsDay": item.snapshot("day").to_json(),
                "statsHour": item.snapshot("hour").to_json(),
                "statsMinute": item.snapshot("minute").to_json()}
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(body))

    # --- 317 ---------------------------------------------------------------------------------
    def _group_consume_stats(self, group: str, is_order: bool) -> tuple[list[bytes], int]:
        """ConsumeStats (as JSON bytes) of each topic ``group`` has offsets on, and their diff."""
        ctx = self.ctx
        store = ctx.store
        out: list[bytes] = []
        total = 0
        info = ctx.consumer_manager.get_consumer_group_info(group)
        sub_count = len(info.subscription_table) if info is not None else 0
        for topic in sorted(ctx.consumer_offsets.which_topic_by_consumer(group)):
            tc = ctx.topic_config.select_topic_config(topic)
            if tc is None:
                log.warning("consumeStats, topic config not exist, %s", topic)
                continue
            if is_order and not tc.order:
                continue
            if sub_count > 0 and ctx.consumer_manager.find_subscription_data(group, topic) \
                    is None:
                log.warning("consumeStats, the consumer group[%s], topic[%s] not exist",
                            group, topic)
                continue
            table = []
            for qid in range(tc.write_queue_nums):
                broker_offset = max(store.get_max_offset_in_queue(topic, qid), 0)
                consumer_offset = max(ctx.consumer_offsets.query_offset(group, topic, qid), 0)
                last = 0
                if consumer_offset - 1 >= 0:
                    last = max(store.get_message_store_timestamp(
                        topic, qid, consumer_offset - 1), 0)
                total += broker_offset - consumer_offset
                table.append((_mq(topic, ctx.broker_name, qid),
                              {"brokerOffset": broker_offset, "consumerOffset": consumer_offset,
                               "lastTimestamp": last}))
            item = self.stats_items.get_stats_item(GROUP_GET_NUMS, f"{topic}@{group}")
            tps = item.snapshot("minute").tps if item is not None else 0.0
            out.append(b'{"consumeTps":' + jsonutil.dumps(tps) + b',"offsetTable":'
                       + jsonutil.dumps_object_keyed(table) + b"}")
        return out, total

    def get_broker_consume_stats(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """317: ConsumeStats of every subscription group's topics (ConsumeStatsList); with
        ``isOrder`` only order topics."""
        h = GetConsumeStatsInBrokerHeader.from_ext_fields(cmd.ext_fields)
        groups = []
        total = 0
        for group in self.ctx.subscription_groups.subscription_group_table:
            stats, diff = self._group_consume_stats(group, bool(h.is_order))
            total += diff
            groups.append(b"{" + jsonutil.dumps(group) + b":[" + b",".join(stats) + b"]}")
        body = (b'{"brokerAddr":' + jsonutil.dumps(self.ctx.broker_addr)
                + b',"consumeStatsList":[' + b",".join(groups) + b'],"totalDiff":'
                + str(total).encode() + b"}")
        return cmd.response(ResponseCode.SUCCESS, body=body)

    # --- 321 ---------------------------------------------------------------------------------
    def query_consume_queue(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """321: up to ``count`` raw units of a consume queue from ``index``
        (QueryConsumeQueueResponseBody), with the group's subscription when one is named."""
        h = QueryConsumeQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        ctx = self.ctx
        cq = ctx.store.consume_queues.find(h.topic, h.queue_id)
        if cq is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"{h.queue_id}@{h.topic} is not exist!")
        body: dict[str, Any] = {"maxQueueIndex": cq.max_offset, "minQueueIndex": cq.min_offset}
        if h.consumer_group is not None:
            sub = ctx.consumer_manager.find_subscription_data(h.consumer_group, h.topic)
            if sub is None:
                body["filterData"] = f"{h.consumer_group}@{h.topic} is not online!"
            else:
                body["subscriptionData"] = sub.to_json()
                # JSON.toJSONString(ConsumerFilterManager.get(topic, group), true): the
                # emulator keeps no ConsumerFilterData, which Java has for SQL92 only.
                body["filterData"] = "null"
        units = self._index_buffer(cq, h.index, h.count)
        if units is None:
            # Java returns here before setting the body: SUCCESS with a remark only.
            return cmd.response(ResponseCode.SUCCESS, f"Index {h.index} of "
                                f"{h.queue_id}@{h.topic} is not exist!")
        # ConsumeQueueData: the emulator has no ConsumeQueueExt, so extendDataJson, bitMap and
        # msg stay null (omitted) and eval false.
        body["queueData"] = [
            {"eval": False, "physicOffset": off, "physicSize": size, "tagsCode": tags}
            for off, size, tags in units]
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(dict(sorted(body.items()))))

    @staticmethod
    def _index_buffer(cq: Any, index: int, count: int) -> list[tuple[int, int, int]] | None:
        """``ConsumeQueue.getIndexBuffer(index)`` capped at ``count`` units: the units from
        ``index`` to the end of the file holding it; None when there is none at ``index``."""
        if index < cq.min_offset or index >= cq.max_offset:
            return None
        per_file = cq.mapped_file_size // CQ_STORE_UNIT_SIZE
        in_file = per_file - index % per_file
        return cq.get_units(index, max(min(count, in_file), 0))

    # --- 328 ---------------------------------------------------------------------------------
    def get_all_producer_info(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """328: every producer connection by group (ProducerTableInfo)."""
        data: dict[str, list[dict[str, Any]]] = {}
        for group, channels in self.ctx.producer_manager.group_channel_table.items():
            data[group] = [{
                "clientId": info.client_id,
                "language": info.language,
                "lastUpdateTimestamp": info.last_update_ms,
                # ProducerManager.getProducerTable: Channel.remoteAddress().toString(), i.e.
                # InetSocketAddress's "/ip:port".
                "remoteIP": "/" + info.addr,
                "version": info.version,
            } for info in channels.values()]
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps({"data": data}))
