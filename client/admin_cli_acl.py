"""``rmq-emu admin`` ACL subcommands and the credentials every admin request is signed with
(mqadmin's ``tools/command/acl/*SubCommand`` of RocketMQ 4.9.8, ``getAclConfig`` of 5.x).

=======================  ==================================================================
updateAclConfig          -a accessKey (-b addr | -c cluster) [-s secretKey] [-w whiteAddr]
                         [-i defaultTopicPerm] [-u defaultGroupPerm] [-t topicA=PUB,...]
                         [-g groupA=SUB,...] [-m true|false] (code 50)
deleteAclConfig          -a accessKey (-b addr | -c cluster) (code 51)
updateGlobalWhiteAddr    -g 10.10.103.*,192.168.0.* (-b addr | -c cluster) [-p aclFile] (53)
clusterAclConfigVersion  -b addr | -c cluster: version of every ACL file per broker (52)
getAclConfig             -b addr | -c cluster: white list and accounts (54, RocketMQ 5.x)
=======================  ==================================================================

Credentials, as ``MQAdminStartup`` takes them: ``accessKey`` and ``secretKey`` of
``$ROCKETMQ_HOME/conf/tools.yml`` (``AclUtils.getAclRPCHook``; a missing file or a blank key:
unsigned), overridden by ``--access-key``/``--secret-key``.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from typing import Any

import yaml

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.client.admin_common import all_addrs, invoke, masters
from rocketmq_emu.client.admin_output import Output, UsageError, format_ms
from rocketmq_emu.client.credentials import SessionCredentials

log = logging.getLogger(__name__)

#: ``MixAll.ACL_CONF_TOOLS_FILE``, relative to ``$ROCKETMQ_HOME``.
TOOLS_FILE = "conf/tools.yml"


# --- credentials ------------------------------------------------------------------------------
def tools_yml_credentials(home: str | None) -> SessionCredentials | None:
    """``AclUtils.getAclRPCHook($home/conf/tools.yml)``: None when absent, unreadable or blank."""
    if not home:
        return None
    path = os.path.join(home, TOOLS_FILE)
    try:
        with open(path, "rb") as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as exc:
        log.error("Convert yaml file to data object error, %s: %s", path, exc)
        return None
    if not isinstance(data, dict):
        return None
    ak, sk = data.get("accessKey"), data.get("secretKey")
    if ak is None or sk is None or not str(ak).strip() or not str(sk).strip():
        log.warning("AccessKey or secretKey is blank in %s, the acl is not enabled.", path)
        return None
    return SessionCredentials(str(ak), str(sk))


def resolve_credentials(args: argparse.Namespace) -> SessionCredentials | None:
    """Flags first, else tools.yml of ``$ROCKETMQ_HOME``; a lone flag is completed from it."""
    ak, sk = getattr(args, "access_key", None), getattr(args, "secret_key", None)
    from_file = tools_yml_credentials(os.environ.get("ROCKETMQ_HOME"))
    if ak is None and sk is None:
        return from_file
    ak = ak if ak is not None else (from_file.access_key if from_file else None)
    sk = sk if sk is not None else (from_file.secret_key if from_file else None)
    if not ak or not sk:
        raise UsageError("--access-key and --secret-key go together")
    return SessionCredentials(ak, sk)


def add_credential_options(p: argparse.ArgumentParser) -> None:
    """``--access-key``/``--secret-key`` on every admin subcommand."""
    p.add_argument("--access-key", dest="access_key", default=None,
                   help="sign requests with this AccessKey (default: $ROCKETMQ_HOME/conf/tools.yml)")
    p.add_argument("--secret-key", dest="secret_key", default=None,
                   help="the SecretKey for --access-key")


# --- commands ---------------------------------------------------------------------------------
async def _targets(admin: Any, args: argparse.Namespace, slaves: bool = True) -> list[str]:
    if args.brokerAddr:
        return [args.brokerAddr.strip()]
    if args.clusterName:
        cluster = args.clusterName.strip()
        if slaves:
            return await all_addrs(admin, cluster)
        return list((await masters(admin, cluster)).values())
    raise UsageError("give -b brokerAddr or -c clusterName")


def _opt(value: str | None) -> str | None:
    return None if value is None else value.strip()


async def update_acl_config(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``UpdateAccessConfigSubCommand``: create or update an account (50)."""
    if not args.accessKey:
        raise UsageError("-a accessKey is required")
    ext: dict[str, Any] = {"accessKey": args.accessKey.strip(),
                           "admin": str(_opt(args.admin) or "false").lower() == "true"}
    for key, value in (("secretKey", args.secretKey), ("whiteRemoteAddress", args.whiteRemoteAddress),
                       ("defaultTopicPerm", args.defaultTopicPerm),
                       ("defaultGroupPerm", args.defaultGroupPerm),
                       ("topicPerms", args.topicPerms), ("groupPerms", args.groupPerms)):
        if value is not None:
            ext[key] = value.strip()
    ext["admin"] = "true" if ext["admin"] else "false"
    done = []
    for addr in await _targets(admin, args):
        await invoke(admin, addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, ext)
        out.text(f"create or update plain access config to {addr} success.")
        done.append(addr)
    shown = {k: v for k, v in ext.items() if k != "secretKey"}
    out.text(" ".join(f"{k}={v}" for k, v in shown.items()))
    out.doc = {"brokers": done, "accessConfig": shown}


async def delete_acl_config(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``DeleteAccessConfigSubCommand``: delete an account (51)."""
    if not args.accessKey:
        raise UsageError("-a accessKey is required")
    key = args.accessKey.strip()
    done = []
    for addr in await _targets(admin, args):
        await invoke(admin, addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": key})
        out.text(f"delete plain access config account from {addr} success.")
        done.append(addr)
    out.text(f"account's accesskey is:{key}")
    out.doc = {"brokers": done, "accessKey": key}


async def update_global_white_addr(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``UpdateGlobalWhiteAddrSubCommand`` (53). Without ``-p`` the header's aclFileFullPath is
    absent, and a 4.9.8 broker refuses it (``@CFNotNull``), as it refuses mqadmin's."""
    if args.globalWhiteRemoteAddresses is None:
        raise UsageError("-g globalWhiteRemoteAddresses is required")
    ext = {"globalWhiteAddrs": args.globalWhiteRemoteAddresses.strip()}
    if args.aclFileFullPath is not None:
        ext["aclFileFullPath"] = args.aclFileFullPath.strip()
    done = []
    for addr in await _targets(admin, args):
        await invoke(admin, addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext)
        out.text(f"update global white remote addresses to {addr} success.")
        done.append(addr)
    out.doc = {"brokers": done, **ext}


async def cluster_acl_config_version(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``ClusterAclConfigVersionListSubCommand``: one row per broker and ACL file (52)."""
    rows = []
    for addr in await _targets(admin, args, slaves=False):
        resp = await invoke(admin, addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
        ext = resp.ext_fields
        versions = jsonutil.loads(ext.get("allAclFileVersion") or "{}") or {}
        for path, version in versions.items():
            rows.append((ext.get("clusterName", ""), ext.get("brokerName", ""),
                         ext.get("brokerAddr", addr), path, str(version.get("counter", 0)),
                         format_ms(int(version.get("timestamp", 0)))))
    out.table(("Cluster Name", "Broker Name", "Broker Addr", "AclFilePath",
               "AclConfigVersionNum", "AclLastUpdateTime"), rows)
    out.text("get cluster's plain access config version success." if not args.brokerAddr
             else "get broker's plain access config version success.")
    out.doc = [dict(zip(("clusterName", "brokerName", "brokerAddr", "aclFilePath", "counter",
                         "lastUpdateTime"), r, strict=True)) for r in rows]


async def get_acl_config(admin: Any, args: argparse.Namespace, out: Output) -> None:
    """``GetAccessConfigSubCommand`` (5.x): white list and accounts per broker (54)."""
    docs = {}
    for addr in await _targets(admin, args, slaves=False):
        resp = await invoke(admin, addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        doc = jsonutil.loads(resp.body) if resp.body else {}
        docs[addr] = doc
        out.text("")
        out.text(f"{'globalWhiteRemoteAddresses':<20}: {doc.get('globalWhiteAddrs') or []}")
        out.text("")
        out.text("accounts:")
        for account in doc.get("plainAccessConfigs") or []:
            for key in ("accessKey", "secretKey", "whiteRemoteAddress", "admin",
                        "defaultTopicPerm", "defaultGroupPerm", "topicPerms", "groupPerms"):
                value = account.get(key)
                out.text(f"  {key:<18}: {'' if value is None else value}")
            out.text("")
    out.doc = docs


Command = Callable[[Any, argparse.Namespace, Output], Any]

COMMANDS: dict[str, tuple[str, Command]] = {
    "updateAclConfig": ("Update acl config yaml file in broker", update_acl_config),
    "deleteAclConfig": ("Delete Acl Config Account in broker", delete_acl_config),
    "updateGlobalWhiteAddr": ("Update global white address for acl Config File in broker",
                              update_global_white_addr),
    "clusterAclConfigVersion": ("List all of acl config version information in cluster",
                                cluster_acl_config_version),
    "getAclConfig": ("List all of acl config information in cluster.", get_acl_config),
}


def add_options(name: str, p: argparse.ArgumentParser) -> None:
    """The mqadmin flags of subcommand ``name``."""
    opt = p.add_argument
    opt("-b", "--brokerAddr", help="which broker")
    opt("-c", "--clusterName", help="which cluster")
    if name in ("updateAclConfig", "deleteAclConfig"):
        opt("-a", "--accessKey", help="the account's accessKey")
    if name == "updateAclConfig":
        opt("-s", "--secretKey", help="set secretKey in acl config file")
        opt("-w", "--whiteRemoteAddress", help="set white ip Address for account")
        opt("-i", "--defaultTopicPerm", help="set default topicPerm")
        opt("-u", "--defaultGroupPerm", help="set default GroupPerm")
        opt("-t", "--topicPerms", help="set topicPerms list,eg: topicA=DENY,topicD=SUB")
        opt("-g", "--groupPerms", help="set groupPerms list,eg: groupD=DENY,groupD=SUB")
        opt("-m", "--admin", help="set admin flag in acl config file")
    if name == "updateGlobalWhiteAddr":
        opt("-g", "--globalWhiteRemoteAddresses",
            help="set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*")
        opt("-p", "--aclFileFullPath", help="the acl file to update, eg: /xxx/plain_test.yml")
