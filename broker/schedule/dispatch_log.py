"""dispatch_log: which schedule_log records have been delivered, one file per bucket.

QMQ's ``DispatchLogAppender`` writes the 8-byte sequence of each dispatched schedule record;
ours adds a checksum so recovery tells a torn or corrupt entry from a real one.

Files: ``<root>/dispatch_log/<bucket start, epoch ms, 20 digits>`` (same name as the
schedule_log segment they describe).

Entry layout (big-endian; :data:`DISPATCH_ENTRY` is the construct spec, :data:`_ENTRY` the
struct used on the hot path)::

    offset size field
    0      8    sequence   int64  the schedule record's sequence in the same-named segment
    8      4    crc        uint32 crc32c of bytes [0, 8)

A file length that is not a multiple of 12 ends in a torn entry: recovery cuts it off. An
entry with a bad checksum is logged (file and offset named) and ignored, so at worst that
message is delivered again (at-least-once), never lost.
"""

from __future__ import annotations

import logging
import os

import construct as cs

from rocketmq_emu.broker.layout import Layout
from rocketmq_emu.broker.lazy import lazy_import
from rocketmq_emu.broker.schedule.segment_file import SegmentFile

#: Loaded on first use: importing crc32c costs start time (it imports importlib.metadata).
crc32c = lazy_import("crc32c")

log = logging.getLogger(__name__)

#: One dispatch_log entry.
DISPATCH_ENTRY = cs.Struct(
    "sequence" / cs.Int64sb,
    "crc" / cs.Int32ub,
)
_LAYOUT = Layout(DISPATCH_ENTRY)
_ENTRY = _LAYOUT.struct()
_SEQ = _LAYOUT.struct("sequence")
_CRC = _LAYOUT.struct("crc")
#: Bytes of one entry (12).
ENTRY_SIZE = _ENTRY.size


def encode_dispatch_entry(sequence: int) -> bytes:
    """One entry's bytes (hot path)."""
    raw = _SEQ.pack(sequence)
    return raw + _CRC.pack(crc32c.crc32c(raw))


class DispatchSegment(SegmentFile):
    """The dispatched sequences of one bucket."""

    def __init__(self, path: str, bucket_start_ms: int) -> None:
        super().__init__(path, bucket_start_ms)
        self.dispatched: set[int] = set()

    def open(self) -> None:
        """Read existing entries (recovering a torn tail) and open for append."""
        if os.path.exists(self.path):
            with open(self.path, "rb") as f:
                data = f.read()
            whole = len(data) - len(data) % ENTRY_SIZE
            if whole != len(data):
                log.warning("dispatch_log %s: cutting torn entry at offset %d", self.path, whole)
                os.truncate(self.path, whole)
            for pos in range(0, whole, ENTRY_SIZE):
                seq, crc = _ENTRY.unpack_from(data, pos)
                if crc32c.crc32c(data[pos : pos + _SEQ.size]) != crc:
                    log.error("dispatch_log %s: checksum mismatch at offset %d; entry ignored",
                              self.path, pos)
                    continue
                self.dispatched.add(seq)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, sequence: int) -> None:
        """Record ``sequence`` as dispatched."""
        if self._fd is None:
            self.open()
        os.write(self._fd, encode_dispatch_entry(sequence))
        self.dispatched.add(sequence)

    def append_many(self, sequences: list[int]) -> None:
        """Record several sequences with one write."""
        if self._fd is None:
            self.open()
        os.write(self._fd, b"".join(encode_dispatch_entry(s) for s in sequences))
        self.dispatched.update(sequences)


class DispatchLog:
    """All dispatch segments under ``<root>/dispatch_log``; open only while their bucket is
    loaded."""

    def __init__(self, root: str) -> None:
        self.dir = os.path.join(root, "dispatch_log")
        self.segments: dict[int, DispatchSegment] = {}

    def segment(self, bucket_start_ms: int) -> DispatchSegment:
        """The bucket's dispatch segment, opened (and recovered) on first use."""
        seg = self.segments.get(bucket_start_ms)
        if seg is None:
            os.makedirs(self.dir, exist_ok=True)
            seg = DispatchSegment(os.path.join(self.dir, f"{bucket_start_ms:020d}"),
                                  bucket_start_ms)
            seg.open()
            self.segments[bucket_start_ms] = seg
        return seg

    def existing_buckets(self) -> list[int]:
        """Bucket starts that have a dispatch file on disk."""
        if not os.path.isdir(self.dir):
            return []
        return sorted(int(n) for n in os.listdir(self.dir) if n.isdigit())

    def drop(self, bucket_start_ms: int) -> None:
        """Delete a bucket's dispatch file."""
        seg = self.segments.pop(bucket_start_ms, None)
        if seg is None:
            seg = DispatchSegment(os.path.join(self.dir, f"{bucket_start_ms:020d}"),
                                  bucket_start_ms)
        seg.delete()

    def flush(self) -> None:
        """fsync every open segment."""
        for seg in self.segments.values():
            seg.flush()

    def close(self) -> None:
        """Close every handle."""
        for seg in self.segments.values():
            seg.close()
        self.segments.clear()
