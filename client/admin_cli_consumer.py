"""``rmq-emu admin`` consumer subcommands (mqadmin 4.9.8 ``tools/command/{consumer,offset}``),
merged into :mod:`rocketmq_emu.client.admin_cli`.

=====================  =====================================================================
consumerProgress       [-g group [-s true]]: broker offset, consumer offset and diff per
                       queue (208), with -s true the client holding each queue (203 + 307);
                       without -g one line per group (206, 208, 203)
resetOffsetByTime      -g group -t topic -s (ms | now | yyyy-MM-dd#HH:mm:ss:SSS) [-f true]
=====================  =====================================================================
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.message import RETRY_GROUP_TOPIC_PREFIX
from rocketmq_emu.broker.remoting.bodies import decode_mq_map, decode_offset_table
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.client.admin_common import consumer_connection
from rocketmq_emu.client.admin_common import invoke as _invoke
from rocketmq_emu.client.admin_common import masters as _masters
from rocketmq_emu.client.admin_common import route_masters as _route_masters
from rocketmq_emu.client.admin_output import (
    Output,
    UsageError,
    format_ms,
    parse_timestamp,
    version_desc,
)
from rocketmq_emu.client.message import MQClientError


async def consumer_progress(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``ConsumerProgressSubCommand``: one group's queues with ``-g``, else every group."""
    if not args.groupName or not args.groupName.strip():
        await _all_groups_progress(admin, out)
        return
    group = args.groupName.strip()
    show_ip = str(args.showClientIP or "").strip().lower() == "true"
    retry = f"{RETRY_GROUP_TOPIC_PREFIX}{group}"
    try:
        masters = await _route_masters(admin, retry)
    except MQClientError:
        masters = await _masters(admin, None)
    rows = []
    tps = 0.0
    # The owners cost a running-info call per client: asked for with -s true (as mqadmin) or
    # for the JSON document, which always names them.
    owners = await admin.queue_owners(group, list(masters.values())) \
        if show_ip or out.as_json else {}
    for name, addr in masters.items():
        resp = await _invoke(admin, addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": group})
        doc = loads_lenient(resp.body)
        tps += float(doc.get("consumeTps") or 0)
        for (topic, broker, qid), w in sorted(decode_mq_map(doc.get("offsetTable")).items()):
            broker_off = int(w.get("brokerOffset", 0))
            cons_off = int(w.get("consumerOffset", 0))
            owner = owners.get((topic, broker or name, qid), "N/A")
            rows.append((topic, broker or name, qid, broker_off, cons_off, owner,
                         broker_off - cons_off, format_ms(int(w.get("lastTimestamp", 0)))))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    diff_total = sum(r[6] for r in rows)
    if show_ip:
        out.table(("Topic", "Broker Name", "QID", "Broker Offset", "Consumer Offset",
                   "Client IP", "Diff", "LastTime"), rows)
    else:
        out.table(("Topic", "Broker Name", "QID", "Broker Offset", "Consumer Offset", "Diff",
                   "LastTime"), [r[:5] + r[6:] for r in rows])
    out.text("")
    out.text(f"Consume TPS: {tps:.2f}")
    out.text(f"Consume Diff Total: {diff_total}")
    out.doc = {"group": group, "consumeTps": tps, "diffTotal": diff_total, "queues": [
        {"topic": r[0], "brokerName": r[1], "queueId": r[2], "brokerOffset": r[3],
         "consumerOffset": r[4], "clientIP": r[5], "diff": r[6]} for r in rows]}


async def _consume_stats(admin: Any, group: str) -> tuple[int, int] | None:
    """``examineConsumeStats(group)`` summed over the brokers of the group's retry topic:
    (consume TPS as ``(int)``, total diff), or None when no broker answers."""
    try:
        masters = await _route_masters(admin, f"{RETRY_GROUP_TOPIC_PREFIX}{group}")
    except MQClientError:
        return None
    tps = 0.0
    diff = 0
    answered = False
    for addr in masters.values():
        try:
            resp = await _invoke(admin, addr, RequestCode.GET_CONSUME_STATS,
                                 {"consumerGroup": group})
        except Exception:  # the Java tool logs and prints the group's row without stats
            continue
        answered = True
        doc = loads_lenient(resp.body)
        tps += float(doc.get("consumeTps") or 0)
        for w in decode_mq_map(doc.get("offsetTable")).values():
            diff += int(w.get("brokerOffset", 0)) - int(w.get("consumerOffset", 0))
    return (int(tps), diff) if answered else None


async def _all_groups_progress(admin: Any, out: Output) -> None:
    """No ``-g``: one line per group that has a ``%RETRY%`` topic on the name server, with its
    online client count, lowest client version, consume type, message model, TPS and diff
    (``ConsumerProgressSubCommand`` / ``GroupConsumeInfo``)."""
    groups = sorted(t[len(RETRY_GROUP_TOPIC_PREFIX):] for t in await admin.list_topics()
                    if t.startswith(RETRY_GROUP_TOPIC_PREFIX))
    rows = []
    for group in groups:
        stats = await _consume_stats(admin, group)
        try:
            cc: dict[str, Any] | None = await consumer_connection(admin, group)
        except Exception:  # offline: the row says OFFLINE
            cc = None
        conns = (cc or {}).get("connectionSet") or []
        push = (cc or {}).get("consumeType") == "CONSUME_PASSIVELY"
        tps, diff = stats or (0, 0)
        if conns:
            version = version_desc(min(int(c.get("version") or 0) for c in conns))
            ctype = "PUSH" if push else "PULL"
            model = str(cc.get("messageModel") or "") if cc and push else ""
        else:
            version, ctype, model = "OFFLINE", "", ""
        rows.append((group, len(conns), version, ctype, model, tps, diff))
    out.table(("Group", "Count", "Version", "Type", "Model", "TPS", "Diff Total"), rows)
    out.doc = [{"group": g, "count": n, "version": v, "consumeType": t, "messageModel": m,
                "consumeTps": tps, "diffTotal": d} for g, n, v, t, m, tps, d in rows]


async def reset_offset_by_time(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.groupName or not args.topic or args.timestamp is None:
        raise UsageError("-g groupName, -t topic and -s timestamp are required")
    ts = parse_timestamp(args.timestamp)
    force = str(args.force).lower() != "false"
    out.text(f"rollback consumer offset by specified group[{args.groupName}], "
             f"topic[{args.topic}], force[{str(force).lower()}], "
             f"timestamp(string)[{args.timestamp}], timestamp(long)[{ts}]")
    ext = {"topic": args.topic, "group": args.groupName, "timestamp": str(ts),
           "isForce": "true" if force else "false"}
    table: dict[tuple[str, str, int], int] = {}
    offline = []
    for _name, addr in (await _route_masters(admin, args.topic)).items():
        resp = await _invoke(admin, addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext,
                             ok=(ResponseCode.SUCCESS, ResponseCode.CONSUMER_NOT_ONLINE))
        if resp.code == ResponseCode.CONSUMER_NOT_ONLINE:
            offline.append(addr)
            continue
        table.update(decode_offset_table(resp.body))
    if offline:
        # ResetOffsetByTimeOldCommand: no client online, so the offsets are written directly.
        table.update(await _reset_offline(admin, args.topic, args.groupName, ts, force))
    rows = [(b, q, off) for (_t, b, q), off in sorted(table.items())]
    out.table(("brokerName", "queueId", "offset"), rows)
    out.doc = {"group": args.groupName, "topic": args.topic, "timestamp": ts, "force": force,
               "offsets": [{"brokerName": b, "queueId": q, "offset": o} for b, q, o in rows]}


async def _reset_offline(admin: Any, topic: str, group: str, ts: int, force: bool,
                         ) -> dict[tuple[str, str, int], int]:
    from rocketmq_emu.client import api
    from rocketmq_emu.client.route import subscribe_queues

    route = await admin.instance.update_route(topic)
    out: dict[tuple[str, str, int], int] = {}
    for mq in subscribe_queues(topic, route):
        target = await api.max_offset(admin.instance, mq) if ts == -1 else \
            await api.search_offset(admin.instance, mq, ts)
        current = await api.query_consumer_offset(admin.instance, group, mq)
        offset = target if force or current < 0 or target < current else current
        await api.update_consumer_offset(admin.instance, group, mq, offset, oneway=False)
        out[(topic, mq.broker_name, mq.queue_id)] = offset
    return out


Command = Callable[[Any, argparse.Namespace, Output], Any]

COMMANDS: dict[str, tuple[str, Command]] = {
    "consumerProgress": ("Query consumers's progress, speed", consumer_progress),
    "resetOffsetByTime": ("Reset consumer offset by timestamp(without client restart)",
                          reset_offset_by_time),
}


def add_options(name: str, p: argparse.ArgumentParser) -> None:
    """The mqadmin flags of subcommand ``name``."""
    opt = p.add_argument
    if name == "resetOffsetByTime":
        opt("-t", "--topic")
    if name in ("consumerProgress", "resetOffsetByTime"):
        opt("-g", "--groupName", help="consumer group name (consumerProgress without it: every "
            "group)" if name == "consumerProgress" else "consumer group name")
    if name == "consumerProgress":
        opt("-s", "--showClientIP", help="true: a Client IP column (the client holding each "
            "queue)")
    if name == "resetOffsetByTime":
        opt("-s", "--timestamp")
        opt("-f", "--force", default="true")
        opt("-c", "--cplus", action="store_true", help="reset a C++ client's offsets")
