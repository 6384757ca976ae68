"""A directory of equally sized mapped files forming one logical byte stream
(RocketMQ ``store/MappedFileQueue.java``). Used for the commitlog and for consume queues.

File ``n`` covers logical offsets ``[n*file_size, (n+1)*file_size)`` and is named
``%020d`` of its first offset. Only the last file is written; earlier files are full (the
commitlog ends each with a BLANK filler).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from rocketmq_emu.broker.commitlog.disk_sync import FlushPlan
from rocketmq_emu.broker.commitlog.mapped_file import (
    TMP_SUFFIX,
    MappedFile,
    MappedFileError,
    is_store_file_name,
    offset_to_file_name,
)

log = logging.getLogger(__name__)


class MappedFileQueue:
    """Ordered mapped files in ``store_path``, each ``mapped_file_size`` bytes.

    ``clock`` (optional, an ``IReactorTime``) stamps new files' ``last_modified``.
    """

    def __init__(
        self, store_path: str, mapped_file_size: int, *, warm: bool = True, clock=None
    ) -> None:
        if mapped_file_size <= 0:
            raise ValueError(f"mapped file size must be positive, got {mapped_file_size}")
        self.store_path = store_path
        self.mapped_file_size = mapped_file_size
        self.warm = warm
        self.clock = clock
        self.files: list[MappedFile] = []
        self.flushed_where = 0

    # --- lifecycle ----------------------------------------------------------------------------
    def load(self) -> bool:
        """Map every 20-digit file in the directory, oldest first, positions at full size.

        Recovery then calls :meth:`truncate_dirty`. Raises :class:`MappedFileError` naming a
        file whose size is wrong (RocketMQ refuses to start in that case too) or that cannot be
        opened. Other names are ignored with a warning.
        """
        if not os.path.isdir(self.store_path):
            return True
        names = sorted(os.listdir(self.store_path))
        store_names = [n for n in names if is_store_file_name(n)]
        for name in names:
            if name.endswith(TMP_SUFFIX):  # a creation a crash interrupted: never held data
                log.warning("removing %s: unfinished file creation",
                            os.path.join(self.store_path, name))
                os.unlink(os.path.join(self.store_path, name))
                continue
            if not is_store_file_name(name):
                log.warning("ignoring %s: not a store file name",
                            os.path.join(self.store_path, name))
                continue
            path = os.path.join(self.store_path, name)
            size = os.path.getsize(path)
            if size == 0 and name == store_names[-1]:
                # Created by an older build (no temporary name) and cut short by a crash.
                log.warning("removing %s: empty last file (interrupted creation)", path)
                os.unlink(path)
                continue
            if size != self.mapped_file_size:
                raise MappedFileError(
                    f"store file has size {size}, expected {self.mapped_file_size}"
                    " (mapped file size changed, or a truncated copy?)", path,
                )
            mf = MappedFile(path, self.mapped_file_size, create=False, warm=False)
            mf.set_positions(self.mapped_file_size)
            self.files.append(mf)
        if self.files:
            self.files[-1].reserve_holes()  # the one file that is written into again
        for prev, nxt in zip(self.files, self.files[1:], strict=False):
            if nxt.file_from_offset != prev.file_from_offset + self.mapped_file_size:
                log.warning("gap in %s between %s and %s", self.store_path,
                            os.path.basename(prev.path), os.path.basename(nxt.path))
        return True

    def shutdown(self) -> None:
        """Flush and unmap every file."""
        for mf in self.files:
            mf.flush()
            mf.close()

    def destroy(self) -> None:
        """Delete every file (and the directory if it becomes empty)."""
        for mf in self.files:
            mf.destroy()
        self.files.clear()
        self.flushed_where = 0
        try:
            os.rmdir(self.store_path)
        except OSError:
            pass

    # --- lookup -------------------------------------------------------------------------------
    @property
    def first_file(self) -> MappedFile | None:
        return self.files[0] if self.files else None

    @property
    def last_file(self) -> MappedFile | None:
        return self.files[-1] if self.files else None

    def _now(self) -> float | None:
        return self.clock.seconds() if self.clock is not None else None

    def create_file(self, start_offset: int, *, warm: bool = True) -> MappedFile:
        """Create (preallocate; pre-touch too if this queue warms and ``warm``) the file
        starting at ``start_offset``."""
        try:
            os.makedirs(self.store_path, exist_ok=True)
        except OSError as exc:
            raise MappedFileError(
                f"cannot create store directory ({exc.strerror})", self.store_path,
                err=exc.errno or 0,
            ) from exc
        path = os.path.join(self.store_path, offset_to_file_name(start_offset))
        mf = MappedFile(path, self.mapped_file_size, warm=self.warm and warm, now=self._now())
        if not self.files:
            mf.first_create_in_queue = True
        self.files.append(mf)
        return mf

    def warm_ahead(self, submit: Callable | None = None) -> int:
        """Advance the pre-touched window of the file being written (if this queue warms its
        files; see :meth:`MappedFile.warm_ahead`); returns the bytes claimed now. With
        ``submit``, the touching is ``submit(MappedFile.populate, start, end)`` (another
        thread) instead of done here."""
        last = self.last_file
        if not self.warm or last is None or last.wrote_position >= last.file_size:
            return 0
        if submit is None:
            return last.warm_ahead()
        span = last.warm_window()
        if span is None:
            return 0
        submit(last.populate, *span)
        return span[1] - span[0]

    def get_last_mapped_file(self, start_offset: int = 0, need_create: bool = True):
        """``getLastMappedFile``: the file to write into, creating the first one at the file
        boundary at or below ``start_offset`` or the next one when the last is full."""
        last = self.last_file
        if last is not None and not last.is_full():
            return last
        if not need_create:
            return last
        if last is None:
            create_at = start_offset - start_offset % self.mapped_file_size
        else:
            create_at = last.file_from_offset + self.mapped_file_size
        return self.create_file(create_at)

    def find_mapped_file_by_offset(
        self, offset: int, return_first_on_not_found: bool = False
    ) -> MappedFile | None:
        """The file holding logical ``offset`` (``findMappedFileByOffset``), or None."""
        files = self.files
        if not files:
            return None
        first = files[0]
        idx = (offset // self.mapped_file_size) - (first.file_from_offset // self.mapped_file_size)
        if 0 <= idx < len(files):
            mf = files[idx]
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        for mf in files:  # gaps (after a deletion by hand): fall back to a scan
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        return first if return_first_on_not_found else None

    def get_min_offset(self) -> int:
        """First logical offset still on disk (-1 when empty, as RocketMQ)."""
        return self.files[0].file_from_offset if self.files else -1

    def get_max_offset(self) -> int:
        """Logical offset just past the readable data."""
        last = self.last_file
        return last.file_from_offset + last.read_position if last is not None else 0

    def get_max_wrote_position(self) -> int:
        """Same as :meth:`get_max_offset` (no separate commit step)."""
        return self.get_max_offset()

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes at logical ``offset``, which must lie within one file's written data."""
        mf = self.find_mapped_file_by_offset(offset)
        if mf is None:
            raise MappedFileError(
                "no store file holds this offset", self.store_path, offset
            )
        return mf.read(offset - mf.file_from_offset, size)

    # --- durability ---------------------------------------------------------------------------
    def flush(self, flush_least_pages: int = 0) -> bool:
        """Flush the file holding ``flushed_where`` (and any full files before the last).

        Returns True when something was flushed. With ``flush_least_pages`` > 0, flushes only
        when at least that many pages are dirty (``MappedFileQueue.flush``).
        """
        flushed = False
        target = self.get_max_offset()
        if target <= self.flushed_where:
            return False
        if flush_least_pages > 0 and (target - self.flushed_where) // 4096 < flush_least_pages:
            return False
        for mf in self.files:
            if mf.file_from_offset + mf.wrote_position <= self.flushed_where:
                continue
            if mf.wrote_position > mf.flushed_position:
                mf.flush()
                flushed = True
        self.flushed_where = target
        return flushed

    def flush_plan(self, flush_least_pages: int = 0):
        """The threaded counterpart of :meth:`flush` (:mod:`rocketmq_emu.broker.commitlog.disk_sync`): a
        :class:`~broker.commitlog.disk_sync.FlushPlan` of the files to sync, or None when
        nothing needs flushing (same ``flush_least_pages`` rule)."""
        target = self.get_max_offset()
        if target <= self.flushed_where:
            return None
        if flush_least_pages > 0 and (target - self.flushed_where) // 4096 < flush_least_pages:
            return None
        files = [
            (mf, mf.wrote_position) for mf in self.files
            if mf.file_from_offset + mf.wrote_position > self.flushed_where
            and mf.wrote_position > mf.flushed_position
        ]
        return FlushPlan(self, target, files)

    def dirty_bytes(self) -> int:
        """Written but not yet flushed."""
        return self.get_max_offset() - self.flushed_where

    # --- truncation / retention ---------------------------------------------------------------
    def truncate_dirty(self, offset: int, zero: bool = True, zero_limit: int | None = None
                       ) -> None:
        """Drop everything at or after logical ``offset`` (``truncateDirtyFiles``).

        The file holding ``offset`` gets its positions set there and (``zero``) its tail zeroed
        (the first ``zero_limit`` bytes of it, if given) so no stale bytes can later be mistaken
        for data; files wholly after it are deleted.
        """
        keep: list[MappedFile] = []
        for mf in self.files:
            tail = mf.file_from_offset + self.mapped_file_size
            if tail <= offset:
                keep.append(mf)
            elif mf.file_from_offset <= offset:
                pos = offset - mf.file_from_offset
                if zero and mf.zero_from(
                        pos, None if zero_limit is None else pos + zero_limit):
                    log.warning("%s: zeroed a torn tail from position %d", mf.path, pos)
                    mf.flush_all()
                mf.set_positions(pos)
                keep.append(mf)
            else:
                log.warning("%s: deleting, it lies beyond the valid end %d", mf.path, offset)
                mf.destroy()
        self.files = keep
        self.flushed_where = min(self.flushed_where, offset)

    def set_flushed_where(self, offset: int) -> None:
        """After recovery: everything up to ``offset`` is on disk."""
        self.flushed_where = offset

    def delete_files(
        self, predicate: Callable[[MappedFile], bool], *, keep_last: bool = True,
        max_files: int | None = None,
    ) -> list[MappedFile]:
        """Delete files from the head while ``predicate(file)`` holds (retention).

        Stops at the first file that fails the predicate (the stream stays contiguous) and
        never deletes the last file when ``keep_last``. Returns the deleted files (closed).
        """
        deleted: list[MappedFile] = []
        limit = len(self.files) - (1 if keep_last else 0)
        for mf in self.files[:limit]:
            if max_files is not None and len(deleted) >= max_files:
                break
            if not predicate(mf):
                break
            mf.destroy()
            deleted.append(mf)
        if deleted:
            self.files = self.files[len(deleted):]
        return deleted

    def delete_expired_by_time(self, expired_seconds: float, now: float, **kw) -> int:
        """Delete head files not modified for ``expired_seconds`` (``deleteExpiredFileByTime``)."""
        return len(self.delete_files(lambda mf: now - mf.last_modified >= expired_seconds, **kw))

    def __len__(self) -> int:
        return len(self.files)

    def __repr__(self) -> str:
        return f"MappedFileQueue({self.store_path!r}, files={len(self.files)})"
