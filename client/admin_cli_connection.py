"""``rmq-emu admin`` connection subcommands (mqadmin 4.9.8 ``tools/command/connection`` and
``ConsumerStatusSubCommand``), merged into :mod:`rocketmq_emu.client.admin_cli`.

=====================  =====================================================================
consumerConnection     -g group [-b addr]: the group's clients, subscriptions and consume
                       settings (203)
consumerStatus         -g group [-i clientId] [-b addr] [-s]: each client's running info
                       (307, relayed by the broker), saved to ``<now>/<clientId>`` as
                       mqadmin does; with -i that client's running info printed
producerConnection     -g group -t topic: the producer group's clients (204)
=====================  =====================================================================
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.message import RETRY_GROUP_TOPIC_PREFIX
from rocketmq_emu.broker.remoting.bodies import decode_mq_map
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.client.admin_common import consumer_connection, invoke, route_masters
from rocketmq_emu.client.admin_output import Output, UsageError, human_ms, version_desc
from rocketmq_emu.client.message import MQClientError

#: ``ConsumerRunningInfo``'s property names.
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"


def _required(value: str | None, flag: str) -> str:
    if not value or not value.strip():
        raise UsageError(f"{flag} is required")
    return value.strip()


def _mq_text(mq: tuple[str, str, int]) -> str:
    """``MessageQueue.toString``."""
    return f"MessageQueue [topic={mq[0]}, brokerName={mq[1]}, queueId={mq[2]}]"


# --- consumerConnection / producerConnection ---------------------------------------------------
async def consumer_connection_cmd(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``ConsumerConnectionSubCommand``: clients, then subscriptions, then consume settings."""
    group = _required(args.consumerGroup, "-g consumerGroup")
    addr = args.brokerAddr.strip() if args.brokerAddr else None
    cc = await consumer_connection(admin, group, addr)
    conns = cc.get("connectionSet") or []
    out.table(("ClientId", "ClientAddr", "Language", "Version"),
              [(c.get("clientId"), c.get("clientAddr"), c.get("language"),
                version_desc(int(c.get("version") or 0))) for c in conns])
    out.text("")
    out.text("Below is subscription:")
    subs = cc.get("subscriptionTable") or {}
    out.table(("Topic", "SubExpression"),
              [(sd.get("topic", topic), sd.get("subString")) for topic, sd in sorted(subs.items())])
    out.text("")
    out.text(f"ConsumeType: {cc.get('consumeType')}")
    out.text(f"MessageModel: {cc.get('messageModel')}")
    out.text(f"ConsumeFromWhere: {cc.get('consumeFromWhere')}")
    out.doc = cc


async def producer_connection(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``ProducerConnectionSubCommand``: one numbered line per client of the producer group,
    asked of a broker serving ``-t`` (``examineProducerConnectionInfo``)."""
    group = _required(args.producerGroup, "-g producerGroup")
    topic = _required(args.topic, "-t topic")
    serving = await route_masters(admin, topic)
    resp = await invoke(admin, next(iter(serving.values())),
                        RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": group})
    conns = loads_lenient(resp.body).get("connectionSet") or []
    if not conns:
        raise MQClientError("Not found the producer group connection")
    for i, c in enumerate(conns, 1):
        # Java: printf("%04d  %-32s %-22s %-8s %s%n", ...); no header line.
        out.text(f"{i:04d}  {c.get('clientId', ''):<32} {c.get('clientAddr', ''):<22} "
                 f"{c.get('language', ''):<8} {version_desc(int(c.get('version') or 0))}")
    out.doc = {"connectionSet": conns}


# --- consumerStatus ------------------------------------------------------------------------------
async def running_info(admin: Any, group: str, client_id: str, jstack: bool,
                       fallback_addr: str | None = None) -> dict[str, Any]:
    """``DefaultMQAdminExtImpl.getConsumerRunningInfo``: GET_CONSUMER_RUNNING_INFO (307) through
    a broker of the group's retry topic (``fallback_addr`` when that topic has no route), with
    the Java tool's timeout (3 x 5 s); ``mqTable`` keys become ``(topic, brokerName, qid)``."""
    try:
        addr = next(iter((await route_masters(
            admin, f"{RETRY_GROUP_TOPIC_PREFIX}{group}")).values()))
    except MQClientError:
        if fallback_addr is None:
            raise
        addr = fallback_addr
    resp = await invoke(admin, addr, RequestCode.GET_CONSUMER_RUNNING_INFO,
                        {"consumerGroup": group, "clientId": client_id,
                         "jstackEnable": "true" if jstack else "false"}, timeout=15.0)
    info = loads_lenient(resp.body)
    info["mqTable"] = decode_mq_map(info.get("mqTable"))
    return info


def _j(value: Any) -> str:
    """A value as Java's ``String.valueOf`` writes it (booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _pq_text(pq: dict[str, Any]) -> str:
    """``ProcessQueueInfo.toString``."""
    def n(key: str) -> Any:
        return pq.get(key, 0)

    return (f"ProcessQueueInfo [commitOffset={n('commitOffset')}, "
            f"cachedMsgMinOffset={n('cachedMsgMinOffset')}, "
            f"cachedMsgMaxOffset={n('cachedMsgMaxOffset')}, cachedMsgCount={n('cachedMsgCount')}, "
            f"cachedMsgSizeInMiB={n('cachedMsgSizeInMiB')}, "
            f"transactionMsgMinOffset={n('transactionMsgMinOffset')}, "
            f"transactionMsgMaxOffset={n('transactionMsgMaxOffset')}, "
            f"transactionMsgCount={n('transactionMsgCount')}, locked={_j(bool(n('locked')))}, "
            f"tryUnlockTimes={n('tryUnlockTimes')}, "
            f"lastLockTimestamp={human_ms(int(n('lastLockTimestamp')))}, "
            f"droped={_j(bool(n('droped')))}, "
            f"lastPullTimestamp={human_ms(int(n('lastPullTimestamp')))}, "
            f"lastConsumeTimestamp={human_ms(int(n('lastConsumeTimestamp')))}]")


def format_running_info(info: dict[str, Any]) -> str:
    """``ConsumerRunningInfo.formatString`` (printf widths as in 4.9.8)."""
    lines = ["#Consumer Properties#"]
    for key, value in sorted((info.get("properties") or {}).items()):
        lines.append(f"{key:<40}: {_j(value)}")
    lines += ["", "", "#Consumer Subscription#"]
    for i, sd in enumerate(info.get("subscriptionSet") or [], 1):
        lines.append(f"{i:03d} Topic: {sd.get('topic', ''):<40} ClassFilter: "
                     f"{_j(bool(sd.get('classFilterMode'))):<8} SubExpression: "
                     f"{sd.get('subString')}")
    mq_table = sorted((info.get("mqTable") or {}).items())
    lines += ["", "", "#Consumer Offset#",
              f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Consumer Offset':<20}"]
    for (topic, broker, qid), pq in mq_table:
        lines.append(f"{topic:<32}  {broker:<32}  {qid:<4}  {int(pq.get('commitOffset', 0)):<20}")
    lines += ["", "", "#Consumer MQ Detail#",
              f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#ProcessQueueInfo':<20}"]
    for (topic, broker, qid), pq in mq_table:
        lines.append(f"{topic:<64}  {broker:<32}  {qid:<4}  {_pq_text(pq)}")
    lines += ["", "", "#Consumer RT&TPS#",
              f"{'#Topic':<64}  {'#Pull RT':>14} {'#Pull TPS':>14} {'#Consume RT':>14} "
              f"{'#ConsumeOK TPS':>14} {'#ConsumeFailed TPS':>18} {'#ConsumeFailedMsgsInHour':>25}"]
    for topic, st in sorted((info.get("statusTable") or {}).items()):
        def f(key: str, st: dict[str, Any] = st) -> float:
            return float(st.get(key) or 0)
        lines.append(f"{topic:<32}  {f('pullRT'):14.2f} {f('pullTPS'):14.2f} "
                     f"{f('consumeRT'):14.2f} {f('consumeOKTPS'):14.2f} "
                     f"{f('consumeFailedTPS'):18.2f} {int(st.get('consumeFailedMsgs') or 0):25d}")
    if info.get("jstack") is not None:
        lines += ["", "", "#Consumer jstack#", str(info["jstack"])]
    return "\n".join(lines) + "\n"


def _is_push(info: dict[str, Any]) -> bool:
    return (info.get("properties") or {}).get(PROP_CONSUME_TYPE) == "CONSUME_PASSIVELY"


def _sub_key(sd: dict[str, Any]) -> tuple[Any, ...]:
    """What ``SubscriptionData.equals`` compares (not ``subVersion``)."""
    return (bool(sd.get("classFilterMode")), tuple(sorted(sd.get("codeSet") or [])),
            sd.get("expressionType"), sd.get("subString"),
            tuple(sorted(sd.get("tagsSet") or [])), sd.get("topic"))


def same_subscription(infos: dict[str, dict[str, Any]], now_ms: int) -> bool:
    """``ConsumerRunningInfo.analyzeSubscription``: push clients started over two minutes ago
    must all have the same, non-empty subscription set."""
    first = next(iter(infos.values()))
    started = int((first.get("properties") or {}).get(PROP_CONSUMER_START_TIMESTAMP) or 0)
    if not (_is_push(first) and now_ms - started > 120_000):
        return True
    subs = {frozenset(_sub_key(sd) for sd in info.get("subscriptionSet") or [])
            for info in infos.values()}
    return len(subs) == 1 and bool(next(iter(subs)))


def process_queue_warnings(client_id: str, info: dict[str, Any], now_ms: int) -> list[str]:
    """``ConsumerRunningInfo.analyzeProcessQueue``: queues an orderly push client cannot lock,
    or where a concurrent one has cached messages but consumed none for a minute."""
    if not _is_push(info):
        return []
    orderly = str((info.get("properties") or {}).get(PROP_CONSUME_ORDERLY)).lower() == "true"
    out = []
    for mq, pq in sorted((info.get("mqTable") or {}).items()):
        if orderly:
            if not pq.get("locked"):
                out.append(f"{client_id} {_mq_text(mq)} can't lock for a while, "
                           f"{now_ms - int(pq.get('lastLockTimestamp') or 0)}ms")
            elif pq.get("droped") and int(pq.get("tryUnlockTimes") or 0) > 0:
                out.append(f"{client_id} {_mq_text(mq)} unlock {pq.get('tryUnlockTimes')} "
                           "times, still failed")
        else:
            idle = now_ms - int(pq.get("lastConsumeTimestamp") or 0)
            if idle > 60_000 and int(pq.get("cachedMsgCount") or 0) > 0:
                out.append(f"{client_id} {_mq_text(mq)} can't consume for a while, maybe "
                           f"blocked, {idle}ms")
    return out


async def consumer_status(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``ConsumerStatusSubCommand``."""
    group = _required(args.consumerGroup, "-g consumerGroup")
    addr = args.brokerAddr.strip() if args.brokerAddr else None
    cc = await consumer_connection(admin, group, addr)
    if args.clientId:
        info = await running_info(admin, group, args.clientId.strip(), args.jstack, addr)
        out.text(format_running_info(info).rstrip("\n"))
        out.doc = _info_doc(info)
        return
    now = int(time.time() * 1000)
    rows = []
    infos: dict[str, dict[str, Any]] = {}
    for conn in sorted(cc.get("connectionSet") or [], key=lambda c: c.get("clientId", "")):
        client_id = conn.get("clientId", "")
        try:
            info = await running_info(admin, group, client_id, args.jstack, addr)
        except Exception as exc:  # the Java tool prints the stack trace and goes on
            out.text(f"{client_id}: {type(exc).__name__}: {exc}")
            continue
        infos[client_id] = info
        # MixAll.string2FileNotSafe(formatString(), now + "/" + clientId), relative to the cwd.
        path = f"{now}/{client_id}"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(format_running_info(info))
        rows.append((len(rows) + 1, client_id, version_desc(int(conn.get("version") or 0)), path))
    out.table(("Index", "ClientId", "Version", "ConsumerRunningInfoFile"), rows)
    same = bool(infos) and same_subscription(dict(sorted(infos.items())), now)
    if infos:
        out.text("")
        out.text("")
        if same:
            out.text("Same subscription in the same group of consumer")
            out.text("")
            out.text("Rebalance OK")  # analyzeRebalance: always true in 4.9.8
            for client_id, info in sorted(infos.items()):
                for line in process_queue_warnings(client_id, info, now):
                    out.text(line)
        else:
            out.text("WARN: Different subscription in the same group of consumer!!!")
    out.doc = {"clients": [{"index": i, "clientId": c, "version": v, "file": p}
                           for i, c, v, p in rows],
               "sameSubscription": same if infos else None,
               "runningInfo": {c: _info_doc(info) for c, info in infos.items()}}


def _info_doc(info: dict[str, Any]) -> dict[str, Any]:
    """The running info with its queue keys as ``MessageQueue`` strings (JSON object keys)."""
    return {**info, "mqTable": {_mq_text(mq): pq for mq, pq in
                                sorted((info.get("mqTable") or {}).items())}}


Command = Callable[[Any, argparse.Namespace, Output], Any]

COMMANDS: dict[str, tuple[str, Command]] = {
    "consumerConnection": ("Query consumer's socket connection, client version and subscription",
                           consumer_connection_cmd),
    "consumerStatus": ("Query consumer's internal data structure", consumer_status),
    "producerConnection": ("Query producer's socket connection and client version",
                           producer_connection),
}


def add_options(name: str, p: argparse.ArgumentParser) -> None:
    """The mqadmin flags of subcommand ``name``."""
    opt = p.add_argument
    if name in ("consumerConnection", "consumerStatus"):
        opt("-g", "--consumerGroup", help="consumer group name")
    if name == "consumerStatus":
        opt("-i", "--clientId", help="The consumer's client id")
    if name in ("consumerConnection", "consumerStatus"):
        opt("-b", "--brokerAddr", help="broker address")
    if name == "consumerStatus":
        opt("-s", "--jstack", action="store_true",
            help="Run jstack command in the consumer progress")
    if name == "producerConnection":
        opt("-g", "--producerGroup", help="producer group name")
        opt("-t", "--topic", help="topic name")
