"""``rmq-emu admin`` topic and cluster subcommands (mqadmin 4.9.8 ``tools/command/{topic,
cluster,broker}``), merged into :mod:`rocketmq_emu.client.admin_cli`.

=====================  =====================================================================
updateTopic            -t topic (-b addr | -c cluster) [-r 8] [-w 8] [-p 6] [-o false]
                       [-a +message.type=FIFO]: RocketMQ 5 attributes (``+k=v,-k``)
deleteTopic            -t topic -c cluster: brokers (215) then name servers (216)
topicList              [-c]: topic names (206); with -c also cluster and consumer groups
topicRoute             -t topic: the route (105) as pretty JSON
topicStatus            -t topic: min / max offset and last update per queue (202)
clusterList            [-c cluster]: brokers per cluster with version and load (106 + 28)
brokerStatus           -b addr | -c cluster (one is required): the runtime info (28)
=====================  =====================================================================
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.bodies import decode_mq_map
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.topic_attributes import (
    AttributeRequestError,
    java_map_str,
    parse_to_map,
    parse_to_string,
)
from rocketmq_emu.client.admin_common import invoke as _invoke
from rocketmq_emu.client.admin_common import masters as _masters
from rocketmq_emu.client.admin_common import route_masters as _route_masters
from rocketmq_emu.client.admin_output import Output, UsageError, format_ms
from rocketmq_emu.client.message import MQBrokerError, MQClientError


async def _cluster(admin: Any) -> dict[str, Any]:
    return await admin.cluster_info()


# --- commands ------------------------------------------------------------------------------------
async def update_topic(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.topic:
        raise UsageError("-t topic is required")
    if args.brokerAddr:
        addrs = [args.brokerAddr]
    elif args.clusterName:
        addrs = list((await _masters(admin, args.clusterName)).values())
    else:
        raise UsageError("give -b brokerAddr or -c clusterName")
    order = str(args.order).lower() == "true"
    modification = _attributes_option(args.attributes)
    ext = {"topic": args.topic, "defaultTopic": "TBW102",
           "readQueueNums": str(args.readQueueNums), "writeQueueNums": str(args.writeQueueNums),
           "perm": str(args.perm), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
           "order": "true" if order else "false", "attributes": parse_to_string(modification)}
    for addr in addrs:
        await _invoke(admin, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext)
        out.text(f"create topic to {addr} success.")
    config = {"topicName": args.topic, "readQueueNums": args.readQueueNums,
              "writeQueueNums": args.writeQueueNums, "perm": args.perm, "order": order,
              "attributes": modification}
    out.text(f"TopicConfig [topicName={args.topic}, readQueueNums={args.readQueueNums}, "
             f"writeQueueNums={args.writeQueueNums}, perm={args.perm}, "
             f"topicFilterType=SINGLE_TAG, topicSysFlag=0, order={str(order).lower()}, "
             f"attributes={java_map_str(modification)}]")
    out.doc = {"brokers": addrs, "topicConfig": config}


def _attributes_option(value: str | None) -> dict[str, str]:
    """``-a``: parsed before anything is sent, as mqadmin 5.x does (``AttributeParser``)."""
    if value is None:
        return {}
    try:
        return parse_to_map(value.strip())
    except AttributeRequestError as exc:
        raise UsageError(f"-a {value}: {exc}") from None


async def delete_topic(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.topic or not args.clusterName:
        raise UsageError("-t topic and -c clusterName are required")
    masters = await _masters(admin, args.clusterName)
    for addr in masters.values():
        await _invoke(admin, addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": args.topic})
    out.text(f"delete topic [{args.topic}] from cluster [{args.clusterName}] success.")
    for ns in admin.instance.namesrv_addrs:
        await _invoke(admin, ns, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": args.topic})
    out.text(f"delete topic [{args.topic}] from NameServer success.")
    out.doc = {"topic": args.topic, "cluster": args.clusterName, "brokers": list(masters.values())}


async def topic_list(admin: Any, args: argparse.Namespace, out: Output) -> None:
    topics = await admin.list_topics()
    if not args.clusterModel:
        for t in topics:
            out.text(t)
        out.doc = {"topicList": topics}
        return
    info = await _cluster(admin)
    broker_cluster = {b: c for c, names in (info.get("clusterAddrTable") or {}).items()
                      for b in names}
    rows = []
    for topic in topics:
        try:
            masters = await _route_masters(admin, topic)
        except MQClientError:
            continue
        clusters = sorted({broker_cluster.get(b, "") for b in masters})
        groups: set[str] = set()
        for addr in masters.values():
            try:
                resp = await _invoke(admin, addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                     {"topic": topic})
                groups.update(jsonutil.loads(resp.body).get("groupList") or [])
            except Exception:
                pass
        for cluster in clusters:
            for group in sorted(groups) or [""]:
                rows.append((cluster, topic, group))
    out.table(("Cluster Name", "Topic", "Consumer Group"), rows)
    out.doc = [{"cluster": c, "topic": t, "consumerGroup": g} for c, t, g in rows]


async def topic_route(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.topic:
        raise UsageError("-t topic is required")
    resp = await admin.instance.invoke_namesrv(RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": args.topic}))
    if resp.code != ResponseCode.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark)
    doc = jsonutil.loads(resp.body)
    out.text(json.dumps(doc, indent=2, sort_keys=True))
    out.doc = doc


async def topic_status(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.topic:
        raise UsageError("-t topic is required")
    rows = []
    for name, addr in (await _route_masters(admin, args.topic)).items():
        resp = await _invoke(admin, addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": args.topic})
        table = decode_mq_map(loads_lenient(resp.body).get("offsetTable"))
        for (_t, broker, qid), st in sorted(table.items()):
            rows.append((broker or name, qid, int(st.get("minOffset", 0)),
                         int(st.get("maxOffset", 0)), int(st.get("lastUpdateTimestamp", 0))))
    rows.sort()
    out.table(("Broker Name", "QID", "Min Offset", "Max Offset", "Last Updated"),
              [(b, q, mn, mx, format_ms(ts)) for b, q, mn, mx, ts in rows])
    out.doc = [{"brokerName": b, "queueId": q, "minOffset": mn, "maxOffset": mx,
                "lastUpdateTimestamp": ts} for b, q, mn, mx, ts in rows]


def _first(text: str | None) -> str:
    return (text or "0").split(" ")[0]


async def cluster_list(admin: Any, args: argparse.Namespace, out: Output) -> None:
    info = await _cluster(admin)
    brokers = info.get("brokerAddrTable") or {}
    rows = []
    for cluster, names in sorted((info.get("clusterAddrTable") or {}).items()):
        if args.clusterName and cluster != args.clusterName:
            continue
        for name in sorted(names):
            addrs = (brokers.get(name) or {}).get("brokerAddrs") or {}
            for bid, addr in sorted(addrs.items(), key=lambda kv: int(kv[0])):
                kv: dict[str, str] = {}
                try:
                    resp = await _invoke(admin, addr, RequestCode.GET_BROKER_RUNTIME_INFO)
                    kv = jsonutil.loads(resp.body).get("table") or {}
                except Exception:
                    pass
                earliest = int(kv.get("earliestMessageTimeStamp", "0") or 0)
                hours = (time.time() * 1000 - earliest) / 3_600_000 if earliest > 0 else 0.0
                space = float(kv.get("commitLogDiskRatio", "0") or 0)
                rows.append((cluster, name, bid, addr, kv.get("brokerVersionDesc", ""),
                             f"{float(_first(kv.get('putTps'))):9.2f}(0,0ms)",
                             f"{float(_first(kv.get('getTransferedTps'))):9.2f}(0,0ms)",
                             kv.get("pageCacheLockTimeMills", "0"), f"{hours:.2f}",
                             f"{space:.4f}"))
    out.table(("Cluster Name", "Broker Name", "BID", "Addr", "Version", "InTPS(LOAD)",
               "OutTPS(LOAD)", "PCWait(ms)", "Hour", "SPACE"), rows)
    out.doc = [{"cluster": r[0], "brokerName": r[1], "brokerId": r[2], "addr": r[3],
                "version": r[4]} for r in rows]


async def broker_status(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if args.brokerAddr:
        addrs = [args.brokerAddr]
    elif args.clusterName:
        addrs = list((await _masters(admin, args.clusterName)).values())
    else:
        raise UsageError("needs -b brokerAddr or -c clusterName")
    doc = {}
    per_broker = not args.brokerAddr  # -c: every line and the JSON are keyed by address
    for addr in addrs:
        resp = await _invoke(admin, addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        kv = dict(sorted((jsonutil.loads(resp.body).get("table") or {}).items()))
        doc[addr] = kv
        for key, value in kv.items():
            if per_broker:
                out.text(f"{addr:<24} {key:<32}: {value}")
            else:
                out.text(f"{key:<32}: {value}")
    out.doc = doc if per_broker else doc[addrs[0]]


Command = Callable[[Any, argparse.Namespace, Output], Any]

COMMANDS: dict[str, tuple[str, Command]] = {
    "updateTopic": ("Update or create topic", update_topic),
    "deleteTopic": ("Delete topic from broker and NameServer", delete_topic),
    "topicList": ("Fetch all topic list from name server", topic_list),
    "topicRoute": ("Examine topic route info", topic_route),
    "topicStatus": ("Examine topic Status info", topic_status),
    "clusterList": ("List cluster infos", cluster_list),
    "brokerStatus": ("Fetch broker runtime status data (needs -b or -c)", broker_status),
}


def add_options(name: str, p: argparse.ArgumentParser) -> None:
    """The mqadmin flags of subcommand ``name``."""
    opt = p.add_argument
    if name in ("updateTopic", "deleteTopic", "topicRoute", "topicStatus"):
        opt("-t", "--topic")
    if name == "brokerStatus":
        opt("-b", "--brokerAddr", help="Broker address (this or -c is required)")
        opt("-c", "--clusterName", help="which cluster (this or -b is required)")
    if name == "updateTopic":
        opt("-b", "--brokerAddr")
    if name in ("updateTopic", "deleteTopic", "clusterList"):
        opt("-c", "--clusterName")
    if name == "topicList":
        opt("-c", "--clusterModel", action="store_true", help="print cluster and groups")
    if name == "updateTopic":
        opt("-r", "--readQueueNums", type=int, default=8)
        opt("-w", "--writeQueueNums", type=int, default=8)
        opt("-p", "--perm", type=int, default=6)
        opt("-o", "--order", default="false")
        opt("-a", "--attributes", help="attribute(+a=b,+c=d,-e); a deletion first: -a=-e")
