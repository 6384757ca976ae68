"""``rmq-emu admin`` broker subcommands (mqadmin 4.9.8 ``tools/command/{broker,stats,queue,
producer,offset}``), merged into :mod:`rocketmq_emu.client.admin_cli`.

=======================  ===================================================================
brokerConsumeStats       -b addr [-t timeoutMillis] [-l diffLevel] [-o order]: every group's
                         offsets on the broker (317)
cleanExpiredCQ           [-b addr | -c cluster]: destroy expired consume queues (306)
cleanUnusedTopic         [-b addr | -c cluster]: destroy queues of deleted topics (316)
deleteExpiredCommitLog   [-b addr | -c cluster]: delete expired commitlog files now (329)
cloneGroupOffset         -s srcGroup -d destGroup -t topic [-o offline]: copy offsets (208, 15)
statsAll                 [-a] [-t topic]: in / out TPS and 24 h counts per topic and group (315)
queryCq                  -t topic -q queueId -i index [-c 10] [-b addr] [-g group]: raw units
                         of a consume queue (321)
producer                 -b addr: every producer connection of the broker (328)
=======================  ===================================================================
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.bodies import decode_mq_map
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.client.admin_common import all_addrs, invoke, route_masters
from rocketmq_emu.client.admin_output import Output, UsageError
from rocketmq_emu.client.message import MQClientError

#: Separator line of mqadmin's ``queryCq``.
_RULE = "======================================"


def _java_time(ms: int) -> str:
    """``UtilAll.formatDate(date, YYYY_MM_DD_HH_MM_SS)``."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _java_bool(text: str | None) -> bool:
    return str(text).strip().lower() == "true"


async def broker_consume_stats(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``BrokerConsumeStatsSubCommad``: rows with a last consume time and diff >= ``-l``."""
    if not args.brokerAddr:
        raise UsageError("-b brokerAddr is required")
    timeout = int(args.timeoutMillis) / 1000.0 if args.timeoutMillis else 50.0
    level = int(args.level or 0)
    doc = await admin.fetch_consume_stats_in_broker(args.brokerAddr.strip(),
                                                    _java_bool(args.order), timeout)
    rows = []
    for entry in doc.get("consumeStatsList") or []:
        for group, stats_list in entry.items():
            for stats in stats_list:
                for (topic, broker, qid), w in sorted(stats["offsetTable"].items()):
                    diff = int(w.get("brokerOffset", 0)) - int(w.get("consumerOffset", 0))
                    last = int(w.get("lastTimestamp", 0))
                    if diff < level or last <= 0:
                        continue
                    rows.append((topic, group, broker, qid, int(w.get("brokerOffset", 0)),
                                 int(w.get("consumerOffset", 0)), diff, _java_time(last)))
    out.table(("Topic", "Group", "Broker Name", "QID", "Broker Offset", "Consumer Offset",
               "Diff", "LastTime"), rows)
    out.text("")
    out.text(f"Diff Total: {int(doc.get('totalDiff') or 0)}")
    out.doc = {"brokerAddr": doc.get("brokerAddr"), "totalDiff": doc.get("totalDiff"),
               "queues": [dict(zip(("topic", "group", "brokerName", "queueId", "brokerOffset",
                                    "consumerOffset", "diff", "lastTime"), r, strict=True))
                          for r in rows]}


def _cleaner(method: str) -> Callable[[Any, argparse.Namespace, Output], Any]:
    """``CleanExpiredCQSubCommand`` / ``CleanUnusedTopicCommand`` /
    ``DeleteExpiredCommitLogSubCommand``: ``-b`` one broker, else every broker of ``-c`` (or
    of every cluster); prints ``success`` or ``false`` (the last broker's answer)."""
    async def run(admin: Any, args: argparse.Namespace, out: Output) -> None:
        if args.brokerAddr:
            addrs = [args.brokerAddr.strip()]
        else:
            addrs = await all_addrs(admin, args.cluster.strip() if args.cluster else None)
        result = False
        for addr in addrs:
            result = await getattr(admin, method)(addr)
        out.text("success" if result else "false")
        out.doc = {"result": result, "brokers": addrs}
    return run


async def clone_group_offset(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``CloneGroupOffsetCommand``: the source group's consumer offsets (208) written for the
    destination group (UPDATE_CONSUMER_OFFSET) on the brokers of ``-t``'s route."""
    if not (args.srcGroup and args.destGroup and args.topic):
        raise UsageError("-s srcGroup, -d destGroup and -t topic are required")
    src, dest, topic = args.srcGroup.strip(), args.destGroup.strip(), args.topic.strip()
    try:
        masters = await route_masters(admin, f"%RETRY%{src}")
    except MQClientError:
        masters = await route_masters(admin, topic)
    table: dict[tuple[str, str, int], dict[str, Any]] = {}
    for addr in masters.values():
        resp = await invoke(admin, addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": src})
        table.update(decode_mq_map(loads_lenient(resp.body).get("offsetTable")))
    brokers = await route_masters(admin, topic) if table else {}
    cloned = []
    for (mq_topic, broker, qid), w in sorted(table.items()):
        offset = int(w.get("consumerOffset", -1))
        if offset < 0:
            continue
        addr = brokers.get(broker)
        if addr is None:
            raise MQClientError(f"broker {broker} of {mq_topic} is not in {topic}'s route")
        await invoke(admin, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                     {"consumerGroup": dest, "topic": mq_topic, "queueId": str(qid),
                      "commitOffset": str(offset)})
        cloned.append({"topic": mq_topic, "brokerName": broker, "queueId": qid,
                       "offset": offset})
    out.text(f"clone group offset success. srcGroup[{src}], destGroup=[{dest}], "
             f"topic[{topic}]")
    out.doc = {"srcGroup": src, "destGroup": dest, "topic": topic, "offsets": cloned}


def _sum_24h(data: dict[str, Any]) -> int:
    """``StatsAllSubCommand.compute24HourSum``: the day, else hour, else minute sum."""
    for window in ("statsDay", "statsHour", "statsMinute"):
        value = int((data.get(window) or {}).get("sum") or 0)
        if value:
            return value
    return 0


async def _stats(admin: Any, addr: str, name: str, key: str) -> tuple[float, int]:
    try:
        data = await admin.view_broker_stats_data(addr, name, key) or {}
    except Exception:  # the Java command skips brokers without the item
        return 0.0, 0
    return float((data.get("statsMinute") or {}).get("tps") or 0.0), _sum_24h(data)


async def stats_all(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``StatsAllSubCommand``: per topic and consumer group, accumulation, in / out TPS of the
    last minute and messages of the last 24 h (VIEW_BROKER_STATS_DATA on every master)."""
    rows: list[tuple[Any, ...]] = []
    for topic in await admin.list_topics():
        if topic.startswith(("%RETRY%", "%DLQ%")) or (args.topic and topic != args.topic):
            continue
        try:
            masters = await route_masters(admin, topic)
        except MQClientError:
            continue
        in_tps, in_24h = 0.0, 0
        groups: set[str] = set()
        for addr in masters.values():
            tps, total = await _stats(admin, addr, "TOPIC_PUT_NUMS", topic)
            in_tps, in_24h = in_tps + tps, in_24h + total
            try:
                resp = await invoke(admin, addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                    {"topic": topic})
                groups.update(loads_lenient(resp.body).get("groupList") or [])
            except Exception:
                pass
        if not groups:
            if not args.activeTopic or in_24h > 0:
                rows.append((topic, "", 0, f"{in_tps:.2f}", "", in_24h, "NO_CONSUMER"))
            continue
        for group in sorted(groups):
            out_tps, out_24h, accumulate = 0.0, 0, 0
            for addr in masters.values():
                tps, total = await _stats(admin, addr, "GROUP_GET_NUMS", f"{topic}@{group}")
                out_tps, out_24h = out_tps + tps, out_24h + total
                try:
                    resp = await invoke(admin, addr, RequestCode.GET_CONSUME_STATS,
                                        {"consumerGroup": group, "topic": topic})
                    for w in decode_mq_map(loads_lenient(resp.body).get("offsetTable")).values():
                        accumulate += int(w.get("brokerOffset", 0)) - int(
                            w.get("consumerOffset", 0))
                except Exception:
                    pass
            if not args.activeTopic or in_24h > 0 or out_24h > 0:
                rows.append((topic, group, max(accumulate, 0), f"{in_tps:.2f}",
                             f"{out_tps:.2f}", in_24h, out_24h))
    out.table(("Topic", "Consumer Group", "Accumulation", "InTPS", "OutTPS", "InMsg24Hour",
               "OutMsg24Hour"), rows)
    out.doc = [dict(zip(("topic", "consumerGroup", "accumulation", "inTps", "outTps",
                         "inMsg24Hour", "outMsg24Hour"), r, strict=True)) for r in rows]


def _cq_data_text(unit: dict[str, Any]) -> str:
    """``ConsumeQueueData.toString()``."""
    def q(key: str) -> str:
        return f"'{unit.get(key)}'" if unit.get(key) is not None else "'null'"
    return (f"ConsumeQueueData{{physicOffset={unit.get('physicOffset', 0)}, "
            f"physicSize={unit.get('physicSize', 0)}, tagsCode={unit.get('tagsCode', 0)}, "
            f"extendDataJson={q('extendDataJson')}, bitMap={q('bitMap')}, "
            f"eval={str(bool(unit.get('eval'))).lower()}, msg={q('msg')}}}")


async def query_cq(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``QueryConsumeQueueCommand``: units of one consume queue from ``-i``."""
    if not args.topic or args.queue is None or args.index is None:
        raise UsageError("-t topic, -q queue and -i index are required")
    topic = args.topic.strip()
    broker = (args.broker or "").strip()
    if not broker:
        route = await admin.instance.update_route(topic)
        if route is None or not route.broker_datas:
            raise MQClientError("No topic route data!")
        addrs = route.broker_datas[0].broker_addrs
        broker = addrs.get(0) or addrs.get("0") or ""
    index = int(args.index)
    body = await admin.query_consume_queue(broker, topic, int(args.queue), index,
                                           int(args.count), args.consumer)
    if body.get("subscriptionData") is not None:
        out.text("Subscription data: ")
        out.text(json.dumps(body["subscriptionData"], indent="\t"))
        out.text(_RULE)
    if body.get("filterData") is not None:
        out.text("Filter data: ")
        out.text(str(body["filterData"]))
        out.text(_RULE)
    out.text("Queue data: ")
    out.text(f"max: {int(body.get('maxQueueIndex') or 0)}, "
             f"min: {int(body.get('minQueueIndex') or 0)}")
    out.text(_RULE)
    for i, unit in enumerate(body.get("queueData") or [], start=index):
        out.text(f"idx: {i}")
        out.text(_cq_data_text(unit))
        out.text(_RULE)
    out.doc = body


async def producer(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``ProducerSubCommand``: one line per producer instance (``ProducerInfo.toString``)."""
    if not args.broker:
        raise UsageError("-b broker is required")
    table = await admin.get_all_producer_info(args.broker.strip())
    for group, infos in table.items():
        if not infos:
            out.text(f"producer group ({group}) instances are empty")
            continue
        for p in infos:
            out.text(f"producer group ({group}) instance : clientId={p.get('clientId')},"
                     f"remoteIP={p.get('remoteIP')}, language={p.get('language')}, "
                     f"version={p.get('version')}, "
                     f"lastUpdateTimestamp={p.get('lastUpdateTimestamp')}")
    out.doc = table


Command = Callable[[Any, argparse.Namespace, Output], Any]

COMMANDS: dict[str, tuple[str, Command]] = {
    "brokerConsumeStats": ("Fetch broker consume stats data", broker_consume_stats),
    "cleanExpiredCQ": ("Clean expired ConsumeQueue on broker.",
                       _cleaner("clean_expired_consume_queue")),
    "cleanUnusedTopic": ("Clean unused topic on broker.", _cleaner("clean_unused_topic")),
    "deleteExpiredCommitLog": ("Delete expired CommitLog files",
                               _cleaner("delete_expired_commitlog")),
    "cloneGroupOffset": ("clone offset from other group.", clone_group_offset),
    "statsAll": ("Topic and Consumer tps stats", stats_all),
    "queryCq": ("Query cq command.", query_cq),
    "producer": ("Query producer's instances, connection, status, etc.", producer),
}


def add_options(name: str, p: argparse.ArgumentParser) -> None:
    """The mqadmin flags of subcommand ``name`` (long names as mqadmin spells them)."""
    opt = p.add_argument
    if name == "brokerConsumeStats":
        opt("-b", "--brokerAddr", help="Broker address")
        opt("-t", "--timeoutMillis", help="request timeout Millis")
        opt("-l", "--level", help="threshold of print diff")
        opt("-o", "--order", help="order topic")
    elif name in ("cleanExpiredCQ", "cleanUnusedTopic", "deleteExpiredCommitLog"):
        opt("-b", "--brokerAddr", help="Broker address")
        opt("-c", "--cluster", help="cluster name")
    elif name == "cloneGroupOffset":
        opt("-s", "--srcGroup", help="set source consumer group")
        opt("-d", "--destGroup", help="set destination consumer group")
        opt("-t", "--topic", help="set the topic")
        opt("-o", "--offline", help="the group or the topic is offline")
    elif name == "statsAll":
        opt("-a", "--activeTopic", action="store_true", help="print active topic only")
        opt("-t", "--topic", help="print select topic only")
    elif name == "queryCq":
        opt("-t", "--topic", help="topic name")
        opt("-q", "--queue", help="queue num, ie. 1")
        opt("-i", "--index", help="start queue index.")
        opt("-c", "--count", default="10", help="how many.")
        opt("-b", "--broker", help="broker addr.")
        opt("-g", "--consumer", help="consumer group.")
    elif name == "producer":
        opt("-b", "--broker", help="broker address")
