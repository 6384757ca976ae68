"""Disk syncs off the reactor thread (RocketMQ ``CommitLog.FlushRealTimeService`` /
``GroupCommitService`` and ``FlushConsumeQueueService`` each run in their own thread).

``msync`` through CPython's ``mmap.flush()`` keeps the GIL, so a flush under disk load stalls
every timer and connection of the broker for as long as the device takes (hundreds of ms).
``os.fdatasync(fd)`` releases the GIL, and on Linux the dirty pages of a shared file mapping are
page-cache pages of the file, which ``fdatasync`` on the file's descriptor writes back. So the
periodic flushes take a *plan* on the reactor (which files, up to which position), run the
``fdatasync`` calls in the store's one flush thread, and advance the flushed positions back on
the reactor once the syncs returned.

:class:`DiskSyncer` is that thread: one worker, so jobs run one at a time in submission order
(no two syncs of a file at once; config files are written in the order they were persisted).
Without a reactor able to run threads (unit tests with ``task.Clock``) or once stopped, a job
runs inline and its Deferred has already fired when :meth:`DiskSyncer.submit` returns.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from twisted.internet import defer
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

from rocketmq_emu.broker.commitlog.mapped_file import MappedFile, MappedFileError

log = logging.getLogger(__name__)


class DiskSyncer:
    """The store's flush thread. ``reactor`` must provide ``callFromThread`` for the threaded
    mode; anything else (None, a ``task.Clock``) runs every job inline."""

    def __init__(self, reactor=None, name: str = "store-flush") -> None:
        self.reactor = reactor
        self.name = name
        self.threaded = reactor is not None and hasattr(reactor, "callFromThread")
        self._pool: ThreadPool | None = None
        self._trigger = None
        #: Jobs submitted to the thread and not yet returned.
        self.pending = 0

    @property
    def running(self) -> bool:
        """True while jobs go to the thread."""
        return self._pool is not None

    def start(self) -> None:
        """Start the thread (threaded mode only); it stops with the reactor at the latest."""
        if not self.threaded or self._pool is not None:
            return
        self._pool = ThreadPool(1, 1, name=self.name)
        self._pool.start()
        # A store never shut down must not keep the process alive after reactor.stop().
        self._trigger = self.reactor.addSystemEventTrigger("during", "shutdown", self.stop)

    def stop(self) -> None:
        """Wait for the running and queued jobs, then stop the thread; later jobs run inline.
        Results of finished jobs are still delivered on the reactor (if it runs)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if self._trigger is not None:
            try:
                self.reactor.removeSystemEventTrigger(self._trigger)
            except (ValueError, KeyError):
                pass  # we are running as that trigger
            self._trigger = None
        pool.stop()

    def submit(self, fn: Callable, *args) -> defer.Deferred:
        """Run ``fn(*args)`` in the thread; the Deferred fires on the reactor with its result."""
        if self._pool is None:
            return defer.maybeDeferred(fn, *args)
        self.pending += 1
        d = deferToThreadPool(self.reactor, self._pool, fn, *args)
        d.addBoth(self._done)
        return d

    def _done(self, result):
        self.pending -= 1
        return result


def sync_fds(targets: list[tuple[int, str]]) -> None:
    """``fdatasync`` each ``(fd, path)``; runs in the flush thread. An error names the file."""
    for fd, path in targets:
        try:
            os.fdatasync(fd)
        except OSError as exc:
            raise MappedFileError(f"flush failed ({exc.strerror})", path,
                                  err=exc.errno or 0) from exc


def sync_paths(paths: list[str]) -> None:
    """``fdatasync`` each file through a descriptor of its own (any descriptor of a file writes
    back the page cache of its mapped pages); for mappings whose fd was closed after mapping
    (index files). Runs in the flush thread."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # deleted meanwhile (retention): nothing left to make durable
        except OSError as exc:
            raise MappedFileError(f"cannot open for flush ({exc.strerror})", path,
                                  err=exc.errno or 0) from exc
        try:
            sync_fds([(fd, path)])
        finally:
            os.close(fd)


class FlushPlan:
    """What one flush of a :class:`~broker.commitlog.mapped_file_queue.MappedFileQueue` covers:
    its files with dirty data (each with the ``wrote_position`` taken now) and the logical
    offset that is durable once their syncs returned. Taking the plan marks the files as being
    synced (a close waits for the sync); :meth:`done` or :meth:`abort` ends that."""

    __slots__ = ("queue", "target", "files")

    def __init__(self, queue, target: int, files: list[tuple[MappedFile, int]]) -> None:
        self.queue = queue
        self.target = target
        self.files = files
        for mf, _ in files:
            mf.begin_sync()

    def fds(self) -> list[tuple[int, str]]:
        """``(fd, path)`` of each file to sync."""
        return [(mf.sync_fd, mf.path) for mf, _ in self.files]

    def done(self) -> None:
        """The syncs returned: advance the flushed positions."""
        for mf, wrote in self.files:
            mf.end_sync(wrote)
        if self.target > self.queue.flushed_where:
            self.queue.flushed_where = self.target

    def abort(self) -> None:
        """The syncs failed: nothing is known flushed."""
        for mf, _ in self.files:
            mf.end_sync(None)


def plans_fds(plans: list[FlushPlan]) -> list[tuple[int, str]]:
    """Every file descriptor of ``plans``, in order."""
    return [t for p in plans for t in p.fds()]
