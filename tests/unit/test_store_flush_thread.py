"""Store flushes through the flush thread (broker/commitlog/disk_sync.py), with a stand-in for
the thread whose syncs complete when the test says so: positions and SYNC_FLUSH puts move only
after the sync returned, one sync at a time, and a file closed during a sync keeps its fd."""

from __future__ import annotations

import os

from twisted.internet import defer
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.disk_sync import DiskSyncer
from rocketmq_emu.broker.commitlog.mapped_file import MappedFile
from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.configs.offsets import ConsumerOffsetManager
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig, PutMessageStatus


class ManualSyncer(DiskSyncer):
    """Runs nothing until :meth:`complete`: each job is queued like the flush thread's."""

    def __init__(self) -> None:
        super().__init__(None)
        self.jobs: list[tuple[defer.Deferred, object, tuple]] = []
        self.started = False

    @property
    def running(self) -> bool:
        return self.started

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.started = False

    def submit(self, fn, *args) -> defer.Deferred:
        if not self.started:
            return defer.maybeDeferred(fn, *args)
        d: defer.Deferred = defer.Deferred()
        self.jobs.append((d, fn, args))
        return d

    def complete(self) -> None:
        """Run the oldest job (as the thread would) and deliver its result."""
        d, fn, args = self.jobs.pop(0)
        try:
            result = fn(*args)
        except Exception as exc:
            d.errback(exc)
        else:
            d.callback(result)


def make_store(tmp_path, **kw) -> tuple[MessageStore, Clock, ManualSyncer]:
    clock = Clock()
    clock.advance(1_700_000_000)
    cfg = MessageStoreConfig(store_path_root_dir=str(tmp_path), mapped_file_size_commitlog=8192,
                             mapped_file_size_consume_queue=20 * 50, flush_commit_log_least_pages=0,
                             max_hash_slot_num=100, max_index_num=400, **kw)
    store = MessageStore(cfg, clock, clock)
    syncer = ManualSyncer()
    store.disk_sync = store.flush_service.syncer = syncer
    assert store.load(), store.load_error
    store.start()
    return store, clock, syncer


def put(store, i=0):
    return store.put_message(MessageRecord(topic="T", queue_id=0, body=b"body-%d" % i,
                                           properties={"TAGS": "a"}))


def test_async_flush_advances_only_after_the_sync_returned(tmp_path):
    """ASYNC_FLUSH: the periodic flush syncs in the thread; flushed_where moves on its return."""
    store, clock, syncer = make_store(tmp_path)
    put(store)
    clock.advance(store.config.flush_interval_commit_log / 1000.0)
    assert len(syncer.jobs) == 1 and store.commitlog.queue.flushed_where == 0
    syncer.complete()
    assert store.commitlog.queue.flushed_where == store.max_physical_offset
    store.shutdown()


def test_one_commitlog_sync_at_a_time(tmp_path):
    """A flush due while a sync runs is not started beside it."""
    store, clock, syncer = make_store(tmp_path)
    put(store)
    clock.advance(store.config.flush_interval_commit_log / 1000.0)
    put(store, 1)
    clock.advance(store.config.flush_interval_commit_log / 1000.0)
    commitlog_jobs = [j for j in syncer.jobs if store.commitlog.queue.files[0].sync_fd
                      in [fd for fd, _ in j[2][0]]]
    assert len(commitlog_jobs) == 1
    store.shutdown()


def test_sync_flush_put_fires_after_the_thread_sync_and_groups_later_puts(tmp_path):
    """SYNC_FLUSH: a put's Deferred fires only after its sync; puts during it share the next."""
    store, clock, syncer = make_store(tmp_path, flush_disk_type="SYNC_FLUSH")
    fired = []
    put(store).flushed.addCallback(fired.append)
    clock.advance(0)
    assert len(syncer.jobs) == 1 and fired == []
    later = [put(store, i) for i in (1, 2)]
    for r in later:
        r.flushed.addCallback(fired.append)
    clock.advance(0)
    assert len(syncer.jobs) == 1  # grouped behind the running sync
    syncer.complete()
    assert fired == [PutMessageStatus.PUT_OK]
    assert len(syncer.jobs) == 1
    syncer.complete()
    assert fired == [PutMessageStatus.PUT_OK] * 3
    assert store.commitlog.queue.flushed_where == store.max_physical_offset
    store.shutdown()


def test_failed_thread_sync_reports_flush_disk_timeout(tmp_path, monkeypatch):
    """A sync error in the thread fires FLUSH_DISK_TIMEOUT and leaves flushed_where alone."""
    store, clock, syncer = make_store(tmp_path, flush_disk_type="SYNC_FLUSH")
    fired = []
    put(store).flushed.addCallback(fired.append)
    clock.advance(0)

    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken)
    syncer.complete()
    monkeypatch.undo()
    assert fired == [PutMessageStatus.FLUSH_DISK_TIMEOUT]
    assert store.commitlog.queue.flushed_where == 0
    store.shutdown()


def test_shutdown_releases_puts_whose_sync_result_is_pending(tmp_path):
    """Shutdown flushes inline and fires the puts of a sync that never reported back."""
    store, clock, syncer = make_store(tmp_path, flush_disk_type="SYNC_FLUSH")
    fired = []
    put(store).flushed.addCallback(fired.append)
    clock.advance(0)
    store.shutdown()
    assert fired == [PutMessageStatus.PUT_OK]


def test_consume_queue_checkpoint_written_after_units_synced(tmp_path):
    """The logics timestamp reaches the checkpoint only after the units' sync returned."""
    store, clock, syncer = make_store(tmp_path)
    put(store)
    clock.advance(store.config.flush_interval_consume_queue / 1000.0)
    cq_jobs = [j for j in syncer.jobs if j[2] and isinstance(j[2][0], list)
               and any("consumequeue" in p for _, p in j[2][0])]
    assert cq_jobs and store.checkpoint.logics_msg_timestamp == 0
    while syncer.jobs:
        syncer.complete()
    assert store.checkpoint.logics_msg_timestamp == store.last_dispatched_timestamp
    assert store.consume_queues.find("T", 0).mfq.flushed_where == 20
    store.shutdown()


def test_index_synced_in_the_thread_before_its_checkpoint_timestamp(tmp_path, monkeypatch):
    """A dirty index file is fdatasynced by path in the thread; then its timestamp is saved."""
    synced_paths = []
    real = os.fdatasync

    def recording(fd):
        synced_paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    store, clock, syncer = make_store(tmp_path)
    store.put_message(MessageRecord(topic="T", queue_id=0, body=b"b",
                                    properties={"TAGS": "a", "KEYS": "k1", "UNIQ_KEY": "U1"}))
    clock.advance(store.config.flush_interval_consume_queue / 1000.0)
    assert store.checkpoint.index_msg_timestamp == 0
    monkeypatch.setattr(os, "fdatasync", recording)
    while syncer.jobs:
        syncer.complete()
    monkeypatch.undo()
    index_path = store.index.files[-1].path
    assert os.path.realpath(index_path) in synced_paths
    assert store.checkpoint.index_msg_timestamp == store.index.files[-1].header.end_timestamp > 0
    store.shutdown()


def test_config_persist_runs_in_the_writer(tmp_path):
    """With a writer, persist encodes now and writes the file when the writer runs the job."""
    syncer = ManualSyncer()
    syncer.start()
    m = ConsumerOffsetManager(str(tmp_path / "consumerOffset.json"))
    m.writer = syncer.submit
    m.commit_offset("h", "g", "T", 0, 777)
    assert m.persist() is True
    assert not os.path.exists(m.path)
    m.commit_offset("h", "g", "T", 0, 999)  # after the snapshot: not in this write
    syncer.complete()
    data = open(m.path, "rb").read()
    assert b"777" in data and b"999" not in data


def test_close_during_sync_keeps_the_fd_until_the_sync_ends(tmp_path):
    """A file closed while its sync runs keeps its descriptor open until end_sync."""
    mf = MappedFile(str(tmp_path / ("0" * 20)), 4096, warm=False)
    mf.append(b"x" * 100)
    mf.begin_sync()
    fd = mf.sync_fd
    mf.close()
    os.fstat(fd)  # still open: the thread may be in fdatasync(fd)
    mf.end_sync(100)
    assert mf.flushed_position == 100 and mf.sync_fd == -1
    try:
        os.fstat(fd)
        still_open = True
    except OSError:
        still_open = False
    assert not still_open
