"""The timer service's checkpoint: the replayer cursor and the loader's progress.

File ``<root>/schedule_checkpoint``, 36 bytes overwritten in place (one sector); the checksum
catches a torn write, after which the cursor is re-derived from the schedule_log.

Layout (big-endian; :data:`CHECKPOINT` is the construct spec)::

    offset size field
    0      4    magic           uint32 0x5C4EC4B1
    4      4    version         uint32 1
    8      8    replay_offset   int64  next queue offset of rmq_sys_wheel_timer to copy
    16     8    loaded_until_ms int64  end of the last bucket fully loaded into the wheel
    24     8    dropped_below_ms int64 buckets starting before this were dispatched and dropped
    32     4    crc             uint32 crc32c of bytes [0, 32)

``loaded_until_ms`` is informative (recovery re-derives what to load from the dispatch logs);
``replay_offset`` is the one cursor that must survive.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import construct as cs

from rocketmq_emu.broker.layout import Layout
from rocketmq_emu.broker.lazy import lazy_import

#: Loaded on first use: importing crc32c costs start time (it imports importlib.metadata).
crc32c = lazy_import("crc32c")

log = logging.getLogger(__name__)

CHECKPOINT_MAGIC = 0x5C4EC4B1
CHECKPOINT_VERSION = 1

#: The checkpoint file.
CHECKPOINT = cs.Struct(
    "magic" / cs.Const(CHECKPOINT_MAGIC, cs.Int32ub),
    "version" / cs.Int32ub,
    "replay_offset" / cs.Int64sb,
    "loaded_until_ms" / cs.Int64sb,
    "dropped_below_ms" / cs.Int64sb,
    "crc" / cs.Int32ub,
)
_LAYOUT = Layout(CHECKPOINT)
#: What the checksum covers: magic .. dropped_below_ms (32 bytes).
_BODY = _LAYOUT.struct("magic", "dropped_below_ms")
_CRC = _LAYOUT.struct("crc")
#: The file's size (36 bytes).
SIZE = _LAYOUT.min_size


class CheckpointError(ValueError):
    """A checkpoint file that fails its checksum or layout check."""


@dataclass
class TimerCheckpoint:
    """The persisted cursors."""

    replay_offset: int = 0
    loaded_until_ms: int = 0
    dropped_below_ms: int = 0

    def encode(self) -> bytes:
        """The file's bytes (hot path)."""
        body = _BODY.pack(CHECKPOINT_MAGIC, CHECKPOINT_VERSION, self.replay_offset,
                          self.loaded_until_ms, self.dropped_below_ms)
        return body + _CRC.pack(crc32c.crc32c(body))

    @classmethod
    def decode(cls, data: bytes) -> TimerCheckpoint:
        """Parse and verify; raises :class:`CheckpointError`."""
        if len(data) != SIZE:
            raise CheckpointError(f"checkpoint is {len(data)} bytes, expected {SIZE}")
        magic, version, replay, loaded, dropped = _BODY.unpack_from(data)
        (crc,) = _CRC.unpack_from(data, _LAYOUT.offset("crc"))
        if magic != CHECKPOINT_MAGIC or version != CHECKPOINT_VERSION:
            raise CheckpointError(f"bad magic/version {magic:#x}/{version}")
        if crc32c.crc32c(data[: _BODY.size]) != crc:
            raise CheckpointError("checksum mismatch")
        return cls(replay, loaded, dropped)

    @classmethod
    def load(cls, path: str) -> TimerCheckpoint:
        """Read ``path``; a missing file is a fresh checkpoint, a corrupt one is logged and
        treated as fresh (the replayer then re-derives its cursor from the schedule_log)."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return cls()
        try:
            return cls.decode(data)
        except CheckpointError as exc:
            log.error("timer checkpoint %s unusable (%s); starting from the schedule_log", path, exc)
            return cls()

    def save(self, path: str, fsync: bool = False) -> None:
        """Overwrite the 36-byte file in place.

        No temp file + rename: on ext4 a rename over an existing file forces the new data to
        disk (auto_da_alloc), which stalls the reactor for as long as the disk is busy. A torn
        write is caught by the checksum, and recovery then derives the cursor from the
        schedule_log (each record carries its source offset).
        """
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, self.encode(), 0)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
