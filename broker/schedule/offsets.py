"""Delay-level offsets (``config/delayOffset.json``) behind one small interface.

RocketMQ's file is ``{"offsetTable":{1:12,2:0,...}}`` (fastjson, unquoted int keys: level ->
next consume-queue offset of ``SCHEDULE_TOPIC_XXXX`` queue level-1). The store facade exposes
the config manager as ``store.delay_offsets``; :func:`delay_offset_table` adapts it, and falls
back to :class:`DelayOffsetFile` (our own reader/writer of the same file) when the store has
none.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol

from broker import jsonutil

log = logging.getLogger(__name__)


class DelayOffsetTable(Protocol):
    """What the delay-level service needs: read, update and persist offsets."""

    def get(self, level: int) -> int: ...

    def set(self, level: int, offset: int) -> None: ...

    def persist(self) -> None: ...


class DelayOffsetFile:
    """``config/delayOffset.json`` read and written directly (write to temp + rename)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.table: dict[int, int] = {}
        self.load()

    def load(self) -> None:
        """Read the file; a missing or unreadable file means all offsets are 0 (logged)."""
        try:
            with open(self.path, "rb") as f:
                data = jsonutil.loads(f.read())
            table = data.get("offsetTable") or {}
            self.table = {int(k): int(v) for k, v in table.items()}
        except FileNotFoundError:
            self.table = {}
        except Exception as exc:  # corrupt file: RocketMQ's ConfigManager then tries .bak
            log.error("delay offsets %s unreadable (%s); trying %s.bak", self.path, exc, self.path)
            try:
                with open(self.path + ".bak", "rb") as f:
                    data = jsonutil.loads(f.read())
                self.table = {int(k): int(v) for k, v in (data.get("offsetTable") or {}).items()}
            except Exception:
                self.table = {}

    def get(self, level: int) -> int:
        return self.table.get(level, 0)

    def set(self, level: int, offset: int) -> None:
        self.table[level] = offset

    def persist(self) -> None:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        body = jsonutil.dumps({"offsetTable": {str(k): v for k, v in sorted(self.table.items())}})
        if isinstance(body, str):
            body = body.encode()
        if os.path.exists(self.path):
            os.replace(self.path, self.path + ".bak")
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(body)
        os.replace(tmp, self.path)


class _ManagerAdapter:
    """Adapts the store's delay-offset config manager (``offset_table`` dict + ``persist()``)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    def _table(self) -> dict:
        table = getattr(self.manager, "offset_table", None)
        if table is None:
            table = self.manager.offsetTable
        return table

    def get(self, level: int) -> int:
        if hasattr(self.manager, "get_offset"):
            value = self.manager.get_offset(level)
            return int(value) if value is not None else 0
        return int(self._table().get(level, 0))

    def set(self, level: int, offset: int) -> None:
        if hasattr(self.manager, "set_offset"):
            self.manager.set_offset(level, offset)
        else:
            self._table()[level] = offset

    def persist(self) -> None:
        self.manager.persist()


def delay_offset_table(store: Any, fallback_path: str) -> DelayOffsetTable:
    """The store's delay-offset manager if it has one, else our own file at ``fallback_path``."""
    manager = getattr(store, "delay_offsets", None)
    if manager is None:
        return DelayOffsetFile(fallback_path)
    if all(hasattr(manager, n) for n in ("get", "set", "persist")) and not isinstance(
        manager, dict
    ):
        return manager
    return _ManagerAdapter(manager)
