"""schedule_log: arbitrary-time messages kept on disk, one segment file per due-time bucket.

QMQ's delay server keeps a ``schedule_log`` segment per time bucket (``ScheduleSetAppender``);
ours has the same role with our own record format. A message sent with a timer property is
copied here *whole* (the commitlog record bytes as stored on ``rmq_sys_wheel_timer``), so old
commitlog files may be deleted while the message waits, and a bucket whose messages are all
dispatched can be dropped whole.

Files: ``<root>/schedule_log/<bucket start, epoch ms, 20 digits>``; bucket start =
``due_ms - due_ms % bucket_ms`` (bucket width configurable, default one hour).

Record layout (big-endian; :data:`SCHEDULE_RECORD` is the construct spec, :data:`_HEADER`
the struct used on the hot path)::

    offset size field
    0      4    magic          uint32 0x5C4ED01A ("schedule record v1")
    4      4    payload_len    uint32 n, bytes of payload
    8      8    due_ms         int64  absolute due time, epoch ms
    16     8    sequence       int64  0, 1, 2 ... within the segment (dispatch_log names it)
    24     8    source_offset  int64  queue offset of the message on rmq_sys_wheel_timer, -1 if none
    32     4    crc            uint32 crc32c over bytes [0, 32) then the payload
    36     n    payload        the commitlog record bytes of the message

Recovery (:meth:`ScheduleSegment.open`) scans the file: a record whose header or payload runs
past the end of the file is a torn write and the file is truncated there; a complete record
with a bad checksum or magic is logged (file and offset named) and skipped when its length is
plausible, otherwise the rest of the file is cut off. Appends are plain ``os.write`` calls (no
mmap), so pending messages cost page cache, not process memory.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import construct as cs

from rocketmq_emu.broker.layout import Layout
from rocketmq_emu.broker.lazy import lazy_import
from rocketmq_emu.broker.schedule.segment_file import SegmentFile

#: Loaded on first use: importing crc32c costs start time (it imports importlib.metadata).
crc32c = lazy_import("crc32c")

log = logging.getLogger(__name__)

SCHEDULE_MAGIC = 0x5C4ED01A
MAX_PAYLOAD = 64 * 1024 * 1024

#: One schedule_log record.
SCHEDULE_RECORD = cs.Struct(
    "magic" / cs.Const(SCHEDULE_MAGIC, cs.Int32ub),
    "payload_len" / cs.Int32ub,
    "due_ms" / cs.Int64sb,
    "sequence" / cs.Int64sb,
    "source_offset" / cs.Int64sb,
    "crc" / cs.Int32ub,
    "payload" / cs.Bytes(cs.this.payload_len),
)
_LAYOUT = Layout(SCHEDULE_RECORD)
_HEADER = _LAYOUT.struct("magic", "crc")
_PRE_CRC = _LAYOUT.struct("magic", "source_offset")  # what the checksum covers before the payload
_CRC = _LAYOUT.struct("crc")
#: Bytes in front of the payload (36).
HEADER_SIZE = _HEADER.size


def encode_schedule_record(due_ms: int, sequence: int, source_offset: int, payload: bytes) -> bytes:
    """One record's bytes (hot path)."""
    pre = _PRE_CRC.pack(SCHEDULE_MAGIC, len(payload), due_ms, sequence, source_offset)
    crc = crc32c.crc32c(payload, crc32c.crc32c(pre))
    return pre + _CRC.pack(crc) + payload


def segment_name(bucket_start_ms: int) -> str:
    """File name of the segment starting at ``bucket_start_ms``."""
    return f"{bucket_start_ms:020d}"


@dataclass(slots=True)
class ScheduleEntry:
    """Where one record lives: enough to schedule it without holding the payload."""

    due_ms: int
    sequence: int
    source_offset: int
    position: int  # file offset of the record header
    payload_len: int


class ScheduleSegment(SegmentFile):
    """One bucket's segment file: append, read back, scan."""

    def __init__(self, path: str, bucket_start_ms: int) -> None:
        super().__init__(path, bucket_start_ms)
        self.size = 0
        self.next_sequence = 0
        self.count = 0
        self.max_source_offset = -1
        self._scan_end = 0  # end of the last record (valid or skipped) seen by scan()

    # -- open / recover ----------------------------------------------------------------------
    def open(self) -> None:
        """Create the file or recover an existing one (truncating a torn tail)."""
        if not os.path.exists(self.path):
            with open(self.path, "wb"):
                pass
            return
        good_end = 0
        for entry in self.scan():
            good_end = entry.position + HEADER_SIZE + entry.payload_len
            self.count += 1
            self.next_sequence = max(self.next_sequence, entry.sequence + 1)
            self.max_source_offset = max(self.max_source_offset, entry.source_offset)
        good_end = max(good_end, self._scan_end)
        file_size = os.path.getsize(self.path)
        if good_end < file_size:
            log.warning(
                "schedule_log %s: cutting %d bytes of torn/corrupt data at offset %d",
                self.path, file_size - good_end, good_end,
            )
            os.truncate(self.path, good_end)
        self.size = good_end

    def scan(self, with_payload: bool = False) -> Iterator[ScheduleEntry]:
        """Yield every valid record from the start of the file (checksums verified)."""
        self._scan_end = 0
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        pos = 0
        end = len(data)
        while pos + HEADER_SIZE <= end:
            magic, n, due, seq, src, crc = _HEADER.unpack_from(data, pos)
            rec_end = pos + HEADER_SIZE + n
            if magic != SCHEDULE_MAGIC or n > MAX_PAYLOAD:
                if magic == 0 and n == 0:
                    break  # zero tail (never written)
                log.error("schedule_log %s: bad magic %#x at offset %d; rest ignored",
                          self.path, magic, pos)
                break
            if rec_end > end:
                break  # torn write: the caller truncates
            mv = memoryview(data)
            actual = crc32c.crc32c(mv[pos + HEADER_SIZE : rec_end], crc32c.crc32c(mv[pos : pos + _PRE_CRC.size]))
            if actual != crc:
                log.error("schedule_log %s: checksum mismatch at offset %d (seq %d); record skipped",
                          self.path, pos, seq)
                pos = rec_end
                self._scan_end = pos
                continue
            yield ScheduleEntry(due, seq, src, pos, n)
            pos = rec_end
            self._scan_end = pos

    # -- append / read ---------------------------------------------------------------------------
    def _handle(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def append(self, due_ms: int, source_offset: int, payload: bytes) -> ScheduleEntry:
        """Append one record; returns where it lives."""
        seq = self.next_sequence
        data = encode_schedule_record(due_ms, seq, source_offset, payload)
        fd = self._handle()
        os.write(fd, data)
        entry = ScheduleEntry(due_ms, seq, source_offset, self.size, len(payload))
        self.size += len(data)
        self.next_sequence = seq + 1
        self.count += 1
        if source_offset > self.max_source_offset:
            self.max_source_offset = source_offset
        return entry

    def read_payload(self, entry: ScheduleEntry) -> bytes:
        """The payload of ``entry`` (one pread)."""
        return self.read_at(entry.position, entry.payload_len)

    def read_at(self, position: int, payload_len: int) -> bytes:
        """The payload of the record at ``position`` (one pread)."""
        return os.pread(self._handle(), payload_len, position + HEADER_SIZE)


class ScheduleLog:
    """All segments under ``<root>/schedule_log``, bucketed by due time.

    At most ``max_open`` file handles stay open (least recently used closed first), so a
    30-day spread of one-hour buckets does not hold 720 descriptors.
    """

    def __init__(self, root: str, bucket_ms: int = 3_600_000, max_open: int = 256) -> None:
        self.dir = os.path.join(root, "schedule_log")
        self.bucket_ms = bucket_ms
        self.max_open = max_open
        self.segments: dict[int, ScheduleSegment] = {}
        self._open_lru: OrderedDict[int, None] = OrderedDict()

    def bucket_of(self, due_ms: int) -> int:
        """Start of the bucket ``due_ms`` falls in."""
        return due_ms - due_ms % self.bucket_ms

    def load(self) -> None:
        """Find and recover every segment file."""
        os.makedirs(self.dir, exist_ok=True)
        for name in sorted(os.listdir(self.dir)):
            if not name.isdigit():
                continue
            seg = ScheduleSegment(os.path.join(self.dir, name), int(name))
            seg.open()
            self.segments[seg.bucket_start_ms] = seg

    def max_source_offset(self) -> int:
        """Highest timer-queue offset copied into any segment (-1 if none)."""
        return max((s.max_source_offset for s in self.segments.values()), default=-1)

    def segment(self, bucket_start_ms: int, create: bool = True) -> ScheduleSegment | None:
        """The segment for a bucket, created on demand."""
        seg = self.segments.get(bucket_start_ms)
        if seg is None and create:
            os.makedirs(self.dir, exist_ok=True)
            seg = ScheduleSegment(os.path.join(self.dir, segment_name(bucket_start_ms)),
                                  bucket_start_ms)
            seg.open()
            self.segments[bucket_start_ms] = seg
        return seg

    def _touch(self, bucket: int) -> None:
        lru = self._open_lru
        lru[bucket] = None
        lru.move_to_end(bucket)
        while len(lru) > self.max_open:
            old, _ = lru.popitem(last=False)
            seg = self.segments.get(old)
            if seg is not None:
                seg.close()

    def append(self, due_ms: int, source_offset: int, payload: bytes) -> tuple[int, ScheduleEntry]:
        """Append a message to its due bucket; returns (bucket start, entry)."""
        bucket = self.bucket_of(due_ms)
        seg = self.segment(bucket)
        entry = seg.append(due_ms, source_offset, payload)
        self._touch(bucket)
        return bucket, entry

    def read_payload(self, bucket: int, entry: ScheduleEntry) -> bytes:
        """Read an entry's payload back."""
        return self.read_at(bucket, entry.position, entry.payload_len)

    def read_at(self, bucket: int, position: int, payload_len: int) -> bytes:
        """Read the payload of the record at ``position`` in ``bucket``'s segment."""
        seg = self.segments[bucket]
        data = seg.read_at(position, payload_len)
        self._touch(bucket)
        return data

    def drop(self, bucket: int) -> None:
        """Delete a whole bucket's segment."""
        seg = self.segments.pop(bucket, None)
        self._open_lru.pop(bucket, None)
        if seg is not None:
            seg.delete()

    def flush(self) -> None:
        """fsync the open segments."""
        for bucket in self._open_lru:
            self.segments[bucket].flush()

    def close(self) -> None:
        """Close every handle."""
        for seg in self.segments.values():
            seg.close()
        self._open_lru.clear()
