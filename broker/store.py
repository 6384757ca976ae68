"""The message store facade (RocketMQ ``store/DefaultMessageStore.java``): commitlog, consume
queues, index, checkpoint, flush and retention behind the API the processors use.

Usage::

    store = MessageStore(MessageStoreConfig(...), clock, reactor=None)
    store.load() -> bool      # recovery; False (and ``store.load_error``) on corruption
    store.start()             # abort file, flush/retention timers (with a reactor)
    r = store.put_message(record)          # PutMessageResult (status, append, flushed)
    r = store.put_messages(records)        # one batch of one (topic, queueId)
    g = store.get_message(group, topic, queue_id, offset, max_msg_nums, tags_filter=None)
    store.shutdown()

``put_message`` is the one write path of a single message: ``CommitLog.append`` writes the
record (``commitlog/commitlog.py``, bytes laid out as ``commitlog/record.py`` declares), then
``StoreDispatch._dispatch`` hands it to its consume queue (``ConsumeQueue.put``), the index
queue and the arrival listeners.

Dispatch ("reput"): each appended record is written into its consume queue synchronously (a
pull right after the put sees it); index entries are queued and written on the next reactor
turn, on the consume-queue flush timer, before a query and at shutdown (RocketMQ builds both in
its ReputMessageService thread, i.e. asynchronously too). PREPARED / ROLLBACK transaction
records get no consume-queue unit; ROLLBACK ones are not indexed (protocol.md §4.4).
"""

from __future__ import annotations

import logging
import os
from operator import attrgetter

from twisted.python.failure import Failure

from rocketmq_emu.broker.commitlog.checkpoint import StoreCheckpoint
from rocketmq_emu.broker.commitlog.commitlog import CommitLog
from rocketmq_emu.broker.commitlog.disk_sync import DiskSyncer, plans_fds, sync_fds, sync_paths
from rocketmq_emu.broker.commitlog.flush import FlushService
from rocketmq_emu.broker.commitlog.mapped_file import MappedFileError
from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.commitlog.recovery import RecoveryError, recover
from rocketmq_emu.broker.commitlog.results import (
    AppendMessageResult,
    AppendMessageStatus,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)
from rocketmq_emu.broker.commitlog.retention import (
    CLEAN_INITIAL_DELAY_MS,
    DiskUsage,
    StoreRetention,
    disk_used_ratio,
)
from rocketmq_emu.broker.commitlog.store_dispatch import StoreDispatch
from rocketmq_emu.broker.commitlog.store_lock import StoreLock, StoreLockedError
from rocketmq_emu.broker.commitlog.store_reader import StoreReader
from rocketmq_emu.broker.commitlog.warm import CommitLogWarmer
from rocketmq_emu.broker.config_files import open_config_managers
from rocketmq_emu.broker.consumequeue.store import ConsumeQueueStore
from rocketmq_emu.broker.delay_levels import DelayLevels
from rocketmq_emu.broker.index.service import IndexService
from rocketmq_emu.broker.store_config import MessageStoreConfig

log = logging.getLogger(__name__)

__all__ = [
    "AppendMessageResult", "GetMessageResult", "GetMessageStatus", "MessageStore",
    "MessageStoreConfig", "PutMessageResult", "PutMessageStatus",
]

_APPEND_TO_PUT = {
    AppendMessageStatus.MESSAGE_SIZE_EXCEEDED: PutMessageStatus.MESSAGE_ILLEGAL,
    AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED: PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
    AppendMessageStatus.UNKNOWN_ERROR: PutMessageStatus.UNKNOWN_ERROR,
    AppendMessageStatus.END_OF_FILE: PutMessageStatus.UNKNOWN_ERROR,
}
_TX_MASK = 0xC
_PREPARED = 0x4
_ROLLBACK = 0xC
_INDEX_DRAIN_LIMIT = 50_000
#: How often the commitlog's pre-touched window is topped up (ms).
_WARM_INTERVAL_MS = 50
_tuple_new = tuple.__new__
_body_of = attrgetter("body")
_APPEND_OK = AppendMessageStatus.PUT_OK
_PUT_OK = PutMessageStatus.PUT_OK


class MessageStore(StoreReader, StoreDispatch, StoreRetention):
    """The store. ``clock`` is an ``IReactorTime`` (store timestamps are
    ``int(clock.seconds() * 1000)``); ``reactor`` (optional) runs the flush and retention
    timers and SYNC_FLUSH group commits. ``disk_usage(path)`` gives the used ratio of the
    partition holding ``path`` (default :func:`~broker.commitlog.retention.disk_used_ratio`;
    tests pass a fake disk). Read methods live in :class:`StoreReader`, dispatch in
    :class:`StoreDispatch`, retention in :class:`StoreRetention`."""

    def __init__(self, config: MessageStoreConfig, clock, reactor=None,
                 disk_usage: DiskUsage | None = None) -> None:
        self.config = config
        self.disk_usage: DiskUsage = disk_usage or disk_used_ratio
        #: ``RunningFlags``: the disk-full bit (set and cleared by the retention check) and
        #: the index-file-error bit (an index file could not be created); while either is set
        #: ``writeable`` is False and puts answer SERVICE_NOT_AVAILABLE.
        self.disk_full = False
        self.index_error = False
        self.writeable = True
        #: ``CleanConsumeQueueService.lastPhysicalMinOffset``.
        self._last_physical_min_offset = 0
        self.clock = clock
        self.reactor = reactor
        os.makedirs(config.store_path_root_dir, exist_ok=True)
        # DefaultMessageStore ensureDirOK(storePathLogic): the disk check reads its partition,
        # and a missing directory would read as -1, "space to delete", at every check.
        os.makedirs(config.consume_queue_dir, exist_ok=True)
        self.lock = StoreLock(config.store_path_root_dir)
        self.commitlog = CommitLog(
            config.commitlog_dir, config.mapped_file_size_commitlog, clock,
            warm=config.warm_mapped_file_enable,
        )
        self.consume_queues = ConsumeQueueStore(
            config.consume_queue_dir, config.mapped_file_size_consume_queue, clock=clock
        )
        self.index: IndexService | None = (
            IndexService(config.index_dir, clock, config.max_hash_slot_num,
                         config.max_index_num, config.max_msgs_num_batch)
            if config.message_index_enable else None
        )
        self.checkpoint = StoreCheckpoint(config.checkpoint_path)
        #: The flush thread (FlushRealTimeService's own thread): periodic syncs and config
        #: writes run there with a real reactor; inline otherwise (see disk_sync).
        self.disk_sync = DiskSyncer(reactor)
        self.warmer = CommitLogWarmer(self.commitlog.queue, reactor)
        self._logics_syncing = False
        self.flush_service = FlushService(
            self.commitlog.queue, config, clock, reactor, after_flush=self._after_commitlog_flush,
            syncer=self.disk_sync,
        )
        #: The ``messageDelayLevel`` table: a SCHEDULE_TOPIC_XXXX record's tagsCode is its
        #: deliver time (StoreDispatch.tags_code_of).
        self.delay_levels = DelayLevels.parse(config.message_delay_level)
        managers = open_config_managers(config.store_path_root_dir, clock)
        self.topic_config = managers["topic_config"]
        self.consumer_offsets = managers["consumer_offsets"]
        self.delay_offsets = managers["delay_offsets"]
        self.subscription_groups = managers["subscription_groups"]
        self._listeners: list = []  # (fn, topics or None): StoreDispatch.add_arrival_listener
        #: Queued index entries are written inline once this many wait (no reactor turn came).
        self.index_drain_limit = _INDEX_DRAIN_LIMIT
        self._cq_cache: dict[tuple[str, int], object] = {}
        self._tag_codes = self.commitlog.encoder.tag_codes
        self._index_pending: list[tuple] = []
        self._index_call = None
        self._timers: list = []
        self.corrupt_offsets: set[int] = set()
        self.load_error: Exception | None = None
        self.last_dispatched_timestamp = 0
        self._max_body = config.max_message_size
        #: Commitlog offset from which dispatch must be retried (a file could not be written).
        self._dispatch_behind: int | None = None
        self.loaded = False
        self.running = False
        self.shutdown_done = False

    # --- lifecycle ----------------------------------------------------------------------------
    def load(self) -> bool:
        """Map files and recover (abnormally if the ``abort`` file is there). False with
        ``load_error`` set (naming file and offset) when the store is unusable; the caller
        reports it (``rmq-emu`` in one line)."""
        cfg = self.config
        try:
            self.lock.acquire()
        except StoreLockedError as exc:
            log.debug("store cannot load: %s", exc)  # the caller reports load_error
            self.load_error = exc
            return False
        abnormal = os.path.exists(cfg.abort_path)
        try:
            self.checkpoint.load()
            self.commitlog.load()
            self.consume_queues.load()
            if self.index is not None:
                self.index.load()
            min_ts = (self.checkpoint.min_timestamp_index if self.index is not None
                      else self.checkpoint.min_timestamp)
            res = recover(self.commitlog, abnormal=abnormal, min_timestamp=min_ts,
                          check_crc=cfg.check_crc_on_recover)
            self.corrupt_offsets = set(res.corrupt_offsets)
            self.consume_queues.recover()
            self.consume_queues.truncate_dirty(res.end_offset)
            if self.index is not None:
                self.index.truncate(res.end_offset)
            self._recover_queue_table()
            self._reput(self._reput_from(abnormal, res.scan_from))
            # DefaultMessageStore.recover: queues must not point below the commitlog's first
            # file after retention deleted the files their first units refer to.
            self.consume_queues.correct_min_offset(self.commitlog.min_offset)
        except (RecoveryError, MappedFileError) as exc:
            log.debug("store cannot load: %s", exc)  # the caller reports load_error
            self.load_error = exc
            return False
        self.loaded = True
        self.running = True
        log.info("store loaded (%s): commitlog %d..%d", "after a crash" if abnormal else "clean",
                 self.commitlog.min_offset, self.commitlog.max_offset)
        return True

    def _recover_queue_table(self) -> None:
        table = self.commitlog.topic_queue_table
        table.clear()
        for topic, by_id in self.consume_queues.max_offsets().items():
            for qid, max_offset in by_id.items():
                table[(topic, qid)] = max_offset

    def _reput_from(self, abnormal: bool, scan_from: int) -> int:
        """Where re-dispatch starts.

        No consume queue at all (e.g. the directory was deleted): the whole commitlog. After a
        clean shutdown: the end of the furthest queue (``DefaultMessageStore`` reput offset:
        dispatch is synchronous, so every queue is complete up to there). After a crash: the
        checkpoint's safe point from recovery (everything older had its units flushed), or
        later if every queue already points beyond it. Never later than the index's end, nor,
        after a crash with nothing indexed yet, than that safe point: entries still queued
        for the index died with the process, though their queues' units did not.
        """
        ends = [e for e in (cq.max_physic_offset for cq in self.consume_queues) if e >= 0]
        if not ends:
            start = self.commitlog.min_offset
        elif abnormal:
            start = max(scan_from, min(ends))
        else:
            start = max(ends)
        if self.index is not None:
            last = self.index.last_indexed_phy_offset
            if last >= 0:
                start = min(start, last)  # a record boundary
            elif abnormal:
                start = min(start, scan_from)
        return max(start, self.commitlog.min_offset)

    def _reput(self, start: int) -> int:
        """Dispatch every record from ``start`` (idempotent: queues and index skip what they
        already hold). Returns the number of records dispatched."""
        n = 0
        end = self.commitlog.max_offset
        if start >= end:
            return 0
        table = self.commitlog.topic_queue_table
        for rec in self.commitlog.iter_records(start):
            if rec.physical_offset in self.corrupt_offsets:
                continue
            if rec.sys_flag & _TX_MASK not in (_PREPARED, _ROLLBACK):
                key = (rec.topic, rec.queue_id)
                if table.get(key, 0) <= rec.queue_offset:
                    table[key] = rec.queue_offset + 1
            self._dispatch(rec)
            n += 1
        self._drain_index()
        log.info("re-dispatched %d records from commitlog offset %d", n, start)
        return n

    def start(self) -> None:
        """Create the ``abort`` marker, then arm flush and retention timers (with a reactor)."""
        if not self.loaded and not self.load():
            raise RuntimeError(f"store did not load: {self.load_error}")
        with open(self.config.abort_path, "wb"):
            pass
        if not self.commitlog.queue.files:
            # Preallocated before the first put, but not pre-touched: a broker that receives no
            # message keeps no resident window (idle RSS); the warmer touches ahead of the
            # writer from its first put on (broker/commitlog/warm.py).
            self.commitlog.queue.create_file(0, warm=False)
        self.disk_sync.start()
        self.warmer.start()
        if self.disk_sync.running:
            for m in (self.topic_config, self.consumer_offsets, self.delay_offsets,
                      self.subscription_groups):
                m.writer = self.disk_sync.submit
        self.flush_service.start()
        self.running = True
        if self.reactor is not None:
            self._every(self.config.flush_interval_consume_queue,
                        self._flush_logics_in_thread if self.disk_sync.running
                        else self._flush_logics)
            self._every(self.config.clean_resource_interval, self.clean_files_periodically,
                        first_ms=CLEAN_INITIAL_DELAY_MS)
            self._every(_WARM_INTERVAL_MS, self.warmer.tick)  # broker/commitlog/warm.py

    def _every(self, interval_ms: int, fn, first_ms: int | None = None) -> None:
        def tick():
            try:
                fn()
            except Exception:  # a timer must keep running; the error names the file
                log.exception("store timer %s failed", getattr(fn, "__name__", fn))
            if self.running:
                self._timers[slot] = self.reactor.callLater(interval_ms / 1000.0, tick)

        slot = len(self._timers)
        first = interval_ms if first_ms is None else first_ms
        self._timers.append(self.reactor.callLater(first / 1000.0, tick))

    def shutdown(self) -> None:
        """Stop timers, flush everything, write the checkpoint, unmap, remove ``abort``."""
        if self.shutdown_done:
            return
        self.running = False
        for call in self._timers:
            if call.active():
                call.cancel()
        if self._index_call is not None and self._index_call.active():
            self._index_call.cancel()
        clean = True
        self.disk_sync.stop()  # waits for the running sync; what follows is inline
        self.warmer.stop()
        try:
            self.flush_service.stop()
            self.flush()
        except OSError as exc:
            clean = False
            log.error("store shutdown flush failed, keeping the abort marker: %s", exc)
        self.commitlog.shutdown()
        self.consume_queues.shutdown()
        if self.index is not None:
            self.index.shutdown()
        for m in (self.topic_config, self.consumer_offsets, self.delay_offsets,
                  self.subscription_groups):
            m.persist()
        if clean and os.path.exists(self.config.abort_path):
            os.unlink(self.config.abort_path)
        self.lock.release()
        self.shutdown_done = True

    # --- put ----------------------------------------------------------------------------------
    def put_message(self, record: MessageRecord) -> PutMessageResult:
        """Append one record and dispatch it; see :class:`PutMessageResult`."""
        if not (self.running and (self.writeable and self._dispatch_behind is None
                                  or self._may_write())):
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        if len(record.body) > self._max_body:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        try:
            res = self.commitlog.append(record)
        except MappedFileError as exc:
            log.error("put failed: %s", exc)
            return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED,
                                    AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR,
                                                        error=str(exc)))
        if res[0] is not _APPEND_OK:
            return PutMessageResult(_APPEND_TO_PUT[res[0]], res)
        try:
            self._dispatch(record)
        except MappedFileError as exc:
            self._dispatch_failed(record.physical_offset, exc)
        fs = self.flush_service
        return _tuple_new(PutMessageResult, (_PUT_OK, res, fs.on_append() if fs.active else None))

    def put_messages(self, records: list[MessageRecord]) -> PutMessageResult:
        """Append a batch of one (topic, queueId) with consecutive queue offsets; the result's
        ``append.msg_id`` is the comma-joined offset ids, ``append.offsets`` each record's
        commitlog offset. Unlike :meth:`put_message`, the records' own store fields
        (queue_offset, physical_offset...) may be left unset: read them from the result."""
        if not records:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if not (self.running and (self.writeable and self._dispatch_behind is None
                                  or self._may_write())):
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        if max(map(len, map(_body_of, records))) > self._max_body:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        try:
            res = self.commitlog.append_batch(records)
        except MappedFileError as exc:
            log.error("batch put failed: %s", exc)
            return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED)
        if res.status is not AppendMessageStatus.PUT_OK:
            return PutMessageResult(_APPEND_TO_PUT[res.status], res)
        stamp = self.commitlog.last_batch_stamp
        try:
            if stamp is None or not self._dispatch_batch(stamp):
                if stamp is not None:
                    stamp.apply()
                for r in records:
                    self._dispatch(r)
        except MappedFileError as exc:
            self._dispatch_failed(res.wrote_offset, exc)
        fs = self.flush_service
        return _tuple_new(PutMessageResult, (_PUT_OK, res, fs.on_append() if fs.active else None))

    def _may_write(self) -> bool:
        """``DefaultMessageStore.checkStoreStatus``'s writeable check, retrying first what can
        heal here: dispatch that failed (Java's logics-queue-error bit, which only a restart
        clears there) and the index (its index-file-error bit). The disk-full bit is cleared
        only by the retention check."""
        if self._dispatch_behind is not None and not self._catch_up_dispatch():
            return False
        if self.index_error:
            self._drain_index()
        return self.writeable

    def _dispatch_failed(self, offset: int, exc: Exception) -> None:
        """A consume-queue file could not be written (full disk...): the record is in the
        commitlog (the put stands, as the reput thread's failure does not fail a put in Java);
        dispatch resumes from ``offset`` once files can be written again (the next put and the
        flush timer retry; until then puts are refused)."""
        log.error("dispatch failed at commitlog offset %d, will retry: %s", offset, exc)
        self._dispatch_behind = offset

    def _catch_up_dispatch(self) -> bool:
        """Re-dispatch from where dispatch failed (idempotent); True once caught up."""
        start = self._dispatch_behind
        if start is None:
            return True
        try:
            self._reput(start)
        except MappedFileError as exc:
            log.warning("dispatch still failing from offset %d: %s", start, exc)
            return False
        self._dispatch_behind = None
        log.info("dispatch caught up from commitlog offset %d", start)
        return True

    # --- durability / retention ---------------------------------------------------------------
    def _after_commitlog_flush(self) -> None:
        q = self.commitlog.queue
        if q.flushed_where >= q.get_max_offset():
            self.checkpoint.physic_msg_timestamp = self.commitlog.last_store_timestamp

    def _flush_logics(self) -> None:
        """Consume queues + index + checkpoint (``FlushConsumeQueueService``)."""
        self._catch_up_dispatch()
        logics_ts = self.last_dispatched_timestamp
        self.consume_queues.flush(0)
        if logics_ts:
            self.checkpoint.logics_msg_timestamp = logics_ts
        if self.index is not None:
            self._drain_index()
            index_ts = self.index.flush()
            if index_ts:
                self.checkpoint.index_msg_timestamp = index_ts
        self.checkpoint.flush()

    def _flush_logics_in_thread(self) -> None:
        """:meth:`_flush_logics` with the syncs in the flush thread: consume-queue units and
        dirty index files are synced there, then the checkpoint (its logics / index timestamps
        only once they are durable) is written there too. One at a time."""
        if self._logics_syncing:
            return
        self._catch_up_dispatch()
        logics_ts = self.last_dispatched_timestamp
        plans = self.consume_queues.flush_plans()
        index_ts, index_paths = 0, []
        if self.index is not None:
            self._drain_index()
            index_paths = [f.path for f in self.index.files if f.take_dirty()]
            index_ts = self.index.files[-1].header.end_timestamp if self.index.files else 0

        def sync_all(fds, paths):
            sync_fds(fds)
            sync_paths(paths)

        def synced(_):
            for p in plans:
                p.done()
            if logics_ts:
                self.checkpoint.logics_msg_timestamp = logics_ts
            if index_ts:
                self.checkpoint.index_msg_timestamp = index_ts
            return self.disk_sync.submit(self.checkpoint.write, self.checkpoint.encode())

        def failed(f):
            for p in plans:
                p.abort()
            return f

        def finished(result):
            self._logics_syncing = False
            if isinstance(result, Failure):
                log.error("consume queue / index / checkpoint flush failed: %s",
                          result.getErrorMessage())

        self._logics_syncing = True
        d = self.disk_sync.submit(sync_all, plans_fds(plans), index_paths)
        d.addCallbacks(synced, failed)
        d.addBoth(finished)

    def flush(self) -> None:
        """Flush the commitlog, consume queues, index and checkpoint now."""
        if not self.flush_service.flush(0):
            raise MappedFileError("commitlog flush failed", self.commitlog.queue.store_path)
        self._flush_logics()

    def delete_topic(self, topic: str) -> bool:
        """Delete the topic's consume queues and forget its queue offsets
        (``DefaultMessageStore.deleteTopics``); commitlog data ages out by retention."""
        table = self.commitlog.topic_queue_table
        for key in [k for k in table if k[0] == topic]:
            del table[key]
        for key in [k for k in self._cq_cache if k[0] == topic]:
            del self._cq_cache[key]
        return self.consume_queues.delete_topic(topic)
