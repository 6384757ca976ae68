"""``rmq-emu admin``: ``mqadmin``-style subcommands over the remoting protocol.

Subcommand names and flags follow Apache RocketMQ's ``mqadmin`` (``tools/command/*``):
``-n`` name server (default ``$NAMESRV_ADDR``, else ``127.0.0.1:9876``), ``-t`` topic, ``-g``
group, ``-c`` cluster, ``-b`` broker address, ``-i`` message id, ``-k`` key, ``-s`` timestamp.
Tables are aligned with ``#``-prefixed headers as mqadmin prints them; ``--json`` prints one
JSON document instead (for scripts). Exit status: 0 ok, 1 a request failed, 2 usage error.

=====================  =====================================================================
updateTopic            -t topic (-b addr | -c cluster) [-r 8] [-w 8] [-p 6] [-o false]
                       [-a +message.type=FIFO]: RocketMQ 5 attributes (``+k=v,-k``)
deleteTopic            -t topic -c cluster: brokers (215) then name servers (216)
topicList              [-c]: topic names (206); with -c also cluster and consumer groups
topicRoute             -t topic: the route (105) as pretty JSON
topicStatus            -t topic: min / max offset and last update per queue (202)
clusterList            brokers per cluster with version and load (106 + 28)
consumerProgress       -g group: broker offset, consumer offset and diff per queue (208)
queryMsgById           -i msgId [-t topic]: by offset id (33); a UNIQ_KEY needs -t (12)
queryMsgByKey          -t topic -k key [-b begin ms] [-e end ms]: matching messages (12)
resetOffsetByTime      -g group -t topic -s (ms | now | yyyy-MM-dd#HH:mm:ss:SSS) [-f true]
brokerStatus           -b addr | -c cluster (one is required): the runtime info (28)
=====================  =====================================================================

The broker subcommands (brokerConsumeStats, cleanExpiredCQ, cleanUnusedTopic,
deleteExpiredCommitLog, cloneGroupOffset, statsAll, queryCq, producer) are in
:mod:`rocketmq_emu.client.admin_cli_broker`; the subscription group ones (updateSubGroup,
getConsumerConfig) in :mod:`rocketmq_emu.client.admin_cli_group`; the ACL ones
(updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr, clusterAclConfigVersion,
getAclConfig) and the credentials every request is signed with (``$ROCKETMQ_HOME/conf/tools.yml``,
``--access-key``/``--secret-key``) in :mod:`rocketmq_emu.client.admin_cli_acl`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.bodies import decode_mq_map, decode_offset_table
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.topic_attributes import (
    AttributeRequestError,
    java_map_str,
    parse_to_map,
    parse_to_string,
)
from rocketmq_emu.client import admin_cli_acl, admin_cli_broker, admin_cli_group
from rocketmq_emu.client.admin_common import invoke, masters, route_masters
from rocketmq_emu.client.admin_output import Output, UsageError, format_ms, parse_timestamp
from rocketmq_emu.client.message import MessageExt, MQBrokerError, MQClientError

DEFAULT_NAMESRV = "127.0.0.1:9876"


# --- remoting helpers (shared with admin_cli_broker) ------------------------------------------
_invoke = invoke
_masters = masters
_route_masters = route_masters


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


async def consumer_progress(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.groupName:
        raise UsageError("-g groupName is required")
    group = args.groupName
    retry = f"%RETRY%{group}"
    try:
        masters = await _route_masters(admin, retry)
    except MQClientError:
        masters = await _masters(admin, None)
    rows = []
    tps = 0.0
    owners = await admin.queue_owners(group, list(masters.values()))
    for name, addr in masters.items():
        resp = await _invoke(admin, addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": group})
        doc = loads_lenient(resp.body)
        tps += float(doc.get("consumeTps") or 0)
        for (topic, broker, qid), w in sorted(decode_mq_map(doc.get("offsetTable")).items()):
            broker_off = int(w.get("brokerOffset", 0))
            cons_off = int(w.get("consumerOffset", 0))
            owner = owners.get((topic, broker or name, qid), "NA")
            rows.append((topic, broker or name, qid, broker_off, cons_off, owner,
                         broker_off - cons_off, format_ms(int(w.get("lastTimestamp", 0)))))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    diff_total = sum(r[6] for r in rows)
    out.table(("Topic", "Broker Name", "QID", "Broker Offset", "Consumer Offset", "Client IP",
               "Diff", "LastTime"), rows)
    out.text("")
    out.text(f"Consume TPS: {tps:.2f}")
    out.text(f"Consume Diff Total: {diff_total}")
    out.doc = {"group": group, "consumeTps": tps, "diffTotal": diff_total, "queues": [
        {"topic": r[0], "brokerName": r[1], "queueId": r[2], "brokerOffset": r[3],
         "consumerOffset": r[4], "clientIP": r[5], "diff": r[6]} for r in rows]}


def _message_doc(m: MessageExt) -> dict[str, Any]:
    return {
        "OffsetID": m.offset_msg_id, "Topic": m.topic, "Tags": m.tags, "Keys": m.keys,
        "Queue ID": m.queue_id, "Queue Offset": m.queue_offset,
        "CommitLog Offset": m.commitlog_offset, "Reconsume Times": m.reconsume_times,
        "Born Timestamp": m.born_timestamp, "Store Timestamp": m.store_timestamp,
        "Born Host": f"{m.born_host[0]}:{m.born_host[1]}",
        "Store Host": f"{m.store_host[0]}:{m.store_host[1]}", "System Flag": m.sys_flag,
        "Properties": m.properties, "Message Body": m.body.decode("utf-8", errors="replace"),
    }


async def query_msg_by_id(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.msgId:
        raise UsageError("-i msgId is required")
    m = await admin.view_message(args.msgId.strip(), args.topic)
    doc = _message_doc(m)
    for key in ("OffsetID", "Topic", "Tags", "Keys", "Queue ID", "Queue Offset",
                "CommitLog Offset", "Reconsume Times"):
        value = doc[key]
        out.text(f"{key + ':':<20} {('[' + ', '.join(value) + ']') if key == 'Keys' else value}")
    out.text(f"{'Born Timestamp:':<20} {format_ms(m.born_timestamp)}")
    out.text(f"{'Store Timestamp:':<20} {format_ms(m.store_timestamp)}")
    for key in ("Born Host", "Store Host", "System Flag", "Properties", "Message Body"):
        out.text(f"{key + ':':<20} {doc[key]}")
    out.doc = doc


async def query_msg_by_key(admin: Any, args: argparse.Namespace, out: Output) -> None:
    if not args.topic or not args.msgKey:
        raise UsageError("-t topic and -k msgKey are required")
    begin = int(args.beginTimestamp or 0)
    end = int(args.endTimestamp) if args.endTimestamp else None
    msgs = await admin.query_by_key(args.topic, args.msgKey, 64, begin, end)
    rows = [(m.msg_id, m.queue_id, m.queue_offset) for m in msgs]
    out.table(("Message ID", "QID", "Offset"), rows)
    out.doc = [{"msgId": m.msg_id, "offsetMsgId": m.offset_msg_id, "queueId": m.queue_id,
                "queueOffset": m.queue_offset} for m in msgs]


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
    "consumerProgress": ("Query consumers's progress, speed", consumer_progress),
    "queryMsgById": ("Query Message by Id", query_msg_by_id),
    "queryMsgByKey": ("Query Message by Key", query_msg_by_key),
    "resetOffsetByTime": ("Reset consumer offset by timestamp(without client restart)",
                          reset_offset_by_time),
    "brokerStatus": ("Fetch broker runtime status data (needs -b or -c)", broker_status),
    **admin_cli_broker.COMMANDS,
    **admin_cli_group.COMMANDS,
    **admin_cli_acl.COMMANDS,
}


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namesrvAddr", default=None,
                   help="Name server address list, eg: 192.168.0.1:9876;192.168.0.2:9876")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    admin_cli_acl.add_credential_options(p)


def _add_options(name: str, p: argparse.ArgumentParser) -> None:
    opt = p.add_argument
    if name in admin_cli_acl.COMMANDS:
        admin_cli_acl.add_options(name, p)
        return
    if name in admin_cli_group.COMMANDS:
        admin_cli_group.add_options(name, p)
        return
    if name in ("updateTopic", "deleteTopic", "topicRoute", "topicStatus", "queryMsgByKey",
                "resetOffsetByTime", "queryMsgById"):
        opt("-t", "--topic")
    if name in admin_cli_broker.COMMANDS:
        admin_cli_broker.add_options(name, p)
        return
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
    if name in ("consumerProgress", "resetOffsetByTime"):
        opt("-g", "--groupName")
    if name == "queryMsgById":
        opt("-i", "--msgId", help="Message Id: an offset msgId, or a client-side id (UNIQ_KEY, "
            "as queryMsgByKey prints it) with -t")
    if name == "queryMsgByKey":
        opt("-k", "--msgKey")
        opt("-b", "--beginTimestamp")
        opt("-e", "--endTimestamp")
    if name == "resetOffsetByTime":
        opt("-s", "--timestamp")
        opt("-f", "--force", default="true")
        opt("-c", "--cplus", action="store_true", help="reset a C++ client's offsets")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The ``admin`` parser (standalone, or filled in by :func:`register`)."""
    if parser is None:
        parser = argparse.ArgumentParser(prog="rmq-emu admin", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="admin_command", metavar="SUBCOMMAND")
    for name, (help_text, fn) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _add_common(p)
        _add_options(name, p)
        p.set_defaults(admin_fn=fn)
    return parser


def register(subparsers: Any) -> None:
    """Add ``admin`` to the ``rmq-emu`` command line (``rocketmq_emu.broker.cli`` plug-in contract)."""
    parser = subparsers.add_parser("admin", help="mqadmin-style administration commands")
    build_parser(parser)
    parser.set_defaults(func=run_args)


async def execute(args: argparse.Namespace, reactor: Any = None) -> tuple[int, str]:
    """Run one parsed admin command; returns (exit status, text to print)."""
    from rocketmq_emu.client.admin import Admin

    namesrv = args.namesrvAddr or os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV
    out = Output(getattr(args, "json", False))
    try:
        credentials = admin_cli_acl.resolve_credentials(args)
    except UsageError as exc:
        return 2, f"rmq-emu admin {args.admin_command}: {exc}"
    admin = Admin(namesrv, reactor=reactor, timeout=5.0, credentials=credentials)
    try:
        await args.admin_fn(admin, args, out)
        return 0, out.render()
    except UsageError as exc:
        return 2, f"rmq-emu admin {args.admin_command}: {exc}"
    except (MQBrokerError, MQClientError) as exc:
        return 1, f"{args.admin_command} command failed: {exc}"
    except Exception as exc:  # connection refused, timeouts
        return 1, f"{args.admin_command} command failed: {type(exc).__name__}: {exc}"
    finally:
        await admin.shutdown()


def run_args(args: argparse.Namespace) -> int:
    """Entry for ``rmq-emu admin ...``: runs the reactor until the command is done."""
    if not getattr(args, "admin_fn", None):
        build_parser().print_help()
        return 2
    from twisted.internet import defer, task

    result: dict[str, Any] = {}

    def go(reactor: Any) -> defer.Deferred:
        d = defer.ensureDeferred(execute(args, reactor))
        d.addCallback(lambda r: result.update(status=r[0], text=r[1]))
        return d

    try:
        task.react(go)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    text = result.get("text", "")
    status = int(result.get("status", 1))
    if text:
        print(text, file=sys.stdout if status == 0 else sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    """``python -m client.admin_cli SUBCOMMAND ...``."""
    return run_args(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
