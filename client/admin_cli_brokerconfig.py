"""``rmq-emu admin`` broker config and write permission subcommands (mqadmin 4.9.8
``tools/command/{broker,namesrv}``), merged into :mod:`rocketmq_emu.client.admin_cli`.

=====================  =====================================================================
getBrokerConfig        -b addr | -c cluster: every setting, ``%-50s=  %s`` a line (26); with
                       -c each master then its slaves
updateBrokerConfig     (-b addr | -c cluster) -k key -v value: change one setting of the
                       running broker (25); -c: every master of the cluster
wipeWritePerm          -b brokerName: the broker's topics read-only in every name server of
                       -n (205), e.g. before taking the broker down
addWritePerm           -b brokerName: writable again (327)
=====================  =====================================================================
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rocketmq_emu.broker.properties import load_properties
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.admin_common import invoke, masters
from rocketmq_emu.client.admin_output import Output, UsageError
from rocketmq_emu.client.message import MQBrokerError, MQClientError

_RULE = "============"


def _targets_required(args: argparse.Namespace) -> None:
    if not args.brokerAddr and not args.clusterName:
        raise UsageError("give -b brokerAddr or -c clusterName")


async def _master_and_slaves(admin: Any, cluster: str) -> list[tuple[str, list[str]]]:
    """``CommandUtil.fetchMasterAndSlaveDistinguish``: (master address, slave addresses) per
    broker name of ``cluster``."""
    info = await admin.cluster_info()
    names = (info.get("clusterAddrTable") or {}).get(cluster)
    if names is None:
        raise MQClientError(f"cluster [{cluster}] not exist")
    brokers = info.get("brokerAddrTable") or {}
    out = []
    for name in sorted(names):
        addrs = {int(k): v for k, v in ((brokers.get(name) or {}).get("brokerAddrs") or {}).items()}
        if 0 in addrs:
            out.append((addrs[0], [a for bid, a in sorted(addrs.items()) if bid != 0]))
    return out


async def _config(admin: Any, addr: str) -> dict[str, str]:
    resp = await invoke(admin, addr, RequestCode.GET_BROKER_CONFIG)
    return load_properties((resp.body or b"").decode("utf-8"))


async def get_broker_config(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``GetBrokerConfigCommand``: a ``====`` banner per broker, then its settings."""
    _targets_required(args)
    targets: list[tuple[str, str]] = []
    if args.brokerAddr:
        addr = args.brokerAddr.strip()
        targets.append((f"{_RULE}{addr}{_RULE}", addr))
    else:
        for master, slaves in await _master_and_slaves(admin, args.clusterName.strip()):
            targets.append((f"{_RULE}Master: {master}{_RULE}", master))
            targets.extend((f"{_RULE}My Master: {master}=====Slave: {slave}{_RULE}", slave)
                           for slave in slaves)
    doc = {}
    for banner, addr in targets:
        config = await _config(admin, addr)
        doc[addr] = config
        out.text(banner)
        for key, value in config.items():
            out.text(f"{key:<50}=  {value}")
        out.text("")
    out.doc = doc


async def update_broker_config(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``UpdateBrokerConfigSubCommand``: body ``key=value`` (``MixAll.properties2String``)."""
    if not args.key or not args.key.strip() or args.value is None:
        raise UsageError("-k key and -v value are required")
    _targets_required(args)
    body = f"{args.key.strip()}={args.value.strip()}\n".encode()
    if args.brokerAddr:
        addrs = [args.brokerAddr.strip()]
    else:
        addrs = list((await masters(admin, args.clusterName.strip())).values())
    for addr in addrs:
        resp = await admin.instance.invoke(
            addr, RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, body))
        if resp.code != ResponseCode.SUCCESS:
            raise MQBrokerError(resp.code, resp.remark, addr)
        out.text(f"update broker config success, {addr}")
    out.doc = {"brokers": addrs, "key": args.key.strip(), "value": args.value.strip()}


def _write_perm(add: bool) -> Callable[[Any, argparse.Namespace, Output], Any]:
    """``WipeWritePermSubCommand`` / ``AddWritePermSubCommand``: every name server of ``-n``,
    each line OK with the count of topics changed, or Failed (and the next name server)."""
    code = RequestCode.ADD_WRITE_PERM_OF_BROKER if add else RequestCode.WIPE_WRITE_PERM_OF_BROKER
    verb = "add" if add else "wipe"
    count_field = "addTopicCount" if add else "wipeTopicCount"

    async def run(admin: Any, args: argparse.Namespace, out: Output) -> None:
        if not args.brokerName or not args.brokerName.strip():
            raise UsageError("-b brokerName is required")
        name = args.brokerName.strip()
        doc: dict[str, int | None] = {}
        for ns in admin.instance.namesrv_addrs:
            try:
                resp = await invoke(admin, ns, code, {"brokerName": name})
            except Exception as exc:  # the Java tool prints Failed, the stack trace, goes on
                out.text(f"{verb} write perm of broker[{name}] in name server[{ns}] Failed")
                out.text(f"  {type(exc).__name__}: {exc}")
                doc[ns] = None
                continue
            count = int(resp.ext_fields.get(count_field) or 0)
            doc[ns] = count
            out.text(f"{verb} write perm of broker[{name}] in name server[{ns}] OK, {count}")
        out.doc = {"brokerName": name, count_field: doc}
    return run


Command = Callable[[Any, argparse.Namespace, Output], Any]

COMMANDS: dict[str, tuple[str, Command]] = {
    "getBrokerConfig": ("Get broker config by cluster or special broker!", get_broker_config),
    "updateBrokerConfig": ("Update broker's config", update_broker_config),
    "wipeWritePerm": ("Wipe write perm of broker in all name server you defined in the -n param",
                      _write_perm(add=False)),
    "addWritePerm": ("Add write perm of broker in all name server you defined in the -n param",
                     _write_perm(add=True)),
}


def add_options(name: str, p: argparse.ArgumentParser) -> None:
    """The mqadmin flags of subcommand ``name``."""
    opt = p.add_argument
    if name in ("getBrokerConfig", "updateBrokerConfig"):
        verb = "get" if name == "getBrokerConfig" else "update"
        opt("-b", "--brokerAddr", help=f"{verb} which broker")
        opt("-c", "--clusterName", help=f"{verb} which cluster")
    if name == "updateBrokerConfig":
        opt("-k", "--key", help="config key")
        opt("-v", "--value", help="config value")
    if name in ("wipeWritePerm", "addWritePerm"):
        opt("-b", "--brokerName", help="broker name")
