"""Commitlog flush policies (RocketMQ ``CommitLog.FlushRealTimeService`` and
``GroupCommitService``).

* ASYNC_FLUSH: a reactor timer every ``flush_interval_commit_log`` ms flushes when at least
  ``flush_commit_log_least_pages`` pages are dirty, or everything once
  ``flush_commit_log_thorough_interval`` ms have passed; a put that leaves more than
  ``flush_commit_log_max_dirty_pages`` dirty schedules a flush for the next reactor turn.
* SYNC_FLUSH: each put gets a Deferred; all puts of one reactor turn share one ``msync``
  (group commit) scheduled with ``callLater(0)``; the Deferreds fire with PUT_OK after it, or
  FLUSH_DISK_TIMEOUT if the flush failed. Without a reactor the flush happens inline.

With a running :class:`~broker.commitlog.disk_sync.DiskSyncer` (a real reactor) both policies
sync in the store's flush thread instead of ``msync`` on the reactor: ``flushed_where`` (and a
SYNC_FLUSH put's Deferred, fired on the reactor) advance only after ``fdatasync`` returned, one
flush at a time; puts arriving while a sync runs are grouped into the next one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from twisted.internet import defer

from rocketmq_emu.broker.commitlog.disk_sync import DiskSyncer, sync_fds
from rocketmq_emu.broker.commitlog.mapped_file_queue import MappedFileQueue
from rocketmq_emu.broker.commitlog.results import PutMessageStatus

log = logging.getLogger(__name__)


class FlushService:
    """Flushes one mapped-file queue. ``after_flush()`` runs after every successful flush
    (the store updates the checkpoint's physicMsgTimestamp there)."""

    def __init__(
        self, queue: MappedFileQueue, config, clock, reactor=None,
        after_flush: Callable[[], None] | None = None, syncer: DiskSyncer | None = None,
    ) -> None:
        self.queue = queue
        self.config = config
        self.clock = clock
        self.reactor = reactor
        self.sync = config.sync_flush
        self.after_flush = after_flush
        self._waiters: list[defer.Deferred] = []
        self._group_call = None
        self._soon_call = None
        self._timer = None
        self._last_thorough = clock.seconds()
        self._max_dirty = config.flush_commit_log_max_dirty_pages * 4096
        self.syncer = syncer
        #: Waiters covered by the sync running in the flush thread (None: no sync running).
        self._in_flight: list[defer.Deferred] | None = None
        self.running = False
        self.flush_count = 0
        #: False when :meth:`on_append` has nothing to do (ASYNC_FLUSH without a reactor).
        self.active = self.sync or reactor is not None

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Arm the periodic timer (ASYNC_FLUSH with a reactor)."""
        self.running = True
        if self.reactor is not None and not self.sync:
            self._arm()

    def stop(self) -> None:
        """Cancel timers, flush everything and release waiting puts."""
        self.running = False
        for call in (self._timer, self._group_call, self._soon_call):
            if call is not None and call.active():
                call.cancel()
        self._timer = self._group_call = self._soon_call = None
        # The store stops the flush thread first (its last sync has returned); this flush is
        # inline either way, and puts waiting on a sync whose result has not reached the
        # reactor fire here.
        in_flight, self._in_flight = self._in_flight or [], None
        waiters, self._waiters = in_flight + self._waiters, []
        ok = self.flush(0)
        status = PutMessageStatus.PUT_OK if ok else PutMessageStatus.FLUSH_DISK_TIMEOUT
        for d in waiters:
            if not d.called:
                d.callback(status)

    def _arm(self) -> None:
        self._timer = self.reactor.callLater(
            self.config.flush_interval_commit_log / 1000.0, self._periodic
        )

    # --- policies -----------------------------------------------------------------------------
    def on_append(self) -> defer.Deferred | None:
        """Called after each append; returns the Deferred a SYNC_FLUSH put waits on, or None
        under ASYNC_FLUSH (already durable enough)."""
        if self.sync:
            if self.reactor is None:
                ok = self.flush(0)
                return defer.succeed(
                    PutMessageStatus.PUT_OK if ok else PutMessageStatus.FLUSH_DISK_TIMEOUT
                )
            d: defer.Deferred = defer.Deferred()
            self._waiters.append(d)
            if self._group_call is None:
                self._group_call = self.reactor.callLater(0, self._group_commit)
            return d
        if self.reactor is not None and self._soon_call is None:
            # queue.get_max_offset() written out (three property hops per put otherwise).
            q = self.queue
            files = q.files
            end = files[-1].file_from_offset + files[-1].wrote_position if files else 0
            if end - q.flushed_where >= self._max_dirty:
                self._soon_call = self.reactor.callLater(0, self._flush_soon)
        return None

    def _threaded(self) -> bool:
        return self.syncer is not None and self.syncer.running

    def _flush_soon(self) -> None:
        self._soon_call = None
        if self._threaded():
            self._flush_in_thread(0)
        else:
            self.flush(0)

    def _group_commit(self) -> None:
        self._group_call = None
        if self._threaded():
            if self._in_flight is None:  # else the waiters go with the next sync
                self._flush_in_thread(0)
            return
        waiters, self._waiters = self._waiters, []
        ok = self.flush(0)
        status = PutMessageStatus.PUT_OK if ok else PutMessageStatus.FLUSH_DISK_TIMEOUT
        for d in waiters:
            d.callback(status)

    def _periodic(self) -> None:
        self._timer = None
        try:
            now = self.clock.seconds()
            least = self.config.flush_commit_log_least_pages
            if (now - self._last_thorough) * 1000 >= self.config.flush_commit_log_thorough_interval:
                self._last_thorough = now
                least = 0
            if self._threaded():
                self._flush_in_thread(least)
            else:
                self.flush(least)
        finally:
            if self.running:
                self._arm()

    def flush(self, least_pages: int = 0) -> bool:
        """Flush now; False (logged, naming the file) if the flush failed."""
        try:
            if self.queue.flush(least_pages):
                self.flush_count += 1
        except OSError as exc:
            log.error("commitlog flush failed: %s", exc)
            return False
        if self.after_flush is not None:
            self.after_flush()
        return True

    def _flush_in_thread(self, least_pages: int) -> None:
        """Sync the dirty files in the flush thread (nothing if a sync is already running:
        ``flushed_where`` and the waiters move when it returns)."""
        if self._in_flight is not None:
            return
        try:
            plan = self.queue.flush_plan(least_pages)
        except OSError as exc:
            log.error("commitlog flush failed: %s", exc)
            return
        waiters, self._waiters = self._waiters, []
        if plan is None:  # everything written is already durable
            self._finish(waiters, PutMessageStatus.PUT_OK)
            return
        self._in_flight = waiters
        d = self.syncer.submit(sync_fds, plan.fds())
        d.addCallbacks(self._synced, self._sync_failed, callbackArgs=(plan, waiters),
                       errbackArgs=(plan, waiters))

    def _synced(self, _result, plan, waiters) -> None:
        plan.done()
        if plan.files:
            self.flush_count += 1
        if self._in_flight is waiters:
            self._in_flight = None
        self._finish(waiters, PutMessageStatus.PUT_OK)
        if self._waiters and self._group_call is None and self._threaded():
            self._flush_in_thread(0)  # puts that arrived during the sync

    def _sync_failed(self, failure, plan, waiters) -> None:
        plan.abort()
        log.error("commitlog flush failed: %s", failure.getErrorMessage())
        if self._in_flight is waiters:
            self._in_flight = None
        for d in waiters:
            if not d.called:
                d.callback(PutMessageStatus.FLUSH_DISK_TIMEOUT)
        if self._waiters and self._group_call is None and self._threaded():
            self._flush_in_thread(0)

    def _finish(self, waiters: list[defer.Deferred], status: PutMessageStatus) -> None:
        if self.after_flush is not None:
            self.after_flush()
        for d in waiters:
            if not d.called:  # stop() may have released them already
                d.callback(status)
