"""Delay-level offsets (``config/delayOffset.json``) behind one small interface.

The file belongs to :class:`rocketmq_emu.broker.configs.offsets.DelayOffsetManager`
(``{"offsetTable":{level:offset}}``, level -> next consume-queue offset of
``SCHEDULE_TOPIC_XXXX`` queue level-1). The store facade exposes it as ``store.delay_offsets``;
:func:`delay_offset_table` adapts it, or opens the same file itself when the store has none.
"""

from __future__ import annotations

from typing import Any, Protocol

from rocketmq_emu.broker.configs.offsets import DelayOffsetManager


class DelayOffsetTable(Protocol):
    """What the delay-level service needs: read, update and persist offsets."""

    def get(self, level: int) -> int: ...

    def set(self, level: int, offset: int) -> None: ...

    def persist(self) -> None: ...


class ManagerOffsets:
    """:class:`DelayOffsetTable` over a ``DelayOffsetManager``."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    def get(self, level: int) -> int:
        return int(self.manager.query_offset(level))

    def set(self, level: int, offset: int) -> None:
        self.manager.update_offset(level, offset)

    def persist(self) -> None:
        self.manager.persist()


def delay_offset_table(store: Any, fallback_path: str) -> DelayOffsetTable:
    """The store's delay-offset manager if it has one, else a manager on ``fallback_path``."""
    manager = getattr(store, "delay_offsets", None)
    if manager is None:
        manager = DelayOffsetManager(fallback_path)
        manager.load()
    return ManagerOffsets(manager)
