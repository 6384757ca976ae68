"""One consume queue: ``consumequeue/{topic}/{queueId}/{20-digit byte offset}`` files of 20-byte
units (RocketMQ ``store/ConsumeQueue.java``), on the commitlog's :class:`MappedFileQueue`.

Logical offset ``n`` lives at byte ``n*20`` of the stream; files hold 300,000 units by default.
The queue is derived data: the store's dispatch ("reput") step rebuilds it from the commitlog, so
:meth:`ConsumeQueue.put` ignores offsets already written and recovery only trims.

Deliberate differences from RocketMQ 4.9 (documented where they happen):

* ``fillPreBlank`` filler units ``(0, Integer.MAX_VALUE, 0)`` are never counted as messages: they
  do not raise :attr:`max_physic_offset` and :meth:`correct_min_offset` skips them (Java counts a
  filler's ``0 + Integer.MAX_VALUE`` as the max physical offset and can put minOffset on a filler).
* A gap in logical offsets (a put beyond the next expected one) is filled with filler units and
  logged; Java logs and writes the unit at the wrong position.
* :meth:`offset_by_time` searches the whole queue, not just the file picked by modification time.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from itertools import chain

from rocketmq_emu.broker.commitlog.mapped_file import MappedFile
from rocketmq_emu.broker.commitlog.mapped_file_queue import MappedFileQueue
from rocketmq_emu.broker.consumequeue.unit import (
    CQ_STORE_UNIT_SIZE,
    DEFAULT_UNITS_PER_FILE,
    INTEGER_MAX_VALUE,
    PRE_BLANK_BYTES,
    UNIT_STRUCT,
    is_valid_unit,
    units_struct,
)

log = logging.getLogger(__name__)

#: ``MessageStoreConfig.mappedFileSizeConsumeQueue``.
DEFAULT_CQ_FILE_SIZE = DEFAULT_UNITS_PER_FILE * CQ_STORE_UNIT_SIZE

_ZERO_UNIT = bytes(CQ_STORE_UNIT_SIZE)
_pack_into = UNIT_STRUCT.pack_into
_unpack_from = UNIT_STRUCT.unpack_from
_iter_unpack = UNIT_STRUCT.iter_unpack

_run_struct = units_struct


def cq_file_size(requested: int) -> int:
    """``MessageStoreConfig.getMappedFileSizeConsumeQueue``: rounded up to whole units."""
    units = max(-(-requested // CQ_STORE_UNIT_SIZE), 1)
    return units * CQ_STORE_UNIT_SIZE


def _is_filler(offset: int, size: int) -> bool:
    return offset == 0 and size == INTEGER_MAX_VALUE


class ConsumeQueue:
    """The units of one (topic, queueId)."""

    def __init__(
        self,
        topic: str,
        queue_id: int,
        root_dir: str,
        mapped_file_size: int = DEFAULT_CQ_FILE_SIZE,
        *,
        clock=None,
        warm: bool = False,
    ) -> None:
        """``root_dir`` is ``{storePathRootDir}/consumequeue``. ``warm`` pre-touches new files
        (RocketMQ does not warm consume-queue files). New files have their disk blocks
        reserved when created (``mapped_file.preallocate``): RocketMQ's are sparse
        (``RandomAccessFile.setLength``), but a unit written into a hole on a full disk would
        kill the process with SIGBUS; here the full disk fails the file's creation instead."""
        self.topic = topic
        self.queue_id = queue_id
        self.store_path = os.path.join(root_dir, topic, str(queue_id))
        self.mapped_file_size = cq_file_size(mapped_file_size)
        self.mfq = MappedFileQueue(self.store_path, self.mapped_file_size, warm=warm, clock=clock)
        #: Commitlog offset + size of the last dispatched message; -1 if none (``maxPhysicOffset``).
        self.max_physic_offset = -1
        #: Byte offset of the first live unit (``minLogicOffset``).
        self.min_logic_offset = 0

    def __repr__(self) -> str:
        return f"ConsumeQueue({self.topic!r}, {self.queue_id}, min={self.min_offset}, max={self.max_offset})"

    # --- offsets ------------------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        """``getMinOffsetInQueue``: first live logical offset."""
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    @property
    def max_offset(self) -> int:
        """``getMaxOffsetInQueue``: logical offset after the last unit (exclusive)."""
        return self.mfq.get_max_offset() // CQ_STORE_UNIT_SIZE

    @property
    def last_commitlog_offset(self) -> int:
        """Commitlog offset just past the last dispatched message (-1 if none)."""
        return self.max_physic_offset

    def _unit_at(self, n: int) -> tuple[int, int, int] | None:
        pos = n * CQ_STORE_UNIT_SIZE
        mf = self.mfq.find_mapped_file_by_offset(pos)
        if mf is None:
            return None
        rel = pos - mf.file_from_offset
        if rel + CQ_STORE_UNIT_SIZE > mf.wrote_position:
            return None
        return _unpack_from(mf.mm, rel)

    # --- write --------------------------------------------------------------------------------
    def _append_unit(self, data: bytes) -> MappedFile:
        mf = self.mfq.get_last_mapped_file(self.mfq.get_max_offset())
        if not mf.append(data):  # cannot happen: files are whole units; keep the guard honest
            raise RuntimeError(f"{mf.path}: no room for a unit at {mf.wrote_position}")
        return mf

    def put(self, queue_offset: int, commitlog_offset: int, size: int, tags_code: int) -> bool:
        """Write the unit of logical ``queue_offset`` (``putMessagePositionInfo``).

        Returns False when it was already there (re-dispatch after recovery), True when written.
        """
        if commitlog_offset + size <= self.max_physic_offset:
            return False
        expect = queue_offset * CQ_STORE_UNIT_SIZE
        files = self.mfq.files
        if files:  # fast path: the next unit of a file with room, no pre-blank fill due
            mf = files[-1]
            pos = mf.wrote_position
            if (pos < mf.file_size and mf.file_from_offset + pos == expect
                    and not (pos == 0 and mf.first_create_in_queue)):
                _pack_into(mf.mm, pos, commitlog_offset, size, tags_code)
                mf.wrote_position = pos + CQ_STORE_UNIT_SIZE
                self.max_physic_offset = commitlog_offset + size
                return True
        mf = self.mfq.get_last_mapped_file(expect)
        if mf.first_create_in_queue and mf.wrote_position == 0 and queue_offset != 0:
            # ConsumeQueue.fillPreBlank: a queue whose first file starts below its first
            # offset (its earlier files were deleted, or the topic came back) gets fillers.
            self.min_logic_offset = expect
            self.mfq.set_flushed_where(mf.file_from_offset)
            while mf.file_tail < expect:
                mf.append(PRE_BLANK_BYTES)
            mf.first_create_in_queue = False
        current = self.mfq.get_max_offset()
        if expect < current:
            log.debug("%s: unit %d already written", self.store_path, queue_offset)
            return False
        if expect > current:
            log.error("%s: logical offset gap, expected unit %d, got %d; filling with blanks",
                      self.store_path, current // CQ_STORE_UNIT_SIZE, queue_offset)
            while self.mfq.get_max_offset() < expect:
                self._append_unit(PRE_BLANK_BYTES)
        self._append_unit(UNIT_STRUCT.pack(commitlog_offset, size, tags_code))
        self.max_physic_offset = commitlog_offset + size
        return True

    def put_run(self, first_queue_offset: int, commitlog_offsets: Sequence[int],
                sizes: Sequence[int], tags_codes: Sequence[int]) -> bool:
        """Write the units of consecutive logical offsets from ``first_queue_offset`` at once
        when they all fit the last file as its next units (the plain append case of
        :meth:`put`, one ``pack_into`` for the run); False, with nothing written, otherwise:
        the caller then puts them one by one."""
        n = len(commitlog_offsets)
        files = self.mfq.files
        if not files or n == 0:
            return False
        mf = files[-1]
        pos = mf.wrote_position
        if (pos + CQ_STORE_UNIT_SIZE * n > mf.file_size
                or mf.file_from_offset + pos != first_queue_offset * CQ_STORE_UNIT_SIZE
                or commitlog_offsets[0] + sizes[0] <= self.max_physic_offset
                or (pos == 0 and mf.first_create_in_queue)):
            return False
        flat: list = [None] * (3 * n)
        flat[0::3] = commitlog_offsets
        flat[1::3] = sizes
        flat[2::3] = tags_codes
        _run_struct(n).pack_into(mf.mm, pos, *flat)
        mf.wrote_position = pos + CQ_STORE_UNIT_SIZE * n
        self.max_physic_offset = commitlog_offsets[-1] + sizes[-1]
        return True

    # --- read ---------------------------------------------------------------------------------
    def unit_bytes(self, offset: int, max_units: int) -> list[bytes]:
        """The stored bytes of up to ``max_units`` units from logical ``offset``, one piece per
        file spanned (``getIndexBuffer``, which may span files here); empty when ``offset`` is
        outside [min_offset, max_offset). Undecoded: see :meth:`scan_units`."""
        out: list[bytes] = []
        if offset < self.min_offset or max_units <= 0:
            return out
        pos = offset * CQ_STORE_UNIT_SIZE
        end = min(self.mfq.get_max_offset(), pos + max_units * CQ_STORE_UNIT_SIZE)
        while pos < end:
            mf = self.mfq.find_mapped_file_by_offset(pos)
            if mf is None:
                break
            rel = pos - mf.file_from_offset
            rel_end = min(end - mf.file_from_offset, mf.wrote_position)
            if rel_end <= rel:
                break
            out.append(mf.mm[rel:rel_end])
            pos = mf.file_from_offset + rel_end
        return out

    def scan_units(self, offset: int, max_units: int) -> Iterator[tuple[int, int, int]]:
        """:meth:`get_units` decoded one unit at a time as the caller iterates: a pull reads a
        window of 800 units (``maxFilterMessageCount``) and usually stops after 32."""
        return chain.from_iterable(map(_iter_unpack, self.unit_bytes(offset, max_units)))

    def get_units(self, offset: int, max_units: int) -> list[tuple[int, int, int]]:
        """Up to ``max_units`` units from logical ``offset`` as (commitlog offset, size, tagsCode);
        empty when ``offset`` is outside [min_offset, max_offset). May span files."""
        return list(self.scan_units(offset, max_units))

    def get_unit(self, offset: int) -> tuple[int, int, int] | None:
        """The unit at logical ``offset`` or None."""
        if offset < self.min_offset:
            return None
        return self._unit_at(offset)

    def offset_by_time(
        self,
        timestamp: int,
        store_time_of: Callable[[int, int], int],
        min_commitlog_offset: int = 0,
        boundary: str | None = None,
    ) -> int:
        """Logical offset whose message store time is ``timestamp`` (``getOffsetInQueueByTime``).

        Binary search as RocketMQ 4.9: an exact match wins, else the neighbour whose store time is
        closest (the earlier one at equal distance); all earlier gives the last unit, all later
        the first. Units below ``min_commitlog_offset`` are skipped.
        ``store_time_of(commitlog_offset, size)`` returns -1 for an unreadable message, which
        makes the answer 0 as in Java. No files: 0.

        ``boundary`` ("lower"/"upper", RocketMQ 5 ``BoundaryType``) picks the first/last of equal
        store times, and without a match the first later / last earlier unit.
        """
        if not self.mfq.files:
            return 0
        low, high = self.min_offset, self.max_offset - 1
        if high < low:
            return self.max_offset
        target = left = right = -1
        left_value = right_value = -1
        while low <= high:
            mid = (low + high) // 2
            unit = self._unit_at(mid)
            if unit is None:
                break
            phy, size, _tags = unit
            if phy < min_commitlog_offset or _is_filler(phy, size):
                low = mid + 1
                continue
            store_time = store_time_of(phy, size)
            if store_time < 0:
                return 0
            if store_time == timestamp:
                target = mid
                break
            if store_time > timestamp:
                high, right, right_value = mid - 1, mid, store_time
            else:
                low, left, left_value = mid + 1, mid, store_time
        if target != -1:
            if boundary is not None:
                step = -1 if boundary.lower() == "lower" else 1
                while True:
                    unit = self._unit_at(target + step)
                    if (unit is None or target + step < self.min_offset
                            or _is_filler(unit[0], unit[1])
                            or store_time_of(unit[0], unit[1]) != timestamp):
                        break
                    target += step
            return target
        if boundary is not None:
            if boundary.lower() == "lower":
                return right if right != -1 else self.max_offset
            return left if left != -1 else self.min_offset
        if left_value == -1:
            # Nothing earlier: the first later unit; none at all (every unit skipped): the end.
            return right if right != -1 else low
        if right_value == -1:
            return left
        return right if timestamp - left_value > right_value - timestamp else left

    # --- recovery -----------------------------------------------------------------------------
    def load(self) -> bool:
        """Map the existing files (positions at full size until :meth:`recover`)."""
        return self.mfq.load()

    def recover(self) -> int:
        """Find the end of valid units and drop what follows (``ConsumeQueue.recover``).

        Scans from the third-last file like RocketMQ, stopping at the first all-zero or invalid
        unit (offset < 0 or size <= 0). Returns :attr:`max_physic_offset`.
        """
        files = self.mfq.files
        if not files:
            return self.max_physic_offset
        start = max(len(files) - 3, 0)
        valid_end = files[start].file_from_offset
        for mf in files[start:]:
            used_units = self._first_zero_unit(mf)
            stopped = False
            for i, (phy, size, _tags) in enumerate(
                UNIT_STRUCT.iter_unpack(mf.mm[: used_units * CQ_STORE_UNIT_SIZE])
            ):
                if not is_valid_unit(phy, size):
                    log.warning("%s: invalid unit (%d, %d) at position %d, truncating there",
                                mf.path, phy, size, i * CQ_STORE_UNIT_SIZE)
                    valid_end = mf.file_from_offset + i * CQ_STORE_UNIT_SIZE
                    stopped = True
                    break
                if not _is_filler(phy, size):
                    self.max_physic_offset = phy + size
            if stopped:
                break
            valid_end = mf.file_from_offset + used_units * CQ_STORE_UNIT_SIZE
            if used_units * CQ_STORE_UNIT_SIZE < self.mapped_file_size:
                break
        self.mfq.truncate_dirty(valid_end)
        self.mfq.set_flushed_where(valid_end)
        self.min_logic_offset = max(self.min_logic_offset, self.mfq.get_min_offset(), 0)
        self.correct_min_offset(0)  # step over leading fillers
        return self.max_physic_offset

    def _first_zero_unit(self, mf: MappedFile) -> int:
        """Index of an all-zero unit preceded by a non-zero one (or 0, or the file's unit count),
        by binary search: data is a prefix followed by zeros. Interior holes do not matter:
        :meth:`recover` validates every unit before the answer, so the queue still ends at the
        first invalid unit, as RocketMQ's linear scan would; this only avoids reading the zero
        tail of a 6 MB file (a linear scan of it costs ~30 ms per queue at startup)."""
        mm = mf.mm
        low, high = 0, self.mapped_file_size // CQ_STORE_UNIT_SIZE
        while low < high:
            mid = (low + high) // 2
            pos = mid * CQ_STORE_UNIT_SIZE
            if mm[pos:pos + CQ_STORE_UNIT_SIZE] == _ZERO_UNIT:
                high = mid
            else:
                low = mid + 1
        return low

    def _last_real_unit_end(self) -> int:
        """offset + size of the newest non-filler unit, or -1."""
        n = self.max_offset - 1
        while n >= self.min_offset:
            unit = self._unit_at(n)
            if unit is None:
                break
            if not _is_filler(unit[0], unit[1]):
                return unit[0] + unit[1]
            n -= 1
        return -1

    def _first_unit_at_or_beyond(self, low: int, high: int, commitlog_offset: int) -> int:
        """First logical offset in [low, high) whose unit points at or beyond
        ``commitlog_offset`` (``high`` if none). Units ascend in commitlog order; fillers, which
        only precede real units, count as below everything."""
        while low < high:
            mid = (low + high) // 2
            unit = self._unit_at(mid)
            if unit is None or _is_filler(unit[0], unit[1]) or unit[0] < commitlog_offset:
                low = mid + 1
            else:
                high = mid
        return low

    def truncate_dirty(self, max_commitlog_offset: int) -> None:
        """Drop units pointing at or beyond ``max_commitlog_offset`` (``truncateDirtyLogicFiles``),
        used after the commitlog's torn tail was cut."""
        if not self.mfq.files:
            return
        lowest = self.mfq.get_min_offset() // CQ_STORE_UNIT_SIZE
        first_dirty = self._first_unit_at_or_beyond(lowest, self.max_offset, max_commitlog_offset)
        cut = first_dirty * CQ_STORE_UNIT_SIZE
        if cut < self.mfq.get_max_offset():
            log.info("%s: truncating units from %d (commitlog end %d)", self.store_path,
                     first_dirty, max_commitlog_offset)
            self.mfq.truncate_dirty(cut)
            self.min_logic_offset = min(self.min_logic_offset, cut)
        self.max_physic_offset = self._last_real_unit_end()

    # --- retention ----------------------------------------------------------------------------
    def correct_min_offset(self, min_commitlog_offset: int) -> None:
        """Move :attr:`min_offset` to the first unit whose message is still in the commitlog
        (``correctMinOffset``); fillers are skipped. No such unit: min = max (empty queue)."""
        if not self.mfq.files:
            return
        low = max(self.min_offset, self.mfq.get_min_offset() // CQ_STORE_UNIT_SIZE)
        first = self._first_unit_at_or_beyond(low, self.max_offset, min_commitlog_offset)
        if first * CQ_STORE_UNIT_SIZE != self.min_logic_offset:
            log.info("%s: min offset %d -> %d", self.store_path, self.min_offset, first)
            self.min_logic_offset = first * CQ_STORE_UNIT_SIZE

    def delete_expired_files(self, min_commitlog_offset: int) -> int:
        """Delete head files whose last unit points below ``min_commitlog_offset`` (never the
        last file), then :meth:`correct_min_offset` (``deleteExpiredFile``). Returns files deleted."""

        def expired(mf: MappedFile) -> bool:
            if mf.wrote_position < self.mapped_file_size:
                return False
            phy, _size, _tags = _unpack_from(mf.mm, self.mapped_file_size - CQ_STORE_UNIT_SIZE)
            return phy < min_commitlog_offset

        deleted = self.mfq.delete_files(expired)
        for mf in deleted:
            log.info("%s: deleted expired consume queue file", mf.path)
        self.correct_min_offset(min_commitlog_offset)
        return len(deleted)

    # --- lifecycle ----------------------------------------------------------------------------
    def flush(self, flush_least_pages: int = 0) -> bool:
        """msync written units; True if anything was flushed."""
        return self.mfq.flush(flush_least_pages)

    def shutdown(self) -> None:
        """Flush and unmap."""
        self.mfq.shutdown()

    def destroy(self) -> None:
        """Delete every file and the queue's directory."""
        self.mfq.destroy()
        self.max_physic_offset = -1
        self.min_logic_offset = 0
