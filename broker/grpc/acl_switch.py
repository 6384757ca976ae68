"""Whether the gRPC endpoint checks ACL 1.0: light on purpose (imported at every start), the
checks themselves (:mod:`~rocketmq_emu.broker.grpc.auth_guard`, plain_acl.yml, YAML) are
imported only when a broker has ``aclEnable=true``."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rocketmq_emu.broker.acl import DEFAULT_PLAIN_FILE

if TYPE_CHECKING:
    from rocketmq_emu.broker.grpc.auth_guard import GrpcAclGuard

log = logging.getLogger(__name__)


def acl_settings(brokers: Mapping[str, Any]) -> tuple[bool, str | None, str]:
    """(ACL on?, ROCKETMQ_HOME, ``rocketmq.acl.plain.file``) from the brokers' ``aclEnable`` /
    ``rocketmqHome`` (any broker with ACL on turns it on; its home, else ``$ROCKETMQ_HOME``)."""
    for controller in brokers.values():
        cfg = getattr(controller, "config", None)
        if getattr(cfg, "acl_enable", False):
            home = getattr(cfg, "rocketmq_home", None) or os.environ.get("ROCKETMQ_HOME")
            return True, home, getattr(cfg, "acl_plain_file", DEFAULT_PLAIN_FILE)
    return False, None, DEFAULT_PLAIN_FILE


def install_if_enabled(factory: Any, brokers: Mapping[str, Any]) -> GrpcAclGuard | None:
    """:func:`install` when a broker has ``aclEnable=true``; None, and nothing added, otherwise.

    The accounts are that broker's own ``AclService`` (``controller.acl``): one watcher of
    plain_acl.yml (``AclFileWatchService``'s, every 5 s), one reload rule (the ACL admin codes
    reload it at once), so remoting and gRPC requests see an edit at the same moment, as the
    5.x proxy in local mode reads the broker's ``PlainPermissionManager``."""
    for controller in brokers.values():
        if getattr(getattr(controller, "config", None), "acl_enable", False):
            acl = controller.acl
            break
    else:
        return None
    from rocketmq_emu.broker.grpc.auth_guard import install

    log.info("gRPC ACL enabled (%d accounts from %s)", len(acl.config.accounts),
             acl.home or "no ROCKETMQ_HOME")
    return install(factory, lambda: acl.config)
