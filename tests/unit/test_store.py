"""The MessageStore facade: put results, get_message statuses and next offsets (protocol.md
§3.2), batch limits, tags filtering, offset queries, listeners, schedule tagsCode,
transactions, index queries and config managers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord, decode_record
from rocketmq_emu.broker.message import (
    RMQ_SYS_SCHEDULE_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    java_string_hash,
)
from rocketmq_emu.broker.store import (
    GetMessageStatus,
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
)

T0 = 1_700_000_000.0


def make_store(tmp_path, **kw) -> MessageStore:
    clock = kw.pop("clock", None) or Clock()
    if clock.seconds() == 0:
        clock.advance(T0)
    reactor = kw.pop("reactor", None)
    cfg = MessageStoreConfig(
        store_path_root_dir=str(tmp_path), mapped_file_size_commitlog=kw.pop("cl_size", 8192),
        mapped_file_size_consume_queue=kw.pop("cq_size", 20 * 50), max_hash_slot_num=100,
        max_index_num=400, **kw,
    )
    store = MessageStore(cfg, clock, reactor)
    assert store.load()
    store.start()
    return store


@pytest.fixture
def store(tmp_path):
    s = make_store(tmp_path)
    yield s
    s.shutdown()


def msg(i=0, topic="T", qid=0, tags="a", **kw) -> MessageRecord:
    props = {"TAGS": tags, "UNIQ_KEY": f"U{i:04d}", "KEYS": f"key{i} shared"} if tags else {}
    props.update(kw.pop("props", {}))
    return MessageRecord(topic=topic, queue_id=qid, body=kw.pop("body", b"body-%d" % i),
                         properties=props, **kw)


def fill(store, n, **kw):
    return [store.put_message(msg(i, **kw)) for i in range(n)]


def test_put_returns_offsets_and_fired_flush_under_async(store):
    """PUT_OK carries offsets and an already-fired flushed Deferred under ASYNC_FLUSH."""
    r = store.put_message(msg())
    assert r.status is PutMessageStatus.PUT_OK
    assert (r.append.wrote_offset, r.append.queue_offset, r.append.msg_num) == (0, 0, 1)
    assert r.append.store_timestamp == int(T0 * 1000)
    fired = []
    r.flushed.addCallback(fired.append)
    assert fired == [PutMessageStatus.PUT_OK]


def test_body_over_max_message_size_is_illegal(tmp_path):
    """A body above maxMessageSize is MESSAGE_ILLEGAL and nothing is written."""
    s = make_store(tmp_path, max_message_size=100)
    assert s.put_message(msg(body=b"x" * 101)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert s.max_physical_offset == 0
    s.shutdown()


def test_properties_too_long(store):
    """Properties over 32767 bytes are PROPERTIES_SIZE_EXCEEDED."""
    r = store.put_message(msg(props={"BIG": "x" * 33000}))
    assert r.status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED


def test_put_after_shutdown_is_service_not_available(tmp_path):
    """A stopped store refuses puts."""
    s = make_store(tmp_path)
    s.shutdown()
    assert s.put_message(msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_get_found_returns_raw_records_and_next_offset(store):
    """FOUND returns the stored bytes and next = offset + units scanned."""
    puts = fill(store, 5)
    g = store.get_message("g", "T", 0, 1, 3)
    assert g.status is GetMessageStatus.FOUND
    assert g.next_begin_offset == 4 and (g.min_offset, g.max_offset) == (0, 5)
    assert g.queue_offsets == [1, 2, 3]
    assert g.messages[0] == store.read_raw(puts[1].append.wrote_offset)
    assert decode_record(g.messages[2]).body == b"body-3"


@pytest.mark.parametrize(
    "offset,status,next_offset",
    [
        (5, GetMessageStatus.OFFSET_OVERFLOW_ONE, 5),
        (9, GetMessageStatus.OFFSET_OVERFLOW_BADLY, 5),
    ],
)
def test_get_overflow_statuses(store, offset, status, next_offset):
    """offset == max is OVERFLOW_ONE (next = offset); above is OVERFLOW_BADLY (next = max)."""
    fill(store, 5)
    g = store.get_message("g", "T", 0, offset, 32)
    assert (g.status, g.next_begin_offset) == (status, next_offset)


def test_get_unknown_queue_is_no_matched_logic_queue(store):
    """A queue that never received a message is NO_MATCHED_LOGIC_QUEUE with next 0."""
    g = store.get_message("g", "Nope", 0, 7, 32)
    assert (g.status, g.next_begin_offset) == (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0)


def test_get_offset_too_small_after_retention(tmp_path):
    """Below the queue's min offset: OFFSET_TOO_SMALL with next = min."""
    clock = Clock()
    clock.advance(T0)
    s = make_store(tmp_path, clock=clock, cl_size=2048, cq_size=20 * 4)
    for i in range(40):
        s.put_message(msg(i, body=b"x" * 200))
        clock.advance(60)
    clock.advance(72 * 3600 - 60 * 20)
    assert s.clean_expired_files() > 0
    g = s.get_message("g", "T", 0, 0, 32)
    assert g.status is GetMessageStatus.OFFSET_TOO_SMALL
    assert g.next_begin_offset == g.min_offset > 0
    s.shutdown()


def test_tags_filter_all_filtered_is_no_matched_message(store):
    """Units filtered out by tagsCode are skipped; none left is NO_MATCHED_MESSAGE."""
    fill(store, 4, tags="a")
    want = java_string_hash("b")
    g = store.get_message("g", "T", 0, 0, 32, tags_filter=lambda code: code == want)
    assert g.status is GetMessageStatus.NO_MATCHED_MESSAGE
    assert g.next_begin_offset == 4


def test_tags_filter_keeps_matching(store):
    """Only units whose tagsCode matches are returned, with their queue offsets."""
    for i in range(6):
        store.put_message(msg(i, tags="a" if i % 2 else "b"))
    want = java_string_hash("a")
    g = store.get_message("g", "T", 0, 0, 32, tags_filter=lambda code: code == want)
    assert g.status is GetMessageStatus.FOUND and g.queue_offsets == [1, 3, 5]


def test_batch_limited_to_32_messages_in_memory(tmp_path):
    """In-memory pulls stop at 32 messages (maxTransferCountOnMessageInMemory)."""
    s = make_store(tmp_path, cl_size=1 << 16)
    fill(s, 40)
    g = s.get_message("g", "T", 0, 0, 64)
    assert len(g.messages) == 32 and g.next_begin_offset == 32
    s.shutdown()


def test_put_messages_batch(store):
    """A batch gets consecutive queue offsets and comma-joined offset msgIds."""
    store.put_message(msg(0))
    r = store.put_messages([msg(i) for i in range(1, 4)])
    assert r.status is PutMessageStatus.PUT_OK
    assert r.append.queue_offset == 1 and r.append.msg_num == 3
    assert len(r.append.msg_id.split(",")) == 3
    assert store.get_message("g", "T", 0, 0, 32).queue_offsets == [0, 1, 2, 3]


def test_prepared_transaction_is_not_consumable(store):
    """A PREPARED record is stored but gets no consume-queue unit; COMMIT does."""
    half = store.put_message(msg(0, sys_flag=TRANSACTION_PREPARED_TYPE))
    store.put_message(msg(1, sys_flag=TRANSACTION_COMMIT_TYPE))
    assert store.get_max_offset_in_queue("T", 0) == 1
    assert store.look_message_by_offset(half.append.wrote_offset).body == b"body-0"


def test_schedule_topic_tags_code_is_deliver_time(store):
    """SCHEDULE_TOPIC_XXXX units carry storeTimestamp + delay(level) as tagsCode."""
    r = store.put_message(msg(0, topic=RMQ_SYS_SCHEDULE_TOPIC, qid=2, props={"DELAY": "3"}))
    units = store.get_consume_queue_units(RMQ_SYS_SCHEDULE_TOPIC, 2, 0, 1)
    assert units[0][2] == r.append.store_timestamp + 10_000


def test_schedule_tags_code_follows_the_store_delay_table(tmp_path):
    """Without DELAY, the level is queueId + 1, timed by the store's own messageDelayLevel."""
    s = make_store(tmp_path, message_delay_level="2s 4s")
    r = s.put_message(msg(0, topic=RMQ_SYS_SCHEDULE_TOPIC, qid=1))
    units = s.get_consume_queue_units(RMQ_SYS_SCHEDULE_TOPIC, 1, 0, 1)
    s.shutdown()
    assert units[0][2] == r.append.store_timestamp + 4_000


def test_arrival_listener_sees_each_dispatch(store):
    """Arrival listeners get topic, queue, queue offset, tagsCode and the record."""
    seen = []
    store.add_arrival_listener(lambda *a: seen.append(a[:4]))
    fill(store, 2, qid=3)
    assert seen == [("T", 3, 0, java_string_hash("a")), ("T", 3, 1, java_string_hash("a"))]


def test_offset_by_time_and_earliest_time(tmp_path):
    """Queue offset by store time and the earliest message time follow the clock."""
    clock = Clock()
    clock.advance(T0)
    s = make_store(tmp_path, clock=clock)
    for i in range(5):
        s.put_message(msg(i))
        clock.advance(10)
    assert s.get_earliest_message_time("T", 0) == int(T0 * 1000)
    assert s.get_offset_in_queue_by_time("T", 0, int((T0 + 20) * 1000)) == 2
    assert s.get_message_store_timestamp("T", 0, 3) == int((T0 + 30) * 1000)
    s.shutdown()


def test_query_message_by_key_and_uniq_key(store):
    """query_message finds records by a KEYS token and by UNIQ_KEY."""
    fill(store, 5)
    found = store.query_message("T", "key3", 10, 0, 2**62)
    assert [decode_record(b).body for b in found] == [b"body-3"]
    assert len(store.query_message("T", "U0002", 10, 0, 2**62)) == 1
    assert len(store.query_message("T", "shared", 10, 0, 2**62)) == 5


def test_delete_topic_drops_queues_and_offsets(store):
    """delete_topic removes the consume queues; new puts restart at queue offset 0."""
    fill(store, 3)
    assert store.delete_topic("T")
    assert store.get_message("g", "T", 0, 0, 1).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    assert store.put_message(msg(9)).append.queue_offset == 0


def test_config_managers_are_attributes(store):
    """Config managers from broker/config_files.py hang off the store."""
    store.consumer_offsets.commit_offset("client", "g", "T", 0, 5)
    assert store.consumer_offsets.query_offset("g", "T", 0) == 5
    assert store.topic_config is not None and store.delay_offsets is not None
    assert store.subscription_groups is not None


def test_abort_file_exists_only_while_running(tmp_path):
    """The abort marker is created at start and removed by a clean shutdown."""
    s = make_store(tmp_path)
    assert (tmp_path / "abort").exists()
    s.shutdown()
    assert not (tmp_path / "abort").exists()
    assert (tmp_path / "checkpoint").stat().st_size == 4096


def test_units_pointing_at_deleted_commitlog_are_skipped(tmp_path):
    """Units whose commitlog file is gone are skipped (next offset moves past them);
    MESSAGE_WAS_REMOVING when nothing readable is left in the scan."""
    s = make_store(tmp_path, cl_size=2048)
    for i in range(12):
        s.put_message(msg(i, body=b"x" * 300))
    second = s.commitlog.queue.files[1].file_from_offset
    s.commitlog.queue.delete_files(lambda mf: mf.file_from_offset == 0)
    first_left = next(q for q, (off, _s, _t) in
                      enumerate(s.get_consume_queue_units("T", 0, 0, 12)) if off >= second)
    g = s.get_message("g", "T", 0, 0, 1)
    assert g.status is GetMessageStatus.FOUND and g.queue_offsets == [first_left]
    s.commitlog.queue.delete_files(lambda mf: True, keep_last=False)
    g = s.get_message("g", "T", 0, 0, 32)
    assert g.status is GetMessageStatus.MESSAGE_WAS_REMOVING
    assert g.next_begin_offset == 12
    s.shutdown()


def _read_only(monkeypatch):
    import errno
    import os

    from rocketmq_emu.broker.commitlog import mapped_file as mf_mod

    real_open = os.open

    def read_only(path, flags, mode=0o777):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EROFS, "Read-only file system")
        return real_open(path, flags, mode)

    monkeypatch.setattr(mf_mod.os, "open", read_only)


def test_unwritable_directory_fails_commitlog_roll_naming_the_file(tmp_path, monkeypatch):
    """When the next commitlog file cannot be created (read-only directory) the put fails
    with CREATE_MAPEDFILE_FAILED and an error naming the file; earlier puts stay readable."""
    s = make_store(tmp_path, cl_size=2048)
    ok = [s.put_message(msg(i, body=b"x" * 300)) for i in range(2)]
    _read_only(monkeypatch)
    results = [s.put_message(msg(i, body=b"x" * 300)) for i in range(10)]
    failed = [r for r in results if r.status is not PutMessageStatus.PUT_OK]
    assert failed and failed[0].status is PutMessageStatus.CREATE_MAPEDFILE_FAILED
    assert "Read-only file system" in failed[0].append.error
    assert "00000000000000002048" in failed[0].append.error
    monkeypatch.undo()
    for r in ok + [r for r in results if r.ok]:
        assert s.look_message_by_offset(r.append.wrote_offset) is not None
    s.shutdown()


def test_consume_queue_file_failure_keeps_put_and_catches_up(tmp_path, monkeypatch):
    """A consume-queue file that cannot be created does not lose the put: it is in the
    commitlog, and dispatch catches up once files can be written again."""
    s = make_store(tmp_path)
    _read_only(monkeypatch)
    r = s.put_message(msg(0, qid=5))
    assert r.status is PutMessageStatus.PUT_OK
    assert s.get_max_offset_in_queue("T", 5) == 0
    monkeypatch.undo()
    s.put_message(msg(1, qid=5))
    g = s.get_message("g", "T", 5, 0, 32)
    assert [decode_record(m).body for m in g.messages] == [b"body-0", b"body-1"]
    s.shutdown()


@settings(max_examples=25, deadline=None)
@given(
    plan=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["a", "b", ""]),
                            st.integers(0, 300)), min_size=1, max_size=60),
    want=st.sampled_from([None, "a", "b"]),
    batch=st.integers(1, 40),
)
def test_pulling_a_queue_to_the_end_yields_exactly_its_messages(tmp_path_factory, plan, want,
                                                                 batch):
    """Pulling from 0 with next_begin_offset until OFFSET_OVERFLOW_ONE returns each matching
    message of the queue once, in order, across file rolls."""
    s = make_store(tmp_path_factory.mktemp("s"), cl_size=4096, cq_size=20 * 7)
    for i, (qid, tag, size) in enumerate(plan):
        s.put_message(msg(i, qid=qid, tags=tag or None, body=b"%d:" % i + b"x" * size))
    code = java_string_hash(want) if want else None
    flt = None if want is None else (lambda c: c == code)
    for qid in range(3):
        expected = [i for i, (q, tag, _) in enumerate(plan) if q == qid and (
            want is None or tag == want)]
        got, offset = [], 0
        for _ in range(200):
            g = s.get_message("g", "T", qid, offset, batch, tags_filter=flt)
            if g.status in (GetMessageStatus.OFFSET_OVERFLOW_ONE,
                            GetMessageStatus.NO_MATCHED_LOGIC_QUEUE):
                break
            got += [int(decode_record(m).body.split(b":")[0]) for m in g.messages]
            assert g.next_begin_offset > offset
            offset = g.next_begin_offset
        assert got == expected
    s.shutdown()


def test_pull_spanning_commitlog_files_returns_the_stored_bytes(tmp_path):
    """One pull whose records lie in several commitlog files returns each record's bytes."""
    s = make_store(tmp_path, cl_size=2048)
    fill(s, 12, body=b"x" * 300)
    g = s.get_message("g", "T", 0, 0, 32)
    assert g.status is GetMessageStatus.FOUND and len(g.messages) == 12
    assert len({off // 2048 for off in g.commitlog_offsets}) > 2
    assert g.messages == [s.read_raw(off) for off in g.commitlog_offsets]
    s.shutdown()


def test_batch_in_disk_limited_to_8_messages(tmp_path):
    """Data beyond the in-memory ratio is "in disk": 8 a pull (maxTransferCountOnMessageInDisk)."""
    s = make_store(tmp_path, cl_size=1 << 16, access_message_in_memory_max_ratio=0)
    fill(s, 20)
    g = s.get_message("g", "T", 0, 0, 32)
    assert len(g.messages) == 8 and g.next_begin_offset == 8
    s.shutdown()


def test_batch_stops_before_the_byte_limit(tmp_path):
    """A message that would take the batch over maxTransferBytesOnMessageInMemory waits."""
    s = make_store(tmp_path, cl_size=1 << 16, max_transfer_bytes_on_message_in_memory=1000)
    size = fill(s, 10, body=b"x" * 200)[0].append.wrote_bytes
    g = s.get_message("g", "T", 0, 0, 32)
    assert len(g.messages) == 1000 // size and g.next_begin_offset == 1000 // size
    s.shutdown()


def test_first_message_is_returned_whatever_its_size(tmp_path):
    """isTheBatchFull never stops an empty batch: one message over the byte limit comes back."""
    s = make_store(tmp_path, cl_size=1 << 16, max_transfer_bytes_on_message_in_memory=10)
    fill(s, 3)
    g = s.get_message("g", "T", 0, 0, 32)
    assert len(g.messages) == 1 and g.next_begin_offset == 1
    s.shutdown()


def test_filtered_scan_stops_after_800_units(tmp_path):
    """With nothing matching, a pull scans 800 units (maxFilterMessageCount) across consume
    queue files and its next offset is just past them."""
    s = make_store(tmp_path, cl_size=1 << 20)
    fill(s, 900)
    g = s.get_message("g", "T", 0, 5, 32, tags_filter=lambda code: False)
    assert g.status is GetMessageStatus.NO_MATCHED_MESSAGE and g.next_begin_offset == 805
    s.shutdown()
