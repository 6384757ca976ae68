"""Retention and the disk-space guard (``CleanCommitLogService`` / ``CleanConsumeQueueService``,
``RunningFlags`` disk full): expiry at the ``deleteWhen`` hour, clean by disk usage, refused
puts on a full disk, pulls below the new minimum, restart after cleaning, and full-disk file
creation answered with errors. The disk is a fake; the clock is a task.Clock."""

from __future__ import annotations

import errno
import os
import random
import time

import pytest
from processor_support import FakeConn, make_context, send_v2
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.commitlog.retention import (
    disk_used_ratio,
    is_time_to_delete,
    judge_space,
    max_used_ratio,
)
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.store import (
    GetMessageStatus,
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
)

OK = PutMessageStatus.PUT_OK
REFUSED = PutMessageStatus.SERVICE_NOT_AVAILABLE


def local(day: int, hour: int, minute: int = 0, second: int = 0) -> float:
    """Epoch seconds of a local wall-clock time in January 2024 (no DST change near)."""
    return time.mktime((2024, 1, day, hour, minute, second, 0, 0, -1))


class FakeDisk:
    """``disk_usage``: every partition at ``ratio``."""

    def __init__(self, ratio: float = 0.5) -> None:
        self.ratio = ratio

    def __call__(self, path: str) -> float:
        return self.ratio


def make_store(tmp_path, clock, disk, **kw) -> MessageStore:
    settings = dict(mapped_file_size_commitlog=2048, mapped_file_size_consume_queue=20 * 4,
                    max_hash_slot_num=100, max_index_num=400, warm_mapped_file_enable=False)
    settings.update(kw)
    cfg = MessageStoreConfig(store_path_root_dir=str(tmp_path), **settings)
    store = MessageStore(cfg, clock, clock, disk_usage=disk)
    assert store.load(), store.load_error
    store.start()
    return store


def msg(i: int, body: bytes = b"x" * 300) -> MessageRecord:
    return MessageRecord(topic="T", queue_id=0, body=body,
                         properties={"TAGS": "a", "KEYS": f"k{i}", "UNIQ_KEY": f"U{i:04d}"})


def fill(store, n: int, start: int = 0) -> list:
    return [store.put_message(msg(start + i)) for i in range(n)]


def clock_at(t: float) -> Clock:
    c = Clock()
    c.advance(t)
    return c


def advance_to(clock: Clock, t: float, step: float = 10.0) -> None:
    """Move to ``t``: one jump to a minute before, then a timer period at a time."""
    if t - 60 > clock.seconds():
        clock.advance(t - 60 - clock.seconds())
    while clock.seconds() + step <= t:
        clock.advance(step)
    clock.advance(t - clock.seconds())


def test_fresh_store_reads_a_real_disk_ratio(tmp_path):
    """A store with no consume queue yet has its directory, so the default check reads a ratio
    and does not take a missing path (-1) as "space to delete" at every hour."""
    cfg = MessageStoreConfig(store_path_root_dir=str(tmp_path / "store"))
    MessageStore(cfg, clock_at(local(8, 1)))
    assert disk_used_ratio(cfg.consume_queue_dir) >= 0


# --- pure rules ---------------------------------------------------------------------------------
def test_delete_when_matches_local_hours_only():
    """``04`` matches 04:00-04:59 local time; ``;`` separates hours; a bad part is ignored."""
    assert is_time_to_delete("04", local(8, 4, 30))
    assert not is_time_to_delete("04", local(8, 3, 59, 59))
    assert not is_time_to_delete("04", local(8, 5, 0))
    assert is_time_to_delete("01;13", local(8, 13, 5))
    assert is_time_to_delete("x;13", local(8, 13, 5))


def test_space_judgement_follows_the_three_ratios():
    """Above max: clean; above forcibly: clean at once; above warning: disk full; below: OK."""
    args = (0.75, 0.90, 0.85)
    assert judge_space([0.5, 0.5], *args, False) == (False, False, False)
    assert judge_space([0.8, 0.5], *args, False) == (True, False, False)
    assert judge_space([0.86, 0.5], *args, False) == (True, True, False)
    assert judge_space([0.95, 0.5], *args, False) == (True, True, True)
    assert judge_space([0.5, 0.5], *args, True) == (False, False, False)
    assert judge_space([-1.0, 0.5], *args, False) == (True, False, False)


def test_max_used_ratio_is_clamped_like_java():
    """diskMaxUsedSpaceRatio is kept within 10..95 percent."""
    assert (max_used_ratio(5), max_used_ratio(75), max_used_ratio(99)) == (0.10, 0.75, 0.95)


# --- expiry at the deleteWhen hour ------------------------------------------------------------
def test_expired_files_are_deleted_at_the_delete_when_hour_not_before(tmp_path):
    """Files older than fileReservedTime stay until the first check in hour 04, then go."""
    clock = clock_at(local(8, 1))
    s = make_store(tmp_path, clock, FakeDisk())
    fill(s, 30)
    files = len(s.commitlog.queue.files)
    assert files > 2
    advance_to(clock, local(11, 3, 59, 55))  # 74 h later: expired, but hour 03
    assert len(s.commitlog.queue.files) == files
    advance_to(clock, local(11, 4, 0, 10))
    assert len(s.commitlog.queue.files) == 1
    assert s.min_physical_offset == s.commitlog.queue.files[0].file_from_offset
    s.shutdown()


def test_unexpired_files_survive_the_delete_when_hour(tmp_path):
    """At 04:00 files younger than fileReservedTime are kept."""
    clock = clock_at(local(8, 3, 30))
    s = make_store(tmp_path, clock, FakeDisk())
    fill(s, 30)
    files = len(s.commitlog.queue.files)
    advance_to(clock, local(8, 4, 30))
    assert len(s.commitlog.queue.files) == files
    s.shutdown()


# --- disk usage -------------------------------------------------------------------------------
def test_above_max_used_ratio_expired_files_go_at_any_hour(tmp_path):
    """Over diskMaxUsedSpaceRatio the clean runs outside deleteWhen, for expired files only."""
    clock = clock_at(local(8, 10))
    disk = FakeDisk(0.80)
    s = make_store(tmp_path, clock, disk)
    fill(s, 30)
    files = len(s.commitlog.queue.files)
    advance_to(clock, local(8, 11))
    assert len(s.commitlog.queue.files) == files
    advance_to(clock, local(11, 11))
    assert len(s.commitlog.queue.files) == 1
    s.shutdown()


def test_above_clean_forcibly_ratio_unexpired_files_go_too(tmp_path):
    """Over 0.85 files are deleted though not expired, never the file being written."""
    clock = clock_at(local(8, 10))
    disk = FakeDisk(0.86)
    s = make_store(tmp_path, clock, disk)
    fill(s, 30)
    assert len(s.commitlog.queue.files) > 2
    advance_to(clock, local(8, 10, 1, 10))
    assert len(s.commitlog.queue.files) == 1
    assert fill(s, 1)[0].status is OK
    s.shutdown()


def test_at_most_ten_commitlog_files_go_per_run(tmp_path):
    """One run deletes at most DELETE_FILES_BATCH_MAX (10) files."""
    clock = clock_at(local(8, 10))
    s = make_store(tmp_path, clock, FakeDisk(0.86))
    fill(s, 80)
    files = len(s.commitlog.queue.files)
    assert files > 12
    clock.advance(60)
    assert len(s.commitlog.queue.files) == files - 10
    s.shutdown()


def test_puts_are_refused_above_the_warning_ratio_until_usage_falls(tmp_path):
    """Over 0.90 the first check marks the disk full: puts answer SERVICE_NOT_AVAILABLE and
    nothing is stored; once a check finds usage below, puts are accepted again."""
    clock = clock_at(local(8, 10))
    disk = FakeDisk(0.95)
    s = make_store(tmp_path, clock, disk)
    clock.advance(59)
    assert fill(s, 1)[0].status is OK  # the first check runs 60 s after start
    clock.advance(1)
    end = s.max_physical_offset
    assert fill(s, 1, start=1)[0].status is REFUSED
    assert s.put_messages([msg(2), msg(3)]).status is REFUSED
    assert s.max_physical_offset == end
    disk.ratio = 0.5
    clock.advance(10)
    assert [r.status for r in fill(s, 2, start=4)] == [OK, OK]
    assert s.get_max_offset_in_queue("T", 0) == 3
    s.shutdown()


def test_send_on_a_full_disk_answers_service_not_available_with_disk_usage(tmp_path):
    """The send answers code 14 with SendMessageProcessor's remark and diskUtil() in it."""
    ctx = make_context(tmp_path, reactor_clock=True)
    ctx.store.disk_usage = FakeDisk(0.95)
    proc = SendMessageProcessor(ctx, random.Random(7))
    ctx.clock.advance(60)
    resp = proc.process_send(send_v2("TopicA"), FakeConn())
    assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert "the broker's disk is full [CL:  0.95 CQ:  0.95 INDEX:  0.95]" in resp.remark
    ctx.store.shutdown()


# --- what pulls and restarts see ----------------------------------------------------------------
def test_pull_below_the_new_min_offset_is_offset_too_small(tmp_path):
    """After the clean, a pull at 0 is OFFSET_TOO_SMALL pointing at the queue's new min."""
    clock = clock_at(local(8, 1))
    s = make_store(tmp_path, clock, FakeDisk())
    fill(s, 30)
    advance_to(clock, local(11, 4, 0, 10))
    g = s.get_message("g", "T", 0, 0, 32)
    assert g.status is GetMessageStatus.OFFSET_TOO_SMALL
    assert g.next_begin_offset == g.min_offset == s.get_min_offset_in_queue("T", 0) > 0
    assert s.get_message("g", "T", 0, g.min_offset, 1).status is GetMessageStatus.FOUND
    s.shutdown()


def test_consume_queue_and_index_files_below_the_new_min_are_deleted(tmp_path):
    """Queue files whose units all point below the commitlog's min go; so do index files."""
    clock = clock_at(local(8, 1))
    s = make_store(tmp_path, clock, FakeDisk(), max_index_num=10)
    fill(s, 30)
    clock.advance(0)
    cq = s.consume_queues.find("T", 0)
    cq_files, index_files = len(cq.mfq.files), len(s.index.files)
    advance_to(clock, local(11, 4, 0, 10))
    min_phy = s.min_physical_offset
    assert 0 < len(cq.mfq.files) < cq_files and 0 < len(s.index.files) < index_files
    assert all(f.header.end_phy_offset >= min_phy for f in s.index.files[:-1])
    s.shutdown()


@pytest.mark.parametrize("crash", [False, True])
def test_restart_after_cleaning_recovers_without_the_first_files(tmp_path, crash):
    """A restart (clean or after a crash) with the first files gone keeps min offsets and
    queue offsets, and takes new puts."""
    clock = clock_at(local(8, 1))
    s = make_store(tmp_path, clock, FakeDisk())
    fill(s, 30)
    advance_to(clock, local(11, 4, 0, 10))
    min_q, max_q, min_phy = (s.get_min_offset_in_queue("T", 0),
                             s.get_max_offset_in_queue("T", 0), s.min_physical_offset)
    s.shutdown()
    if crash:
        open(os.path.join(tmp_path, "abort"), "wb").close()
    s2 = make_store(tmp_path, clock, FakeDisk())
    assert (s2.get_min_offset_in_queue("T", 0), s2.get_max_offset_in_queue("T", 0),
            s2.min_physical_offset) == (min_q, max_q, min_phy)
    assert s2.get_message("g", "T", 0, min_q, 1).status is GetMessageStatus.FOUND
    r = s2.put_message(msg(99))
    assert r.status is OK and r.append.queue_offset == max_q
    s2.shutdown()


# --- full disk at file creation ---------------------------------------------------------------
def _no_space(fd, off, size):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_creating_a_consume_queue_file_refuses_puts_then_heals(tmp_path, monkeypatch):
    """ENOSPC creating a queue file: that put stands (its record is in the commitlog, as in
    Java where the queue is written after the answer), the next puts are refused, and once
    the disk has room the queue catches up and puts are accepted; every acknowledged message
    is pulled, in order."""
    clock = clock_at(local(8, 10))
    s = make_store(tmp_path, clock, FakeDisk(), mapped_file_size_commitlog=64 * 1024)
    acked = [r for r in fill(s, 4) if r.status is OK]  # fills the first 4-unit queue file
    monkeypatch.setattr(os, "posix_fallocate", _no_space)
    first = s.put_message(msg(4))
    assert first.status is OK
    acked.append(first)
    assert s.put_message(msg(5)).status is REFUSED
    monkeypatch.undo()
    r = s.put_message(msg(6))
    assert r.status is OK
    acked.append(r)
    g = s.get_message("g", "T", 0, 0, 32)
    assert g.status is GetMessageStatus.FOUND
    assert g.commitlog_offsets == [a.append.wrote_offset for a in acked]
    s.shutdown()


def test_full_disk_creating_an_index_file_refuses_puts_then_heals(tmp_path, monkeypatch):
    """ENOSPC creating an index file: entries stay queued, puts are refused; once the disk has
    room they are written and puts are accepted; every key is found."""
    clock = clock_at(local(8, 10))
    s = make_store(tmp_path, clock, FakeDisk(), mapped_file_size_commitlog=64 * 1024,
                   max_index_num=5)
    fill(s, 2)
    clock.advance(0)  # 2 messages x 2 keys: the file holds 4 entries
    monkeypatch.setattr(os, "posix_fallocate", _no_space)
    assert fill(s, 1, start=2)[0].status is OK
    clock.advance(0)
    assert s.index_error
    assert fill(s, 1, start=3)[0].status is REFUSED
    monkeypatch.undo()
    assert fill(s, 1, start=4)[0].status is OK
    assert not s.index_error
    for i in (0, 1, 2, 4):
        assert len(s.query_message_offsets("T", f"k{i}", 32, 0, 2**62).phy_offsets) == 1
    s.shutdown()


def test_full_disk_creating_a_commitlog_file_answers_the_send_with_an_error(tmp_path,
                                                                             monkeypatch):
    """ENOSPC on the commitlog's next file: the send answers SYSTEM_ERROR (create mapped file
    failed) and later sends succeed once the disk has room."""
    ctx = make_context(tmp_path)
    proc = SendMessageProcessor(ctx, random.Random(7))
    q = ctx.store.commitlog.queue
    while len(q.files) == 1:
        resp = proc.process_send(send_v2("TopicA", b"y" * 4000), FakeConn())
        assert resp.code == ResponseCode.SUCCESS
    q.files[-1].wrote_position = q.files[-1].file_size  # the next send needs a new file
    monkeypatch.setattr(os, "posix_fallocate", _no_space)
    monkeypatch.setattr(q, "warm", False)
    resp = proc.process_send(send_v2("TopicA"), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "create mapped file failed" in resp.remark
    monkeypatch.undo()
    assert proc.process_send(send_v2("TopicA"), FakeConn()).code == ResponseCode.SUCCESS
    ctx.store.shutdown()
