"""One fixed-size, memory-mapped store file (RocketMQ ``store/MappedFile.java``).

A mapped file is named by the 20-digit decimal offset of its first byte in the logical stream
(``UtilAll.offset2FileName``), is preallocated to its full size (``posix_fallocate``, so a full
disk is reported when the file is created rather than as a SIGBUS on a later page write). Pages
are pre-touched (the first touch of a page costs 4-6x) only in a window ahead of the write
position (:data:`WARM_WINDOW`), advanced by :meth:`MappedFile.warm_ahead` as the writer moves:
RocketMQ's ``MappedFile.warmMappedFile`` touches the whole file at creation (when
``warmMapedFileEnable``, false by default), which for a 1 GiB commitlog makes 1 GiB resident.

Positions, all relative to the file start:

* ``wrote_position``: end of the data written into the mapping. Writers advance it only after a
  whole record (or unit) is in place, so a reader never sees half a record.
* ``committed_position``: equal to ``wrote_position`` (no transient store pool: we write straight
  into the mapping); kept for RocketMQ's vocabulary.
* ``flushed_position``: end of the data known to be on disk (``msync``).

Errors (permission, full disk, wrong size) raise :class:`MappedFileError` naming the file.
"""

from __future__ import annotations

import errno
import logging
import mmap
import os

from rocketmq_emu.broker.commitlog.madvise import populate_write

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096
#: Suffix of a file being created (renamed to its store name once preallocated).
TMP_SUFFIX = ".creating"
#: Linux ``MADV_POPULATE_WRITE`` (5.14+): prefault every page writable in one call.
_MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)
_ZERO_CHUNK = bytes(1 << 20)
#: Bytes kept pre-touched ahead of ``wrote_position`` (see :meth:`MappedFile.warm_ahead`).
WARM_WINDOW = 16 << 20
#: The window is topped up only once this much of it has been written into (fewer, larger
#: ``madvise`` calls).
WARM_STEP = 4 << 20


class MappedFileError(OSError):
    """An I/O problem with a store file; the message names the file (and offset if known)."""

    def __init__(self, message: str, path: str, offset: int | None = None, err: int = 0) -> None:
        where = path if offset is None else f"{path} at offset {offset}"
        super().__init__(err or errno.EIO, f"{message}: {where}")
        self.path = path
        self.offset = offset


def offset_to_file_name(offset: int) -> str:
    """``UtilAll.offset2FileName``: the offset as 20 decimal digits."""
    return f"{offset:020d}"


def is_store_file_name(name: str) -> bool:
    """True for a 20-digit store file name."""
    return len(name) == 20 and name.isdigit()


class MappedFile:
    """A preallocated file of ``file_size`` bytes mapped read/write.

    ``mm`` is the mmap itself; writers may ``pack_into`` it directly and then call
    :meth:`advance` (or use :meth:`append`). ``last_modified`` is in seconds on the store's
    clock: set from the file's mtime on load and by the writer on every append, so retention
    can be driven by a test clock.
    """

    __slots__ = (
        "path", "file_size", "file_from_offset", "mm", "_fd", "wrote_position",
        "flushed_position", "last_modified", "first_create_in_queue", "warmed_position",
        "_syncing", "_close_pending",
    )

    def __init__(
        self, path: str, file_size: int, *, create: bool = True, warm: bool = True,
        now: float | None = None,
    ) -> None:
        self.path = path
        self.file_size = file_size
        name = os.path.basename(path)
        if not is_store_file_name(name):
            raise MappedFileError("store file name is not 20 digits", path)
        self.file_from_offset = int(name)
        self.first_create_in_queue = False
        exists = os.path.exists(path)
        if not exists and not create:
            raise MappedFileError("store file does not exist", path, err=errno.ENOENT)
        # A new file is built under a temporary name and renamed once preallocated, so a crash
        # during creation never leaves a short file under a store name.
        open_path = path if exists else path + TMP_SUFFIX
        try:
            fd = os.open(open_path, os.O_RDWR | (os.O_CREAT | os.O_TRUNC if not exists else 0),
                         0o644)
        except OSError as exc:
            raise MappedFileError(
                f"cannot open store file ({exc.strerror})", path, err=exc.errno or 0
            ) from exc
        try:
            actual = os.fstat(fd).st_size
            if exists and actual not in (0, file_size):
                raise MappedFileError(
                    f"store file has size {actual}, expected {file_size}", path,
                    err=errno.EINVAL,
                )
            fresh = actual == 0
            if fresh:
                preallocate(fd, file_size, path)
            self.mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            if not exists:
                os.rename(open_path, path)
        except BaseException as exc:
            os.close(fd)
            if not exists:
                _silent_unlink(open_path)
            if isinstance(exc, OSError) and not isinstance(exc, MappedFileError):
                raise MappedFileError(f"cannot create store file ({exc.strerror})", path,
                                      err=exc.errno or 0) from exc
            raise
        self._fd = fd
        #: Syncs of ``_fd`` running in the flush thread (see :mod:`rocketmq_emu.broker.commitlog.disk_sync`).
        self._syncing = 0
        self._close_pending = False
        self.wrote_position = 0
        self.flushed_position = 0
        #: End of the pre-touched prefix (pages before it were touched or written).
        self.warmed_position = 0
        if fresh and warm:
            self.warm_ahead()
        self.last_modified = now if now is not None else os.fstat(fd).st_mtime

    # --- positions ---------------------------------------------------------------------------
    @property
    def committed_position(self) -> int:
        """Same as ``wrote_position``: records are written straight into the mapping."""
        return self.wrote_position

    @property
    def read_position(self) -> int:
        """``MappedFile.getReadPosition``: how far readers may read."""
        return self.wrote_position

    @property
    def file_tail(self) -> int:
        """Logical offset just past the written data."""
        return self.file_from_offset + self.wrote_position

    def is_full(self) -> bool:
        """True when no byte is left to write."""
        return self.wrote_position >= self.file_size

    def remaining(self) -> int:
        """Bytes left to write."""
        return self.file_size - self.wrote_position

    def reserve_holes(self) -> None:
        """Allocate any block of the file still a hole (consume-queue files written by builds
        that created them sparse), so that a write into it on a full disk cannot kill the
        process with SIGBUS. Best effort, for a file being reopened: ``posix_fallocate`` only
        (the zero-writing fallback would rewrite live data); a failure is logged, and the file
        is used as before."""
        try:
            os.posix_fallocate(self._fd, 0, self.file_size)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                log.warning("cannot reserve the blocks of %s (%s): a write into a hole may fail "
                            "once the disk is full", self.path, exc.strerror)

    def set_positions(self, pos: int) -> None:
        """Set wrote/flushed positions (load and recovery)."""
        self.wrote_position = pos
        self.flushed_position = pos

    def advance(self, n: int, now: float | None = None) -> None:
        """Publish ``n`` bytes written at ``wrote_position`` (call after the bytes are in)."""
        self.wrote_position += n
        if now is not None:
            self.last_modified = now

    # --- data --------------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, now: float | None = None) -> bool:
        """Write ``data`` at ``wrote_position``; False (nothing written) if it does not fit."""
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            return False
        self.mm[pos:end] = data
        self.wrote_position = end
        if now is not None:
            self.last_modified = now
        return True

    def read(self, pos: int, size: int) -> bytes:
        """Bytes ``[pos, pos+size)`` of the written data; error if beyond ``wrote_position``."""
        if pos < 0 or size < 0 or pos + size > self.wrote_position:
            raise MappedFileError(
                f"read of {size} bytes beyond written position {self.wrote_position}",
                self.path, pos, errno.EINVAL,
            )
        return self.mm[pos : pos + size]

    def view(self, pos: int = 0, end: int | None = None) -> memoryview:
        """A memoryview of ``[pos, end)`` (default: up to ``wrote_position``). Release it before
        :meth:`close` (an exported buffer keeps the mapping open)."""
        return memoryview(self.mm)[pos : self.wrote_position if end is None else end]

    def warm(self, end: int | None = None) -> None:
        """Touch every page from ``warmed_position`` up to ``end`` (default: the whole file)
        so later writes do not fault (``MappedFile.warmMappedFile``)."""
        end = self.file_size if end is None else min(end, self.file_size)
        start = self.warmed_position - self.warmed_position % OS_PAGE_SIZE
        if end <= start:
            return
        try:
            self.mm.madvise(_MADV_POPULATE_WRITE, start, end - start)
        except (OSError, ValueError):
            # Older kernels: write one byte per page. Only pages past the written data are
            # touched, and a written page keeps its byte (read, then written back).
            mm = self.mm
            for i in range(start, end, OS_PAGE_SIZE):
                mm[i] = mm[i]
        self.warmed_position = end

    def warm_window(self, window: int = WARM_WINDOW) -> tuple[int, int] | None:
        """The range to pre-touch next so that ``[wrote_position, wrote_position + window)``
        is, in steps of at least :data:`WARM_STEP`, claimed (``warmed_position`` moves to its
        end); None while the window is still ahead."""
        pos = max(self.wrote_position, self.warmed_position)
        end = min(self.wrote_position + window, self.file_size)
        if end <= pos or (end - pos < WARM_STEP and end < self.file_size):
            return None
        self.warmed_position = end
        return pos, end

    def warm_ahead(self, window: int = WARM_WINDOW) -> int:
        """Keep ``[wrote_position, wrote_position + window)`` pre-touched, in steps of at least
        :data:`WARM_STEP`; returns the bytes touched now (0: the window was still ahead)."""
        span = self.warm_window(window)
        if span is None:
            return 0
        self.warmed_position = span[0]
        self.warm(span[1])
        return span[1] - span[0]

    def populate(self, start: int, end: int) -> None:
        """Fault ``[start, end)`` in writable without changing a byte: safe from another thread
        while the writer appends (the warm thread; see :mod:`rocketmq_emu.broker.commitlog.warm`),
        and the GIL is released meanwhile (:mod:`rocketmq_emu.broker.commitlog.madvise`). No
        per-page fallback: an old kernel's OSError goes to the caller (writing a byte back could
        race the writer)."""
        populate_write(self.mm, start, end - start)

    def zero_from(self, pos: int, limit: int | None = None) -> int:
        """Zero ``[pos, limit)`` (default: to the end of the file; a torn tail); returns the
        size of the chunks that held non-zero bytes."""
        mm = self.mm
        changed = 0
        i = pos
        stop = self.file_size if limit is None else min(limit, self.file_size)
        while i < stop:
            end = min(i + len(_ZERO_CHUNK), stop)
            if mm[i:end] != _ZERO_CHUNK[: end - i]:
                mm[i:end] = _ZERO_CHUNK[: end - i]
                changed += end - i
            i = end
        return changed

    def all_zero_from(self, pos: int, limit: int | None = None) -> bool:
        """True when ``[pos, limit)`` (default: to the end of the file) holds only zeros."""
        mm = self.mm
        i = pos
        stop = self.file_size if limit is None else min(limit, self.file_size)
        while i < stop:
            end = min(i + len(_ZERO_CHUNK), stop)
            if mm[i:end] != _ZERO_CHUNK[: end - i]:
                return False
            i = end
        return True

    # --- durability --------------------------------------------------------------------------
    def flush(self) -> int:
        """``msync`` the dirty range; returns the new flushed position."""
        wrote = self.wrote_position
        if wrote > self.flushed_position:
            start = self.flushed_position - self.flushed_position % mmap.PAGESIZE
            try:
                self.mm.flush(start, wrote - start)
            except OSError as exc:
                raise MappedFileError(
                    f"flush failed ({exc.strerror})", self.path, self.flushed_position,
                    exc.errno or 0,
                ) from exc
            self.flushed_position = wrote
        return self.flushed_position

    def flush_all(self) -> None:
        """``msync`` the whole mapping (after recovery rewrote bytes anywhere)."""
        try:
            self.mm.flush()
        except OSError as exc:
            raise MappedFileError(f"flush failed ({exc.strerror})", self.path) from exc
        self.flushed_position = self.wrote_position

    # The threaded flush (broker.commitlog.disk_sync): the plan marks the file, the flush thread
    # fdatasyncs ``sync_fd`` and the reactor ends the sync. The descriptor stays open meanwhile,
    # so a close during a sync can never let the thread sync a reused descriptor.
    @property
    def sync_fd(self) -> int:
        """The file descriptor a flush thread passes to ``fdatasync``."""
        return self._fd

    def begin_sync(self) -> None:
        """A sync of this file is about to run in the flush thread."""
        self._syncing += 1

    def end_sync(self, wrote: int | None) -> None:
        """The sync returned: ``wrote`` (None if it failed) is now flushed; a close requested
        meanwhile happens now."""
        self._syncing -= 1
        if wrote is not None and wrote > self.flushed_position:
            self.flushed_position = wrote
        if self._close_pending and not self._syncing:
            self._close_pending = False
            os.close(self._fd)
            self._fd = -1

    def dirty_pages(self) -> int:
        """Pages written but not flushed."""
        return (self.wrote_position // OS_PAGE_SIZE) - (self.flushed_position // OS_PAGE_SIZE)

    def close(self) -> None:
        """Unmap and close (no flush). While a sync of the file runs in the flush thread the
        descriptor is closed when that sync ends."""
        if self._fd < 0 or self._close_pending:
            return
        try:
            self.mm.close()
        except BufferError:
            log.warning("%s: a view is still exported; mapping left to the GC", self.path)
        if self._syncing:
            self._close_pending = True
            return
        os.close(self._fd)
        self._fd = -1

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        _silent_unlink(self.path)

    def __repr__(self) -> str:
        return (
            f"MappedFile({self.path!r}, wrote={self.wrote_position}, "
            f"flushed={self.flushed_position})"
        )


def preallocate(fd: int, size: int, path: str, start: int = 0) -> None:
    """Reserve every block of ``[start, size)`` of the file (``posix_fallocate``; where the
    filesystem cannot, by writing the range's bytes back, zeros in a new file), so a full disk
    fails here, as a :class:`MappedFileError` naming ``path``, and never as a SIGBUS when a
    page of the mapping is first written. Shared by every file the store writes through
    ``mmap`` (commitlog, consume queues, index files)."""
    try:
        os.posix_fallocate(fd, start, size - start)
        return
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise _allocation_error(exc, size, path) from exc
    # Writing a live range back is safe only because every writer of these files (puts, index
    # entries) runs on the reactor thread, as this does: no store happens between the read
    # and the write. glibc emulates posix_fallocate itself, so this is rarely reached.
    try:
        for off in range(start, size, len(_ZERO_CHUNK)):
            chunk = min(len(_ZERO_CHUNK), size - off)
            data = os.pread(fd, chunk, off)
            data += _ZERO_CHUNK[: chunk - len(data)]  # beyond the end of file: zeros
            if os.pwrite(fd, data, off) != chunk:
                raise OSError(errno.ENOSPC, "short write")
    except OSError as exc:
        raise _allocation_error(exc, size, path) from exc


def _allocation_error(exc: OSError, size: int, path: str) -> MappedFileError:
    if exc.errno == errno.ENOSPC:
        return MappedFileError(
            f"no space left on device to preallocate {size} bytes", path, err=errno.ENOSPC
        )
    return MappedFileError(
        f"cannot preallocate {size} bytes ({exc.strerror})", path, err=exc.errno or 0
    )


def _silent_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
