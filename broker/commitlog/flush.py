"""Commitlog flush policies (RocketMQ ``CommitLog.FlushRealTimeService`` and
``GroupCommitService``).

* ASYNC_FLUSH: a reactor timer every ``flush_interval_commit_log`` ms flushes when at least
  ``flush_commit_log_least_pages`` pages are dirty, or everything once
  ``flush_commit_log_thorough_interval`` ms have passed; a put that leaves more than
  ``flush_commit_log_max_dirty_pages`` dirty schedules a flush for the next reactor turn.
* SYNC_FLUSH: each put gets a Deferred; all puts of one reactor turn share one ``msync``
  (group commit) scheduled with ``callLater(0)``; the Deferreds fire with PUT_OK after it, or
  FLUSH_DISK_TIMEOUT if the flush failed. Without a reactor the flush happens inline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from twisted.internet import defer

from broker.commitlog.mapped_file_queue import MappedFileQueue
from broker.commitlog.results import PutMessageStatus

log = logging.getLogger(__name__)


class FlushService:
    """Flushes one mapped-file queue. ``after_flush()`` runs after every successful flush
    (the store updates the checkpoint's physicMsgTimestamp there)."""

    def __init__(
        self, queue: MappedFileQueue, config, clock, reactor=None,
        after_flush: Callable[[], None] | None = None,
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
        self._group_commit()

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

    def _flush_soon(self) -> None:
        self._soon_call = None
        self.flush(0)

    def _group_commit(self) -> None:
        self._group_call = None
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
