"""The bucket loader: brings schedule_log buckets into the wheel ahead of time (QMQ's
``LoadScheduleLogService`` / ``WheelTickManager``).

Cursors (all in ms, single-threaded on the reactor):

* ``loaded_until_ms``: every bucket starting before it has been loaded into the wheel; a
  message copied later into such a bucket goes straight into the wheel (the replayer asks
  :meth:`BucketLoader.accepts`).
* ``loading_bucket`` / ``loading_limit``: the bucket being loaded and the segment size when its
  load began. The loader loads records below the limit; the replayer adds records appended
  after it. So a message arriving for the bucket being loaded is neither missed nor added
  twice, even when a load is spread over several reactor turns.

The horizon: at time ``now`` every bucket starting at or before ``now + load_advance_ms`` is
loaded (default 30 min ahead of one-hour buckets). The loader arms one ``callLater`` for the
moment the horizon next crosses a bucket start, so it does nothing between buckets and a
``task.Clock`` can leap years. Records already dispatched (in the bucket's dispatch_log) are
skipped; a past bucket whose every record is dispatched is dropped whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from broker.schedule.dispatch_log import DispatchLog
from broker.schedule.hash_wheel import HashedWheel, now_ms
from broker.schedule.schedule_log import ScheduleEntry, ScheduleLog

log = logging.getLogger(__name__)


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
        self._call = None
        self._running = False

    # -- the replayer's question ---------------------------------------------------------------
    def accepts(self, bucket: int, entry: ScheduleEntry) -> bool:
        """Should a freshly copied record go straight into the wheel?"""
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
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def run(self) -> None:
        """Load every bucket below the horizon that is not loaded yet, then re-arm."""
        self._call = None
        if not self._running:
            return
        horizon = self.horizon_ms()
        for bucket in sorted(self.slog.segments):
            if bucket >= horizon:
                break
            if bucket in self.loaded_buckets:
                continue
            self._load(bucket)
        self.loaded_until_ms = horizon
        # Buckets created later below the horizon are handled by before_append.
        next_start = horizon  # the horizon crosses the next bucket start at next_start - advance
        delay = (next_start - self.load_advance_ms) / 1000.0 - self.clock.seconds()
        self._call = self.clock.callLater(max(delay, 0.001), self.run)

    def before_append(self, bucket: int) -> None:
        """Called by the replayer before it appends to ``bucket``: a bucket already within the
        loaded horizon but not loaded (created or dropped since) is loaded first, so the
        append that follows goes straight into the wheel."""
        if self.loaded_until_ms is not None and bucket < self.loaded_until_ms and (
            bucket not in self.loaded_buckets
        ):
            self._load(bucket)

    def _load(self, bucket: int) -> None:
        seg = self.slog.segment(bucket, create=False)
        if seg is None:
            self.loaded_buckets.add(bucket)  # nothing on disk yet: later appends go to the wheel
            return
        self.loading_bucket = bucket
        self.loading_limit = seg.size
        dispatched = self.dlog.segment(bucket).dispatched
        added = 0
        for entry in seg.scan():
            if entry.position >= self.loading_limit:
                break
            if entry.sequence in dispatched:
                continue
            self.wheel.add(entry.due_ms,
                           (bucket, entry.sequence, entry.position, entry.payload_len))
            added += 1
        self.loaded_buckets.add(bucket)
        self.loading_bucket = None
        log.debug("loaded bucket %d: %d pending of %d", bucket, added, seg.count)
        if added == 0 and self.on_bucket_done is not None:
            self.on_bucket_done(bucket)

    def unload(self, bucket: int) -> None:
        """Forget a dropped bucket."""
        self.loaded_buckets.discard(bucket)
