"""``rmq-emu admin`` subscription group subcommands (mqadmin 5.x ``tools/command/consumer``),
merged into :mod:`rocketmq_emu.client.admin_cli`.

=======================  ===================================================================
updateSubGroup           -g group (-b addr | -c cluster) [-s -m -d -o -a true|false]
                         [-q retryQueueNums] [-r retryMaxTimes] [-i brokerId]
                         [-w whichBrokerWhenConsumeSlowly] [-p groupRetryPolicy JSON]
                         [--attributes +k=v,-k]: create or replace the group's config (200)
getConsumerConfig        -g group: the group's config on every broker (201)
deleteSubGroup           -g group (-b addr | -c cluster) [-r true]: delete the group (207),
                         -r true its offsets too; -c also its %RETRY% / %DLQ% topics
=======================  ===================================================================

``updateSubGroup`` sends what 5.x mqadmin sends: a whole ``SubscriptionGroupConfig`` starting
from the Java defaults except ``consumeBroadcastEnable`` and ``consumeFromMinEnable``, which
start false; ``-o true`` makes the group FIFO (the 5.x proxy's ``Settings.subscription.fifo``),
``-r`` its ``retryMaxTimes`` (max delivery attempts ``-r`` + 1), ``-p`` its backoff, e.g.
``{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}}``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker.configs.subscription import GroupRetryPolicy, SubscriptionGroupConfig
from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.message import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.topic_attributes import AttributeRequestError, parse_to_map
from rocketmq_emu.client.admin_common import invoke, masters
from rocketmq_emu.client.admin_output import Output, UsageError
from rocketmq_emu.client.message import MQBrokerError

#: Fields 5.x's ``SubscriptionGroupConfig`` always writes that this model keeps in ``extra``.
_JAVA_EXTRA_DEFAULTS = {"groupSysFlag": 0, "consumeTimeoutMinute": 15}

#: ``getDeclaredFields()`` of 5.x's ``SubscriptionGroupConfig``, as ``getConsumerConfig``
#: prints them.
_DECLARED_FIELDS = (
    "groupName", "consumeEnable", "consumeFromMinEnable", "consumeBroadcastEnable",
    "consumeMessageOrderly", "retryQueueNums", "retryMaxTimes", "groupRetryPolicy", "brokerId",
    "whichBrokerWhenConsumeSlowly", "notifyConsumerIdsChangedEnable", "groupSysFlag",
    "consumeTimeoutMinute", "subscriptionDataSet", "attributes",
)


def _java_bool(text: str) -> bool:
    """``Boolean.parseBoolean(text.trim())``."""
    return text.strip().lower() == "true"


def _java_int(text: str, option: str) -> int:
    """``Integer.parseInt`` / ``Long.parseLong`` of an option value (UsageError if not a number)."""
    try:
        return int(text.strip())
    except ValueError:
        raise UsageError(f"{option}: not a number: {text!r}") from None


def sub_group_config(args: argparse.Namespace) -> SubscriptionGroupConfig:
    """The ``SubscriptionGroupConfig`` ``updateSubGroup`` sends for these options."""
    if not args.groupName or not args.groupName.strip():
        raise UsageError("-g groupName is required")
    cfg = SubscriptionGroupConfig(args.groupName.strip(), consume_broadcast_enable=False,
                                  consume_from_min_enable=False,
                                  extra=dict(_JAVA_EXTRA_DEFAULTS))
    for option, attr in (("consumeEnable", "consume_enable"),
                         ("consumeFromMinEnable", "consume_from_min_enable"),
                         ("consumeBroadcastEnable", "consume_broadcast_enable"),
                         ("consumeMessageOrderly", "consume_message_orderly"),
                         ("notifyConsumerIdsChanged", "notify_consumer_ids_changed_enable")):
        value = getattr(args, option)
        if value is not None:
            setattr(cfg, attr, _java_bool(value))
    for option, attr in (("retryQueueNums", "retry_queue_nums"),
                         ("retryMaxTimes", "retry_max_times"), ("brokerId", "broker_id"),
                         ("whichBrokerWhenConsumeSlowly", "which_broker_when_consume_slowly")):
        value = getattr(args, option)
        if value is not None:
            setattr(cfg, attr, _java_int(value, option))
    if args.groupRetryPolicy is not None:
        try:
            cfg.group_retry_policy = GroupRetryPolicy.from_json(
                json.loads(args.groupRetryPolicy.strip()))
        except (ValueError, TypeError) as exc:
            raise UsageError(f"-p groupRetryPolicy: {exc}") from None
    if args.attributes is not None:
        try:
            cfg.attributes = parse_to_map(args.attributes.strip())
        except AttributeRequestError as exc:
            raise UsageError(f"--attributes: {exc}") from None
    return cfg


def sub_group_body(cfg: SubscriptionGroupConfig) -> bytes:
    """The request body: the config as fastjson writes it (keys sorted, compact, UTF-8)."""
    return json.dumps(cfg.to_json(), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


async def update_sub_group(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``UpdateSubGroupSubCommand``: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP to ``-b``, or to every
    master of ``-c`` (a broker that refuses is reported and the others still get it); prints
    ``create subscription group to ADDR success.`` per broker, then the config's ``toString``."""
    cfg = sub_group_config(args)
    if args.brokerAddr:
        addrs = [args.brokerAddr.strip()]
    elif args.clusterName:
        addrs = list((await masters(admin, args.clusterName.strip())).values())
    else:
        raise UsageError("give -b brokerAddr or -c clusterName")
    body = sub_group_body(cfg)
    done: list[str] = []
    failed: dict[str, str] = {}
    for addr in addrs:
        request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
        resp = await admin.instance.invoke(addr, request, None)
        if resp.code != 0:
            error = MQBrokerError(resp.code, resp.remark, addr)
            if args.brokerAddr:
                raise error
            failed[addr] = str(error)
            out.text(f"create subscription group to {addr} failed: {error}")
            continue
        done.append(addr)
        out.text(f"create subscription group to {addr} success.")
    out.text(cfg.java_str())
    out.doc = {"brokers": done, "failed": failed, "subscriptionGroupConfig": cfg.to_json()}


def _field_text(cfg: SubscriptionGroupConfig, name: str) -> str:
    """One field's ``toString()`` as ``getConsumerConfig`` prints it (null: empty)."""
    doc = cfg.to_json()
    if name == "groupRetryPolicy":
        return cfg.group_retry_policy.java_str()
    if name == "attributes":
        return "{" + ", ".join(f"{k}={v}" for k, v in cfg.attributes.items()) + "}"
    if name in ("groupSysFlag", "consumeTimeoutMinute") and name not in doc:
        return str(_JAVA_EXTRA_DEFAULTS[name])
    value = doc.get(name)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def get_consumer_config(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``GetConsumerConfigSubCommand``: every broker's config of ``-g`` (from
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG of its master, as 5.x's ``examineSubscriptionGroupConfig``
    reads it), a ``====cluster:broker====`` line then one ``field = value`` line per field."""
    if not args.groupName or not args.groupName.strip():
        raise UsageError("-g groupName is required")
    group = args.groupName.strip()
    info = await admin.cluster_info()
    clusters = info.get("clusterAddrTable") or {}
    found = []
    for name, data in sorted((info.get("brokerAddrTable") or {}).items()):
        addrs = (data or {}).get("brokerAddrs") or {}
        addr = addrs.get("0") or addrs.get(0) or next(iter(addrs.values()), None)
        if not addr:
            continue
        resp = await invoke(admin, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        doc = (loads_lenient(resp.body).get("subscriptionGroupTable") or {}).get(group)
        if doc is None:
            continue
        cluster = next((c for c, names in clusters.items() if name in (names or [])), None)
        found.append((cluster, name, SubscriptionGroupConfig.from_json(doc, group)))
    for cluster, name, cfg in found:
        out.text(f"============================={cluster}:{name}=============================")
        for field_name in _DECLARED_FIELDS:
            out.text(f"{field_name:<40}=  {_field_text(cfg, field_name)}")
    out.doc = [{"clusterName": c, "brokerName": n, "subscriptionGroupConfig": cfg.to_json()}
               for c, n, cfg in found]


async def delete_sub_group(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``DeleteSubscriptionGroupCommand`` (4.9.8): DELETE_SUBSCRIPTIONGROUP (207) on ``-b`` or
    on every master of ``-c``; with ``-c`` the group's ``%RETRY%`` and ``%DLQ%`` topics are
    then deleted from the cluster and the name servers (``DeleteTopicSubCommand.deleteTopic``)."""
    if not args.groupName or not args.groupName.strip():
        raise UsageError("-g groupName is required")
    if not args.brokerAddr and not args.clusterName:
        raise UsageError("give -b brokerAddr or -c clusterName")
    group = args.groupName.strip()
    remove = str(args.removeOffset or "").strip().lower() == "true"
    # 4.9.8 names the flag removeOffset, 5.x cleanOffset: send both, each broker reads its own.
    ext = {"groupName": group, "removeOffset": str(remove).lower(),
           "cleanOffset": str(remove).lower()}
    if args.brokerAddr:
        addr = args.brokerAddr.strip()
        await invoke(admin, addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext)
        out.text(f"delete subscription group [{group}] from broker [{addr}] success.")
        out.doc = {"groupName": group, "brokers": [addr], "removeOffset": remove}
        return
    cluster = args.clusterName.strip()
    addrs = list((await masters(admin, cluster)).values())
    for addr in addrs:
        await invoke(admin, addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext)
        out.text(f"delete subscription group [{group}] from broker [{addr}] in cluster "
                 f"[{cluster}] success.")
    for topic in (f"{RETRY_GROUP_TOPIC_PREFIX}{group}", f"{DLQ_GROUP_TOPIC_PREFIX}{group}"):
        try:
            for addr in addrs:
                await invoke(admin, addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic})
            out.text(f"delete topic [{topic}] from cluster [{cluster}] success.")
            for ns in admin.instance.namesrv_addrs:
                await invoke(admin, ns, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})
            out.text(f"delete topic [{topic}] from NameServer success.")
        except Exception as exc:  # the Java tool prints the stack trace and ends normally
            out.text(f"delete topic [{topic}] failed: {exc}")
            break
    out.doc = {"groupName": group, "cluster": cluster, "brokers": addrs, "removeOffset": remove}


Command = Callable[[Any, argparse.Namespace, Output], Any]

COMMANDS: dict[str, tuple[str, Command]] = {
    "updateSubGroup": ("Update or create subscription group.", update_sub_group),
    "getConsumerConfig": ("Get consumer config by subscription group name.",
                          get_consumer_config),
    "deleteSubGroup": ("Delete subscription group from broker.", delete_sub_group),
}


def add_options(name: str, p: argparse.ArgumentParser) -> None:
    """The mqadmin flags of subcommand ``name`` (long names as mqadmin spells them)."""
    opt = p.add_argument
    opt("-g", "--groupName", help="consumer group name")
    if name == "deleteSubGroup":
        opt("-b", "--brokerAddr", help="delete subscription group from which broker")
        opt("-c", "--clusterName", help="delete subscription group from which cluster")
        opt("-r", "--removeOffset", help="remove offset")
    if name != "updateSubGroup":
        return
    opt("-b", "--brokerAddr", help="create subscription group to which broker")
    opt("-c", "--clusterName", help="create subscription group to which cluster")
    opt("-s", "--consumeEnable", help="consume enable")
    opt("-m", "--consumeFromMinEnable", help="from min offset")
    opt("-d", "--consumeBroadcastEnable", help="broadcast")
    opt("-o", "--consumeMessageOrderly", help="consume message orderly")
    opt("-q", "--retryQueueNums", help="retry queue nums")
    opt("-r", "--retryMaxTimes", help="retry max times")
    opt("-p", "--groupRetryPolicy",
        help='the json string of retry policy (exp: {"type":"EXPONENTIAL",'
             '"exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}} '
             '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,10000]}})')
    opt("-i", "--brokerId", help="consumer from which broker id")
    opt("-w", "--whichBrokerWhenConsumeSlowly", help="which broker id when consume slowly")
    opt("-a", "--notifyConsumerIdsChanged", help="notify consumerId changed")
    opt("--attributes", help="attribute(+a=b,+c=d,-e)")
