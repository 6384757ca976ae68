"""ACL 1.0 for the test harness: a temporary ``$ROCKETMQ_HOME`` holding ``conf/plain_acl.yml``
(the file RocketMQ 4.9.8's ``PlainPermissionManager`` reads), for
``EmbeddedCluster(acl=..., credentials=...)`` and ``@pytest.mark.rocketmq(acl=...)``.

``acl`` is the file's YAML text or the same as a mapping (``{"accounts": [...]}``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: ``rocketmq.acl.plain.file``'s default, relative to the home.
PLAIN_ACL_FILE = Path("conf") / "plain_acl.yml"


def acl_text(spec: str | Mapping[str, Any]) -> str:
    """The YAML text of ``spec`` (a string is taken as is)."""
    if isinstance(spec, str):
        return spec
    import yaml

    return yaml.safe_dump(dict(spec), sort_keys=False)


class AclHome:
    """A temporary RocketMQ home whose ``conf/plain_acl.yml`` the brokers load and watch."""

    def __init__(self, spec: str | Mapping[str, Any]) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="rmq-emu-acl-"))
        self.path = self.home / PLAIN_ACL_FILE
        self.write(spec)

    def write(self, spec: str | Mapping[str, Any]) -> Path:
        """(Re)write the file; brokers pick it up within a watch interval, or at once through
        :meth:`EmbeddedCluster.update_acl <rocketmq_emu.client.testing.EmbeddedCluster.update_acl>`."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(acl_text(spec), encoding="utf-8")
        tmp.replace(self.path)  # never a half-written file for the watch to read
        return self.path

    def broker_settings(self) -> dict[str, Any]:
        """The BrokerConfig overrides that turn ACL on with this home."""
        return {"acl_enable": True, "rocketmq_home": str(self.home)}

    def remove(self) -> None:
        """Delete the home."""
        shutil.rmtree(self.home, ignore_errors=True)
