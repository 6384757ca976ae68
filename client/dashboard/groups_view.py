"""The Consumer groups and Producers views: each group's members, subscriptions, per-queue
progress (committed offset, lag, last consume time) and POP messages in flight; reset a group's
offsets to a time; the producer groups' connections.

Progress is ``broker.inspection.consume_stats`` (what GET_CONSUME_STATS answers); connections
are the broker's client registries; the reset goes over the wire as INVOKE_BROKER_TO_RESET_OFFSET,
as ``mqadmin resetOffsetByTime`` and rocketmq-dashboard send it.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker import inspection
from rocketmq_emu.broker.configs import subscription as sub
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.client.api_errors import ApiError
from rocketmq_emu.client.dashboard.common import body_object, controller, query


def _system_groups(ctx: Any) -> set[str]:
    """The built-in groups and the broker's own (``CID_RMQ_SYS_``)."""
    return {g for g in ctx.subscription_groups.subscription_group_table
            if g in _BUILT_IN or g.startswith(sub.CID_RMQ_SYS_PREFIX)}


#: The groups ``SubscriptionGroupManager.init`` creates.
_BUILT_IN = frozenset((sub.TOOLS_CONSUMER_GROUP, sub.FILTERSRV_CONSUMER_GROUP,
                       sub.SELF_TEST_CONSUMER_GROUP, sub.ONS_HTTP_PROXY_GROUP,
                       sub.CID_ONSAPI_PULL_GROUP, sub.CID_ONSAPI_PERMISSION_GROUP,
                       sub.CID_ONSAPI_OWNER_GROUP))


def _known_groups(ctx: Any) -> set[str]:
    offsets = {key.rpartition("@")[2] for key in ctx.consumer_offsets.offset_table}
    return (set(ctx.subscription_groups.subscription_group_table)
            | set(ctx.consumer_manager.consumer_table) | offsets)


def _progress(ctx: Any, group: str) -> list[dict[str, Any]]:
    rows = inspection.consume_stats(ctx, group)
    for row in rows:
        row["lag"] = max(row["brokerOffset"] - row["consumerOffset"], 0)
    return rows


def group_list(cluster: Any, request: Any) -> list[dict[str, Any]]:
    """``GET /groups``: every group the broker knows (configured, online or holding offsets)."""
    c = controller(cluster, query(request).get("broker"))
    ctx = c.ctx
    system = _system_groups(ctx)
    in_flight: dict[str, int] = {}
    for m in inspection.pop_in_flight(c._pop):
        in_flight[m["group"]] = in_flight.get(m["group"], 0) + 1
    out = []
    for group in sorted(_known_groups(ctx)):
        info = ctx.consumer_manager.get_consumer_group_info(group)
        rows = _progress(ctx, group)
        out.append({
            "group": group, "kind": "system" if group in system else "user",
            "online": bool(info is not None and info.channel_info_table),
            "members": len(info.channel_info_table) if info is not None else 0,
            "consumeType": info.consume_type if info is not None else None,
            "messageModel": info.message_model if info is not None else None,
            "topics": sorted({r["topic"] for r in rows}
                             | set(info.subscription_table if info is not None else ())),
            "lag": sum(r["lag"] for r in rows), "inflight": in_flight.get(group, 0),
        })
    return out


def group_detail(cluster: Any, request: Any, group: str) -> dict[str, Any]:
    """``GET /groups/{group}``: members, subscriptions, per-queue progress, POP in flight."""
    c = controller(cluster, query(request).get("broker"))
    ctx = c.ctx
    if group not in _known_groups(ctx):
        raise ApiError(404, f"no consumer group {group!r} on broker {ctx.broker_name!r}")
    info = ctx.consumer_manager.get_consumer_group_info(group)
    rows = _progress(ctx, group)
    members = [inspection.connection(i) for i in info.channel_info_table.values()] \
        if info is not None else []
    subscriptions = [{"topic": t, "subString": s.sub_string, "expressionType": s.expression_type}
                     for t, s in sorted(info.subscription_table.items())] if info is not None else []
    return {
        "group": group, "online": bool(members),
        "consumeType": info.consume_type if info is not None else None,
        "messageModel": info.message_model if info is not None else None,
        "consumeFromWhere": info.consume_from_where if info is not None else None,
        "members": members, "subscriptions": subscriptions, "queues": rows,
        "lag": sum(r["lag"] for r in rows),
        "inflight": inspection.pop_in_flight(c._pop, group),
    }


def reset_offset(cluster: Any, body: Any, group: str, admin_factory: Any) -> defer.Deferred:
    """``POST /groups/{group}/reset-offset`` ``{"topic", "timestamp"}``: INVOKE_BROKER_TO_RESET_OFFSET
    (forced) on every running broker holding the topic. A group with no online consumer has its
    offsets stored all the same (the broker answers CONSUMER_NOT_ONLINE after storing them)."""
    body = body_object(body)
    topic = body.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ApiError(400, "give the topic whose offsets to reset")
    timestamp = body.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < -1:
        raise ApiError(400, "timestamp is milliseconds since the epoch (-1: the queues' ends)")
    holders = [name for name, c in sorted(cluster.running_brokers().items())
               if c.ctx.topic_config.select_topic_config(topic) is not None]
    if not holders:
        raise ApiError(404, f"no topic {topic!r}")
    from rocketmq_emu.client.admin_common import invoke

    async def run(admin: Any) -> dict[str, Any]:
        ext = {"topic": topic, "group": group, "timestamp": str(timestamp), "isForce": "true"}
        online = True
        for name in holders:
            resp = await invoke(admin, cluster.broker_addrs[name],
                                RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext,
                                ok=(ResponseCode.SUCCESS, ResponseCode.CONSUMER_NOT_ONLINE))
            online = online and resp.code == ResponseCode.SUCCESS
        running = cluster.running_brokers()  # one may have stopped meanwhile
        offsets = [{"broker": name, "queueId": r["queueId"], "offset": r["consumerOffset"]}
                   for name in holders if name in running
                   for r in inspection.consume_stats(running[name].ctx, group, topic)]
        return {"group": group, "topic": topic, "timestamp": timestamp, "online": online,
                "offsets": offsets}

    return admin_factory(run)


def producer_list(cluster: Any, request: Any) -> list[dict[str, Any]]:
    """``GET /producers``: each producer group's connections (GET_PRODUCER_CONNECTION_LIST)."""
    ctx = controller(cluster, query(request).get("broker")).ctx
    table = ctx.producer_manager.group_channel_table
    return [{"group": group, "connections": [inspection.connection(i) for i in channels.values()]}
            for group, channels in sorted(table.items()) if channels]
