"""Durability of the store: flush policies (group commit, periodic), checkpoint format,
recovery (restart, rebuilt consume queues, corrupt bytes, wrong magic), retention and faults
(full disk)."""

from __future__ import annotations

import errno
import os
import struct

import pytest
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog import mapped_file as mf_mod
from rocketmq_emu.broker.commitlog.checkpoint import CHECKPOINT, StoreCheckpoint
from rocketmq_emu.broker.commitlog.record import MessageRecord, decode_record
from rocketmq_emu.broker.store import (
    GetMessageStatus,
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
)

T0 = 1_700_000_000.0


def make_store(tmp_path, **kw) -> MessageStore:
    clock = kw.pop("clock", None) or _clock()
    reactor = kw.pop("reactor", None)
    cfg = MessageStoreConfig(
        store_path_root_dir=str(tmp_path), mapped_file_size_commitlog=kw.pop("cl_size", 8192),
        mapped_file_size_consume_queue=kw.pop("cq_size", 20 * 50), max_hash_slot_num=100,
        max_index_num=400, **kw,
    )
    store = MessageStore(cfg, clock, reactor)
    assert store.load(), store.load_error
    store.start()
    return store


def msg(i=0, qid=0, body=None) -> MessageRecord:
    return MessageRecord(topic="T", queue_id=qid, body=body or b"body-%d" % i,
                         properties={"TAGS": "a", "UNIQ_KEY": f"U{i:04d}"})


def fill(store, n, **kw):
    return [store.put_message(msg(i, **kw)) for i in range(n)]


def _clock() -> Clock:
    c = Clock()
    c.advance(T0)
    return c


# --- flush policies ---------------------------------------------------------------------------
def test_sync_flush_group_commit_shares_one_msync(tmp_path):
    """Puts of one reactor turn wait for one shared flush, then all fire PUT_OK."""
    clock = _clock()
    s = make_store(tmp_path, clock=clock, reactor=clock, flush_disk_type="SYNC_FLUSH")
    results = fill(s, 3)
    fired = []
    for r in results:
        r.flushed.addCallback(fired.append)
    assert fired == [] and s.commitlog.queue.flushed_where == 0
    before = s.flush_service.flush_count
    clock.advance(0)
    assert fired == [PutMessageStatus.PUT_OK] * 3
    assert s.flush_service.flush_count == before + 1
    assert s.commitlog.queue.flushed_where == s.max_physical_offset
    s.shutdown()


def test_sync_flush_without_reactor_flushes_inline(tmp_path):
    """With no reactor, a SYNC_FLUSH put is flushed before put_message returns."""
    s = make_store(tmp_path, flush_disk_type="SYNC_FLUSH")
    r = s.put_message(msg())
    assert s.commitlog.queue.flushed_where == s.max_physical_offset
    fired = []
    r.flushed.addCallback(fired.append)
    assert fired == [PutMessageStatus.PUT_OK]
    s.shutdown()


def test_sync_flush_failure_reports_flush_disk_timeout(tmp_path, monkeypatch):
    """A failing msync fires the waiting puts with FLUSH_DISK_TIMEOUT."""
    clock = _clock()
    s = make_store(tmp_path, clock=clock, reactor=clock, flush_disk_type="SYNC_FLUSH")
    r = s.put_message(msg())

    def broken(least_pages=0):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(s.commitlog.queue, "flush", broken)
    fired = []
    r.flushed.addCallback(fired.append)
    clock.advance(0)
    assert fired == [PutMessageStatus.FLUSH_DISK_TIMEOUT]
    monkeypatch.undo()
    s.shutdown()


def test_async_flush_timer_flushes_dirty_pages(tmp_path):
    """ASYNC_FLUSH flushes on its 500 ms timer once enough pages are dirty."""
    clock = _clock()
    s = make_store(tmp_path, clock=clock, reactor=clock, cl_size=1 << 16)
    fill(s, 60, body=b"x" * 400)  # > 4 pages
    assert s.commitlog.queue.flushed_where == 0
    clock.advance(0.5)
    assert s.commitlog.queue.flushed_where == s.max_physical_offset
    s.shutdown()


def test_async_flush_skips_below_least_pages_until_thorough(tmp_path):
    """Below flushCommitLogLeastPages the timer waits for the 10 s thorough flush."""
    clock = _clock()
    s = make_store(tmp_path, clock=clock, reactor=clock, cl_size=1 << 16)
    s.put_message(msg())
    clock.advance(0.5)
    assert s.commitlog.queue.flushed_where == 0
    for _ in range(20):
        clock.advance(0.5)
    assert s.commitlog.queue.flushed_where == s.max_physical_offset
    s.shutdown()


def test_async_flush_soon_when_too_many_pages_dirty(tmp_path):
    """Past flushCommitLogMaxDirtyPages a flush runs on the next reactor turn, not the timer."""
    clock = _clock()
    s = make_store(tmp_path, clock=clock, reactor=clock, cl_size=1 << 16,
                   flush_commit_log_max_dirty_pages=2)
    fill(s, 3, body=b"x" * 1000)
    assert s.commitlog.queue.flushed_where == 0
    fill(s, 6, body=b"x" * 1000)
    clock.advance(0)
    assert s.commitlog.queue.flushed_where == s.max_physical_offset
    s.shutdown()


# --- checkpoint -------------------------------------------------------------------------------
def test_checkpoint_struct_matches_construct_spec(tmp_path):
    """The checkpoint bytes equal the construct spec's and round-trip through the file."""
    cp = StoreCheckpoint(str(tmp_path / "checkpoint"))
    cp.physic_msg_timestamp, cp.logics_msg_timestamp, cp.index_msg_timestamp = 11, 22, 33
    data = cp.encode()
    assert data == CHECKPOINT.build(dict(
        physicMsgTimestamp=11, logicsMsgTimestamp=22, indexMsgTimestamp=33,
        masterFlushedOffset=0, confirmPhyOffset=0))
    cp.flush()
    back = StoreCheckpoint(cp.path)
    assert back.load()
    assert (back.physic_msg_timestamp, back.logics_msg_timestamp, back.index_msg_timestamp) == (
        11, 22, 33)
    assert back.min_timestamp == 11 - 3000 if 11 > 3000 else back.min_timestamp == 0


def test_checkpoint_written_with_store_timestamps(tmp_path):
    """After flush the checkpoint holds the newest flushed store timestamps."""
    s = make_store(tmp_path)
    r = fill(s, 3)[-1]
    s.flush()
    cp = StoreCheckpoint(str(tmp_path / "checkpoint"))
    cp.load()
    assert cp.physic_msg_timestamp == cp.logics_msg_timestamp == r.append.store_timestamp
    assert cp.index_msg_timestamp == r.append.store_timestamp
    s.shutdown()


# --- recovery ---------------------------------------------------------------------------------
def test_clean_restart_keeps_everything_and_continues_offsets(tmp_path):
    """After a clean shutdown, data, queue offsets and the write position are restored."""
    s = make_store(tmp_path)
    fill(s, 30, body=b"y" * 300)
    end = s.max_physical_offset
    s.shutdown()
    s = make_store(tmp_path)
    assert s.max_physical_offset == end
    assert s.put_message(msg(30)).append.queue_offset == 30
    assert len(s.get_message("g", "T", 0, 0, 32).messages) == 31
    s.shutdown()


def test_recovery_rebuilds_deleted_consume_queues(tmp_path):
    """Consume queues deleted from disk are rebuilt from the commitlog at load."""
    import shutil

    s = make_store(tmp_path)
    for i in range(20):
        s.put_message(msg(i, qid=i % 2))
    s.shutdown()
    shutil.rmtree(tmp_path / "consumequeue")
    s = make_store(tmp_path)
    g = s.get_message("g", "T", 1, 0, 32)
    assert [decode_record(b).body for b in g.messages] == [b"body-%d" % i for i in range(1, 20, 2)]
    assert s.put_message(msg(99, qid=1)).append.queue_offset == 10
    s.shutdown()


def test_crash_drops_consume_queue_units_beyond_commitlog_end(tmp_path):
    """After a crash, units pointing past the valid commitlog end are truncated."""
    s = make_store(tmp_path)
    fill(s, 10)
    s.flush()
    end = s.max_physical_offset
    # Simulate lost commitlog pages: the last 3 records never reached the disk.
    offs = [u[0] for u in s.get_consume_queue_units("T", 0, 0, 10)]
    s.commitlog.queue.files[0].mm[offs[7]:end] = bytes(end - offs[7])
    s.consume_queues.flush()
    s.shutdown()
    open(tmp_path / "abort", "wb").close()
    s = make_store(tmp_path)
    assert s.max_physical_offset == offs[7]
    assert s.get_max_offset_in_queue("T", 0) == 7
    s.shutdown()


def _first_file(tmp_path) -> str:
    d = tmp_path / "commitlog"
    return str(d / sorted(os.listdir(d))[0])


def test_corrupt_body_byte_is_reported_and_never_served(tmp_path, caplog):
    """A flipped body byte is logged with file and offset; that record is skipped, the rest
    (acknowledged) stays readable."""
    s = make_store(tmp_path)
    res = fill(s, 6)
    s.shutdown()
    bad = res[2].append.wrote_offset
    with open(_first_file(tmp_path), "r+b") as f:
        f.seek(bad + 88)  # first body byte
        b = f.read(1)
        f.seek(bad + 88)
        f.write(bytes([b[0] ^ 0xFF]))
    s = make_store(tmp_path)
    assert "00000000000000000000" in caplog.text and f"offset {bad}" in caplog.text
    g = s.get_message("g", "T", 0, 0, 32)
    assert [decode_record(m).body for m in g.messages] == [
        b"body-%d" % i for i in (0, 1, 3, 4, 5)]
    assert s.look_message_by_offset(bad) is None
    s.shutdown()


def test_wrong_magic_in_the_middle_refuses_to_load(tmp_path):
    """A wrong magic with valid records after it fails load naming file and offset, and
    truncates nothing."""
    s = make_store(tmp_path)
    res = fill(s, 6)
    s.shutdown()
    bad = res[2].append.wrote_offset
    path = _first_file(tmp_path)
    with open(path, "r+b") as f:
        f.seek(bad + 4)
        f.write(struct.pack(">i", 0x12345678))
    s = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path),
                                        mapped_file_size_commitlog=8192,
                                        mapped_file_size_consume_queue=1000,
                                        max_hash_slot_num=100, max_index_num=400), _clock())
    assert not s.load()
    assert "00000000000000000000" in str(s.load_error) and f"offset {bad}" in str(s.load_error)
    assert os.path.getsize(path) == 8192
    with open(path, "rb") as f:
        f.seek(res[5].append.wrote_offset + 4)
        assert f.read(4) == struct.pack(">i", -626843481)


def test_wrong_file_size_refuses_to_load(tmp_path):
    """A commitlog file of the wrong size fails load with its name."""
    s = make_store(tmp_path)
    fill(s, 2)
    s.shutdown()
    with open(_first_file(tmp_path), "r+b") as f:
        f.truncate(100)
    s = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path),
                                        mapped_file_size_commitlog=8192), _clock())
    assert not s.load()
    assert "size 100, expected 8192" in str(s.load_error)


# --- faults -----------------------------------------------------------------------------------
def test_full_disk_on_roll_fails_put_and_keeps_acknowledged(tmp_path, monkeypatch):
    """ENOSPC creating the next file fails that put (CREATE_MAPEDFILE_FAILED); everything
    acknowledged before stays readable."""
    s = make_store(tmp_path, cl_size=2048)
    ok = []
    while len(s.commitlog.queue.files) == 1:
        r = s.put_message(msg(len(ok), body=b"z" * 300))
        ok.append(r)

    def no_space(fd, off, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(mf_mod.os, "posix_fallocate", no_space)
    failed = None
    for i in range(20):
        r = s.put_message(msg(100 + i, body=b"z" * 300))
        if r.status is not PutMessageStatus.PUT_OK:
            failed = r
            break
        ok.append(r)
    assert failed is not None and failed.status is PutMessageStatus.CREATE_MAPEDFILE_FAILED
    assert "no space left" in failed.append.error
    monkeypatch.undo()
    for r in ok:
        assert s.look_message_by_offset(r.append.wrote_offset) is not None
    assert s.put_message(msg(500)).status is PutMessageStatus.PUT_OK
    s.shutdown()


# --- retention --------------------------------------------------------------------------------
def test_retention_deletes_old_files_never_the_current_one(tmp_path):
    """Files untouched for fileReservedTime hours (store clock) go, with their queue units."""
    clock = _clock()
    s = make_store(tmp_path, clock=clock, cl_size=2048, cq_size=20 * 4)
    for i in range(30):
        s.put_message(msg(i, body=b"x" * 300))
    files_before = len(s.commitlog.queue.files)
    clock.advance(71 * 3600)
    assert s.clean_expired_files() == 0
    clock.advance(3600)
    assert s.clean_expired_files() == files_before - 1
    assert len(s.commitlog.queue.files) == 1
    assert s.min_physical_offset == s.commitlog.queue.files[0].file_from_offset
    min_q = s.get_min_offset_in_queue("T", 0)
    assert min_q > 0
    first = s.get_message("g", "T", 0, min_q, 1)
    assert first.status is GetMessageStatus.FOUND
    assert s.get_message("g", "T", 0, 0, 1).status is GetMessageStatus.OFFSET_TOO_SMALL
    s.shutdown()


@pytest.mark.parametrize("flush_type", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_shutdown_flushes_everything(tmp_path, flush_type):
    """A clean shutdown leaves everything flushed and the checkpoint written."""
    clock = _clock()
    s = make_store(tmp_path, clock=clock, reactor=clock, flush_disk_type=flush_type)
    fill(s, 5)
    s.shutdown()
    assert s.commitlog.queue.flushed_where == s.max_physical_offset


def test_restart_after_retention_keeps_queue_min_offset_past_deleted_messages(tmp_path):
    """After retention and a restart, a queue's min offset still skips the deleted messages."""
    clock = _clock()
    s = make_store(tmp_path, clock=clock, cl_size=2048, cq_size=20 * 100)
    for i in range(30):
        s.put_message(msg(i, body=b"x" * 300))
    clock.advance(72 * 3600)
    assert s.clean_expired_files() > 0
    min_q = s.get_min_offset_in_queue("T", 0)
    assert min_q > 0
    s.shutdown()
    s2 = make_store(tmp_path, clock=clock, cl_size=2048, cq_size=20 * 100)
    assert s2.get_min_offset_in_queue("T", 0) == min_q
    assert s2.get_message("g", "T", 0, min_q, 1).status is GetMessageStatus.FOUND
    s2.shutdown()


@pytest.mark.parametrize("indexed_before", [0, 4])
def test_crash_rebuilds_index_entries_that_were_still_queued(tmp_path, indexed_before):
    """After a crash, messages whose index entries were still queued (lost with the process)
    are found by key again: recovery re-dispatches them, whether or not the index held any
    entry yet."""
    s = make_store(tmp_path)
    fill(s, indexed_before)
    s.build_queued_index()
    for i in range(indexed_before, 10):
        s.put_message(msg(i))
    s._index_pending.clear()  # the crash: the queue dies with the process
    s.shutdown()
    open(tmp_path / "abort", "wb").close()
    s = make_store(tmp_path)
    found = [len(s.query_message_offsets("T", f"U{i:04d}", 10, 0, 2**62).phy_offsets)
             for i in range(10)]
    assert found == [1] * 10
    s.shutdown()


def test_build_queued_index_writes_the_entries_waiting_for_the_next_turn(tmp_path):
    """Without a reactor turn, puts leave their index entries queued; build_queued_index
    writes them at once and says how many records were waiting."""
    s = make_store(tmp_path)
    fill(s, 3)
    assert not s.index.files  # nothing written yet: the first entry creates the file
    assert s.build_queued_index() == 3
    assert s.index.files[-1].header.index_count == 1 + 3  # slot 0 is never used
    assert s.build_queued_index() == 0
    s.shutdown()
