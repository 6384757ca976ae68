"""Arbitrary-time delivery (QMQ-style schedule_log + hashed wheel over RocketMQ 5 timer messages).

Flow:

1. The send processor rewrites a timer message to ``rmq_sys_wheel_timer`` queue 0
   (:func:`rocketmq_emu.broker.schedule.timer_message.transform_timer_message`) and acknowledges it once
   it is in the commitlog.
2. The **replayer** follows that queue from a persisted cursor (woken by the store's arrival
   listener) and copies each message, whole, into the schedule_log segment of its due bucket.
   If the bucket is already loaded (or being loaded, past the load snapshot) the record goes
   straight into the wheel (:class:`~broker.schedule.timer_loader.BucketLoader`).
3. The **loader** brings buckets into the :class:`~broker.schedule.hash_wheel.HashedWheel`
   ahead of time.
4. When an entry fires, its payload is read back from the schedule_log, converted
   (:func:`~broker.schedule.timer_message.convert_timer_message`) and put on its real
   topic/queue; then its sequence is appended to the bucket's dispatch_log. A failed put is
   retried ``retry_delay_ms`` later, never skipped.
5. A bucket in the past whose records are all dispatched is dropped whole (both files).

Recall (RECALL_MESSAGE): the delete marker is a timer message like any other, copied into the
schedule_log bucket and wheel slot of the message it deletes (same due ms). When a batch fires,
its markers are taken first and every message one of them names is skipped (R5
``TimerMessageStore.dequeue`` / ``DequeueGetService``); marker and skipped message are both
logged in the dispatch_log, so a restart does not bring the message back. A batch waits while
the replayer is behind or its bucket is still loading, so a marker is never behind its message.

Recovery (:meth:`TimerService.load`): the schedule_log is scanned and verified; the replay
cursor is ``max(checkpoint, highest source offset in the schedule_log + 1)`` so nothing is
copied twice even if the checkpoint lagged; the loader re-adds only records missing from
their bucket's dispatch_log. A message put but not yet logged as dispatched at the crash is
delivered again (at-least-once for in-flight messages only).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from twisted.internet.task import LoopingCall

from rocketmq_emu.broker.commitlog.record import RecordError, decode_record
from rocketmq_emu.broker.message import (
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    TIMER_TOPIC,
)
from rocketmq_emu.broker.schedule.checkpoint import TimerCheckpoint
from rocketmq_emu.broker.schedule.delay_level_service import put_ok
from rocketmq_emu.broker.schedule.dispatch_log import DispatchLog
from rocketmq_emu.broker.schedule.hash_wheel import HashedWheel, now_ms
from rocketmq_emu.broker.schedule.schedule_log import ScheduleLog
from rocketmq_emu.broker.schedule.timer_loader import BucketLoader
from rocketmq_emu.broker.schedule.timer_message import (
    DEFAULT_TIMER_MAX_DELAY_SEC,
    convert_timer_message,
    delete_key,
    timer_out_ms,
)

log = logging.getLogger(__name__)

REPLAY_BATCH = 2048


@dataclass
class TimerConfig:
    """Timer settings (broker.conf names in comments)."""

    bucket_ms: int = 3_600_000  # segment.scale.minute (QMQ) as ms
    load_advance_ms: int = 30 * 60_000  # load.in.advance.min (QMQ)
    tick_ms: int = 10  # wheel tick
    max_delay_sec: int = DEFAULT_TIMER_MAX_DELAY_SEC  # timerMaxDelaySec
    checkpoint_interval_ms: int = 1000  # timerFlushIntervalMs
    retry_delay_ms: int = 100  # re-put after a failed put
    fsync: bool = False  # fsync schedule/dispatch logs at each checkpoint
    load_chunk: int = 20_000  # records loaded into the wheel per reactor turn


class TimerService:
    """Replayer + loader + wheel + dispatcher for ``rmq_sys_wheel_timer``."""

    def __init__(self, store: Any, clock: Any, root_dir: str, config: TimerConfig | None = None):
        self.store = store
        self.clock = clock
        self.config = config or TimerConfig()
        self.root = os.path.join(root_dir, "timer")
        os.makedirs(self.root, exist_ok=True)
        self.checkpoint_path = os.path.join(self.root, "schedule_checkpoint")
        self.slog = ScheduleLog(self.root, self.config.bucket_ms)
        self.dlog = DispatchLog(self.root)
        self.wheel = HashedWheel(clock, self._on_fire, self.config.tick_ms)
        self.loader = BucketLoader(clock, self.slog, self.dlog, self.wheel,
                                   self.config.load_advance_ms, self._maybe_drop,
                                   self.config.load_chunk)
        self.replay_offset = 0
        self.dropped_below_ms = 0
        self._replay_call = None
        self._checkpoint_loop: LoopingCall | None = None
        self._running = False
        self._saved_state: tuple[int, int] | None = None
        self.delivered = 0
        #: Messages removed by a delete marker (RECALL_MESSAGE) when they fell due.
        self.deleted = 0
        self._held: list[tuple[int, tuple[int, int, int, int]]] = []
        self._release_call: Any = None

    # -- lifecycle ---------------------------------------------------------------------------
    def load(self) -> bool:
        """Recover the schedule_log and the replay cursor."""
        missing = not os.path.exists(self.checkpoint_path)
        cp = TimerCheckpoint.load(self.checkpoint_path)
        if missing:
            # No file reads as the zero cursors: nothing to write until they move, so a store
            # that sees no timer message writes no checkpoint (nor loads crc32c) while idle.
            self._saved_state = (cp.replay_offset, cp.dropped_below_ms)
        self.slog.load()
        self.dropped_below_ms = cp.dropped_below_ms
        self.replay_offset = max(cp.replay_offset, self.slog.max_source_offset() + 1)
        log.info("timer: %d segments, replay from offset %d (checkpoint %d)",
                 len(self.slog.segments), self.replay_offset, cp.replay_offset)
        return True

    def start(self) -> None:
        """Load due buckets, start the wheel, catch up with the timer queue."""
        self._running = True
        self.loader.start()
        self.wheel.start()
        loop = LoopingCall(self._periodic)
        loop.clock = self.clock
        loop.start(self.config.checkpoint_interval_ms / 1000.0, now=False)
        self._checkpoint_loop = loop
        self.replay()

    def shutdown(self) -> None:
        """Stop timers and write the checkpoint; pending wheel entries stay on disk."""
        self._running = False
        self.loader.stop()
        self.wheel.stop()
        if self._replay_call is not None and self._replay_call.active():
            self._replay_call.cancel()
        self._replay_call = None
        if self._release_call is not None and self._release_call.active():
            self._release_call.cancel()
        self._release_call = None
        self._held = []  # still on disk, not dispatched: loaded again at the next start
        if self._checkpoint_loop is not None and self._checkpoint_loop.running:
            self._checkpoint_loop.stop()
        self.save_checkpoint(force=True)
        self.slog.close()
        self.dlog.close()

    def _periodic(self) -> None:
        self.sweep()
        self.save_checkpoint()

    def sweep(self) -> None:
        """Drop loaded buckets that have ended and are fully dispatched."""
        now = now_ms(self.clock)
        for bucket in sorted(self.loader.loaded_buckets):
            if bucket + self.slog.bucket_ms <= now:
                self._maybe_drop(bucket)

    def save_checkpoint(self, force: bool = False) -> None:
        """Persist the replay cursor (and fsync the logs if configured) when it moved."""
        state = (self.replay_offset, self.dropped_below_ms)
        if not force and state == self._saved_state:
            return
        self._saved_state = state
        if self.config.fsync:
            self.slog.flush()
            self.dlog.flush()
        TimerCheckpoint(self.replay_offset, self.loader.loaded_until_ms or 0,
                        self.dropped_below_ms).save(self.checkpoint_path, self.config.fsync)

    @property
    def pending(self) -> int:
        """Entries currently in the wheel."""
        return len(self.wheel)

    # -- replayer ----------------------------------------------------------------------------
    def on_arrival(self, queue_id: int, queue_offset: int | None = None,
                   record: Any = None) -> None:
        """A message arrived on the timer topic. Caught up and given the in-memory record, copy
        it at once (no re-read of the properties); otherwise replay from the consume queue on
        the next reactor turn (coalesced)."""
        if not self._running:
            return
        if (record is not None and queue_offset == self.replay_offset
                and self._replay_call is None):
            try:
                raw = self.store.read_raw(record.physical_offset, record.total_size)
            except (ValueError, OSError) as exc:
                log.error("timer: cannot read new message at %d (%s); replaying",
                          record.physical_offset, exc)
            else:
                self._copy(raw, timer_out_ms(record), record.physical_offset)
                return
        if self._replay_call is None:
            self._replay_call = self.clock.callLater(0, self.replay)

    def replay(self) -> None:
        """Copy new timer-topic messages into the schedule_log (and the wheel when loaded)."""
        self._replay_call = None
        if not self._running:
            return
        store = self.store
        min_offset = store.get_min_offset_in_queue(TIMER_TOPIC, 0)
        if self.replay_offset < min_offset:
            log.error("timer: replay offset %d below queue min %d; messages in between lost",
                      self.replay_offset, min_offset)
            self.replay_offset = min_offset
        units = store.get_consume_queue_units(TIMER_TOPIC, 0, self.replay_offset, REPLAY_BATCH)
        for commitlog_offset, size, _tags in units:
            try:
                raw = store.read_raw(commitlog_offset, size)
                due = timer_out_ms(decode_record(raw, with_body=False))
            except (RecordError, ValueError, OSError) as exc:  # CommitLogError too
                log.error("timer: unreadable message at commitlog offset %d (%s); skipped",
                          commitlog_offset, exc)
                self.replay_offset += 1
                continue
            self._copy(raw, due, commitlog_offset)
        if len(units) == REPLAY_BATCH:
            self._replay_call = self.clock.callLater(0, self.replay)

    def _copy(self, raw: bytes, due: int | None, commitlog_offset: int) -> None:
        """Append the message at ``replay_offset`` to its bucket; into the wheel if loaded."""
        if due is None:
            log.warning("timer: message at %d has no TIMER_OUT_MS; delivering now",
                        commitlog_offset)
            due = now_ms(self.clock)
        bucket = self.slog.bucket_of(due)
        self.loader.before_append(bucket)
        bucket, entry = self.slog.append(due, self.replay_offset, bytes(raw))
        if self.loader.accepts(bucket, entry):
            self.wheel.add(due, (bucket, entry.sequence, entry.position, entry.payload_len))
        self.replay_offset += 1

    # -- dispatcher ----------------------------------------------------------------------------
    def _on_fire(self, batch: list[tuple[int, tuple[int, int, int, int]]]) -> None:
        # Wheel items are (bucket, sequence, position, payload_len): plain int tuples, which
        # the garbage collector stops tracking, so a big wheel does not lengthen GC pauses.
        batch = self._hold(batch)
        if not batch:
            return
        dispatched: dict[int, list[int]] = defaultdict(list)
        now = now_ms(self.clock)
        retry: list[tuple[int, tuple[int, int, int, int]]] = []
        # TimerMessageStore.dequeue: a slot's delete markers are read first; a message one of
        # them names is skipped. Both are then logged as dispatched (a restart keeps it so).
        deletes: set[str] = set()
        normal: list[tuple[int, tuple[int, int, int, int], Any]] = []
        for due, item in batch:
            bucket, sequence, position, length = item
            try:
                raw = self.slog.read_at(bucket, position, length)
                record = decode_record(raw)
            except (RecordError, KeyError, OSError) as exc:
                log.error("timer: bucket %d seq %d unreadable (%s); dropped", bucket,
                          sequence, exc)
                dispatched[bucket].append(sequence)
                continue
            props = record.properties
            if PROPERTY_TIMER_DEL_UNIQKEY in props:
                deletes.add(props[PROPERTY_TIMER_DEL_UNIQKEY])
                dispatched[bucket].append(sequence)
            else:
                normal.append((due, item, record))
        for due, item, record in normal:
            bucket, sequence = item[0], item[1]
            if deletes:
                props = record.properties
                key = delete_key(props.get(PROPERTY_REAL_TOPIC) or record.topic,
                                 props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))
                if key in deletes:
                    dispatched[bucket].append(sequence)
                    self.deleted += 1
                    continue
            message = convert_timer_message(record, record.store_timestamp, now)
            result = self.store.put_message(message)
            if put_ok(result):
                dispatched[bucket].append(sequence)
                self.delivered += 1
            else:
                retry.append((due, item))
        for bucket, seqs in dispatched.items():
            self.dlog.segment(bucket).append_many(seqs)
            self._maybe_drop(bucket)
        if retry:
            log.warning("timer: %d puts failed; retrying in %d ms", len(retry),
                        self.config.retry_delay_ms)
            at = now + self.config.retry_delay_ms
            for _due, item in retry:
                self.wheel.add(at, item)

    def _hold(self, batch: list[tuple[int, tuple[int, int, int, int]]]
              ) -> list[tuple[int, tuple[int, int, int, int]]]:
        """What of ``batch`` may be dispatched now; the rest waits in :attr:`_held`.

        R5 dequeues a slot only once its enqueue has passed it. Here a due message waits while
        the replayer is behind (a delete marker may still be in the timer queue) or while its
        bucket is being loaded (a marker may lie further on in the file)."""
        if self._held:
            batch = self._held + batch
            self._held = []
        if self._replay_call is None and self.loader.loading_bucket is None:
            return batch
        if self._replay_call is not None:
            self._held = batch
            out: list[tuple[int, tuple[int, int, int, int]]] = []
        else:
            loading = self.loader.loading_bucket
            out = [e for e in batch if e[1][0] != loading]
            self._held = [e for e in batch if e[1][0] == loading]
        if self._held and self._release_call is None:
            self._release_call = self.clock.callLater(self.config.tick_ms / 1000.0,
                                                      self._release_held)
        return out

    def _release_held(self) -> None:
        """Dispatch the held entries once the replayer and the loader allow (see
        :meth:`_hold`)."""
        self._release_call = None
        if self._running and self._held:
            self._on_fire([])

    def _maybe_drop(self, bucket: int) -> None:
        """Drop a past bucket whose records are all dispatched."""
        if bucket + self.slog.bucket_ms > now_ms(self.clock):
            return
        seg = self.slog.segment(bucket, create=False)
        if seg is None:
            return
        dseg = self.dlog.segment(bucket)
        if len(dseg.dispatched) < seg.count:
            return
        # Persist the cursor first: the dropped segment no longer vouches for its offsets.
        self.dropped_below_ms = max(self.dropped_below_ms, bucket + self.slog.bucket_ms)
        self.save_checkpoint()
        self.slog.drop(bucket)
        self.dlog.drop(bucket)
        self.loader.unload(bucket)
