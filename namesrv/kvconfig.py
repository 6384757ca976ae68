"""Name-server KV config (Java ``namesrv/kvconfig/KVConfigManager``).

Namespaced string key/values used by ``mqadmin`` (``updateKvConfig``, ``deleteKvConfig``) and by
order-topic configuration (namespace ``ORDER_TOPIC_CONFIG``). Persisted, when a path is given, as
``{"configTable":{namespace:{key:value}}}`` like ``~/namesrv/kvConfig.json``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rocketmq_emu.broker import jsonutil

log = logging.getLogger(__name__)

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfigManager:
    """In-memory namespaced KV table, optionally persisted to ``path``."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.config_table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """Read the persisted file if there is one (a corrupt file is logged and ignored)."""
        if self.path is None or not self.path.exists():
            return
        try:
            data = jsonutil.loads(self.path.read_bytes())
            table = data.get("configTable") or {}
            self.config_table = {
                str(ns): {str(k): str(v) for k, v in (kv or {}).items()} for ns, kv in table.items()
            }
        except Exception as exc:
            log.error("cannot read KV config %s: %s", self.path, exc)

    def persist(self) -> None:
        """Write the table atomically (tmp file + rename)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_bytes(jsonutil.dumps_pretty({"configTable": self.config_table}))
        os.replace(tmp, self.path)

    def put(self, namespace: str, key: str, value: str) -> None:
        """PUT_KV_CONFIG."""
        self.config_table.setdefault(namespace, {})[key] = value
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        """GET_KV_CONFIG (None when absent)."""
        return self.config_table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        """DELETE_KV_CONFIG (no error when absent)."""
        kv = self.config_table.get(namespace)
        if kv is not None and kv.pop(key, None) is not None:
            self.persist()

    def kv_list(self, namespace: str) -> dict[str, str] | None:
        """All keys of a namespace, or None if the namespace does not exist."""
        kv = self.config_table.get(namespace)
        return None if kv is None else dict(kv)

    def kv_list_body(self, namespace: str) -> bytes | None:
        """KVTable JSON ``{"table":{..}}`` for a namespace, or None."""
        kv = self.kv_list(namespace)
        return None if kv is None else jsonutil.dumps({"table": kv})
