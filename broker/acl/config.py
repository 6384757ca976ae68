"""``plain_acl.yml``: accounts and white lists of ACL 1.0 (Java ``PlainPermissionManager.load``
and ``buildPlainAccessResource``, ``AclUtils.getYamlDataObject``, RocketMQ 4.9.8).

RocketMQ reads every ``*.yml`` / ``*.yaml`` under ``$ROCKETMQ_HOME/conf/acl`` (recursively) and
then ``$ROCKETMQ_HOME/`` + ``rocketmq.acl.plain.file`` (default ``conf/plain_acl.yml``). Each
holds ``globalWhiteRemoteAddresses`` (merged over all files) and ``accounts``; an access key
defined twice keeps its first definition. A file that is empty holds no data.

Java binds the YAML leniently (fastjson ignores unknown keys and turns most values into
strings); here anything RocketMQ would not understand is an :class:`AclConfigError` naming the
file and the key, never an exception of the YAML library or a silently open door. Numbers are
accepted where Java takes a string (the shipped sample has ``secretKey: 12345678``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rocketmq_emu.broker.acl import DEFAULT_PLAIN_FILE
from rocketmq_emu.broker.acl.addresses import (
    AddressPatternError,
    RemoteAddressStrategy,
    strategy_for,
)
from rocketmq_emu.broker.acl.permission import (
    is_known_perm,
    java_trim,
    parse_perm,
    retry_topic,
)

log = logging.getLogger(__name__)

#: AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH: keys must be longer than this.
KEY_MIN_LENGTH = 6
#: A plain_acl.yml larger than this is refused (RocketMQ has no limit; ours keeps a start cheap).
MAX_FILE_BYTES = 8 * 1024 * 1024

_TOP_KEYS = frozenset({"globalWhiteRemoteAddresses", "accounts", "dataVersion"})
_ACCOUNT_KEYS = frozenset({
    "accessKey", "secretKey", "whiteRemoteAddress", "admin",
    "defaultTopicPerm", "defaultGroupPerm", "topicPerms", "groupPerms",
})


class AclConfigError(ValueError):
    """A plain_acl.yml RocketMQ would refuse or we cannot read: names the file and the key."""

    def __init__(self, path: str, key: str, message: str) -> None:
        super().__init__(f"{path}: {key}: {message}")
        self.path = path
        self.key = key


@dataclass(frozen=True, slots=True)
class Account:
    """One account (the owned side of Java ``PlainAccessResource``).

    ``resource_perms`` maps topics, and groups as their ``%RETRY%`` topics, to permission bits;
    it is None when the account lists none (Java's null map: an admin then passes every check).
    """

    access_key: str
    secret_key: str = field(repr=False)
    white_remote_address: str | None
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    resource_perms: Mapping[str, int] | None
    address_strategy: RemoteAddressStrategy = field(repr=False)
    source: str = ""


@dataclass(frozen=True, slots=True)
class AclFileData:
    """What one file declares."""

    path: str
    global_white: tuple[RemoteAddressStrategy, ...]
    global_white_patterns: tuple[str, ...]
    accounts: tuple[Account, ...]


@dataclass(frozen=True, slots=True)
class AclConfig:
    """All files merged as ``PlainPermissionManager.load`` does."""

    accounts: Mapping[str, Account]
    global_white: tuple[RemoteAddressStrategy, ...]
    files: tuple[str, ...] = ()


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _string(path: str, key: str, value: Any) -> str | None:
    """A scalar Java would bind to a String (numbers too); None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise AclConfigError(path, key, f"expected a string, got {_type_name(value)}")


def _boolean(path: str, key: str, value: Any) -> bool:
    """``admin``: a YAML boolean, or the strings true/false as fastjson takes them."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise AclConfigError(path, key, f"expected true or false, got {_type_name(value)}")


def _string_list(path: str, key: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclConfigError(path, key, f"expected a list, got {_type_name(value)}")
    out = []
    for i, item in enumerate(value):
        text = _string(path, f"{key}[{i}]", item)
        if text is None:
            raise AclConfigError(path, f"{key}[{i}]", "expected a string, got null")
        out.append(text)
    return out


def _strategy(path: str, key: str, pattern: str | None) -> RemoteAddressStrategy:
    try:
        return strategy_for(pattern)
    except AddressPatternError as exc:
        raise AclConfigError(path, key, str(exc)) from None


def _perm(path: str, key: str, value: Any) -> int:
    text = _string(path, key, value)
    if text is not None and not is_known_perm(text):
        # Permission.parsePermFromString turns it into DENY without a word; say so.
        log.warning("%s: %s: unknown permission %r is DENY", path, key, text)
    return parse_perm(text)


def _resource_perms(path: str, key: str, value: Any, groups: bool, into: dict[str, int]) -> None:
    """``Permission.parseResourcePerms``: ``Name=PERM`` entries, groups as retry topics."""
    for i, entry in enumerate(_string_list(path, key, value)):
        items = [t for t in entry.split("=") if t]
        if len(items) != 2:
            raise AclConfigError(
                path, f"{key}[{i}]",
                f"Parse resource permission failed for {'group' if groups else 'topic'}:{entry}")
        name = java_trim(items[0])
        resource = retry_topic(name) if groups else name
        assert resource is not None
        into[resource] = _perm(path, f"{key}[{i}]", items[1])


def _account(path: str, index: int, raw: Any) -> Account:
    """``buildPlainAccessResource`` with ``checkPlainAccessConfig``."""
    where = f"accounts[{index}]"
    if not isinstance(raw, dict):
        raise AclConfigError(path, where, f"expected a mapping, got {_type_name(raw)}")
    for key in raw:
        if key not in _ACCOUNT_KEYS:
            raise AclConfigError(path, f"{where}.{key}", "unknown key")
    access_key = _string(path, f"{where}.accessKey", raw.get("accessKey"))
    secret_key = _string(path, f"{where}.secretKey", raw.get("secretKey"))
    if (access_key is None or secret_key is None or len(access_key) <= KEY_MIN_LENGTH
            or len(secret_key) <= KEY_MIN_LENGTH):
        bad = "accessKey" if access_key is None or len(access_key) <= KEY_MIN_LENGTH else "secretKey"
        # The secret is not repeated in the message (Java prints it).
        raise AclConfigError(
            path, f"{where}.{bad}",
            f"The accessKey={access_key} and secretKey cannot be null and length should "
            f"longer than {KEY_MIN_LENGTH}")
    white = _string(path, f"{where}.whiteRemoteAddress", raw.get("whiteRemoteAddress"))
    perms: dict[str, int] = {}
    _resource_perms(path, f"{where}.groupPerms", raw.get("groupPerms"), True, perms)
    _resource_perms(path, f"{where}.topicPerms", raw.get("topicPerms"), False, perms)
    return Account(
        access_key=access_key,
        secret_key=secret_key,
        white_remote_address=white,
        admin=_boolean(path, f"{where}.admin", raw.get("admin")),
        default_topic_perm=_perm(path, f"{where}.defaultTopicPerm", raw.get("defaultTopicPerm")),
        default_group_perm=_perm(path, f"{where}.defaultGroupPerm", raw.get("defaultGroupPerm")),
        resource_perms=perms or None,
        address_strategy=_strategy(path, f"{where}.whiteRemoteAddress", white),
        source=path,
    )


def parse_acl_data(data: Any, path: str) -> AclFileData | None:
    """One file's parsed YAML document; None when it holds no data."""
    if data is None or data == {}:
        return None
    if not isinstance(data, dict):
        raise AclConfigError(path, "(top level)", f"expected a mapping, got {_type_name(data)}")
    for key in data:
        if key not in _TOP_KEYS:
            raise AclConfigError(path, str(key), "unknown key")
    patterns = _string_list(path, "globalWhiteRemoteAddresses", data.get("globalWhiteRemoteAddresses"))
    white = tuple(_strategy(path, f"globalWhiteRemoteAddresses[{i}]", p) for i, p in enumerate(patterns))
    raw_accounts = data.get("accounts")
    if raw_accounts is not None and not isinstance(raw_accounts, list):
        raise AclConfigError(path, "accounts", f"expected a list, got {_type_name(raw_accounts)}")
    version = data.get("dataVersion")
    if version is not None and not isinstance(version, list):
        raise AclConfigError(path, "dataVersion", f"expected a list, got {_type_name(version)}")
    accounts = tuple(_account(path, i, a) for i, a in enumerate(raw_accounts or ()))
    return AclFileData(path, white, tuple(patterns), accounts)


def parse_acl_text(text: str | bytes, path: str) -> AclFileData | None:
    """Parse plain_acl.yml content (``yaml.safe_load``: no tags that build objects)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AclConfigError(path, "(yaml)", " ".join(str(exc).split())[:400]) from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise AclConfigError(path, "(yaml)", f"unreadable: {exc}"[:400]) from None
    return parse_acl_data(data, path)


def read_acl_file(path: str) -> AclFileData | None:
    """Read and parse one file; None if it is absent or empty (``getYamlDataObject``)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AclConfigError(path, "(file)", f"cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise AclConfigError(path, "(file)", f"larger than {MAX_FILE_BYTES} bytes")
    return parse_acl_text(raw, path)


def acl_file_paths(home: str, plain_file: str = DEFAULT_PLAIN_FILE) -> list[str]:
    """``getAllAclFiles($home/conf/acl)`` (sorted, for a stable order) then the default file."""
    acl_dir = Path(home, "conf", "acl")
    found: list[str] = []
    if acl_dir.is_dir():
        tools = os.path.join(home, "conf", "tools.yml")
        for root, dirs, files in os.walk(acl_dir):
            dirs.sort()
            for name in sorted(files):
                full = os.path.abspath(os.path.join(root, name))
                if full != os.path.abspath(tools) and name.endswith((".yml", ".yaml")):
                    found.append(full)
    default = os.path.abspath(os.path.join(home, plain_file))
    if os.path.exists(default) and default not in found:
        found.append(default)
    return found


def merge(files: Iterable[AclFileData]) -> AclConfig:
    """Merge files in order: global white lists add up; an access key keeps its first account."""
    accounts: dict[str, Account] = {}
    white: list[RemoteAddressStrategy] = []
    paths: list[str] = []
    for data in files:
        paths.append(data.path)
        white.extend(data.global_white)
        for account in data.accounts:
            if account.access_key in accounts:
                log.warning("The accessKey %s is repeated in multiple ACL files (%s)",
                            account.access_key, data.path)
                continue
            accounts[account.access_key] = account
    return AclConfig(accounts, tuple(white), tuple(paths))


def load_acl(home: str | None, plain_file: str = DEFAULT_PLAIN_FILE) -> AclConfig:
    """``PlainPermissionManager.load``: no home, no accounts (every signed request refused)."""
    if not home:
        return AclConfig({}, ())
    parsed = (read_acl_file(p) for p in acl_file_paths(home, plain_file))
    return merge(d for d in parsed if d is not None)
