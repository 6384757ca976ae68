"""The write side of ``PlainPermissionManager`` (RocketMQ 4.9.8): ``updateAccessConfig``,
``deleteAccessConfig``, ``updateGlobalWhiteAddrsConfig`` rewriting ``plain_acl.yml``, and the
per-file ``dataVersion`` (``updateAclConfigFileVersion``) read back by ``getAllAclConfigVersion``
and ``getAllAclConfig``.

An account is updated in the file that defines it, a new one is appended to the default file
(``$ROCKETMQ_HOME/conf/plain_acl.yml``, created if missing). Every write bumps the file's
``dataVersion: [{counter, timestamp}]``. The new document is parsed with the broker's own loader
before it is written, so an edit the broker could not load is refused (Java refuses what
``buildPlainAccessResource`` cannot build) instead of leaving a file that the watch skips. Writes
go through a temporary file and a rename, so the file watch never reads half a file.

Differences on purpose: ``updateGlobalWhiteAddrsConfig`` takes only a ``.yml``/``.yaml`` file
under ``$ROCKETMQ_HOME`` (Java's extension test lets any name but ``.yaml`` through and compares
path prefixes as strings); an update of an account no longer in its file appends it.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import yaml

from rocketmq_emu.broker.acl.config import KEY_MIN_LENGTH, AclConfigError, parse_acl_data
from rocketmq_emu.broker.acl.permission import DENY, is_known_perm, java_trim, parse_perm


class AclEditError(Exception):
    """An edit refused with the message Java's ``AclException`` carries."""


@dataclass(slots=True)
class PlainAccessConfig:
    """Java ``PlainAccessConfig``: one account as an admin request gives it."""

    access_key: str | None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None


def java_split(text: str | None, sep: str = ",") -> list[str] | None:
    """``UtilAll.split`` (``String.split``: trailing empty strings dropped; "" stays [""])."""
    if text is None:
        return None
    if text == "":
        return [""]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def check_resource_perms(resources: list[str] | None) -> None:
    """``Permission.checkResourcePerms``: each entry ``Res=PERM`` with a known permission."""
    for resource in resources or ():
        items = [t for t in resource.split("=") if t]
        if len(items) != 2:
            raise AclEditError(f"Parse Resource format error for {resource}.\nThe expected "
                               "resource format is 'Res=Perm'. For example: topicA=SUB")
        perm = java_trim(items[1])
        if perm != "DENY" and (not is_known_perm(perm) or parse_perm(perm) == DENY):
            raise AclEditError(f"Parse resource permission error for {resource}.\nThe expected "
                               "permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.")


def check_plain_access_config(cfg: PlainAccessConfig) -> None:
    """``checkPlainAccessConfig``: both keys longer than 6 characters."""
    if (cfg.access_key is None or cfg.secret_key is None or len(cfg.access_key) <= KEY_MIN_LENGTH
            or len(cfg.secret_key) <= KEY_MIN_LENGTH):
        raise AclEditError(f"The accessKey={cfg.access_key} and secretKey={cfg.secret_key} "
                           f"cannot be null and length should longer than {KEY_MIN_LENGTH}")


def account_map(existing: dict[str, Any] | None, cfg: PlainAccessConfig) -> dict[str, Any]:
    """``createAclAccessConfigMap``: the account's YAML mapping, over ``existing`` if given."""
    out: dict[str, Any] = dict(existing) if existing else {}
    if not cfg.access_key or len(cfg.access_key) <= KEY_MIN_LENGTH:
        raise AclEditError(f"The accessKey={cfg.access_key} cannot be null and length should "
                           f"longer than {KEY_MIN_LENGTH}")
    out["accessKey"] = cfg.access_key
    if cfg.secret_key:
        if len(cfg.secret_key) <= KEY_MIN_LENGTH:
            raise AclEditError(f"The secretKey={cfg.secret_key} value length should longer "
                               f"than {KEY_MIN_LENGTH}")
        out["secretKey"] = cfg.secret_key
    if cfg.white_remote_address is not None:
        out["whiteRemoteAddress"] = cfg.white_remote_address
    out["admin"] = bool(cfg.admin)
    if cfg.default_topic_perm:
        out["defaultTopicPerm"] = cfg.default_topic_perm
    if cfg.default_group_perm:
        out["defaultGroupPerm"] = cfg.default_group_perm
    if cfg.topic_perms is not None:
        out["topicPerms"] = list(cfg.topic_perms)
    if cfg.group_perms is not None:
        out["groupPerms"] = list(cfg.group_perms)
    return out


# --- files ------------------------------------------------------------------------------------
def read_doc(path: str) -> dict[str, Any]:
    """The file's mapping; {} if absent or empty (``AclUtils.getYamlDataObject``)."""
    try:
        with open(path, "rb") as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, yaml.YAMLError) as exc:
        raise AclEditError(f"{path}: {' '.join(str(exc).split())[:300]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise AclEditError(f"{path}: expected a mapping at the top level")
    return data


def file_version(doc: dict[str, Any]) -> tuple[int, int] | None:
    """``(counter, timestamp)`` of the first ``dataVersion`` element, if any."""
    versions = doc.get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        try:
            return int(versions[0].get("counter", 0)), int(versions[0].get("timestamp", 0))
        except (TypeError, ValueError):
            return None
    return None


def bump_version(doc: dict[str, Any], now_ms: int | None = None) -> tuple[int, int]:
    """``updateAclConfigFileVersion``: counter + 1, timestamp now; written into ``doc``."""
    counter = (file_version(doc) or (0, 0))[0] + 1
    stamp = int(time.time() * 1000) if now_ms is None else now_ms
    doc["dataVersion"] = [{"counter": counter, "timestamp": stamp}]
    return counter, stamp


def write_doc(path: str, doc: dict[str, Any]) -> None:
    """Check ``doc`` loads, then write it atomically (``AclUtils.writeDataObject``)."""
    try:
        parse_acl_data(doc, path)
    except AclConfigError as exc:
        raise AclEditError(str(exc)) from None
    text = yaml.safe_dump(doc, default_flow_style=False, sort_keys=False, allow_unicode=True)
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".plain_acl.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# --- the three edits --------------------------------------------------------------------------
def update_access_config(cfg: PlainAccessConfig, owner_file: str | None, default_file: str,
                         now_ms: int | None = None) -> str:
    """``updateAccessConfig``: update the account in ``owner_file`` (the file that defines it)
    or append it to ``default_file``; returns the file written."""
    check_plain_access_config(cfg)
    check_resource_perms(cfg.topic_perms)
    check_resource_perms(cfg.group_perms)
    path = owner_file or default_file
    doc = read_doc(path)
    accounts = doc.get("accounts")
    if not isinstance(accounts, list):
        accounts = []
    for i, existing in enumerate(accounts):
        if isinstance(existing, dict) and existing.get("accessKey") == cfg.access_key:
            accounts.pop(i)
            accounts.append(account_map(existing, cfg))
            break
    else:
        accounts.append(account_map(None, cfg))
    doc["accounts"] = accounts
    bump_version(doc, now_ms)
    write_doc(path, doc)
    return path


def delete_access_config(access_key: str | None, owner_file: str | None,
                         now_ms: int | None = None) -> bool:
    """``deleteAccessConfig``: False if the key is empty, unknown or not in its file."""
    if not access_key or owner_file is None:
        return False
    doc = read_doc(owner_file)
    if not doc:
        return True
    accounts = doc.get("accounts")
    if not isinstance(accounts, list):
        return False
    for i, existing in enumerate(accounts):
        if isinstance(existing, dict) and existing.get("accessKey") == access_key:
            accounts.pop(i)
            doc["accounts"] = accounts
            bump_version(doc, now_ms)
            write_doc(owner_file, doc)
            return True
    return False


def white_file_allowed(path: str, home: str) -> bool:
    """A file ``updateGlobalWhiteAddrsConfig`` may write: an existing ``.yml``/``.yaml`` file
    under ``home``."""
    if not os.path.isfile(path) or not path.endswith((".yml", ".yaml")):
        return False
    real, root = os.path.realpath(path), os.path.realpath(home)
    return os.path.commonpath([real, root]) == root


def update_global_white_addrs(addrs: list[str] | None, path: str | None, home: str | None,
                              default_file: str | None, now_ms: int | None = None) -> bool:
    """``updateGlobalWhiteAddrsConfig``: replace the file's ``globalWhiteRemoteAddresses``;
    False for no list, no home, or a file it may not write."""
    target = path or default_file
    if addrs is None or not home or not target or not white_file_allowed(target, home):
        return False
    doc = read_doc(target)
    doc["globalWhiteRemoteAddresses"] = list(addrs)
    bump_version(doc, now_ms)
    write_doc(target, doc)
    return True


def all_acl_config(files: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``getAllAclConfig``: the white lists of every file and each access key's first account,
    as ``GetBrokerClusterAclConfigResponseBody`` carries them."""
    white: list[str] = []
    configs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in files:
        try:
            doc = read_doc(path)
        except AclEditError:
            continue
        for addr in doc.get("globalWhiteRemoteAddresses") or ():
            white.append(str(addr))
        for account in doc.get("accounts") or ():
            if not isinstance(account, dict) or account.get("accessKey") is None:
                continue
            key = str(account["accessKey"])
            if key in seen:
                continue
            seen.add(key)
            configs.append(_plain_access_json(account))
    return {"globalWhiteAddrs": white, "plainAccessConfigs": configs}


def _plain_access_json(account: dict[str, Any]) -> dict[str, Any]:
    """One ``PlainAccessConfig`` as fastjson writes it (sorted keys, nulls left out)."""
    out: dict[str, Any] = {"accessKey": str(account["accessKey"]),
                           "admin": str(account.get("admin")).lower() == "true"}
    for key in ("defaultGroupPerm", "defaultTopicPerm"):
        if account.get(key) is not None:
            out[key] = str(account[key])
    if isinstance(account.get("groupPerms"), list):
        out["groupPerms"] = [str(v) for v in account["groupPerms"]]
    if account.get("secretKey") is not None:
        out["secretKey"] = str(account["secretKey"])
    if isinstance(account.get("topicPerms"), list):
        out["topicPerms"] = [str(v) for v in account["topicPerms"]]
    if account.get("whiteRemoteAddress") is not None:
        out["whiteRemoteAddress"] = str(account["whiteRemoteAddress"])
    return out
