"""The ACL admin request codes of ``AdminBrokerProcessor`` (RocketMQ 4.9.8, 54 from 5.x):
UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52),
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), GET_BROKER_CLUSTER_ACL_CONFIG (54).

The edits are :mod:`rocketmq_emu.broker.acl.editor`'s; a written file is reloaded at once (Java
updates its tables in memory too, the file watch would pick it up within 5 s). With ACL off
there is no ``PlainAccessValidator`` and Java's handlers hit a NullPointerException: 50, 51 and
53 answer their ``*_FAILED`` code with no remark, 52 and 54 answer nothing (the caller times
out). Which accounts may call them is the validator's business: in 4.9.8 none of these codes is
in ``Permission.ADMIN_CODE``, so any account whose signature checks may.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

if TYPE_CHECKING:
    from rocketmq_emu.broker.acl.editor import PlainAccessConfig

log = logging.getLogger(__name__)

#: ResponseCode values of 4.9.8 (209-211 are also POLLING_FULL/POLLING_TIMEOUT/... in 5.x).
UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
DELETE_ACL_CONFIG_FAILED = 210
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211


def _editor() -> Any:
    """:mod:`rocketmq_emu.broker.acl.editor` (and YAML), imported by the first ACL admin request
    that edits or reads the files: only with ACL on (``aclEnable``), never at start."""
    from rocketmq_emu.broker.acl import editor

    return editor


def _missing(cmd: RemotingCommand, *names: str) -> RemotingCommand | None:
    """``decodeCommandCustomHeader``'s @CFNotNull check: SYSTEM_ERROR naming the field."""
    for name in names:
        if cmd.ext_fields.get(name) is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"the custom field <{name}> is null")
    return None


def _java_bool(text: str | None) -> bool:
    return (text or "").strip().lower() == "true"


def access_config_from_header(ext: dict[str, str]) -> PlainAccessConfig:
    """``CreateAccessConfigRequestHeader`` → ``PlainAccessConfig`` as the handler builds it."""
    editor = _editor()
    java_split = editor.java_split
    return editor.PlainAccessConfig(
        access_key=ext.get("accessKey"),
        secret_key=ext.get("secretKey"),
        white_remote_address=ext.get("whiteRemoteAddress"),
        admin=_java_bool(ext.get("admin")),
        default_topic_perm=ext.get("defaultTopicPerm"),
        default_group_perm=ext.get("defaultGroupPerm"),
        topic_perms=java_split(ext.get("topicPerms")),
        group_perms=java_split(ext.get("groupPerms")),
    )


class AclAdminProcessor:
    """Handlers of codes 50-54; ``get_acl()`` is the broker's AclService, None with ACL off."""

    def __init__(self, ctx: BrokerContext, get_acl: Callable[[], Any]) -> None:
        self.ctx = ctx
        self.get_acl = get_acl

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_and_create,
            RequestCode.DELETE_ACL_CONFIG: self.delete,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.config_version,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white,
            RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: self.cluster_acl_config,
        }

    def _owner(self, acl: Any, access_key: str | None) -> str | None:
        account = acl.config.accounts.get(access_key) if access_key else None
        return account.source if account is not None and account.source else None

    def _reload(self, acl: Any) -> None:
        try:
            acl.reload()
        except Exception:
            log.exception("ACL reload after an admin edit failed")

    # --- 50 / 51 / 53 ----------------------------------------------------------------------
    def update_and_create(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """50: create or update an account."""
        if (bad := _missing(cmd, "accessKey")) is not None:
            return bad
        acl = self.get_acl()
        if acl is None or acl.default_file is None:
            return cmd.response(UPDATE_AND_CREATE_ACL_CONFIG_FAILED, None)
        cfg = access_config_from_header(cmd.ext_fields)
        editor = _editor()
        try:
            editor.update_access_config(cfg, self._owner(acl, cfg.access_key), acl.default_file,
                                        self.ctx.now_ms())
        except (editor.AclEditError, OSError) as exc:
            log.error("Failed to generate a proper update accessvalidator response: %s", exc)
            return cmd.response(UPDATE_AND_CREATE_ACL_CONFIG_FAILED, str(exc))
        self._reload(acl)
        return cmd.response(ResponseCode.SUCCESS)

    def delete(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """51: delete an account from the file that defines it."""
        if (bad := _missing(cmd, "accessKey")) is not None:
            return bad
        acl = self.get_acl()
        if acl is None:
            return cmd.response(DELETE_ACL_CONFIG_FAILED, None)
        key = cmd.ext_fields["accessKey"]
        editor = _editor()
        try:
            done = editor.delete_access_config(key, self._owner(acl, key), self.ctx.now_ms())
        except (editor.AclEditError, OSError) as exc:
            return cmd.response(DELETE_ACL_CONFIG_FAILED, str(exc))
        if not done:
            return cmd.response(DELETE_ACL_CONFIG_FAILED, f"The accesskey[{key}] corresponding "
                                "to accessConfig has been deleted failed.")
        self._reload(acl)
        return cmd.response(ResponseCode.SUCCESS)

    def update_global_white(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """53: replace ``globalWhiteRemoteAddresses`` of a file (``aclFileFullPath``)."""
        if (bad := _missing(cmd, "globalWhiteAddrs", "aclFileFullPath")) is not None:
            return bad
        acl = self.get_acl()
        if acl is None:
            return cmd.response(UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, None)
        addrs = cmd.ext_fields["globalWhiteAddrs"]
        path = cmd.ext_fields["aclFileFullPath"] or None
        editor = _editor()
        try:
            done = editor.update_global_white_addrs(editor.java_split(addrs), path, acl.home,
                                                    acl.default_file, self.ctx.now_ms())
        except (editor.AclEditError, OSError) as exc:
            return cmd.response(UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, str(exc))
        if not done:
            return cmd.response(UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
                                f"The globalWhiteAddresses[{addrs}] has been updated failed.")
        self._reload(acl)
        return cmd.response(ResponseCode.SUCCESS)

    # --- 52 / 54 ---------------------------------------------------------------------------
    def _versions(self, acl: Any) -> dict[str, dict[str, int]]:
        """``getAllAclConfigVersion``: file → DataVersion (a file without one: counter 0, its
        modification time)."""
        out: dict[str, dict[str, int]] = {}
        editor = _editor()
        for path in acl.config.files:
            try:
                version = editor.file_version(editor.read_doc(path))
                if version is None:
                    version = (0, int(os.stat(path).st_mtime * 1000))
            except (editor.AclEditError, OSError):
                continue
            out[path] = {"counter": version[0], "timestamp": version[1]}
        return out

    def config_version(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand | None:
        """52: ``GetBrokerAclConfigResponseHeader`` (no answer with ACL off, as Java's NPE)."""
        acl = self.get_acl()
        if acl is None:
            return None
        versions = self._versions(acl)
        default = versions.get(acl.default_file or "") or {"counter": 0,
                                                           "timestamp": self.ctx.boot_timestamp}
        return cmd.response(ResponseCode.SUCCESS, ext_fields={
            "version": jsonutil.dumps(default).decode("utf-8"),
            "allAclFileVersion": jsonutil.dumps(versions).decode("utf-8"),
            "brokerAddr": self.ctx.broker_addr,
            "brokerName": self.ctx.broker_name,
            "clusterName": self.ctx.cluster_name,
        })

    def cluster_acl_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand | None:
        """54 (5.x): ``GetBrokerClusterAclConfigResponseBody`` (no answer with ACL off)."""
        acl = self.get_acl()
        if acl is None:
            return None
        body = _editor().all_acl_config(acl.config.files)
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(body))
