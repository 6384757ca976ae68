"""The C put path (``rocketmq_emu.broker._native._store``) against the Python one: the same records put
into two stores (one per path, one clock each, advanced alike) leave identical commitlog,
consume-queue and index bytes, identical results, record fields and listener calls; every
case the C path does not handle reaches the Python path untouched."""

from __future__ import annotations

import copy
import gc
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet.task import Clock

from rocketmq_emu.broker import _native
from rocketmq_emu.broker.commitlog.native_put import bind_native_put, native_put_active
from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.index import index_file
from rocketmq_emu.broker.message import (
    RMQ_SYS_SCHEDULE_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig, PutMessageStatus

pytestmark = pytest.mark.skipif(_native.store is None, reason="C extension not built")

T0 = 1_700_000_000.0
TOPICS = ["T", "Topic-2", "主题", "x" * 200]  # V1, V1, non-ASCII, V2 magic (over 127 bytes)
V4 = ("10.0.0.7", 53211)
V6 = ("fe80::1", 7)


def make_store(root, *, native: bool, cl_size=8192, cq_units=8, reactor=None, **kw):
    clock = Clock()
    clock.advance(T0)
    cfg = MessageStoreConfig(
        store_path_root_dir=str(root), mapped_file_size_commitlog=cl_size,
        mapped_file_size_consume_queue=20 * cq_units, max_hash_slot_num=64, max_index_num=256,
        **kw)
    s = MessageStore(cfg, clock, reactor)
    if not native:
        vars(s).pop("put_message", None)  # the class's Python put_message
    assert native_put_active(s) is native
    assert s.load()
    s.start()
    return s


def tree_bytes(root) -> dict[str, bytes]:
    """Every commitlog, consume-queue and index file under ``root``."""
    out = {}
    for sub in ("commitlog", "consumequeue", "index"):
        base = os.path.join(str(root), sub)
        for dirpath, _, names in os.walk(base):
            for n in names:
                p = os.path.join(dirpath, n)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, str(root))] = f.read()
    return out


STORE_FIELDS = ("queue_offset", "physical_offset", "store_timestamp", "body_crc", "total_size",
                "magic_code", "sys_flag")


def outcome(res, rec):
    """What a put returned and what it set on the record."""
    a = res.append
    head = (res.status, None if a is None else tuple(a[:7]) + (a[8],), res[2] is None)
    return head, tuple(getattr(rec, f) for f in STORE_FIELDS)


text = st.text(max_size=12)
props_st = st.dictionaries(text.filter(bool), text, max_size=4)


@st.composite
def records(draw):
    props = dict(draw(props_st))
    if draw(st.booleans()):
        props["TAGS"] = draw(st.sampled_from(["TagA", "", "标签", "a b", "\U0001F600"]))
    if draw(st.booleans()):
        props["KEYS"] = draw(st.sampled_from(["k1", "k1 k2", "キー"]))
    if draw(st.integers(0, 9)) == 0:
        props["NUM"] = draw(st.integers())  # not a str: the Python path's formatter
    rec = MessageRecord(
        topic=draw(st.sampled_from(TOPICS)),
        body=draw(st.binary(max_size=700)),
        queue_id=draw(st.integers(0, 2)),
        flag=draw(st.integers(-(2**31), 2**31 - 1)),
        properties=props,
        sys_flag=draw(st.sampled_from([0, 1, 0x30, TRANSACTION_COMMIT_TYPE,
                                       TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE])),
        born_timestamp=draw(st.integers(0, 2**41)),
        born_host=draw(st.sampled_from([V4, V4, V4, V6])),
        store_host=draw(st.sampled_from([("10.0.0.1", 10911), ("10.0.0.1", 10911), V6])),
        reconsume_times=draw(st.integers(0, 16)),
        prepared_transaction_offset=draw(st.integers(0, 2**40)),
    )
    if draw(st.integers(0, 3)) == 0 and all(isinstance(v, str) for v in props.values()):
        rec.properties_str = "\u0002".join(f"{k}\u0001{v}" for k, v in props.items())
    return rec


def put_both(tmp_path, recs, steps, *, listeners=True, **kw):
    """Put copies of ``recs`` into a native and a Python store (C or Python put path and
    index writer), advancing both clocks by ``steps``; returns what each left: (outcomes,
    listener calls, queue offsets, files)."""
    results = {}
    saved = index_file.NATIVE
    for native in (True, False):
        index_file.NATIVE = saved if native else None
        try:
            results[native] = _put_all(tmp_path, recs, steps, native, listeners, **kw)
        finally:
            index_file.NATIVE = saved
    return results[True], results[False]


def _put_all(tmp_path, recs, steps, native, listeners, **kw):
    root = tmp_path / ("native" if native else "python")
    s = make_store(root, native=native, **kw)
    calls = []
    if listeners:
        s.add_arrival_listener(lambda t, q, o, tags, r, calls=calls: calls.append(
            (t, q, o, tags, r.physical_offset)))
    outs = []
    for rec, step in zip(recs, steps, strict=True):
        s.clock.advance(step)
        if isinstance(rec, list):  # a put_messages batch (Python either way)
            res = s.put_messages([copy.copy(x) for x in rec])
            outs.append((res.status, None if res.append is None else tuple(res.append[:8])))
            continue
        r = copy.copy(rec)
        outs.append(outcome(s.put_message(r), r))
    s._drain_index()
    table = dict(s.commitlog.topic_queue_table)
    s.shutdown()
    return outs, calls, table, tree_bytes(root)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_native_and_python_paths_write_identical_stores(tmp_path_factory, data):
    """Random records (topics, bodies, properties, hosts, transactions, rolls) give the same
    bytes, results, record fields, queue offsets and listener calls on both paths."""
    recs = data.draw(st.lists(records(), min_size=1, max_size=40))
    steps = data.draw(st.lists(st.sampled_from([0, 0.0004, 0.001, 1.5]), min_size=len(recs),
                               max_size=len(recs)))
    native, python = put_both(tmp_path_factory.mktemp("s"), recs, steps)
    assert native[0] == python[0]
    assert native[1] == python[1]
    assert native[2] == python[2]
    assert native[3].keys() == python[3].keys()
    for name, content in native[3].items():
        assert content == python[3][name], name


def _many_props(i):
    return {f"p{k}": f"v{k}-{i}-é" for k in range(40)}


@pytest.mark.parametrize("make", [
    lambda i: MessageRecord(topic="T", body=b"b" * i, properties=_many_props(i)),
    lambda i: MessageRecord(topic="T", body=b"", properties={"TAGS": "t", "big": "x" * (
        32760 if i == 3 else 10)}),
    lambda i: MessageRecord(topic="主题", body=bytes(range(256)) * 3, queue_id=i % 3,
                            properties={"TAGS": "标签\U0001F600", "KEYS": "ключ"}),
], ids=["40-properties", "properties-over-32767", "non-ascii"])
def test_identical_bytes_for_unusual_records(tmp_path, make):
    """More properties than the C path collects at once, a properties string over the
    limit, non-ASCII topic / tags / keys: the same files and results on both paths."""
    recs = [make(i) for i in range(8)]
    native, python = put_both(tmp_path, recs, [0.001] * len(recs), cl_size=1 << 17)
    assert native == python


@pytest.mark.parametrize("listeners", [False, True], ids=["batch-stamps", "stamped-records"])
def test_identical_index_with_batches_and_file_rolls(tmp_path, listeners):
    """Single puts mixed with put_messages batches (queued whole without listeners, record
    by record with) and several-token KEYS, over enough keys to roll index files: the same
    index files on both paths."""
    recs = []
    for i in range(150):
        keys = "a b" if i % 17 == 0 else f"k{i % 23}"
        props = {"UNIQ_KEY": f"7F0000010B2C18B4AAC2{i:012X}", "KEYS": keys, "TAGS": "t"}
        if i % 11 == 0:
            recs.append([MessageRecord(topic="B", body=b"x", queue_id=1,
                                       properties=dict(props, UNIQ_KEY=f"{i}-{k}"))
                         for k in range(3)])
        else:
            recs.append(MessageRecord(topic="T", body=b"y" * i, queue_id=i % 2,
                                      properties=props))
    native, python = put_both(tmp_path, recs, [0.37] * len(recs), listeners=listeners,
                              cl_size=1 << 20, cq_units=1000)
    assert native == python
    assert sum(name.startswith("index") for name in native[3]) >= 2


def plain(i, topic="T", qid=0, **kw):
    props = {"UNIQ_KEY": f"U{i:06d}", "TAGS": "TagA", "KEYS": f"k{i}"}
    return MessageRecord(topic=topic, body=b"b%d" % i * 30, queue_id=qid, properties=props,
                         born_host=V4, store_host=("10.0.0.1", 10911), **kw)


def counting_store(tmp_path, **kw):
    """A native store whose fallback (the Python put_message) counts its calls."""
    s = make_store(tmp_path, native=True, **kw)
    py_put = MessageStore.put_message.__get__(s)
    seen = []

    def fallback(rec):
        seen.append(rec)
        return py_put(rec)

    assert bind_native_put(s, fallback)
    return s, seen


def test_plain_puts_take_the_c_path(tmp_path):
    """After the first put of a topic/queue/host pair fills the caches, plain puts never call
    the Python path."""
    s, seen = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000)
    for i in range(50):
        assert s.put_message(plain(i)).status is PutMessageStatus.PUT_OK
    assert len(seen) == 1
    s.shutdown()


@pytest.mark.parametrize("change", [
    {"born_host": V6}, {"topic": RMQ_SYS_SCHEDULE_TOPIC},
    {"sys_flag": TRANSACTION_PREPARED_TYPE}, {"sys_flag": TRANSACTION_ROLLBACK_TYPE},
    {"body": bytearray(b"x" * 10)}, {"body": b"x" * (1 << 21)}, {"properties": {"N": 1}},
    {"queue_id": 2**31}, {"flag": "1"},
])
def test_cases_outside_the_plain_one_go_to_python(tmp_path, change):
    """IPv6, the schedule topic, PREPARED/ROLLBACK, a non-bytes or oversized body, non-str
    properties and out-of-range fields are put by the Python path."""
    s, seen = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000)
    s.put_message(plain(0))
    rec = plain(1)
    for k, v in change.items():
        setattr(rec, k, v)
    before = len(seen)
    try:
        s.put_message(rec)
    except Exception:  # noqa: S110 - the Python path's own verdict, whatever it is
        pass
    assert len(seen) == before + 1 and seen[-1] is rec
    s.shutdown()


def test_file_roll_goes_to_python_then_back_to_c(tmp_path):
    """A record that needs the BLANK filler and a new file is put by Python; the next by C."""
    s, seen = counting_store(tmp_path, cl_size=4096, cq_units=1000)
    n = 0
    while len(s.commitlog.queue.files) < 2:
        s.put_message(plain(n))
        n += 1
    assert len(seen) == 2  # the first put and the roll
    s.put_message(plain(n))
    assert len(seen) == 2
    s.shutdown()


def test_listener_failure_is_logged_and_the_next_listener_runs(tmp_path, caplog):
    """An arrival listener raising an Exception is logged; the put succeeds, later ones run."""
    s, seen = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000)
    s.put_message(plain(0))
    got = []

    def bad(*a):
        raise ValueError("boom")

    s.add_arrival_listener(bad)
    s.add_arrival_listener(lambda t, q, o, tags, r: got.append(o))
    assert s.put_message(plain(1)).ok
    assert got == [1] and len(seen) == 1
    assert "arrival listener" in caplog.text and "boom" in caplog.text
    s.shutdown()


@pytest.mark.parametrize("native", [True, False])
def test_message_stored_by_a_listener_keeps_the_outer_one_indexed(tmp_path, native):
    """A listener storing a message while another is dispatched: both are found by key (the
    outer record is queued for the index before the listeners run; C and Python paths)."""
    s = make_store(tmp_path, native=native, cl_size=1 << 20, cq_units=1000)
    assert s.put_message(plain(0, topic="A")).ok and s.put_message(plain(0, topic="B")).ok

    def inner(topic, qid, qoff, tags, rec):
        if rec.properties.get("KEYS") == "outer":
            s.put_message(plain(1, topic="A"))
    s.add_arrival_listener(inner, topics={"B"})
    outer = plain(2, topic="B")
    outer.properties["KEYS"] = "outer"
    assert s.put_message(outer).ok
    offsets = s.query_message_offsets("B", "outer", 10, 0, 2**62).phy_offsets
    assert offsets == [outer.physical_offset]
    assert len(s.query_message_offsets("A", "k1", 10, 0, 2**62).phy_offsets) == 1
    s.shutdown()


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("kind", [set, dict, list])
def test_gated_listener_sees_only_the_topics_in_its_live_container(tmp_path, native, kind):
    """A listener added with ``topics`` is called only for records whose topic is in that
    container at the time of the put (a set, a dict or any container; C and Python paths)."""
    s = make_store(tmp_path, native=native, cl_size=1 << 20, cq_units=1000)
    topics = kind()
    got = []
    s.add_arrival_listener(lambda t, q, o, tags, r: got.append((t, o)), topics=topics)
    s.add_arrival_listener(lambda t, q, o, tags, r: got.append(("all", o)))
    assert s.put_message(plain(0, topic="A")).ok
    assert got == [("all", 0)]
    got.clear()
    if kind is list:
        topics.append("A")
    elif kind is dict:
        topics["A"] = 1
    else:
        topics.add("A")
    assert s.put_message(plain(1, topic="A")).ok
    assert s.put_message(plain(0, topic="B")).ok
    assert got == [("A", 1), ("all", 1), ("all", 0)]
    s.shutdown()


def test_listener_base_exception_propagates(tmp_path):
    """A BaseException from a listener leaves put_message, as on the Python path."""
    s, _ = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000)
    s.put_message(plain(0))

    def stop(*a):
        raise KeyboardInterrupt

    s.add_arrival_listener(stop)
    with pytest.raises(KeyboardInterrupt):
        s.put_message(plain(1))
    s.remove_arrival_listener(stop)
    s.shutdown()


def test_index_drain_is_scheduled_on_the_reactor(tmp_path):
    """With a reactor, the C path schedules the index drain for the next turn; it runs."""
    reactor = Clock()
    s, seen = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000, reactor=reactor)
    s.put_message(plain(0))
    reactor.advance(0)
    s.put_message(plain(1))
    assert len(seen) == 1 and s._index_call is not None and len(s._index_pending) == 1
    reactor.advance(0)
    assert s._index_pending == []
    offs = s.query_message_offsets("T", "k1", 10, 0, 2**62).phy_offsets
    assert offs == [s.get_consume_queue_units("T", 0, 1, 1)[0][0]]
    s.shutdown()


def test_index_drained_inline_past_the_limit(tmp_path):
    """Past ``index_drain_limit`` queued records, the C path drains the index inline."""
    s, _ = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000)
    s.index_drain_limit = 3
    for i in range(3):
        s.put_message(plain(i))
    assert s._index_pending == []
    s.shutdown()


def test_sync_flush_put_waits_for_the_flush(tmp_path):
    """Under SYNC_FLUSH the C path hands back the flush service's Deferred."""
    reactor = Clock()
    s, seen = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000, reactor=reactor,
                             flush_disk_type="SYNC_FLUSH")
    s.put_message(plain(0))
    r = s.put_message(plain(1))
    assert len(seen) == 1
    fired = []
    r.flushed.addCallback(fired.append)
    assert fired == []
    reactor.advance(0)
    assert fired == [PutMessageStatus.PUT_OK]
    s.shutdown()


def test_async_flush_soon_call_armed_at_the_same_put(tmp_path):
    """With a reactor under ASYNC_FLUSH, the put that leaves max-dirty bytes unflushed arms
    the flush for the next turn, on both paths; the flush then runs."""
    armed = {}
    for native in (True, False):
        reactor = Clock()
        s = make_store(tmp_path / str(native), native=native, cl_size=1 << 20,
                       cq_units=1000, reactor=reactor, flush_commit_log_max_dirty_pages=1)
        for i in range(100):
            s.put_message(plain(i))
            if s.flush_service._soon_call is not None:
                armed[native] = i
                break
        reactor.advance(0)
        assert s.flush_service._soon_call is None
        assert s.commitlog.queue.flushed_where == s.commitlog.max_offset
        s.shutdown()
    assert armed[True] == armed[False] > 5


def test_not_running_store_refuses_through_python(tmp_path):
    """A store that is not running answers SERVICE_NOT_AVAILABLE (Python path)."""
    s, seen = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000)
    s.put_message(plain(0))
    s.shutdown()
    assert s.put_message(plain(1)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert len(seen) == 2


def test_delete_topic_then_put_starts_a_new_queue(tmp_path):
    """After delete_topic, the C path does not write into the deleted consume queue: the
    next puts start again at queue offset 0 in a new one."""
    s, seen = counting_store(tmp_path, cl_size=1 << 20, cq_units=1000)
    for i in range(5):
        s.put_message(plain(i))
    assert s.delete_topic("T")
    offsets = [s.put_message(plain(i)).append.queue_offset for i in range(5, 8)]
    assert offsets == [0, 1, 2]
    units = s.get_consume_queue_units("T", 0, 0, 10)
    assert [u[0] for u in units] == [s.commitlog.max_offset - 3 * units[0][1] + k * units[0][1]
                                     for k in range(3)]
    assert len(seen) == 2  # the first put of each queue
    s.shutdown()


def test_puts_leak_no_references(tmp_path):
    """Many C puts leave the shared body, topic and host objects' reference counts as
    they were once the caches are filled (each put's new values belong to its record)."""
    s, _ = counting_store(tmp_path, cl_size=1 << 22, cq_units=100_000)
    body, topic, host = b"z" * 100, "LeakTopic", ("10.0.0.9", 1)
    recs = [MessageRecord(topic=topic, body=body, properties={"TAGS": "a"}, born_host=host,
                          store_host=host) for _ in range(2000)]
    s.put_message(recs[0])  # Python path: fills the encoder's caches
    s.put_message(recs[1])  # C path: fills its own (they keep a reference to topic and host)
    gc.collect()
    counts = [sys.getrefcount(o) for o in (body, topic, host)]
    for r in recs[2:]:
        assert s.put_message(r).ok
    gc.collect()
    assert [sys.getrefcount(o) for o in (body, topic, host)] == counts
    s.shutdown()
