"""Index service: message lookup by key / UNIQ_KEY within a store-time range.

Mirrors RocketMQ ``store/index/IndexService.java``: files under ``{store}/index/`` named by the
local time of their creation (``yyyyMMddHHmmssSSS``, ``UtilAll.timeMillisToHumanString``); each
message is indexed under ``topic#UNIQ_KEY`` and ``topic#<each KEYS token>``; a full file rolls to a
new one whose header starts at the old one's end; queries walk files newest first and return
commitlog offsets newest first.

Recovery differs (see :mod:`rocketmq_emu.broker.index.index_file`): instead of deleting files written after the
checkpoint, :meth:`IndexService.truncate` drops entries at or beyond the commitlog's valid end, and
:meth:`IndexService.put` skips messages at or below the last indexed offset, so the store's
re-dispatch after recovery is idempotent. A key repeated within one message is indexed once.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rocketmq_emu.broker.index.index_file import (
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    IndexFile,
    IndexFileError,
    build_key,
    index_key_hash,
    key_hash_from_java_hash,
)
from rocketmq_emu.broker.message import (
    KEY_SEPARATOR,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
    java_string_hash,
    java_string_hash_append,
)

log = logging.getLogger(__name__)

#: ``MessageStoreConfig.maxMsgsNumBatch``: cap on offsets returned by one query.
DEFAULT_MAX_MSGS_NUM_BATCH = 64
#: Topics whose ``"topic#"`` hash is kept (the cache is dropped, not grown, beyond this).
_PREFIX_CACHE_MAX = 4096


@dataclass
class QueryOffsetResult:
    """``QueryOffsetResult``: offsets newest first plus what QUERY_MESSAGE's response header
    reports (``indexLastUpdateTimestamp``, ``indexLastUpdatePhyoffset``)."""

    phy_offsets: list[int] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0


def split_keys(keys: str | None) -> list[str]:
    """Tokens of a KEYS property (``MessageConst.KEY_SEPARATOR`` = space), empty ones dropped."""
    if not keys:
        return []
    return [k for k in keys.split(KEY_SEPARATOR) if k]


def index_file_name(timestamp_ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: local time as ``yyyyMMddHHmmssSSS``."""
    seconds, millis = divmod(int(timestamp_ms), 1000)
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds)) + f"{millis:03d}"


class IndexService:
    """All index files of one store."""

    def __init__(
        self,
        index_dir: str,
        clock,
        hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
        index_num: int = DEFAULT_INDEX_NUM,
        max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
    ) -> None:
        """``index_dir`` is ``{storePathRootDir}/index``; ``clock`` an ``IReactorTime`` used only
        to name new files."""
        self.index_dir = index_dir
        self.clock = clock
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.max_msgs_num_batch = max_msgs_num_batch
        self.files: list[IndexFile] = []
        self._prefix_hashes: dict[str, int] = {}
        self._uniq_prefixes: dict[tuple[str, str], int] = {}
        self._uniq_heads: dict[tuple[str, str], int] = {}

    # --- lifecycle --------------------------------------------------------------------------
    def load(self) -> bool:
        """Open the existing files, oldest first. A file that cannot be used is logged (naming
        it and why) and left on disk untouched; returns False if any was skipped."""
        os.makedirs(self.index_dir, exist_ok=True)
        ok = True
        for name in sorted(os.listdir(self.index_dir)):
            path = os.path.join(self.index_dir, name)
            if not os.path.isfile(path) or not name.isdigit():
                continue
            try:
                f = IndexFile(path, self.hash_slot_num, self.index_num)
            except IndexFileError as exc:
                log.error("skipping index file: %s", exc)
                ok = False
                continue
            self.files.append(f)
            log.info("loaded index file %s: %d entries, phy offsets %d..%d", path,
                     f.entry_count, f.header.begin_phy_offset, f.header.end_phy_offset)
        return ok

    def flush(self) -> int:
        """msync every file; returns the newest indexed store timestamp (for the checkpoint's
        ``indexMsgTimestamp``), 0 if nothing is indexed."""
        for f in self.files:
            f.flush()
        return self.files[-1].header.end_timestamp if self.files else 0

    def shutdown(self) -> None:
        """Flush and unmap every file."""
        for f in self.files:
            f.close()
        self.files = []

    def destroy(self) -> None:
        """Delete every index file."""
        for f in self.files:
            f.destroy()
        self.files = []

    # --- write ------------------------------------------------------------------------------
    @property
    def last_indexed_phy_offset(self) -> int:
        """Commitlog offset of the newest indexed message, -1 if none."""
        for f in reversed(self.files):
            if f.entry_count > 0:
                return f.header.end_phy_offset
        return -1

    def _new_file(self) -> IndexFile:
        prev = self.files[-1] if self.files else None
        end_phy = prev.header.end_phy_offset if prev else 0
        end_ts = prev.header.end_timestamp if prev else 0
        if prev is not None:
            prev.flush()
        ts = int(self.clock.seconds() * 1000)
        name = index_file_name(ts)
        # Two files in one millisecond (a test clock, a burst of rolls) must not collide, and a
        # new name must sort after the last one so load() restores the order.
        while os.path.exists(os.path.join(self.index_dir, name)) or (
            prev is not None and name <= prev.name
        ):
            ts += 1
            name = index_file_name(ts)
        os.makedirs(self.index_dir, exist_ok=True)
        f = IndexFile(
            os.path.join(self.index_dir, name), self.hash_slot_num, self.index_num,
            create=True, end_phy_offset=end_phy, end_timestamp=end_ts,
        )
        self.files.append(f)
        log.info("created index file %s", f.path)
        return f

    def _writable_file(self) -> IndexFile:
        if self.files and not self.files[-1].is_write_full():
            return self.files[-1]
        return self._new_file()

    def _put_key(self, key: str, commitlog_offset: int, store_timestamp: int) -> None:
        self._put_hashes([index_key_hash(key)], commitlog_offset, store_timestamp)

    def _put_hashes(self, hashes: list[int], commitlog_offset: int, store_timestamp: int) -> None:
        files = self.files
        f = files[-1] if files else None
        if f is None or f.header.index_count >= f.index_num:
            f = self._new_file()
        done = f.put_hashes(hashes, commitlog_offset, store_timestamp)
        while done < len(hashes):  # the file filled up: the rest goes to a new one
            f = self._new_file()
            n = f.put_hashes(hashes[done:], commitlog_offset, store_timestamp)
            if n == 0:
                raise IndexFileError(f"index file {f.path}: cannot hold even one entry")
            done += n

    def _key_hash(self, topic: str, key: str) -> int:
        """``index_key_hash(build_key(topic, key))`` from the topic's cached ``"topic#"`` hash."""
        prefix = self._prefix_hashes.get(topic)
        if prefix is None:
            prefix = self._topic_prefix(topic)
        return key_hash_from_java_hash(java_string_hash_append(prefix, key))

    def _uniq_hash(self, topic: str, uniq: str) -> int:
        """:meth:`_key_hash` of an UNIQ_KEY. The Java client's ids are 32 hex digits
        (``MessageClientIDSetter``): 20 fixed per producer (ip, pid, class loader), 8 of time
        (the same for every message of a millisecond) and 4 of counter. The hash of
        ``topic#<first 28>`` is remembered, so a message costs one lookup and a multiply-add
        over the 4 counter digits instead of hashing the key."""
        if len(uniq) != 32 or not uniq.isascii():
            return self._key_hash(topic, uniq)
        heads = self._uniq_heads
        hkey = (topic, uniq[:28])
        h = heads.get(hkey)
        if h is None:
            fixed = uniq[:20]
            cache = self._uniq_prefixes
            prefix = cache.get((topic, fixed))
            if prefix is None:
                if len(cache) >= _PREFIX_CACHE_MAX:
                    cache.clear()
                prefix = self._prefix_hashes.get(topic)
                if prefix is None:
                    prefix = self._topic_prefix(topic)
                prefix = cache[(topic, fixed)] = java_string_hash_append(prefix, fixed)
            if len(heads) >= _PREFIX_CACHE_MAX:
                heads.clear()
            h = heads[hkey] = java_string_hash_append(prefix, uniq[20:28])
        b = uniq[28:].encode()  # ASCII: one byte per UTF-16 unit
        # (h * 31**4 + hash(tail)) mod 2**32 as Java's signed int, then abs (MIN_VALUE -> 0).
        u = (h * 923521 + b[0] * 29791 + b[1] * 961 + b[2] * 31 + b[3]) & 0xFFFFFFFF
        if u < 0x80000000:
            return u
        return 0 if u == 0x80000000 else 0x100000000 - u

    def _topic_prefix(self, topic: str) -> int:
        if len(self._prefix_hashes) >= _PREFIX_CACHE_MAX:
            self._prefix_hashes.clear()
        prefix = self._prefix_hashes[topic] = java_string_hash(f"{topic}#")
        return prefix

    def indexed_up_to(self) -> int:
        """Commitlog offset at or below which a message counts as indexed (-1: none):
        :meth:`build_index_batch` skips those."""
        return self._last_indexed()

    def put_entries(self, hashes: Sequence[int], phys: Sequence[int],
                    stamps: Sequence[int]) -> None:
        """Write gathered entries (key hash -> commitlog offset, store time), in order,
        rolling files as needed (the write half of :meth:`build_index_batch`)."""
        self._put_entries(hashes, phys, stamps)

    def _last_indexed(self) -> int:
        files = self.files
        if files:
            h = files[-1].header
            if h.index_count > 1:
                return h.end_phy_offset
        return self.last_indexed_phy_offset

    def put(
        self,
        topic: str,
        keys: Iterable[str],
        uniq_key: str | None,
        commitlog_offset: int,
        store_timestamp: int,
    ) -> bool:
        """Index one message (``IndexService.buildIndex``); False if skipped as already indexed.

        ``keys`` are the KEYS tokens (see :func:`split_keys`).
        """
        last = self._last_indexed()
        if last >= 0 and commitlog_offset <= last:
            return False
        # A key repeated in KEYS (or equal to UNIQ_KEY) is indexed once: RocketMQ indexes it
        # twice and QUERY_MESSAGE then returns the same record twice.
        seen: set[str] = set()
        hashes = []
        for key in ([uniq_key] if uniq_key else []) + list(keys):
            if key and key not in seen:
                seen.add(key)
                hashes.append(self._uniq_hash(topic, key) if key is uniq_key
                              else self._key_hash(topic, key))
        if hashes:
            self._put_hashes(hashes, commitlog_offset, store_timestamp)
        return True

    def build_index(
        self,
        topic: str,
        keys_property: str | None,
        uniq_key: str | None,
        commitlog_offset: int,
        store_timestamp: int,
        sys_flag: int = 0,
    ) -> bool:
        """Dispatch helper: like :meth:`put` from the raw KEYS property; rolled-back
        transaction records are not indexed (``IndexService.buildIndex``)."""
        if sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE:
            return False
        if keys_property and KEY_SEPARATOR not in keys_property:
            # The common case (one key or none, plus UNIQ_KEY) without splitting and sets.
            files = self.files
            if files and files[-1].header.index_count > 1:
                last = files[-1].header.end_phy_offset
            else:
                last = self.last_indexed_phy_offset
            if last >= 0 and commitlog_offset <= last:
                return False
            if uniq_key and uniq_key != keys_property:
                hashes = [self._uniq_hash(topic, uniq_key), self._key_hash(topic, keys_property)]
            else:
                hashes = [self._key_hash(topic, keys_property)]
            self._put_hashes(hashes, commitlog_offset, store_timestamp)
            return True
        return self.put(topic, split_keys(keys_property), uniq_key, commitlog_offset,
                        store_timestamp)

    def build_index_batch(self, items: Iterable[tuple]) -> int:
        """:meth:`build_index` for many messages in commitlog order, each item ``(topic,
        keys_property, uniq_key, commitlog_offset, store_timestamp)``: the same entries, slots
        and headers as one :meth:`build_index` per item, but the hashes are gathered first and
        written by one :meth:`IndexFile.put_entries` per file (the reput thread's batch).
        Items with several KEYS tokens take :meth:`build_index`. Returns the items indexed."""
        hashes: list[int] = []
        phys: list[int] = []
        stamps: list[int] = []
        last = self._last_indexed()
        uniq_hash = self._uniq_hash
        key_hash = self._key_hash
        done = 0
        for topic, keys, uniq, offset, ts in items:
            if keys and KEY_SEPARATOR in keys:
                self._put_entries(hashes, phys, stamps)
                hashes, phys, stamps = [], [], []
                done += self.build_index(topic, keys, uniq, offset, ts)
                last = self._last_indexed()
                continue
            if last >= 0 and offset <= last:
                continue
            if keys:
                if uniq and uniq != keys:
                    hashes.append(uniq_hash(topic, uniq))
                    phys.append(offset)
                    stamps.append(ts)
                hashes.append(key_hash(topic, keys))
            elif uniq:
                hashes.append(uniq_hash(topic, uniq))
            else:
                continue
            phys.append(offset)
            stamps.append(ts)
            last = offset
            done += 1
        self._put_entries(hashes, phys, stamps)
        return done

    def _put_entries(self, hashes: Sequence[int], phys: Sequence[int],
                     stamps: Sequence[int]) -> None:
        done = 0
        n = len(hashes)
        while done < n:
            files = self.files
            f = files[-1] if files else None
            if f is None or f.header.index_count >= f.index_num:
                f = self._new_file()
            k = f.put_entries(hashes, phys, stamps, done)
            if k == 0:
                raise IndexFileError(f"index file {f.path}: cannot hold even one entry")
            done += k

    # --- read -------------------------------------------------------------------------------
    def query(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int
    ) -> QueryOffsetResult:
        """Commitlog offsets of messages indexed under ``topic#key`` with store time in
        [begin_ms, end_ms], newest first, at most ``min(max_num, maxMsgsNumBatch)``
        (``IndexService.queryOffset``). Offsets of colliding keys may be included."""
        result = QueryOffsetResult()
        max_num = min(max_num, self.max_msgs_num_batch)
        full_key = build_key(topic, key)
        for i in range(len(self.files) - 1, -1, -1):
            f = self.files[i]
            if i == len(self.files) - 1:
                result.index_last_update_timestamp = f.header.end_timestamp
                result.index_last_update_phyoffset = f.header.end_phy_offset
            if f.is_time_matched(begin_ms, end_ms):
                f.select_phy_offsets(result.phy_offsets, full_key, max_num, begin_ms, end_ms)
            if f.header.begin_timestamp < begin_ms or len(result.phy_offsets) >= max_num:
                break
        return result

    # --- recovery / retention ---------------------------------------------------------------
    def truncate(self, commitlog_offset: int) -> None:
        """Forget entries pointing at or beyond ``commitlog_offset`` (the commitlog's valid end
        after recovery); files left empty are deleted."""
        while self.files:
            f = self.files[-1]
            if f.entry_count == 0 or f.header.begin_phy_offset >= commitlog_offset:
                if f.entry_count == 0 and len(self.files) == 1:
                    break
                self.files.pop().destroy()
                continue
            f.truncate_from(commitlog_offset)
            break

    def delete_expired_files(self, min_commitlog_offset: int) -> int:
        """Delete files (never the newest) whose every entry is below ``min_commitlog_offset``
        (``IndexService.deleteExpiredFile``); returns how many were deleted."""
        doomed = [f for f in self.files[:-1] if f.header.end_phy_offset < min_commitlog_offset]
        for f in doomed:
            f.destroy()
            self.files.remove(f)
        return len(doomed)
