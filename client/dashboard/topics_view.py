"""The Topics view: every topic of a broker with its kind, type, queues and offsets; one topic's
queues, route and consumer groups; create or update, and delete.

Reads come from the broker's own topic table and store (``broker.inspection``, what
GET_TOPIC_STATS_INFO answers); writes go over the wire as ``mqadmin`` and rocketmq-dashboard
send them (UPDATE_AND_CREATE_TOPIC to each broker, DELETE_TOPIC_IN_BROKER then
DELETE_TOPIC_IN_NAMESRV), so the brokers register the change with the name server themselves.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker import inspection
from rocketmq_emu.broker.processors.common import validate_topic
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.topic_message_type import TopicMessageType, topic_message_type
from rocketmq_emu.client.api_errors import ApiError
from rocketmq_emu.client.dashboard.common import body_object, controller, query, topic_kind

#: The types a topic can be created with (``message.type``; MIXED and UNSPECIFIED are not
#: offered by ``mqadmin updateTopic`` either).
CREATABLE_TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION")


def _type_name(tc: Any) -> str:
    try:
        return topic_message_type(tc).value
    except ValueError:  # a hand-edited message.type: shown as it is written
        return str(tc.attributes.get("message.type"))


def _summary(ctx: Any, tc: Any) -> dict[str, Any]:
    kind, group = topic_kind(ctx, tc.topic_name)
    return {"topic": tc.topic_name, "kind": kind, "group": group, "type": _type_name(tc),
            "perm": tc.perm, "readQueueNums": tc.read_queue_nums,
            "writeQueueNums": tc.write_queue_nums}


def topic_list(cluster: Any, request: Any) -> list[dict[str, Any]]:
    """``GET /topics``: every topic of the broker, with its queues' min and max offsets."""
    ctx = controller(cluster, query(request).get("broker")).ctx
    out = []
    for name, tc in sorted(ctx.topic_config.topic_config_table.items()):
        row = _summary(ctx, tc)
        queues = inspection.queue_stats(ctx, name, max(tc.read_queue_nums, tc.write_queue_nums),
                                        store_times=False)
        row.update(messages=sum(q["maxOffset"] - q["minOffset"] for q in queues), queues=queues)
        out.append(row)
    return out


def consuming_groups(ctx: Any, topic: str) -> list[str]:
    """Groups subscribed to ``topic`` or holding offsets on it (QUERY_TOPIC_CONSUME_BY_WHO)."""
    groups = ctx.consumer_manager.query_topic_consume_by_who(topic)
    return sorted(groups | ctx.consumer_offsets.which_group_by_topic(topic))


def topic_detail(cluster: Any, request: Any, topic: str) -> dict[str, Any]:
    """``GET /topics/{topic}``: queues with the last store time, route over the running brokers,
    consumer groups."""
    ctx = controller(cluster, query(request).get("broker")).ctx
    tc = ctx.topic_config.select_topic_config(topic)
    if tc is None:
        raise ApiError(404, f"no topic {topic!r} on broker {ctx.broker_name!r}")
    out = _summary(ctx, tc)
    out["attributes"] = dict(tc.attributes)
    out["queues"] = inspection.queue_stats(ctx, topic, max(tc.read_queue_nums, tc.write_queue_nums))
    route = []
    for name, running in sorted(cluster.running_brokers().items()):
        other = running.ctx.topic_config.select_topic_config(topic)
        if other is not None:
            route.append({"broker": name, "addr": cluster.broker_addrs[name],
                          "readQueueNums": other.read_queue_nums,
                          "writeQueueNums": other.write_queue_nums, "perm": other.perm})
    out["route"] = route
    out["groups"] = consuming_groups(ctx, topic)
    return out


def check_topic_name(topic: Any) -> str:
    """A topic name ``TopicValidator.validateTopic`` accepts (the broker's own check), else 400
    with its remark."""
    if not isinstance(topic, str) or not topic:
        raise ApiError(400, "give the topic's name")
    remark = validate_topic(topic)
    if remark is not None:
        raise ApiError(400, f"topic {topic!r}: {remark}")
    return topic


def _queue_count(value: Any) -> int:
    if type(value) is not int:  # not a bool, a float or a string of digits
        raise ApiError(400, f"queues must be an integer, not {value!r}")
    n = value
    if not 1 <= n <= 1024:
        raise ApiError(400, f"queues must be between 1 and 1024, not {n}")
    return n


def create_topic(cluster: Any, body: Any, admin_factory: Any) -> defer.Deferred:
    """``POST /topics``: create or update ``{"topic", "queues", "type", "perm", "broker"}`` on
    the named broker or every running one."""
    body = body_object(body)
    topic = check_topic_name(body.get("topic"))
    queues = _queue_count(body.get("queues", 4))
    perm = body.get("perm", 6)
    if type(perm) is not int or perm not in (2, 4, 6):
        raise ApiError(400, f"perm is 2 (write), 4 (read) or 6 (both), not {perm!r}")
    kind = body.get("type")
    if kind is not None and kind not in CREATABLE_TYPES:
        raise ApiError(400, f"type is one of {', '.join(CREATABLE_TYPES)}, not {kind!r}")
    broker = body.get("broker")
    if broker is not None:
        if not isinstance(broker, str):
            raise ApiError(400, "broker is a broker's name")
        controller(cluster, broker)  # 404 unless it exists and runs
    names = [broker] if broker else [s.name for s in cluster.slots if s.running]
    if not names:
        raise ApiError(503, "no broker is running")
    attributes = f"+message.type={kind}" if kind is not None else None
    order = kind == TopicMessageType.FIFO.value

    async def run(admin: Any) -> dict[str, Any]:
        for name in names:
            await admin.create_topic(topic, queues, perm=perm, order=order, attributes=attributes,
                                     broker_addr=cluster.broker_addrs[name])
        return {"topic": topic, "queues": queues, "type": kind, "perm": perm, "brokers": names}

    return admin_factory(run)


def delete_topic(cluster: Any, topic: str, admin_factory: Any) -> defer.Deferred:
    """``DELETE /topics/{topic}``: from every running broker that has it, then the name server."""
    holders = [name for name, c in sorted(cluster.running_brokers().items())
               if c.ctx.topic_config.select_topic_config(topic) is not None]
    if not holders:
        raise ApiError(404, f"no topic {topic!r}")
    from rocketmq_emu.client.admin_common import invoke

    async def run(admin: Any) -> dict[str, Any]:
        for name in holders:
            await invoke(admin, cluster.broker_addrs[name], RequestCode.DELETE_TOPIC_IN_BROKER,
                         {"topic": topic})
        for addr in admin.instance.namesrv_addrs:
            await invoke(admin, addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})
        return {"topic": topic, "deleted": holders}

    return admin_factory(run)
