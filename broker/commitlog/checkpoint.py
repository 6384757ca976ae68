"""The store checkpoint file (RocketMQ ``store/StoreCheckpoint.java``): 4096 bytes,

    physicMsgTimestamp int64 @0 | logicsMsgTimestamp int64 @8 | indexMsgTimestamp int64 @16
    masterFlushedOffset int64 @24 | confirmPhyOffset int64 @32 (R5 only; written as kept)

big-endian, the rest zero. Each timestamp is the store time (ms) of the newest record whose
commitlog bytes / consume-queue units / index entries are known flushed. Abnormal recovery
starts from the file whose first record is older than ``min_timestamp``.

:data:`CHECKPOINT` is the ``construct`` declaration; reads and writes use :data:`_CP`, derived
from it at import.
"""

from __future__ import annotations

import logging
import os

import construct as cs

from rocketmq_emu.broker.commitlog.mapped_file import MappedFileError
from rocketmq_emu.broker.layout import Layout

log = logging.getLogger(__name__)

#: ``StoreCheckpoint``'s file: one page (``OS_PAGE_SIZE``).
CHECKPOINT_FILE_SIZE = 4096
_FIELDS = cs.Struct(
    "physicMsgTimestamp" / cs.Int64sb,
    "logicsMsgTimestamp" / cs.Int64sb,
    "indexMsgTimestamp" / cs.Int64sb,
    "masterFlushedOffset" / cs.Int64sb,
    "confirmPhyOffset" / cs.Int64sb,
)
#: The checkpoint file: the five values, then zeros to the page's end.
CHECKPOINT = cs.Struct(
    *_FIELDS.subcons,
    cs.Padding(CHECKPOINT_FILE_SIZE - _FIELDS.sizeof()),
)
_LAYOUT = Layout(CHECKPOINT)
#: The values, physicMsgTimestamp .. confirmPhyOffset (40 bytes).
_CP = _LAYOUT.struct("physicMsgTimestamp", "confirmPhyOffset")


class StoreCheckpoint:
    """The checkpoint values plus load/flush of the file at ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self.master_flushed_offset = 0
        self.confirm_phy_offset = 0

    def encode(self) -> bytes:
        """The 4096 file bytes."""
        head = _CP.pack(
            self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp,
            self.master_flushed_offset, self.confirm_phy_offset,
        )
        return head + bytes(CHECKPOINT_FILE_SIZE - len(head))

    def decode(self, data: bytes) -> None:
        """Set the values from file bytes (at least 40 bytes)."""
        if len(data) < _CP.size:
            raise MappedFileError(f"checkpoint has {len(data)} bytes, need {_CP.size}", self.path)
        (
            self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp,
            self.master_flushed_offset, self.confirm_phy_offset,
        ) = _CP.unpack_from(data, 0)

    def load(self) -> bool:
        """Read the file if present (True), else keep zeros (False)."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(CHECKPOINT_FILE_SIZE)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise MappedFileError(f"cannot read checkpoint ({exc.strerror})", self.path,
                                  err=exc.errno or 0) from exc
        if len(data) != CHECKPOINT_FILE_SIZE:
            log.warning("%s: checkpoint has %d bytes, expected %d", self.path, len(data),
                        CHECKPOINT_FILE_SIZE)
        self.decode(data)
        return True

    def flush(self) -> None:
        """Write the file in place and fsync it (``StoreCheckpoint.flush``)."""
        self.write(self.encode())

    def write(self, data: bytes) -> None:
        """Write encoded checkpoint ``data`` in place and fsync it; safe in the flush thread
        (the values are encoded on the reactor, the blocking write happens here)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, data, 0)
                os.fdatasync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise MappedFileError(f"cannot write checkpoint ({exc.strerror})", self.path,
                                  err=exc.errno or 0) from exc

    @property
    def min_timestamp(self) -> int:
        """``getMinTimestamp``: min(physic, logics) - 3000 ms, never negative."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    @property
    def min_timestamp_index(self) -> int:
        """``getMinTimestampIndex``: also bounded by the index timestamp."""
        return min(self.min_timestamp, self.index_msg_timestamp)
