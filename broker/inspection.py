"""What the admin requests and the dashboard read of a running broker, computed once for both:
a topic's queue offsets, a group's consume progress, a connection's description, POP messages in
flight.

Each function reads the broker's own state (its :class:`~rocketmq_emu.broker.processors.context.
BrokerContext`: store, config managers, client registries) and returns plain values; the admin
processors encode them as RocketMQ's bodies (``AdminBrokerProcessor``), the control API as JSON.
Nothing here is copied or cached: a second reader never sees a second copy of the state.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def queue_stats(ctx: Any, topic: str, queue_nums: int,
                store_times: bool = True) -> list[dict[str, int]]:
    """Min/max offset and last store time of queues ``0 .. queue_nums-1`` of ``topic``
    (``AdminBrokerProcessor.getTopicStatsInfo``: the time of the message at max-1, 0 if none);
    without ``store_times`` the offsets only (a list of every topic reads no record)."""
    store = ctx.store
    out = []
    for qid in range(queue_nums):
        min_off = max(store.get_min_offset_in_queue(topic, qid), 0)
        max_off = max(store.get_max_offset_in_queue(topic, qid), 0)
        row = {"queueId": qid, "minOffset": min_off, "maxOffset": max_off}
        if store_times:
            last = 0
            if max_off > 0:
                last = max(store.get_message_store_timestamp(topic, qid, max_off - 1), 0)
            row["lastUpdateTimestamp"] = last
        out.append(row)
    return out


def consume_stats(ctx: Any, group: str, topic: str | None = None) -> list[dict[str, Any]]:
    """Broker and consumer offset of each read queue ``group`` consumes (of ``topic``, or of every
    topic it holds offsets on), with the store time of the last consumed message
    (``AdminBrokerProcessor.getConsumeStats``: a topic without config, or one the online group
    does not subscribe to, is skipped with a warning)."""
    topics = [topic] if topic else sorted(ctx.consumer_offsets.which_topic_by_consumer(group))
    group_info = ctx.consumer_manager.get_consumer_group_info(group)
    store = ctx.store
    out = []
    for name in topics:
        tc = ctx.topic_config.select_topic_config(name)
        if tc is None:
            log.warning("consumeStats, topic config not exist, %s", name)
            continue
        if group_info is not None and group_info.subscription_table and \
                name not in group_info.subscription_table:
            log.warning("consumeStats, the consumer group[%s], topic[%s] not exist", group, name)
            continue
        for qid in range(tc.read_queue_nums):
            broker_offset = max(store.get_max_offset_in_queue(name, qid), 0)
            consumer_offset = max(ctx.consumer_offsets.query_offset(group, name, qid), 0)
            last = 0
            if consumer_offset > 0:
                last = max(store.get_message_store_timestamp(name, qid, consumer_offset - 1), 0)
            out.append({"topic": name, "queueId": qid, "brokerOffset": broker_offset,
                        "consumerOffset": consumer_offset, "lastTimestamp": last})
    return out


def connection(info: Any) -> dict[str, Any]:
    """A client connection as ``Connection`` (GET_CONSUMER/PRODUCER_CONNECTION_LIST) has it."""
    return {"clientAddr": info.addr, "clientId": info.client_id, "language": info.language,
            "version": info.version}


def pop_in_flight(pop: Any, group: str | None = None) -> list[dict[str, Any]]:
    """Messages popped and neither acknowledged nor revived yet (``PopCheckPoint`` bits not set),
    of ``group`` or of every group: ``{"group", "topic", "queueId", "offset", "popTime",
    "invisibleUntil"}`` sorted by when they become visible again. ``pop`` is the broker's POP
    services (None until a POP request or a POP store loaded them: nothing in flight)."""
    if pop is None:
        return []
    out = []
    for live in list(pop.revive.live.values()):
        ck = live.ck
        if group is not None and ck.cid != group:
            continue
        diffs = ck.queue_offset_diff
        for j in range(ck.num):
            if ck.is_acked(j):
                continue
            offset = ck.start_offset + (diffs[j] if diffs is not None and j < len(diffs) else j)
            out.append({"group": ck.cid, "topic": ck.topic, "queueId": ck.queue_id,
                        "offset": offset, "popTime": ck.pop_time,
                        "invisibleUntil": ck.revive_time})
    out.sort(key=lambda m: (m["invisibleUntil"], m["topic"] or "", m["queueId"], m["offset"]))
    return out
