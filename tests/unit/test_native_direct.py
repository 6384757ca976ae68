"""The C send path's direct put (``broker/_native/store_direct.h``): a plain SEND_MESSAGE_V2
on a known topic and queue is stored from the request's bytes, with its index entries queued
as hashes in an ``IndexRun``, and leaves the same responses, commitlog and consume-queue bytes,
index files and stats as the record path (``Sender.direct = False``); it steps aside for
anything an arrival listener, a replaced ``put_message`` or an odd property must see."""

from __future__ import annotations

import functools
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_send_fused import BASE, Broker, json_frame

import rocketmq_emu.broker.processors.send_fast as send_fast
from rocketmq_emu.broker import _native
from rocketmq_emu.broker.commitlog.mapped_file import MappedFileError
from rocketmq_emu.broker.commitlog.record import MessageRecord, decode_record
from rocketmq_emu.broker.index.index_file import build_key, index_key_hash
from rocketmq_emu.broker.message import java_string_hash
from rocketmq_emu.broker.processors.batch_codec import BatchMessage, encode_batch

pytestmark = pytest.mark.skipif(
    send_fast.native_send is None or _native.store is None,
    reason="rocketmq_emu.broker._native._send or broker._native._store not built")

SOME = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
CLUSTER = "CLUSTER\x01DefaultCluster"  # what the broker stores for CLUSTER
UNIQ = "AC11000100002A9F00000000000000"  # + 2 digits: a Java client's UNIQ_KEY
EVER = 2**62  # an end time after every store time


def sender(b: Broker):
    """The C ``Sender`` behind the broker's fused 310 handler."""
    return b.dispatcher._fused[310][0].native


def make(tmp_path, *, direct: bool = True, **kw) -> Broker:
    b = Broker(tmp_path, fused=True, **kw)
    assert sender(b) is not None
    sender(b).direct = direct
    return b


def send(topic: str = "T1", queue_id: int = 0, props: str | None = "TAGS\x01a",
         opaque: int = 7, body: bytes = b"body", **fields) -> bytes:
    """A plain 310 frame; ``props`` is the raw properties field (None: no field at all)."""
    ext = dict(BASE, b=topic, e=str(queue_id), **fields)
    if props is not None:
        ext["i"] = props
    return json_frame(ext, body, opaque=opaque)


def keyed(n: int, topic: str = "T1", queue_id: int = 0, body: bytes | None = None,
          **kw) -> bytes:
    """Message ``n`` (body ``m<n>`` by default) with one KEYS token and an UNIQ_KEY, both
    derived from ``n``."""
    return send(topic, queue_id, f"TAGS\x01t\x02KEYS\x01key{n}\x02UNIQ_KEY\x01{UNIQ}{n:02d}",
                opaque=n, body=b"m%d" % n if body is None else body, **kw)


def warm(b: Broker, pairs=(("T1", 0),)) -> None:
    """Send each (topic, queue) its first message (that one takes the Python path: it creates
    the topic and the queue), then drain the index so the pending list starts empty."""
    for topic, qid in pairs:
        b.feed(send(topic, qid, opaque=1000))
    b.ctx.store._drain_index()


def kinds(store) -> list[str]:
    return [type(item).__name__ for item in store._index_pending]


def offsets(store, topic: str = "T1", queue_id: int = 0) -> list[int]:
    """Commitlog offsets of the queue's messages, in queue order."""
    return [u[0] for u in store.get_consume_queue_units(topic, queue_id, 0, 1000)]


# --- the direct put is taken --------------------------------------------------------------------

@pytest.mark.parametrize("direct, kind", [(True, "IndexRun"), (False, "MessageRecord")])
def test_plain_request_queues_an_index_run(tmp_path, direct, kind):
    """Plain keyed requests on a known queue leave one IndexRun (no MessageRecord) on the index
    queue; with ``Sender.direct`` off they leave MessageRecords."""
    b = make(tmp_path, direct=direct)
    warm(b)
    b.feed(b"".join(keyed(n) for n in range(3)))
    assert set(kinds(b.ctx.store)) == {kind}
    if direct:
        (run,) = b.ctx.store._index_pending
        assert run.messages() == 3
    assert b.transport.value().count(b'"code":0,') == 4
    b.ctx.store.shutdown()


def test_first_message_of_a_queue_takes_the_record_path(tmp_path):
    """The first put to a new queue goes through Python (a MessageRecord), the next ones direct."""
    b = make(tmp_path)
    warm(b)
    b.feed(keyed(1, queue_id=2) + keyed(2, queue_id=2))
    assert kinds(b.ctx.store) == ["MessageRecord", "IndexRun"]
    b.ctx.store.shutdown()


def pieces(n: int) -> str:
    """``n`` distinct property pieces, the last one KEYS."""
    return "\x02".join([f"p{i}\x01v" for i in range(n - 1)] + ["KEYS\x01k"])


@pytest.mark.parametrize("props, kind", [
    ("KEYS\x01k", "IndexRun"),
    ("KEYS\x01a b", "MessageRecord"),                      # several keys
    ("TAGS\x01t\u00e9\x02KEYS\x01k", "MessageRecord"),     # non-ASCII value
    ("n\u00e9\x01v\x02KEYS\x01k", "MessageRecord"),        # non-ASCII name
    ("TAGS\x01\u00e9\x02TAGS\x01a\x02KEYS\x01k", "MessageRecord"),  # replaced, still declined
    (pieces(31), "IndexRun"),                             # 32 with CLUSTER
    (pieces(32), "MessageRecord"),                        # 33 with CLUSTER
    (pieces(32) + "\x02CLUSTER\x01mine", "MessageRecord"),
    (pieces(31) + "\x02CLUSTER\x01mine", "IndexRun"),     # CLUSTER replaced in place
    (pieces(31) + "\x02WAIT\x01true\x02p0\x01w", "IndexRun"),  # WAIT and duplicates not counted
])
def test_which_properties_the_direct_put_takes(tmp_path, props, kind):
    """ASCII, at most 32 distinct stored pieces (CLUSTER included), KEYS of one token: the
    direct put (an IndexRun); anything else: the record path (a MessageRecord)."""
    b = make(tmp_path)
    warm(b)
    b.feed(send(props=props))
    assert kinds(b.ctx.store) == [kind]
    b.ctx.store.shutdown()


# --- direct and record path leave the same state ------------------------------------------------

TOPIC_QUEUES = [("T1", 0), ("T1", 1), ("T1", 3), ("T2", 0), ("T2", 2)]


def compare(tmp_path, frames: list[bytes], **kw):
    """Outcomes (responses, commitlog, consume queues, index files, stats) of the direct and
    the record path fed the same warm-up and frames, and the direct broker's pending kinds."""
    outcomes = []
    for name, direct in (("direct", True), ("record", False)):
        b = make(tmp_path / name, direct=direct, **kw)
        warm(b, TOPIC_QUEUES)
        for data in frames:
            b.feed(data)
        if direct:
            pending = kinds(b.ctx.store)
        outcomes.append(b.outcome())
    return outcomes[0], outcomes[1], pending


def near_limit(stored: int) -> str:
    """A properties field whose stored form (with CLUSTER appended) is ``stored`` bytes."""
    filler = stored - len("P\x01") - len("\x02" + CLUSTER)
    return "KEYS\x01big\x02P\x01" + "x" * (filler - len("KEYS\x01big\x02"))


PROPERTY_CASES = {
    "duplicates": "TAGS\x01a\x02KEYS\x01k1\x02TAGS\x01b\x02KEYS\x01k2",
    "wait": "WAIT\x01true\x02KEYS\x01k\x02WAIT\x01false",
    "wait only": "WAIT\x01true",
    "client cluster": "CLUSTER\x01mine\x02TAGS\x01t\x02KEYS\x01k",
    "client cluster last": "KEYS\x01k\x02CLUSTER\x01mine",
    "keys equal uniq": f"KEYS\x01{UNIQ}01\x02UNIQ_KEY\x01{UNIQ}01",
    "uniq only": f"UNIQ_KEY\x01{UNIQ}02",
    "keys with spaces": "KEYS\x01a b  c\x02UNIQ_KEY\x01u",
    "keys of a space": "KEYS\x01 ",
    "no properties": None,
    "empty field": "",
    "empty values": "TAGS\x01\x02KEYS\x01\x02UNIQ_KEY\x01\x02\x01v\x02\x02",
    "odd pieces": "\x01v\x02k\x01\x02K\x01v\x01w\x02noseparator\x02KEYS\x01k",
    "non-ASCII value": "TAGS\x01t\u00e9\x02KEYS\x01k\u00e9",
    "non-ASCII name": "\u4e2d\x01\u6587\x02KEYS\x01k",
    "non-ASCII dropped": "\u4e2d\x01\x02KEYS\x01k",
    "no tags": "KEYS\x01k\x02UNIQ_KEY\x01u",
    "control characters": "KEYS\x01a\x00b\x02TAGS\x01\x7f\x02A\x01\x01\x01\x02\x02\x02",
    "value of a separator": "KEYS\x01\x01\x02UNIQ_KEY\x01\t",
    "tags hash negative": "TAGS\x01" + "z" * 50 + "\x02KEYS\x01k",  # hashCode < 0
    "32 pieces": pieces(31),
    "33 pieces": pieces(32),
    "40 pieces": pieces(40),
    "32766 bytes": near_limit(32766),
    "32767 bytes": near_limit(32767),
    "32768 bytes": near_limit(32768),
}


@pytest.mark.parametrize("props", PROPERTY_CASES.values(), ids=PROPERTY_CASES.keys())
def test_property_forms_give_identical_outcomes(tmp_path, props):
    """Each properties form stored alike by the direct and the record path, on every queue."""
    frames = [send(topic, qid, props, opaque=n, body=b"b%d" % n)
              for n, (topic, qid) in enumerate(TOPIC_QUEUES * 2)]
    direct, record, _ = compare(tmp_path, frames)
    assert direct == record


def test_comparison_sees_the_direct_put(tmp_path):
    """The comparison's direct broker does take the direct put for plain keyed requests (so
    the equalities above compare two different paths)."""
    frames = [keyed(n, topic, qid) for n, (topic, qid) in enumerate(TOPIC_QUEUES)]
    direct, record, pending = compare(tmp_path, frames)
    assert pending == ["IndexRun"]
    assert direct == record


NAMES = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "CLUSTER", "a", "b", "",
                         "n\u00e9", "p1", "DELAY", "TRAN_MSG"])
VALUES = st.sampled_from(["x", "k1", "k1 k2", "", " ", "v\u00e9", "true", UNIQ + "07",
                          "a\x01b", "z" * 50])
PROPS = st.one_of(
    st.none(),
    st.lists(st.tuples(NAMES, VALUES), max_size=8).map(
        lambda pairs: "\x02".join(f"{k}\x01{v}" for k, v in pairs)),
    st.sampled_from(list(PROPERTY_CASES.values())),
)
FRAME = st.tuples(st.sampled_from(TOPIC_QUEUES), PROPS, st.binary(max_size=30),
                  st.fixed_dictionaries({}, optional={
                      "f": st.sampled_from(["0", "1", "2", "8", "16", "32", "2147483648"]),
                      "g": st.sampled_from(["0", "-1", "9223372036854775807",
                                            "9223372036854775808"]),
                      "h": st.sampled_from(["0", "5", "2147483647", "2147483648",
                                            "-2147483649"]),
                      "j": st.sampled_from(["0", "3", "2147483648"])}))


@SOME
@given(st.lists(FRAME, min_size=1, max_size=8))
def test_any_request_mix_gives_identical_outcomes(tmp_path_factory, requests):
    """Whatever the mix of properties, topics, queues, flags and bodies (some taken by the
    direct put, some declined), both paths answer, store and index alike."""
    frames = [send(topic, qid, props, opaque=n, body=body, **fields)
              for n, ((topic, qid), props, body, fields) in enumerate(requests)]
    direct, record, _ = compare(tmp_path_factory.mktemp("mix"), frames)
    assert direct == record


def test_one_read_of_many_frames_gives_identical_outcome(tmp_path):
    """Many frames in one read, direct and declined ones interleaved across queues."""
    cases = list(PROPERTY_CASES.values())
    data = b"".join(send(*TOPIC_QUEUES[n % len(TOPIC_QUEUES)], cases[n % len(cases)],
                         opaque=n, body=b"x" * (n % 7))
                    for n in range(60))
    direct, record, pending = compare(tmp_path, [data])
    assert direct == record
    assert "IndexRun" in pending and "MessageRecord" in pending


@pytest.mark.parametrize("value", [3, None, True, [1]], ids=["int", "null", "bool", "list"])
def test_properties_field_not_a_string_gives_identical_outcome(tmp_path, value):
    """A properties field that is not a JSON string is never read as "no properties" by the
    direct put: both brokers store and answer alike."""
    frames = [json_frame(dict(BASE, i=value), b"x", opaque=5), keyed(6)]
    direct, record, pending = compare(tmp_path, frames)
    assert direct == record and pending == ["MessageRecord", "IndexRun"]


def test_batches_between_direct_puts_give_identical_outcome(tmp_path):
    """SEND_BATCH_MESSAGE batches queued between direct puts: the index holds every message
    of both, in put order, as on the record path."""
    def batch(n: int) -> bytes:
        body = encode_batch([BatchMessage(0, b"b%d" % i, f"KEYS\x01b{n}_{i}") for i in range(3)])
        return json_frame(dict(BASE, m="true", i=""), body, opaque=500 + n, code=320)
    frames = [keyed(1) + batch(1) + keyed(2) + keyed(3), batch(2) + keyed(4)]
    direct, record, pending = compare(tmp_path, frames)
    assert pending == ["IndexRun", "tuple", "IndexRun", "tuple", "IndexRun"]
    assert direct == record


def escaped_frame(props_json: bytes) -> bytes:
    """A 310 frame whose properties field is the given JSON string literal, as written."""
    ext = b",".join(b'"%s":"%s"' % (k.encode(), v.encode()) for k, v in BASE.items())
    header = (b'{"code":310,"extFields":{' + ext + b',"i":' + props_json
              + b'},"flag":0,"language":"JAVA","opaque":3,"serializeTypeCurrentRPC":"JSON",'
              + b'"version":409}')
    return struct.pack(">iI", 4 + len(header) + 3, len(header)) + header + b"esc"


def test_escaped_properties_are_read_decoded(tmp_path):
    """A properties field written with JSON escapes (a name spelt \\u004bEYS, \\/ and
    \\" in values, an escaped WAIT) is stored and indexed as its decoded text."""
    data = escaped_frame(rb'"\u004bEYS\u0001k\/x\u0002TAGS\u0001\"t\u0002\u0057AIT\u0001true"')
    direct, record, pending = compare(tmp_path / "cmp", [data])
    assert direct == record and pending == ["IndexRun"]
    b = make(tmp_path / "query")
    warm(b)
    b.feed(data)
    store = b.ctx.store
    (raw,) = store.query_message("T1", "k/x", 10, 0, EVER)
    assert decode_record(raw).properties == {"KEYS": "k/x", "TAGS": '"t',
                                             "CLUSTER": "DefaultCluster"}
    store.shutdown()


def test_split_reads_give_identical_outcome(tmp_path):
    """Frames cut across reads (the body read from a partly filled buffer) stored alike."""
    data = b"".join(keyed(n, *TOPIC_QUEUES[n % 5]) for n in range(12))
    direct, record, pending = compare(tmp_path, [data], chunk=61)
    assert direct == record and "IndexRun" in pending


def test_file_rolls_give_identical_outcome(tmp_path):
    """Enough messages on one queue to roll its consume-queue file twice and the commitlog
    once: the rolls take the Python path, the puts around them the direct one, alike."""
    data = b"".join(keyed(n, body=b"%d" % n + b"x" * 600) for n in range(450))
    direct, record, pending = compare(tmp_path, [data])
    assert direct == record and pending[-1] == "IndexRun"
    assert direct[0].count(b'"code":0,') == len(TOPIC_QUEUES) + 450
    assert len(direct[1]) > 256 * 1024  # the commitlog bytes span two files


def store_state(b: Broker) -> dict:
    """The Python-visible store attributes a put publishes (besides the bytes)."""
    s = b.ctx.store
    fs = s.flush_service
    state = {
        "last_dispatched_timestamp": s.last_dispatched_timestamp,
        "last_store_timestamp": s.commitlog.last_store_timestamp,
        "topic_queue_table": dict(s.commitlog.topic_queue_table),
        "index_call": s._index_call is not None,
        "flush": (fs._soon_call is not None, s.commitlog.queue.flushed_where),
        "delayed_calls": sorted(c.getTime() for c in b.ctx.clock.getDelayedCalls()),
        "commitlog": [(mf.wrote_position, mf.last_modified) for mf in s.commitlog.queue.files],
    }
    for key, cq in sorted(s._cq_cache.items()):
        state[key] = (cq.max_physic_offset,
                      [(mf.wrote_position, mf.last_modified) for mf in cq.mfq.files])
    return state


def test_store_attributes_equal_those_of_the_record_path(tmp_path):
    """Store and commitlog times, queue table, consume-queue ends, file positions and the
    scheduled index drain and flush are set alike (a store with a reactor)."""
    states = []
    for name, direct in (("direct", True), ("record", False)):
        b = make(tmp_path / name, direct=direct, reactor_clock=True)
        warm(b, TOPIC_QUEUES)
        b.ctx.clock.advance(1.5)
        b.feed(b"".join(keyed(n, *TOPIC_QUEUES[n % 5]) for n in range(10)))
        b.ctx.clock.advance(0.25)
        b.feed(b"".join(keyed(n, *TOPIC_QUEUES[n % 5]) for n in range(10, 14)))
        states.append(store_state(b))
        b.ctx.store.shutdown()
    assert states[0] == states[1]
    assert states[0]["last_dispatched_timestamp"] == 1_700_000_001_750


def test_topic_deleted_from_the_store_gives_identical_outcome(tmp_path):
    """Direct puts after ``store.delete_topic`` (queues and queue table gone, caches stale)
    store alike: the first put of each queue again through Python, the rest direct."""
    outcomes, pending = [], []
    for name, direct in (("direct", True), ("record", False)):
        b = make(tmp_path / name, direct=direct)
        warm(b, TOPIC_QUEUES)
        b.feed(b"".join(keyed(n, *TOPIC_QUEUES[n % 5]) for n in range(10)))
        b.ctx.store.delete_topic("T1")
        b.ctx.store._drain_index()
        b.feed(b"".join(keyed(n, *TOPIC_QUEUES[n % 5]) for n in range(10, 30)))
        pending.append(kinds(b.ctx.store))
        outcomes.append(b.outcome())
    assert outcomes[0] == outcomes[1]
    assert pending[0] == ["MessageRecord"] * 3 + ["IndexRun"]  # T1's three queues anew


def test_store_without_index_gives_identical_outcome(tmp_path, monkeypatch):
    """With ``message_index_enable`` off nothing is queued for the index and both paths
    store and answer alike."""
    import processor_support

    from rocketmq_emu.broker.store_config import MessageStoreConfig

    monkeypatch.setattr(processor_support, "MessageStoreConfig",
                        functools.partial(MessageStoreConfig, message_index_enable=False))
    frames = [b"".join(keyed(n, *TOPIC_QUEUES[n % 5]) for n in range(10))]
    direct, record, pending = compare(tmp_path, frames)
    assert direct == record and pending == [] and direct[3] == []


@pytest.mark.parametrize("change", [
    lambda b: setattr(b.ctx.topic_config.select_topic_config("T1"), "topic_filter_type",
                      "MULTI_TAG"),
    lambda b: setattr(b.proto, "peer", ("::1", 4242)),
    lambda b: setattr(b.ctx, "store_host", ("10.1.2.3", 20911)),
    lambda b: b.ctx.clock.advance(3600.25),
], ids=["multi tag topic", "IPv6 client", "store host", "clock"])
def test_settings_changed_between_reads_give_identical_outcome(tmp_path, change):
    """A MULTI_TAG topic, an IPv6 client, a new store host or a later clock between two reads:
    both paths store the next requests alike."""
    outcomes = []
    for name, direct in (("direct", True), ("record", False)):
        b = make(tmp_path / name, direct=direct)
        warm(b, TOPIC_QUEUES)
        b.feed(keyed(1))
        change(b)
        b.feed(b"".join(keyed(n, *TOPIC_QUEUES[n % 5]) for n in range(2, 12)))
        outcomes.append(b.outcome())
    assert outcomes[0] == outcomes[1]


# --- arrival listeners --------------------------------------------------------------------------

def listen(b: Broker, topics) -> list[tuple]:
    """An arrival listener for ``topics`` (None: all) recording its calls."""
    calls: list[tuple] = []
    b.ctx.store.add_arrival_listener(lambda *args: calls.append(args), topics=topics)
    return calls


def test_listener_for_the_topic_gets_the_stored_record(tmp_path):
    """A listener wanting the topic sends the request the record's way: it is called with a
    MessageRecord equal to the stored one, and its arguments match the consume queue."""
    b = make(tmp_path)
    warm(b, [("T1", 1)])
    calls = listen(b, {"T1"})
    b.feed(keyed(5, queue_id=1))
    ((topic, qid, qoff, tags, rec),) = calls
    store = b.ctx.store
    assert type(rec) is MessageRecord and kinds(store) == ["MessageRecord"]
    stored = store.look_message_by_offset(rec.physical_offset)
    for name in ("topic", "body", "queue_id", "flag", "properties", "sys_flag", "born_timestamp",
                 "born_host", "store_host", "reconsume_times", "queue_offset",
                 "physical_offset", "store_timestamp", "body_crc", "total_size"):
        assert getattr(rec, name) == getattr(stored, name), name
    assert rec.encoded_properties() == stored.encoded_properties()
    assert (topic, qid, qoff) == ("T1", 1, 1)
    assert [tags] == [u[2] for u in store.get_consume_queue_units("T1", 1, 1, 1)]
    store.shutdown()


def test_listener_for_all_topics_stops_the_direct_put(tmp_path):
    """A listener without a topic filter sees every message: no direct put."""
    b = make(tmp_path)
    warm(b)
    calls = listen(b, None)
    b.feed(keyed(1) + keyed(2))
    assert [c[4].properties["KEYS"] for c in calls] == ["key1", "key2"]
    assert kinds(b.ctx.store) == ["MessageRecord", "MessageRecord"]
    b.ctx.store.shutdown()


def test_listener_for_another_topic_keeps_the_direct_put(tmp_path):
    """A listener for other topics is not called and the direct put is still used."""
    b = make(tmp_path)
    warm(b)
    calls = listen(b, {"T2", "T3"})
    b.feed(keyed(1) + keyed(2))
    assert calls == [] and kinds(b.ctx.store) == ["IndexRun"]
    b.ctx.store.shutdown()


def test_listener_topics_are_read_at_each_put(tmp_path):
    """The listener's topic container is live: a topic added to it between two requests
    (as a held pull adds its topic) sends the next request the record's way."""
    b = make(tmp_path)
    warm(b)
    wanted: set[str] = set()
    calls = listen(b, wanted)
    b.feed(keyed(1))
    wanted.add("T1")
    b.feed(keyed(2))
    wanted.discard("T1")
    b.feed(keyed(3))
    assert [c[4].properties["KEYS"] for c in calls] == ["key2"]
    assert kinds(b.ctx.store) == ["IndexRun", "MessageRecord", "IndexRun"]
    b.ctx.store.shutdown()


def test_removed_listener_gives_the_direct_put_back(tmp_path):
    """After remove_arrival_listener the topic's requests take the direct put again."""
    b = make(tmp_path)
    warm(b)
    calls: list = []

    def fn(*args):
        calls.append(args)
    b.ctx.store.add_arrival_listener(fn, topics={"T1"})
    b.feed(keyed(1))
    b.ctx.store.remove_arrival_listener(fn)
    b.feed(keyed(2))
    assert len(calls) == 1 and kinds(b.ctx.store) == ["MessageRecord", "IndexRun"]
    b.ctx.store.shutdown()


def test_listener_adding_a_topic_mid_read_is_seen_by_the_next_frame(tmp_path):
    """A listener that starts wanting T1 while a T2 message of the same read is stored: the
    following T1 frame of that read reaches it."""
    b = make(tmp_path)
    warm(b, [("T1", 0), ("T2", 0)])
    wanted = {"T2"}
    seen: list[str] = []

    def fn(topic, qid, qoff, tags, rec):
        seen.append(topic)
        wanted.add("T1")
    b.ctx.store.add_arrival_listener(fn, topics=wanted)
    b.feed(keyed(1) + keyed(2, "T2") + keyed(3))
    assert seen == ["T2", "T1"]
    assert kinds(b.ctx.store) == ["IndexRun", "MessageRecord", "MessageRecord"]
    b.ctx.store.shutdown()


# --- index queries ------------------------------------------------------------------------------

def bodies(raws: list[bytes]) -> list[bytes]:
    return [decode_record(raw).body for raw in raws]


@pytest.mark.parametrize("drained", [False, True], ids=["pending", "drained"])
def test_query_finds_direct_puts_by_key_and_uniq_key(tmp_path, drained):
    """QUERY_MESSAGE by KEYS and by UNIQ_KEY finds the messages the direct put stored, whether
    the query drains the queued IndexRun or it was drained before."""
    b = make(tmp_path)
    warm(b, [("T1", 1), ("T2", 0)])
    b.feed(b"".join(keyed(n, "T1" if n % 2 else "T2", n % 2) for n in range(6)))
    store = b.ctx.store
    assert kinds(store) == ["IndexRun"]
    if drained:
        store._drain_index()
        assert store._index_pending == []
    for n in range(6):
        topic = "T1" if n % 2 else "T2"
        assert bodies(store.query_message(topic, f"key{n}", 10, 0, EVER)) == [b"m%d" % n]
        assert bodies(store.query_message(topic, f"{UNIQ}{n:02d}", 10, 0, EVER)) == [b"m%d" % n]
        other = "T2" if n % 2 else "T1"
        assert store.query_message(other, f"key{n}", 10, 0, EVER) == []
    store.shutdown()


def test_query_finds_runs_and_records_queued_in_between(tmp_path):
    """Direct puts around a record-path put (several KEYS) on the same queue are all found,
    newest first, once per key; offsets match the consume queue."""
    b = make(tmp_path)
    warm(b)
    b.feed(send(props="KEYS\x01shared", opaque=1, body=b"1")
           + send(props="KEYS\x01shared other", opaque=2, body=b"2")
           + send(props=f"KEYS\x01shared\x02UNIQ_KEY\x01{UNIQ}03", opaque=3, body=b"3"))
    store = b.ctx.store
    assert kinds(store) == ["IndexRun", "MessageRecord", "IndexRun"]
    found = store.query_message_offsets("T1", "shared", 10, 0, EVER).phy_offsets
    assert found == offsets(store)[:0:-1]
    assert bodies(store.query_message("T1", "other", 10, 0, EVER)) == [b"2"]
    store.shutdown()


def test_query_after_more_direct_puts_on_a_drained_queue(tmp_path):
    """Direct puts after a drain start a new IndexRun; every message stays findable."""
    b = make(tmp_path)
    warm(b)
    store = b.ctx.store
    b.feed(keyed(1) + keyed(2))
    store._drain_index()
    b.feed(keyed(3) + keyed(4))
    assert kinds(store) == ["IndexRun"] and store._index_pending[0].messages() == 2
    for n in range(1, 5):
        assert bodies(store.query_message("T1", f"key{n}", 10, 0, EVER)) == [b"m%d" % n]
    store.shutdown()


# --- index_gather over IndexRun items -----------------------------------------------------------

def gather(pending: list, last: int):
    """``index_gather`` as ``_drain_index`` calls it: (hashes, phys, stamps, indexed, stop)."""
    hashes, phys, stamps, indexed, stop, _ = _native.store.index_gather(
        pending, 0, last, MessageRecord, "KEYS", "UNIQ_KEY")
    return list(hashes), list(phys), list(stamps), indexed, stop


def key_hash(key: str) -> int:
    return index_key_hash(build_key("T1", key))


def test_gather_takes_uniq_key_then_keys_of_each_direct_put(tmp_path):
    """An IndexRun yields each message's UNIQ_KEY then KEYS hash at its commitlog offset and
    store time, in put order; a KEYS equal to the UNIQ_KEY once."""
    b = make(tmp_path)
    warm(b)
    b.ctx.clock.advance(2.5)
    b.feed(keyed(1) + send(props=f"KEYS\x01{UNIQ}02\x02UNIQ_KEY\x01{UNIQ}02") + keyed(3))
    store = b.ctx.store
    off = offsets(store)[1:]
    hashes, phys, stamps, indexed, stop = gather(list(store._index_pending), -1)
    assert hashes == [key_hash(f"{UNIQ}01"), key_hash("key1"), key_hash(f"{UNIQ}02"),
                      key_hash(f"{UNIQ}03"), key_hash("key3")]
    assert phys == [off[0], off[0], off[1], off[2], off[2]]
    assert set(stamps) == {store.store_time_at(off[0])} == {1_700_000_002_500}
    assert (indexed, stop) == (3, 1)
    store.shutdown()


@pytest.mark.parametrize("between", [0, 1], ids=["at message", "inside message"])
def test_gather_skips_messages_at_or_below_last(tmp_path, between):
    """With ``last`` at (or inside) the second message, the first two messages are skipped
    and both entries of each later message are kept."""
    b = make(tmp_path)
    warm(b)
    b.feed(b"".join(keyed(n) for n in range(1, 5)))
    store = b.ctx.store
    off = offsets(store)[1:]
    _, phys, _, indexed, _ = gather(list(store._index_pending), off[1] + between)
    assert phys == [off[2], off[2], off[3], off[3]]
    assert indexed == 2
    store.shutdown()


def test_gather_skips_nothing_below_the_first_message(tmp_path):
    """``last`` just below the first message's offset keeps every entry."""
    b = make(tmp_path)
    warm(b)
    b.feed(b"".join(keyed(n) for n in range(1, 4)))
    store = b.ctx.store
    off = offsets(store)[1:]
    _, phys, _, indexed, _ = gather(list(store._index_pending), off[0] - 1)
    assert phys == [o for o in off for _ in range(2)] and indexed == 3
    store.shutdown()


def test_gather_keeps_exactly_the_messages_above_last(tmp_path):
    """For every ``last`` around each message's offset, the entries kept are those of the
    messages above it, two per message."""
    b = make(tmp_path)
    warm(b)
    b.feed(b"".join(keyed(n) for n in range(1, 6)))
    store = b.ctx.store
    off = offsets(store)[1:]
    pending = list(store._index_pending)
    for last in sorted({-1} | {o + d for o in off for d in (-1, 0, 1)}):
        above = [o for o in off if o > last]
        _, phys, _, indexed, _ = gather(pending, last)
        assert phys == [o for o in above for _ in range(2)], last
        assert indexed == len(above), last
    store.shutdown()


def key_hashing_to_min(topic: str) -> str:
    """A key whose ``(topic + "#" + key).hashCode()`` is Integer.MIN_VALUE: "k" then seven
    characters '0'..'N' chosen as base-31 digits (31**7 > 2**32 reaches every residue)."""
    n = 7
    prefix = java_string_hash(f"{topic}#k") & 0xFFFFFFFF
    rest = (0x80000000 - prefix * 31**n - 48 * sum(31**k for k in range(n))) % 2**32
    digits = []
    for _ in range(n):
        rest, d = divmod(rest, 31)
        digits.append(chr(48 + d))
    return "k" + "".join(reversed(digits))


def test_key_hashing_to_min_value_is_indexed_under_zero(tmp_path):
    """KEYS and UNIQ_KEY whose hashCode is Integer.MIN_VALUE get slot hash 0 (Java's
    Math.abs leaves MIN_VALUE negative; IndexService maps it to 0) and are found."""
    key = key_hashing_to_min("T1")
    assert java_string_hash(f"T1#{key}") == -(2**31)
    b = make(tmp_path)
    warm(b)
    b.feed(send(props=f"KEYS\x01{key}", body=b"k") + send(props=f"UNIQ_KEY\x01{key}", body=b"u"))
    store = b.ctx.store
    hashes, *_ = gather(list(store._index_pending), -1)
    assert hashes == [0, 0]
    assert bodies(store.query_message("T1", key, 10, 0, EVER)) == [b"u", b"k"]
    store.shutdown()


def test_gather_continues_across_runs_and_records(tmp_path):
    """Runs and records queued in between are gathered in put order; a record with several
    KEYS stops the gather there (the Python batch takes it)."""
    b = make(tmp_path)
    warm(b)
    b.feed(keyed(1) + send(props="TAGS\x01\u00e9\x02KEYS\x01k") + keyed(3)
           + send(props="KEYS\x01a b") + keyed(5))
    store = b.ctx.store
    pending = list(store._index_pending)
    assert [type(p).__name__ for p in pending] == [
        "IndexRun", "MessageRecord", "IndexRun", "MessageRecord", "IndexRun"]
    off = offsets(store)[1:]
    hashes, phys, _, indexed, stop = gather(pending, -1)
    assert phys == [off[0], off[0], off[1], off[2], off[2]]
    assert hashes[2] == key_hash("k")
    assert (indexed, stop) == (3, 3)
    store.shutdown()


# --- when the queued entries are written ----------------------------------------------------------

def test_direct_puts_drain_inline_at_the_limit(tmp_path):
    """With ``index_drain_limit`` 5 the fifth queued direct put writes the index at once."""
    b = make(tmp_path)
    warm(b)
    store = b.ctx.store
    store.index_drain_limit = 5
    b.feed(b"".join(keyed(n) for n in range(1, 5)))
    off = offsets(store)
    assert kinds(store) == ["IndexRun"] and store.index.indexed_up_to() < off[1]
    b.feed(keyed(5))
    off = offsets(store)
    assert store._index_pending == [] and store.index.indexed_up_to() == off[5]
    assert store.index.query("T1", "key3", 10, 0, EVER).phy_offsets == [off[3]]
    b.feed(keyed(6))
    assert kinds(store) == ["IndexRun"]
    store.shutdown()


def test_direct_puts_count_with_records_queued_before(tmp_path):
    """Records queued before the run count towards the limit (one each), as on the record
    path: two records and three direct puts reach a limit of 5."""
    b = make(tmp_path)
    warm(b)
    store = b.ctx.store
    store.index_drain_limit = 5
    b.feed(send(props="KEYS\x01a b") + send(props="KEYS\x01c d") + keyed(1) + keyed(2))
    assert kinds(store) == ["MessageRecord", "MessageRecord", "IndexRun"]
    b.feed(keyed(3))
    assert store._index_pending == [] and store.index.indexed_up_to() == offsets(store)[-1]
    store.shutdown()


def test_direct_put_without_keys_queues_nothing(tmp_path):
    """A direct put with neither KEYS nor UNIQ_KEY has no index entry: nothing is queued."""
    b = make(tmp_path)
    warm(b)
    b.feed(send(props="TAGS\x01a") + send(props=None))
    assert b.ctx.store._index_pending == []
    assert b.transport.value().count(b'"code":0,') == 3
    b.ctx.store.shutdown()


def test_direct_puts_schedule_the_drain_on_the_next_reactor_turn(tmp_path):
    """With a reactor, the first queued direct put schedules one drain; the turn writes it."""
    b = make(tmp_path, reactor_clock=True)
    warm(b)
    b.ctx.clock.advance(0)
    store = b.ctx.store
    b.feed(keyed(1) + keyed(2))
    assert kinds(store) == ["IndexRun"] and len(b.ctx.clock.getDelayedCalls()) >= 1
    call = store._index_call
    assert call is not None and call.active()
    b.ctx.clock.advance(0)
    assert store._index_pending == [] and store._index_call is None
    assert store.index.indexed_up_to() == offsets(store)[-1]
    store.shutdown()


# --- a replaced put_message -----------------------------------------------------------------------

def test_replaced_put_message_sees_every_message_as_a_record(tmp_path):
    """A Python put_message (a wrapper delegating to the C one) is called with a MessageRecord
    per request, and those are queued as records: no direct put behind its back."""
    b = make(tmp_path)
    warm(b)
    store = b.ctx.store
    real = store.put_message
    seen: list = []

    def put(record):
        seen.append(record)
        return real(record)
    store.put_message = put
    b.feed(keyed(1) + keyed(2, queue_id=0))
    assert [(type(r), r.properties["KEYS"]) for r in seen] == [
        (MessageRecord, "key1"), (MessageRecord, "key2")]
    assert kinds(store) == ["MessageRecord", "MessageRecord"]
    assert b.transport.value().count(b'"code":0,') == 3
    assert bodies(store.query_message("T1", "key2", 10, 0, EVER)) == [b"m2"]
    store.put_message = real
    b.feed(keyed(3))
    assert len(seen) == 2 and kinds(store)[-1] == "IndexRun"
    store.shutdown()


def test_replaced_put_message_gives_identical_outcome(tmp_path):
    """A delegating wrapper on a broker with the direct put on stores and answers exactly as
    a broker with it off, every message queued as a record."""
    outcomes, pending = [], []
    for name, wrap in (("wrapped", True), ("record", False)):
        b = make(tmp_path / name, direct=wrap)  # the wrapper alone keeps the record path
        warm(b, TOPIC_QUEUES)
        if wrap:
            real = b.ctx.store.put_message
            b.ctx.store.put_message = lambda record, real=real: real(record)
        b.feed(b"".join(keyed(n, *TOPIC_QUEUES[n % 5]) for n in range(10)))
        pending.append(kinds(b.ctx.store))
        outcomes.append(b.outcome())
    assert outcomes[0] == outcomes[1]
    assert pending[0] == pending[1] == ["MessageRecord"] * 10


def test_list_subclass_as_index_queue_works_as_on_the_record_path(tmp_path):
    """An index queue that is a list subclass takes the record path (its append is called):
    answered PUT_OK and found by its key (it was stored, answered SYSTEM_ERROR, not indexed)."""
    b = make(tmp_path)
    warm(b)
    store = b.ctx.store
    store._index_pending = type("Pending", (list,), {})()
    b.transport.clear()
    b.feed(keyed(1))
    assert b'"code":0,' in b.transport.value()
    assert kinds(store) == ["MessageRecord"]
    assert bodies(store.query_message("T1", "key1", 10, 0, EVER)) == [b"m1"]
    store.shutdown()


def test_message_stored_by_a_listener_leaves_the_outer_message_indexed(tmp_path):
    """A listener that stores a message while the outer one is dispatched: both are found by
    their keys (RocketMQ indexes in commitlog order)."""
    b = make(tmp_path)
    warm(b, [("T1", 0), ("T2", 0)])
    store = b.ctx.store
    hosts = (("10.0.0.1", 1), ("10.0.0.5", 10911))

    def inner(topic, qid, qoff, tags, rec):
        if rec.properties.get("KEYS") == "outer":
            store.put_message(MessageRecord("T1", b"in", 0, 0, {"KEYS": "inner"}, 0, 1, *hosts))
    store.add_arrival_listener(inner, topics={"T2"})
    store.put_message(MessageRecord("T2", b"out", 0, 0, {"KEYS": "outer"}, 0, 1, *hosts))
    assert bodies(store.query_message("T1", "inner", 10, 0, EVER)) == [b"in"]
    assert bodies(store.query_message("T2", "outer", 10, 0, EVER)) == [b"out"]
    store.shutdown()


def test_index_write_failure_during_the_inline_drain_keeps_the_put(tmp_path):
    """An index file that cannot be written while a direct put drains inline: the put is
    answered PUT_OK, and once the index can be written the message is found by its key."""
    b = make(tmp_path)
    warm(b)
    store = b.ctx.store
    store.index_drain_limit = 1
    real = store.index.put_entries
    broken = [True]

    def put_entries(*args):
        if broken[0]:
            raise MappedFileError("disk full (test)", "index/x")
        return real(*args)
    store.index.put_entries = put_entries
    b.transport.clear()
    b.feed(keyed(1))
    assert b'"code":0,' in b.transport.value()
    broken[0] = False
    b.feed(keyed(2))
    assert bodies(store.query_message("T1", "key1", 10, 0, EVER)) == [b"m1"]
    store.shutdown()


def test_direct_put_is_on_by_default(tmp_path):
    """A broker's Sender tries the direct put unless told otherwise."""
    b = Broker(tmp_path, fused=True)
    assert sender(b).direct is True
    b.ctx.store.shutdown()
