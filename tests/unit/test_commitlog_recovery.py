"""Recovery of writes interrupted before they were published: a single record whose header
(TOTALSIZE) was never written, and a fast-path batch whose first TOTALSIZE is still 0."""

from __future__ import annotations

import os

from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.store import GetMessageStatus, MessageStore, MessageStoreConfig


def _store(root) -> MessageStore:
    clock = Clock()
    clock.advance(1_700_000_000)
    s = MessageStore(MessageStoreConfig(store_path_root_dir=str(root),
                                        mapped_file_size_commitlog=1 << 16,
                                        mapped_file_size_consume_queue=2000,
                                        max_hash_slot_num=100, max_index_num=400), clock)
    assert s.load(), s.load_error
    s.start()
    return s


def _msg(i: int) -> MessageRecord:
    return MessageRecord(topic="T", body=b"body-%d" % i, properties={"UNIQ_KEY": f"U{i}"})


def _crash(s: MessageStore, root) -> None:
    """Leave the files as a killed process would (flushed bytes, abort marker kept)."""
    s.flush()
    s.commitlog.queue.shutdown()
    s.consume_queues.shutdown()
    assert os.path.exists(os.path.join(str(root), "abort"))


def test_unpublished_batch_is_dropped_whole(tmp_path):
    """A batch whose first TOTALSIZE still holds the unpublished marker (-batch bytes) is
    dropped whole, and everything before it stays."""
    s = _store(tmp_path)
    kept = [s.put_message(_msg(i)) for i in range(3)]
    batch = s.put_messages([_msg(10 + i) for i in range(4)])
    first = batch.append.wrote_offset
    mm = s.commitlog.queue.files[0].mm
    mm[first : first + 4] = (-batch.append.wrote_bytes).to_bytes(4, "big", signed=True)
    _crash(s, tmp_path)
    s = _store(tmp_path)
    assert s.max_physical_offset == first
    assert s.get_max_offset_in_queue("T", 0) == 3
    for r in kept:
        assert s.look_message_by_offset(r.append.wrote_offset) is not None
    g = s.get_message("g", "T", 0, 3, 1)
    assert g.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    assert s.put_message(_msg(99)).append.wrote_offset == first
    s.shutdown()


def test_single_record_without_header_is_dropped(tmp_path):
    """A record whose fixed header never got written (killed mid-append) is not data."""
    s = _store(tmp_path)
    rs = [s.put_message(_msg(i)) for i in range(3)]
    last = rs[-1].append.wrote_offset
    s.commitlog.queue.files[0].mm[last : last + 88] = bytes(88)
    _crash(s, tmp_path)
    s = _store(tmp_path)
    assert s.max_physical_offset == last
    assert s.get_max_offset_in_queue("T", 0) == 2
    s.shutdown()


def test_zeroed_size_with_published_records_after_refuses(tmp_path):
    """A zeroed TOTALSIZE followed by records published later is corruption, not a torn
    write: load refuses, naming the file and offset."""
    s = _store(tmp_path)
    rs = [s.put_message(_msg(i)) for i in range(3)]
    s.put_messages([_msg(10 + i) for i in range(2)])
    for i in range(3):
        s.put_message(_msg(20 + i))
    mid = rs[1].append.wrote_offset
    s.commitlog.queue.files[0].mm[mid : mid + 4] = bytes(4)
    _crash(s, tmp_path)
    clock = Clock()
    s = MessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path),
                                        mapped_file_size_commitlog=1 << 16,
                                        mapped_file_size_consume_queue=2000,
                                        max_hash_slot_num=100, max_index_num=400), clock)
    assert not s.load()
    assert f"offset {mid}" in str(s.load_error)
