"""The Messages and DLQ views: find messages by topic and store time, by key or by id; one
message in full (properties, body, store host, which groups consumed it); hand it again to a
consumer group; a group's dead letters.

Searches read the broker's store as QUERY_MESSAGE and VIEW_MESSAGE_BY_ID do (the index for keys
and client ids, the consume queues' time search for ranges); a resend goes over the wire as
CONSUME_MESSAGE_DIRECTLY, as rocketmq-dashboard sends it.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.message import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    decode_offset_msg_id,
)
from rocketmq_emu.broker.topic_attributes import JAVA_LONG_MAX
from rocketmq_emu.client.api_errors import ApiError
from rocketmq_emu.client.dashboard.common import body_object, controller, int_arg, query
from rocketmq_emu.client.dashboard.topics_view import consuming_groups
from rocketmq_emu.client.message import MessageExt

#: The most messages one search returns (rocketmq-dashboard's own cap is 2,000 per query).
MAX_RESULTS = 1000
#: The largest body the message view shows; a larger one is named, not shown.
MAX_BODY_SHOWN = 256 * 1024
#: A search without ``end`` reaches this far past the business clock's now (clients' clocks).
_END_SLACK_MS = 24 * 3600 * 1000


def summary(m: MessageExt, broker: str) -> dict[str, Any]:
    """A message as a search result lists it."""
    return {"msgId": m.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or m.offset_msg_id,
            "offsetMsgId": m.offset_msg_id,
            "topic": m.topic, "queueId": m.queue_id, "queueOffset": m.queue_offset,
            "tags": m.tags, "keys": m.keys, "bornTimestamp": m.born_timestamp,
            "storeTimestamp": m.store_timestamp, "bodySize": len(m.body), "broker": broker}


def render_body(body: bytes) -> tuple[str, str]:
    """``(text, "text")`` when the body is UTF-8 without control characters other than tab and
    line breaks, else ``(hex, "hex")``."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body.hex(" "), "hex"
    if any(ord(ch) < 32 and ch not in "\t\r\n" for ch in text):
        return body.hex(" "), "hex"
    return text, "text"


def _read(store: Any, phy: int) -> MessageExt | None:
    rec = store.look_message_by_offset(phy)
    return MessageExt.from_record(rec) if rec is not None else None


def _topic_config(ctx: Any, topic: str) -> Any:
    tc = ctx.topic_config.select_topic_config(topic)
    if tc is None:
        raise ApiError(404, f"no topic {topic!r} on broker {ctx.broker_name!r}")
    return tc


def by_time(ctx: Any, topic: str, begin: int, end: int, limit: int) -> tuple[list[MessageExt], bool]:
    """Messages of ``topic`` stored within [begin, end], earliest first, at most ``limit``
    (and whether more were there): each queue is entered where ``getOffsetInQueueByTime``
    puts ``begin`` and read until ``end``."""
    tc = _topic_config(ctx, topic)
    store = ctx.store
    found: list[MessageExt] = []
    for qid in range(tc.read_queue_nums):
        offset = max(store.get_offset_in_queue_by_time(topic, qid, begin),
                     store.get_min_offset_in_queue(topic, qid), 0)
        high = store.get_max_offset_in_queue(topic, qid)
        taken = 0
        while offset < high and taken <= limit:
            units = store.get_consume_queue_units(topic, qid, offset, min(64, limit + 1))
            if not units:
                break
            offset += len(units)
            for phy, _size, _tags in units:
                m = _read(store, phy)
                if m is None or m.store_timestamp < begin:
                    continue
                if m.store_timestamp > end:
                    offset = high
                    break
                found.append(m)
                taken += 1
    found.sort(key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))
    return found[:limit], len(found) > limit


def by_key(ctx: Any, topic: str, key: str, limit: int, unique: bool = False) -> list[MessageExt]:
    """Messages of ``topic`` whose KEYS hold ``key`` (or whose UNIQ_KEY is ``key``), from the
    index as QUERY_MESSAGE finds them (an index hit is checked against the message: keys share
    hash slots)."""
    store = ctx.store
    result = store.query_message_offsets(topic, key, limit, 0, JAVA_LONG_MAX)
    out = []
    for phy in result.phy_offsets:
        m = _read(store, phy)
        if m is None or m.topic != topic:
            continue
        if (m.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == key) if unique else (key in m.keys):
            out.append(m)
    out.sort(key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))
    return out


def find_by_id(cluster: Any, msg_id: str, topic: str | None) -> tuple[MessageExt, str] | None:
    """The message an offset id (its store host and commitlog offset) or a client id (UNIQ_KEY,
    looked up in the index of ``topic``, or of every topic) names, and its broker."""
    try:
        host, port, offset = decode_offset_msg_id(msg_id)
    except ValueError:
        host, port, offset = "", 0, -1
    for name, c in sorted(cluster.running_brokers().items()):
        if offset >= 0 and (host, port) == tuple(c.ctx.store_host):
            m = _read(c.ctx.store, offset)
            if m is not None:
                return m, name
    for name, c in sorted(cluster.running_brokers().items()):
        topics = [topic] if topic else sorted(c.ctx.topic_config.topic_config_table)
        for t in topics:
            found = by_key(c.ctx, t, msg_id, 4, unique=True)
            if found:
                return found[0], name
    return None


def search(cluster: Any, request: Any, now_ms: int) -> dict[str, Any]:
    """``GET /messages/search``: ``id=``, or ``topic=`` with ``key=`` or ``begin=``/``end=``."""
    q = query(request)
    limit = int_arg(q, "max", 64, low=1, high=MAX_RESULTS)
    if q.get("id"):
        hit = find_by_id(cluster, q["id"].strip(), q.get("topic") or None)
        return {"messages": [summary(*hit)] if hit else [], "truncated": False}
    topic = q.get("topic")
    if not topic:
        raise ApiError(400, "give a topic (with key=, or begin= and end=), or id=")
    c = controller(cluster, q.get("broker"))
    if q.get("key"):
        _topic_config(c.ctx, topic)
        found = by_key(c.ctx, topic, q["key"], limit + 1)
        return {"messages": [summary(m, c.ctx.broker_name) for m in found[:limit]],
                "truncated": len(found) > limit}
    begin = int_arg(q, "begin", 0, low=0)
    end = int_arg(q, "end", now_ms + _END_SLACK_MS, low=0)
    if end < begin:
        raise ApiError(400, f"the time range runs backwards: end {end} is before begin {begin}")
    found, truncated = by_time(c.ctx, topic, begin, end, limit)
    return {"messages": [summary(m, c.ctx.broker_name) for m in found], "truncated": truncated}


def _track(ctx: Any, m: MessageExt) -> list[dict[str, str]]:
    """Which groups consumed ``m``, as ``DefaultMQAdminExtImpl.messageTrackDetail`` says it: a
    group without online consumers is NOT_ONLINE, a broadcasting one CONSUME_BROADCASTING, a
    pulling one PULL; else CONSUMED when its committed offset passed the message
    (CONSUMED_BUT_FILTERED when its subscription's tags leave it out), NOT_CONSUME_YET if not."""
    out = []
    units = ctx.store.get_consume_queue_units(m.topic, m.queue_id, m.queue_offset, 1)
    tags_code = units[0][2] if units else None
    for group in consuming_groups(ctx, m.topic):
        info = ctx.consumer_manager.get_consumer_group_info(group)
        if info is None or not info.channel_info_table:
            status = "NOT_ONLINE"
        elif info.message_model == "BROADCASTING":
            status = "CONSUME_BROADCASTING"
        elif info.consume_type == "CONSUME_ACTIVELY":
            status = "PULL"
        elif ctx.consumer_offsets.query_offset(group, m.topic, m.queue_id) > m.queue_offset:
            sub = info.subscription_table.get(m.topic)
            status = "CONSUMED" if sub is None or sub.matches_tags_code(tags_code) \
                else "CONSUMED_BUT_FILTERED"
        else:
            status = "NOT_CONSUME_YET"
        out.append({"group": group, "status": status})
    return out


def _found(cluster: Any, msg_id: str, request: Any) -> tuple[MessageExt, str]:
    hit = find_by_id(cluster, msg_id, query(request).get("topic") or None)
    if hit is None:
        raise ApiError(404, f"no message {msg_id!r}")
    return hit


def detail(cluster: Any, request: Any, msg_id: str) -> dict[str, Any]:
    """``GET /messages/{id}``: the message with its properties, body and consumers."""
    m, broker = _found(cluster, msg_id, request)
    ctx = cluster.running_brokers()[broker].ctx
    out = summary(m, broker)
    out.update(properties=dict(m.properties), storeHost=f"{m.store_host[0]}:{m.store_host[1]}",
               bornHost=f"{m.born_host[0]}:{m.born_host[1]}", reconsumeTimes=m.reconsume_times,
               commitLogOffset=m.commitlog_offset, consumedBy=_track(ctx, m))
    if len(m.body) > MAX_BODY_SHOWN:
        out.update(body=None, bodyEncoding=None,
                   bodyError=f"the body is {len(m.body):,} bytes, more than the "
                             f"{MAX_BODY_SHOWN:,} the dashboard shows")
    else:
        out["body"], out["bodyEncoding"] = render_body(m.body)
    return out


def body(cluster: Any, request: Any, msg_id: str) -> dict[str, Any]:
    """``GET /messages/{id}/body``: the body alone; 413 when larger than the page shows."""
    m, _ = _found(cluster, msg_id, request)
    if len(m.body) > MAX_BODY_SHOWN:
        raise ApiError(413, f"the body is {len(m.body):,} bytes, more than the "
                            f"{MAX_BODY_SHOWN:,} the dashboard shows")
    text, encoding = render_body(m.body)
    return {"body": text, "bodyEncoding": encoding, "bodySize": len(m.body)}


def resend(cluster: Any, request: Any, body_: Any, msg_id: str,
           admin_factory: Any) -> defer.Deferred:
    """``POST /messages/{id}/resend`` ``{"group", "clientId"?}``: CONSUME_MESSAGE_DIRECTLY to
    one online consumer of the group (``MessageController.consumeMessageDirectly``)."""
    doc = body_object(body_)
    group = doc.get("group")
    if not isinstance(group, str) or not group:
        raise ApiError(400, "give the consumer group to hand the message to")
    m, broker = _found(cluster, msg_id, request)
    ctx = cluster.running_brokers()[broker].ctx
    info = ctx.consumer_manager.get_consumer_group_info(group)
    clients = info.all_client_ids() if info is not None else []
    if not clients:
        raise ApiError(409, f"consumer group {group!r} has no online consumer to hand it to")
    client_id = doc.get("clientId") or clients[0]
    if client_id not in clients:
        raise ApiError(404, f"no consumer {client_id!r} in group {group!r}")

    async def run(admin: Any) -> dict[str, Any]:
        result = await admin.consume_message_directly(group, client_id, m.offset_msg_id)
        return {"group": group, "clientId": client_id, "result": result}

    return admin_factory(run)


def dlq(cluster: Any, request: Any, group: str, now_ms: int) -> dict[str, Any]:
    """``GET /dlq/{group}``: the group's dead letters (``%DLQ%group``), earliest first."""
    q = query(request)
    limit = int_arg(q, "max", 64, low=1, high=MAX_RESULTS)
    c = controller(cluster, q.get("broker"))
    topic = DLQ_GROUP_TOPIC_PREFIX + group
    if c.ctx.topic_config.select_topic_config(topic) is None:
        return {"group": group, "topic": topic, "messages": [], "truncated": False}
    found, truncated = by_time(c.ctx, topic, 0, now_ms + _END_SLACK_MS, limit)
    return {"group": group, "topic": topic, "truncated": truncated,
            "messages": [summary(m, c.ctx.broker_name) for m in found]}
