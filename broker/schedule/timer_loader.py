"""The bucket loader: brings schedule_log buckets into the wheel ahead of time (QMQ's
``LoadScheduleLogService`` / ``WheelTickManager``).

Cursors (all in ms, single-threaded on the reactor):

* ``loaded_until_ms``: every bucket starting before it is loaded or queued for loading; a
  message copied later into a loaded bucket goes straight into the wheel (the replayer asks
  :meth:`BucketLoader.accepts`), one for a queued bucket is read by that bucket's load.
* ``loading_bucket`` / ``loading_limit``: the bucket being loaded and the segment size when its
  load began. The loader loads records below the limit; the replayer adds records appended
  after it. So a message arriving for the bucket being loaded is neither missed nor added
  twice. Loads run ``chunk`` records per reactor turn (default 20,000), so a huge bucket does
  not hold the wheel up.

The horizon: at time ``now`` every bucket starting at or before ``now + load_advance_ms`` is
loaded (default 30 min ahead of one-hour buckets). The loader arms one ``callLater`` for the
moment the horizon next crosses a bucket start, so it does nothing between buckets and a
``task.Clock`` can leap years. Records already dispatched (in the bucket's dispatch_log) are
skipped; a past bucket whose every record is dispatched is dropped whole.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from rocketmq_emu.broker.schedule.dispatch_log import DispatchLog
from rocketmq_emu.broker.schedule.hash_wheel import HashedWheel, now_ms
from rocketmq_emu.broker.schedule.schedule_log import ScheduleEntry, ScheduleLog

log = logging.getLogger(__name__)

LOAD_CHUNK = 20_000  # records scanned per reactor turn while loading (keeps the wheel on time)


class BucketLoader:
    """Loads schedule_log buckets into the wheel as the horizon advances."""

    def __init__(
        self,
        clock: Any,
        schedule_log: ScheduleLog,
        dispatch_log: DispatchLog,
        wheel: HashedWheel,
        load_advance_ms: int,
        on_bucket_done: Callable[[int], None] | None = None,
        chunk: int = LOAD_CHUNK,
    ) -> None:
        self.clock = clock
        self.slog = schedule_log
        self.dlog = dispatch_log
        self.wheel = wheel
        self.bucket_ms = schedule_log.bucket_ms
        self.load_advance_ms = load_advance_ms
        self.on_bucket_done = on_bucket_done
        self.loaded_until_ms: int | None = None  # None: nothing loaded yet
        self.loading_bucket: int | None = None
        self.loading_limit = 0
        self.loaded_buckets: set[int] = set()
        self.chunk = chunk
        self._queue: deque[int] = deque()
        self._queued: set[int] = set()
        self._iter: Iterator[ScheduleEntry] | None = None
        self._dispatched: set[int] = set()
        self._added = 0
        self._call = None
        self._pump_call = None
        self._running = False

    # -- the replayer's question ---------------------------------------------------------------
    def accepts(self, bucket: int, entry: ScheduleEntry) -> bool:
        """Should a freshly copied record go straight into the wheel? Yes for a loaded bucket
        and for the bucket being loaded past its snapshot; no for a queued bucket (its load
        will read the record from disk)."""
        if bucket == self.loading_bucket:
            return entry.position >= self.loading_limit
        return bucket in self.loaded_buckets

    def horizon_ms(self) -> int:
        """End of the last bucket that should be loaded now."""
        target = now_ms(self.clock) + self.load_advance_ms
        return target - target % self.bucket_ms + self.bucket_ms

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Load everything within the horizon now (including undispatched past buckets)."""
        self._running = True
        self.run()

    def stop(self) -> None:
        """Cancel the next load."""
        self._running = False
        for call in (self._call, self._pump_call):
            if call is not None and call.active():
                call.cancel()
        self._call = self._pump_call = None

    def run(self) -> None:
        """Queue every bucket below the horizon that is not loaded yet, then re-arm."""
        self._call = None
        if not self._running:
            return
        horizon = self.horizon_ms()
        for bucket in sorted(self.slog.segments):
            if bucket >= horizon:
                break
            if bucket in self.loaded_buckets or bucket in self._queued:
                continue
            self._queue.append(bucket)
            self._queued.add(bucket)
        self.loaded_until_ms = horizon
        self._pump()
        # Buckets created later below the horizon are handled by before_append; the horizon
        # crosses the next bucket start at (horizon - load_advance).
        delay = (horizon - self.load_advance_ms) / 1000.0 - self.clock.seconds()
        self._call = self.clock.callLater(max(delay, 0.001), self.run)

    def before_append(self, bucket: int) -> None:
        """Called by the replayer before it appends to ``bucket``: a bucket within the loaded
        horizon that has no segment yet (new, or dropped since) counts as loaded, so the
        append that follows goes straight into the wheel."""
        if (self.loaded_until_ms is not None and bucket < self.loaded_until_ms
                and bucket not in self.loaded_buckets and bucket not in self._queued
                and self.slog.segment(bucket, create=False) is None):
            self.loaded_buckets.add(bucket)

    def _pump(self) -> None:
        """Load queued buckets, at most ``chunk`` records per reactor turn."""
        self._pump_call = None
        budget = self.chunk
        while budget > 0:
            if self._iter is None:
                if not self._queue:
                    return
                bucket = self._queue.popleft()
                seg = self.slog.segment(bucket, create=False)
                if seg is None:  # dropped meanwhile
                    self._queued.discard(bucket)
                    continue
                # Snapshot: records below the limit are ours, later appends the replayer's.
                self.loading_bucket = bucket
                self.loading_limit = seg.size
                self._queued.discard(bucket)
                self._dispatched = self.dlog.segment(bucket).dispatched
                self._iter = seg.scan()
                self._added = 0
            bucket = self.loading_bucket
            limit = self.loading_limit
            dispatched = self._dispatched
            add = self.wheel.add
            finished = True
            for entry in self._iter:
                if entry.position >= limit:
                    break
                if entry.sequence not in dispatched:
                    add(entry.due_ms, (bucket, entry.sequence, entry.position, entry.payload_len))
                    self._added += 1
                budget -= 1
                if budget <= 0:
                    finished = False
                    break
            if finished:
                self._iter = None
                self.loading_bucket = None
                self.loaded_buckets.add(bucket)
                log.debug("loaded bucket %d: %d pending", bucket, self._added)
                if self._added == 0 and self.on_bucket_done is not None:
                    self.on_bucket_done(bucket)
        if self._running and self._pump_call is None:
            self._pump_call = self.clock.callLater(0, self._pump)

    def unload(self, bucket: int) -> None:
        """Forget a dropped bucket."""
        self.loaded_buckets.discard(bucket)
