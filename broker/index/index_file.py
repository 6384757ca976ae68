"""One RocketMQ index file (``store/index/IndexFile.java``, ``IndexHeader.java``).

On-disk layout, big-endian, identical to RocketMQ 4.9.x (protocol.md §5.3)::

    header (40 bytes; INDEX_HEADER, INDEX_ENTRY and HASH_SLOT below are the declarations)
        beginTimestamp  int64 @0    store time (ms) of the first entry
        endTimestamp    int64 @8    store time (ms) of the last entry
        beginPhyOffset  int64 @16   commitlog offset of the first entry
        endPhyOffset    int64 @24   commitlog offset of the last entry
        hashSlotCount   int32 @32   slots in use
        indexCount      int32 @36   next entry number; starts at 1 (entry 0 is never used)
    hash slots (hashSlotNum x int32)   latest entry number whose key hashes to the slot
    entries (indexNum x 20 bytes)      keyHash int32, phyOffset int64,
                                       timeDiff int32 (seconds since beginTimestamp), prevIndex int32

Differences from RocketMQ, all compatible with its readers:

* ``hashSlotNum`` / ``indexNum`` are constructor arguments (RocketMQ reads them from
  ``MessageStoreConfig`` too: ``maxHashSlotNum`` / ``maxIndexNum``) so tests use tiny files. A file
  opened with other counts than it was written with is refused with an error naming it.
* Blocks are reserved (``mapped_file.preallocate``) before they are written, where RocketMQ's
  ``MappedFile`` gives a sparse file whose holes, written on a full disk, kill the process with
  SIGBUS: the header's page when the file is created, entries :data:`RESERVE_STEP` bytes ahead
  of the last one, and hash-slot pages as keys land in them (the whole 20 MB table once the
  file holds :data:`SLOT_PAGES_LAZY_ENTRIES` entries: by then nearly every page was hit). A
  default file is 420 MB; reserving it whole would cost that much disk per file at once. A
  failed reservation is an :class:`IndexFileError`, raised before anything is written.
* :meth:`IndexFile.truncate_from` (drop entries at or beyond a commitlog offset, unlinking them from
  their slot chains) has no RocketMQ counterpart: RocketMQ deletes whole index files written after
  the checkpoint and rebuilds them. Rolling back entry by entry keeps older lookups working.

Like RocketMQ, lookups compare only the 32-bit key hash, so a colliding key can return a foreign
offset; the caller (or the client: ``MQAdminImpl.queryMessage``) filters by the record's keys.
"""

from __future__ import annotations

import logging
import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass

import construct as cs

from rocketmq_emu.broker.commitlog.mapped_file import MappedFileError, preallocate
from rocketmq_emu.broker.layout import Layout
from rocketmq_emu.broker.message import java_string_hash

log = logging.getLogger(__name__)

# --- the declarations (IndexHeader.java, IndexFile.putKey) ----------------------------------------
INDEX_HEADER = cs.Struct(
    "begin_timestamp" / cs.Int64sb,
    "end_timestamp" / cs.Int64sb,
    "begin_phy_offset" / cs.Int64sb,
    "end_phy_offset" / cs.Int64sb,
    "hash_slot_count" / cs.Int32sb,
    "index_count" / cs.Int32sb,
)
#: One hash slot: the newest entry number whose key hashes there.
HASH_SLOT = cs.Struct(
    "slot_value" / cs.Int32sb,
)
INDEX_ENTRY = cs.Struct(
    "key_hash" / cs.Int32sb,
    "phy_offset" / cs.Int64sb,
    "time_diff" / cs.Int32sb,
    "prev_index" / cs.Int32sb,
)

# --- derived at import ----------------------------------------------------------------------------
HEADER_STRUCT = Layout(INDEX_HEADER).struct()
SLOT_STRUCT = Layout(HASH_SLOT).struct()
ENTRY_STRUCT = Layout(INDEX_ENTRY).struct()
#: ``IndexHeader.INDEX_HEADER_SIZE`` (40), ``IndexFile.hashSlotSize`` (4), ``indexSize`` (20).
INDEX_HEADER_SIZE = HEADER_STRUCT.size
HASH_SLOT_SIZE = SLOT_STRUCT.size
INDEX_ENTRY_SIZE = ENTRY_STRUCT.size
#: ``MessageStoreConfig.maxHashSlotNum`` default.
DEFAULT_HASH_SLOT_NUM = 5_000_000
#: ``MessageStoreConfig.maxIndexNum`` default.
DEFAULT_INDEX_NUM = 20_000_000
#: Entry blocks are reserved this far ahead of the last entry written (small: a store that
#: writes a few keys, as most test stores do, should not cost megabytes of disk).
RESERVE_STEP = 1 << 20  # 52,428 entries: one fallocate per step costs nothing
#: Hash-slot pages are reserved one by one until a file holds this many entries.
SLOT_PAGES_LAZY_ENTRIES = 16_384
_PAGE = 4096
#: ``IndexFile.invalidIndex``: slot value / prevIndex meaning "none".
INVALID_INDEX = 0
_INT_MAX = 0x7FFFFFFF

_entry_pack = ENTRY_STRUCT.pack_into
_header_pack = HEADER_STRUCT.pack_into
_slot_pack = SLOT_STRUCT.pack_into
_slot_unpack = SLOT_STRUCT.unpack_from


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    """Total bytes of an index file with these counts (420,000,040 for the defaults)."""
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE


#: Kept for callers of the old name: :func:`rocketmq_emu.broker.message.java_string_hash` is the fast one.
_java_hash = java_string_hash


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod``: ``abs(key.hashCode())``, 0 if still negative.

    Java's ``Math.abs(Integer.MIN_VALUE)`` stays negative, hence the special case.
    """
    h = java_string_hash(key)
    if h == -(2**31):
        return 0
    return abs(h)


def key_hash_from_java_hash(h: int) -> int:
    """:func:`index_key_hash` of a key whose ``String.hashCode`` is already known."""
    if h == -(2**31):
        return 0
    return abs(h)


def build_key(topic: str, key: str) -> str:
    """``IndexService.buildKey``: ``topic + "#" + key``."""
    return f"{topic}#{key}"


@dataclass
class IndexHeader:
    """Decoded 40-byte header."""

    begin_timestamp: int = 0
    end_timestamp: int = 0
    begin_phy_offset: int = 0
    end_phy_offset: int = 0
    hash_slot_count: int = 0
    index_count: int = 1


class IndexFileError(Exception):
    """An index file that cannot be used (wrong size, unreadable); the message names the file."""


class IndexFile:
    """A memory-mapped index file: hash slots chaining 20-byte entries."""

    def __init__(
        self,
        path: str,
        hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
        index_num: int = DEFAULT_INDEX_NUM,
        *,
        create: bool = False,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
    ) -> None:
        """Open ``path``; with ``create`` make a new (preallocated) file whose header starts at the
        previous file's end (``IndexFile(fileName, ..., endPhyOffset, endTimestamp)``)."""
        self.path = path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.file_size = index_file_size(hash_slot_num, index_num)
        self._entries_base = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise IndexFileError(f"index file {path}: cannot open: {exc}") from exc
        try:
            if create:
                try:
                    os.ftruncate(fd, self.file_size)
                    preallocate(fd, min(_PAGE, self.file_size), path)
                except OSError as exc:
                    os.unlink(path)
                    raise IndexFileError(f"index file {path}: cannot create: {exc}") from exc
            else:
                actual = os.fstat(fd).st_size
                if actual != self.file_size:
                    raise IndexFileError(
                        f"index file {path}: size {actual} != {self.file_size} expected for "
                        f"{hash_slot_num} slots and {index_num} entries"
                    )
            self._mm = mmap.mmap(fd, self.file_size)
        finally:
            os.close(fd)
        if create:
            self.header = IndexHeader(
                begin_timestamp=end_timestamp,
                end_timestamp=end_timestamp,
                begin_phy_offset=end_phy_offset,
                end_phy_offset=end_phy_offset,
            )
            self._write_header()
        else:
            self.header = IndexHeader(*HEADER_STRUCT.unpack_from(self._mm, 0))
            if self.header.index_count <= 0:
                # IndexHeader.load: a zero count means "empty", entry numbering starts at 1.
                self.header.index_count = 1
            if self.header.index_count > index_num:
                self._mm.close()
                raise IndexFileError(
                    f"index file {path}: header indexCount {self.header.index_count} exceeds "
                    f"the {index_num} entries the file holds"
                )
        self._dirty = create
        #: End of the reserved entry blocks (the tail beyond is reserved as entries reach it).
        self._reserved = self._entry_pos(self.header.index_count)
        #: Hash-slot pages reserved so far; None once the whole table is (a loaded file's is
        #: reserved whole at its first write: an older build left it sparse).
        self._slot_pages: set[int] | None = {0} if create else set()
        self._slots_lazy = create

    # --- header -----------------------------------------------------------------------------
    def _write_header(self) -> None:
        h = self.header
        HEADER_STRUCT.pack_into(
            self._mm, 0, h.begin_timestamp, h.end_timestamp, h.begin_phy_offset,
            h.end_phy_offset, h.hash_slot_count, h.index_count,
        )

    @property
    def name(self) -> str:
        """The file name (``yyyyMMddHHmmssSSS``)."""
        return os.path.basename(self.path)

    @property
    def entry_count(self) -> int:
        """Entries written (``indexCount - 1``)."""
        return self.header.index_count - 1

    def is_write_full(self) -> bool:
        """``IndexFile.isWriteFull``: no room for another entry."""
        return self.header.index_count >= self.index_num

    def is_time_matched(self, begin: int, end: int) -> bool:
        """``IndexFile.isTimeMatched``: the file's [begin, end] store times overlap the range."""
        b, e = self.header.begin_timestamp, self.header.end_timestamp
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    # --- write ------------------------------------------------------------------------------
    def _slot_pos(self, key_hash: int) -> int:
        return INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE

    def _entry_pos(self, n: int) -> int:
        return self._entries_base + n * INDEX_ENTRY_SIZE

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Add ``key`` -> ``phy_offset``; False when the file is full (``IndexFile.putKey``)."""
        return self.put_hashes((index_key_hash(key),), phy_offset, store_timestamp) == 1

    def put_hashes(self, key_hashes, phy_offset: int, store_timestamp: int) -> int:
        """Add one message's keys, given as :func:`index_key_hash` values, in order; returns
        how many fit (fewer than given once the file is full). Each entry is written exactly as
        :meth:`put_key` would; the header is written once, after the last."""
        hashes = list(key_hashes)
        n = len(hashes)
        return self.put_entries(hashes, [phy_offset] * n, [store_timestamp] * n)

    def put_entries(self, hashes: Sequence[int], phys: Sequence[int], stamps: Sequence[int],
                    start: int = 0) -> int:
        """Many messages' entries at once: entry ``i`` is ``hashes[i]`` -> ``phys[i]`` stored
        at ``stamps[i]`` (a message with two keys has two consecutive entries with the same
        offset and time). Writes from ``start`` until the end or the file is full, exactly as
        one :meth:`put_hashes` per message would (same entries, slots and final header), but
        with the header written once; returns how many were written."""
        h = self.header
        mm = self._mm
        slots = self.hash_slot_num
        base = self._entries_base
        count = h.index_count
        begin_ts = h.begin_timestamp
        begin_phy = h.begin_phy_offset
        slot_count = h.hash_slot_count
        stop = min(len(hashes), start + self.index_num - count)
        if stop <= start:
            return 0
        need = base + (count + stop - start) * INDEX_ENTRY_SIZE
        if need > self._reserved:
            self._reserve(need)
        if self._slot_pages is not None:
            self._reserve_slots(hashes, start, stop, count)
        count, begin_ts, begin_phy, slot_count = _put_entries_py(
            mm, hashes, phys, stamps, start, stop, slots, base, count, begin_ts,
            begin_phy, slot_count)
        end_phy = phys[stop - 1]
        end_ts = stamps[stop - 1]
        h.index_count = count
        h.begin_timestamp = begin_ts
        h.begin_phy_offset = begin_phy
        h.hash_slot_count = slot_count
        h.end_phy_offset = end_phy
        h.end_timestamp = end_ts
        _header_pack(mm, 0, begin_ts, end_ts, begin_phy, end_phy, slot_count, count)
        self._dirty = True
        return stop - start

    # --- read -------------------------------------------------------------------------------
    def read_entry(self, n: int) -> tuple[int, int, int, int]:
        """Entry ``n`` as (keyHash, phyOffset, timeDiff, prevIndex)."""
        return ENTRY_STRUCT.unpack_from(self._mm, self._entry_pos(n))

    def select_phy_offsets(
        self, out: list[int], key: str, max_num: int, begin: int, end: int
    ) -> None:
        """Append to ``out`` the offsets stored under ``key`` with store time in [begin, end],
        newest first, until ``out`` holds ``max_num`` (``IndexFile.selectPhyOffset``)."""
        h = self.header
        key_hash = index_key_hash(key)
        (slot_value,) = SLOT_STRUCT.unpack_from(self._mm, self._slot_pos(key_hash))
        if slot_value <= INVALID_INDEX or slot_value > h.index_count or h.index_count <= 1:
            return
        n = slot_value
        # A corrupt chain could loop; a well-formed one never visits more than every entry.
        for _ in range(h.index_count):
            if len(out) >= max_num:
                break
            hash_read, phy_read, time_diff, prev = self.read_entry(n)
            if time_diff < 0:
                break
            time_read = h.begin_timestamp + time_diff * 1000
            if hash_read == key_hash and begin <= time_read <= end:
                out.append(phy_read)
            if prev <= INVALID_INDEX or prev > h.index_count or prev == n or time_read < begin:
                break
            n = prev

    # --- recovery / lifecycle ----------------------------------------------------------------
    def truncate_from(self, phy_offset: int) -> int:
        """Drop every entry whose phyOffset >= ``phy_offset``; returns the entries left.

        Entries are appended in commitlog order, so the dropped ones are a tail, found by
        walking back from the newest. All-zero entries met on the way (pages a power loss never
        wrote) are dropped too. Walking newest first and pointing each slot that names a dropped
        entry at that entry's ``prevIndex`` leaves every slot at its newest surviving entry.
        """
        h = self.header
        first_dropped = h.index_count
        while first_dropped > 1:
            entry = self.read_entry(first_dropped - 1)
            if entry[1] < phy_offset and entry != (0, 0, 0, 0):
                break
            first_dropped -= 1
        if first_dropped >= h.index_count:
            return self.entry_count
        for n in range(h.index_count - 1, first_dropped - 1, -1):
            key_hash, _phy, _diff, prev = self.read_entry(n)
            slot_pos = self._slot_pos(key_hash)
            (slot_value,) = SLOT_STRUCT.unpack_from(self._mm, slot_pos)
            if slot_value == n:
                new_value = prev if INVALID_INDEX < prev < n else INVALID_INDEX
                SLOT_STRUCT.pack_into(self._mm, slot_pos, new_value)
                if new_value == INVALID_INDEX:
                    h.hash_slot_count = max(h.hash_slot_count - 1, 0)
            ENTRY_STRUCT.pack_into(self._mm, self._entry_pos(n), 0, 0, 0, 0)
        h.index_count = first_dropped
        if first_dropped > 1:
            _hash, last_phy, last_diff, _prev = self.read_entry(first_dropped - 1)
            h.end_phy_offset = last_phy
            # Only second precision survives in the entry: the end time becomes approximate.
            h.end_timestamp = max(h.begin_timestamp + last_diff * 1000, h.begin_timestamp)
        else:
            h.end_phy_offset = h.begin_phy_offset
            h.end_timestamp = h.begin_timestamp
        self._write_header()
        self._dirty = True
        log.info("index file %s truncated at phy offset %d: %d entries left",
                 self.path, phy_offset, first_dropped - 1)
        return first_dropped - 1

    def flush(self) -> None:
        """msync the mapping if anything changed since the last flush."""
        if self._dirty and not self._mm.closed:
            self._mm.flush()
            self._dirty = False

    def _reserve(self, need: int) -> None:
        """Reserve the entry blocks up to ``need`` and :data:`RESERVE_STEP` beyond (capped at
        the file's end), or raise IndexFileError (full disk) with nothing written."""
        end = min(max(need, self._reserved + RESERVE_STEP), self.file_size)
        self._reserve_ranges([(self._reserved, end)])
        self._reserved = end

    def _reserve_slots(self, hashes: Sequence[int], start: int, stop: int, count: int) -> None:
        """Reserve the hash-slot pages entries ``start .. stop-1`` will write (all of them
        past :data:`SLOT_PAGES_LAZY_ENTRIES` entries, or for a loaded file)."""
        base = self._entries_base
        if not self._slots_lazy or count + stop - start > SLOT_PAGES_LAZY_ENTRIES:
            self._reserve_ranges([(0, base)])
            self._slot_pages = None
            return
        slots = self.hash_slot_num
        pages = {(INDEX_HEADER_SIZE + (hashes[i] % slots) * HASH_SLOT_SIZE) // _PAGE
                 for i in range(start, stop)}
        pages -= self._slot_pages
        if pages:
            self._reserve_ranges([(p * _PAGE, min((p + 1) * _PAGE, base)) for p in sorted(pages)])
            self._slot_pages |= pages

    def _reserve_ranges(self, ranges: list[tuple[int, int]]) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError as exc:
            raise IndexFileError(f"index file {self.path}: cannot open: {exc}") from exc
        try:
            for begin, end in ranges:
                preallocate(fd, end, self.path, begin)
        except MappedFileError as exc:
            raise IndexFileError(f"index file {self.path}: cannot reserve: {exc}") from exc
        finally:
            os.close(fd)

    def take_dirty(self) -> bool:
        """For a flush done elsewhere (the store's flush thread ``fdatasync``s :attr:`path`,
        broker/commitlog/disk_sync.py): True if anything changed since the last flush; the
        file counts as flushed from now on."""
        dirty = self._dirty and not self._mm.closed
        self._dirty = False
        return dirty

    def close(self) -> None:
        """Flush and unmap."""
        if not self._mm.closed:
            self.flush()
            self._mm.close()

    def destroy(self) -> None:
        """Unmap and delete the file."""
        if not self._mm.closed:
            self._mm.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        log.info("index file %s deleted", self.path)


def _put_entries_py(mm, hashes, phys, stamps, start, stop, slots, base, count, begin_ts,
                    begin_phy, slot_count):
    """The loop of :meth:`IndexFile.put_entries` (entries ``start .. stop-1`` written at
    ``base``, chained from their hash slots); returns (count, begin_ts, begin_phy,
    slot_count) after them."""
    entry_pack = _entry_pack
    slot_pack = _slot_pack
    slot_unpack = _slot_unpack
    for i in range(start, stop):
        key_hash = hashes[i]
        ts = stamps[i]
        slot_pos = INDEX_HEADER_SIZE + (key_hash % slots) * HASH_SLOT_SIZE
        slot_value = slot_unpack(mm, slot_pos)[0]
        if slot_value <= INVALID_INDEX or slot_value > count:
            slot_value = INVALID_INDEX
            slot_count += 1
        if begin_ts <= 0:
            time_diff = 0
        else:
            time_diff = (ts - begin_ts) // 1000
            if not 0 <= time_diff <= _INT_MAX:  # clamped as put_hashes does
                time_diff = 0 if time_diff < 0 else _INT_MAX
        entry_pack(mm, base + count * INDEX_ENTRY_SIZE, key_hash, phys[i], time_diff,
                   slot_value)
        slot_pack(mm, slot_pos, count)
        if count <= 1:
            begin_phy = phys[i]
            begin_ts = ts
        count += 1
    return count, begin_ts, begin_phy, slot_count
