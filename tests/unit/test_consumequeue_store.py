"""Specification of the store-wide consume-queue table and the dispatch step."""

from __future__ import annotations

import os

import pytest
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord, decode_record, encode_record
from rocketmq_emu.broker.consumequeue.store import ConsumeQueueStore, DispatchRequest, dispatch
from rocketmq_emu.broker.index.service import IndexService
from rocketmq_emu.broker.message import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    tags_code,
)

FILE_SIZE = 5 * 20


def make_store(tmp_path):
    return ConsumeQueueStore(str(tmp_path / "consumequeue"), FILE_SIZE)


def request(topic="T", qid=0, qoff=0, phy=0, size=100, keys=(), uniq=None, sys_flag=0):
    return DispatchRequest(topic, qid, phy, size, tags_code("TagA"), 1_700_000_000_000, qoff,
                           list(keys), uniq, sys_flag)


def test_find_or_create_returns_same_queue(tmp_path):
    """One ConsumeQueue object per (topic, queueId), created on first use."""
    s = make_store(tmp_path)
    assert s.find("T", 1) is None
    cq = s.find_or_create("T", 1)
    assert s.find_or_create("T", 1) is cq
    assert s.find("T", 1) is cq


def test_load_finds_existing_queues_and_ignores_junk(tmp_path):
    """Startup maps every topic/queueId directory and skips other entries."""
    s = make_store(tmp_path)
    for qid in range(3):
        for i in range(qid + 1):
            s.put("A", qid, i, i * 100, 100, 0)
    s.put("B", 0, 0, 999, 50, 0)
    s.shutdown()
    (tmp_path / "consumequeue" / "stray.txt").write_text("x")
    (tmp_path / "consumequeue" / "A" / "notaqueue").mkdir()
    again = make_store(tmp_path)
    assert again.load()
    assert again.recover() == 1049
    assert again.max_offsets() == {"A": {0: 1, 1: 2, 2: 3}, "B": {0: 1}}


def test_delete_topic_removes_queues_and_directory(tmp_path):
    """delete_topic drops every queue of the topic and its directory."""
    s = make_store(tmp_path)
    s.put("A", 0, 0, 0, 100, 0)
    s.put("A", 1, 0, 100, 100, 0)
    s.put("B", 0, 0, 200, 100, 0)
    assert s.delete_topic("A")
    assert not (tmp_path / "consumequeue" / "A").exists()
    assert s.topics() == ["B"]
    assert not s.delete_topic("A")


def test_store_wide_truncate_and_retention(tmp_path):
    """truncate_dirty and delete_expired_files apply to every queue."""
    s = make_store(tmp_path)
    for i in range(12):
        s.put("A" if i % 2 else "B", 0, i // 2, i * 100, 100, 0)
    s.truncate_dirty(1000)
    assert s.max_offsets() == {"B": {0: 5}, "A": {0: 5}}
    s2 = make_store(tmp_path / "other")
    for i in range(12):
        s2.put("C", 0, i, i * 100, 100, 0)
    assert s2.delete_expired_files(700) == 1
    assert s2.find("C", 0).min_offset == 7


def test_dispatch_writes_unit_and_index(tmp_path):
    """A normal record gets a consume-queue unit and index entries for keys and UNIQ_KEY."""
    s = make_store(tmp_path)
    index = IndexService(str(tmp_path / "index"), Clock(), hash_slot_num=8, index_num=32)
    dispatch(request(phy=0, keys=["k1", "k2"], uniq="U1"), s, index)
    dispatch(request(qoff=1, phy=100, keys=["k1"], uniq="U2"), s, index)
    assert s.find("T", 0).get_units(0, 10) == [(0, 100, tags_code("TagA")),
                                               (100, 100, tags_code("TagA"))]
    t = 1_700_000_000_000
    assert index.query("T", "k1", 32, 0, t).phy_offsets == [100, 0]
    assert index.query("T", "U1", 32, 0, t).phy_offsets == [0]


def test_dispatch_skips_half_and_rollback_records(tmp_path):
    """Prepared and rolled-back transaction records get no unit; rolled-back ones no index."""
    s = make_store(tmp_path)
    index = IndexService(str(tmp_path / "index"), Clock(), hash_slot_num=8, index_num=32)
    dispatch(request(phy=0, keys=["p"], sys_flag=TRANSACTION_PREPARED_TYPE), s, index)
    dispatch(request(phy=100, keys=["r"], sys_flag=TRANSACTION_ROLLBACK_TYPE), s, index)
    dispatch(request(phy=200, keys=["c"], sys_flag=TRANSACTION_COMMIT_TYPE), s, index)
    assert s.find("T", 0).get_units(0, 10) == [(200, 100, tags_code("TagA"))]
    t = 1_700_000_000_000
    assert index.query("T", "p", 32, 0, t).phy_offsets == [0]
    assert index.query("T", "r", 32, 0, t).phy_offsets == []


def test_dispatch_request_from_stored_record():
    """A decoded commitlog record yields its topic, queue, offsets, tags code, keys and UNIQ_KEY."""
    rec = MessageRecord(topic="T", body=b"hello", queue_id=3,
                        properties={"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U1"})
    rec.queue_offset, rec.physical_offset, rec.store_timestamp = 7, 4096, 1234
    stored = decode_record(encode_record(rec))
    req = DispatchRequest.from_record(stored)
    assert (req.topic, req.queue_id, req.consume_queue_offset, req.commitlog_offset) == \
        ("T", 3, 7, 4096)
    assert req.msg_size == len(encode_record(rec))
    assert req.tags_code == tags_code("TagA")
    assert (req.keys, req.uniq_key, req.store_timestamp) == (["k1", "k2"], "U1", 1234)
    assert DispatchRequest.from_record(stored, tags_code_override=99).tags_code == 99


def test_destroy_removes_root(tmp_path):
    """destroy deletes every queue and the consumequeue directory."""
    s = make_store(tmp_path)
    s.put("A", 0, 0, 0, 100, 0)
    s.destroy()
    assert not os.path.exists(tmp_path / "consumequeue")


def test_topic_that_would_escape_the_directory_is_refused(tmp_path):
    """Topic names with a path separator or dot-dot never become directories."""
    s = make_store(tmp_path)
    for bad in ("../x", "a/b", "..", ""):
        with pytest.raises(ValueError, match="consume queue directory"):
            s.find_or_create(bad, 0)
    assert not (tmp_path / "x").exists()
