"""client/dashboard/traces.py: trace bodies decoded per TraceDataEncoder's field order (golden
strings written by hand from encoderFromContextBean), garbage never raises, and traces found in
a real store through its index."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig
from rocketmq_emu.client.dashboard.traces import (
    RMQ_SYS_TRACE_TOPIC,
    TRACE_KEYS,
    decode_trace_data,
    traces_for,
)

C = "\u0001"  # TraceConstants.CONTENT_SPLITOR
F = "\u0002"  # TraceConstants.FIELD_SPLITOR
MSG_ID = "AC1415116D1418B4AAC217FE1B4E0000"
OFFSET_ID = "0A9A002600002A9F0000000000002329"
T = 1_700_000_000_000


def ctx(*fields: object, end: str = F) -> str:
    """One context as the encoder writes it: fields joined by \\u0001, then ``end``."""
    return C.join(str(f) for f in fields) + end


def pub(ts=T, msg_id=MSG_ID, extra=(OFFSET_ID, "true")) -> str:
    # Pub: type, timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost,
    # bodyLength, costTime, msgType ordinal, offsetMsgId, success (4.4.0 .. 5.x)
    return ctx("Pub", ts, "DefaultRegion", "PID-test", "topic-test", msg_id, "TagA",
               "k1 k2", "127.0.0.1:10911", 26, 245, 0, *extra)


def sub_before(ts=T + 10, msg_id=MSG_ID) -> str:
    return ctx("SubBefore", ts, "DefaultRegion", "CID-test", "REQ1", msg_id, 2, "k1 k2")


def sub_after(ts=T + 30, msg_id=MSG_ID) -> str:
    # 4.9.2+: requestId, msgId, costTime, success, keys, contextCode, timeStamp, groupName
    return ctx("SubAfter", "REQ1", msg_id, 20, "false", "k1 k2", 4, ts, "CID-test")


def end_tx(ts=T + 5, msg_id=MSG_ID) -> str:
    return ctx("EndTransaction", ts, "DefaultRegion", "PID-tx", "topic-test", msg_id, "null",
               "null", "127.0.0.1:10911", 2, "tx-1", "COMMIT_MESSAGE", "true")


# --- golden contexts ------------------------------------------------------------------------
def test_pub_current_format():
    """14 fields (4.4.0+): offsetMsgId then success; the Java test's own sample."""
    (t,) = decode_trace_data(pub())
    assert set(t) == set(TRACE_KEYS)
    assert t["traceType"] == "Pub" and t["timestamp"] == T
    assert (t["regionId"], t["groupName"], t["topic"]) == ("DefaultRegion", "PID-test",
                                                           "topic-test")
    assert (t["msgId"], t["tags"], t["keys"]) == (MSG_ID, "TagA", "k1 k2")
    assert (t["storeHost"], t["bodyLength"], t["costTime"]) == ("127.0.0.1:10911", 26, 245)
    assert t["msgType"] == "Normal_Msg" and t["offsetMsgId"] == OFFSET_ID
    assert t["success"] is True and t["status"] == "success"
    assert t["clientHost"] is None and t["retryTimes"] is None


def test_pub_older_and_480_formats():
    """13 fields: success at 12; 15 fields (4.8.0): clientHost at 14; 12: success defaults."""
    (t13,) = decode_trace_data(pub(extra=("false",)))
    assert t13["success"] is False and t13["offsetMsgId"] is None
    (t15,) = decode_trace_data(pub(extra=(OFFSET_ID, "TRUE", "10.0.0.9")))
    assert t15["success"] is True and t15["clientHost"] == "10.0.0.9"
    assert t15["offsetMsgId"] == OFFSET_ID
    (t12,) = decode_trace_data(pub(extra=()))
    assert t12["success"] is True  # TraceContext.isSuccess's default


def test_sub_before_and_480_client_host():
    (t,) = decode_trace_data(sub_before())
    assert (t["traceType"], t["timestamp"], t["groupName"]) == ("SubBefore", T + 10, "CID-test")
    assert (t["requestId"], t["msgId"], t["retryTimes"], t["keys"]) == ("REQ1", MSG_ID, 2,
                                                                        "k1 k2")
    assert t["success"] is None and t["clientHost"] is None
    (old,) = decode_trace_data(ctx("SubBefore", T, "R", "G", "REQ", MSG_ID, 0, "k", "10.0.0.8"))
    assert old["clientHost"] == "10.0.0.8"


def test_sub_after_formats():
    """4.9.2+ carries timestamp and group; CLOUD / older ones stop after contextCode (Java's
    split drops the trailing empty field) or before it."""
    (t,) = decode_trace_data(sub_after())
    assert (t["requestId"], t["msgId"], t["costTime"]) == ("REQ1", MSG_ID, 20)
    assert t["success"] is False and t["status"] == "failed"
    assert (t["contextCode"], t["consumeResult"]) == (4, "FAILED")
    assert (t["timestamp"], t["groupName"]) == (T + 30, "CID-test")
    (cloud,) = decode_trace_data(ctx("SubAfter", "REQ1", MSG_ID, 3, "true", "k", 0, end=C + F))
    assert cloud["contextCode"] == 0 and cloud["consumeResult"] == "SUCCESS"
    assert cloud["timestamp"] is None and cloud["groupName"] is None
    (old,) = decode_trace_data(ctx("SubAfter", "REQ1", MSG_ID, 3, "true", "k"))
    assert old["contextCode"] is None and old["success"] is True


def test_end_transaction():
    (t,) = decode_trace_data(end_tx())
    assert (t["traceType"], t["timestamp"], t["groupName"]) == ("EndTransaction", T + 5, "PID-tx")
    assert t["tags"] is None and t["keys"] is None  # Java appended null
    assert (t["msgType"], t["transactionId"]) == ("Trans_msg_Commit", "tx-1")
    assert t["transactionState"] == t["status"] == "COMMIT_MESSAGE"
    assert t["fromTransactionCheck"] is True


def test_recall():
    (t,) = decode_trace_data(ctx("Recall", T, "R", "PID", "topic-test", MSG_ID, "true"))
    assert (t["traceType"], t["topic"], t["msgId"], t["success"]) == ("Recall", "topic-test",
                                                                      MSG_ID, True)


def test_several_contexts_and_bad_ones_skipped():
    """A batch body: a bad context is skipped (Java would throw and lose the body), unknown
    types are ignored as in Java."""
    body = (pub() + ctx("Pub", "notanumber", "R") + sub_before()
            + ctx("EndTransaction", T, "R", "G", "t", MSG_ID, "a", "b", "h", 9, "x", "COMMIT_MESSAGE",
                  "true")  # msgType ordinal 9: no such MessageType
            + ctx("EndTransaction", T, "R", "G", "t", MSG_ID, "a", "b", "h", 1, "x", "MAYBE", "true")
            + ctx("Pub", 2**63, "R", "G", "t", MSG_ID, "a", "b", "h", 1, 1, 0, "o", "true")
            + ctx("Mystery", 1, 2) + F + sub_after())
    assert [t["traceType"] for t in decode_trace_data(body)] == ["Pub", "SubBefore", "SubAfter"]
    assert decode_trace_data("") == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(), st.sampled_from(
    ["Pub", "SubBefore", "SubAfter", "EndTransaction", "Recall", C, F, "1", "-1", "true",
     "COMMIT_MESSAGE", " 1", "1_0", "\u0661"])), max_size=40))
def test_decode_never_raises(pieces):
    out = decode_trace_data("".join(pieces))
    assert all(set(t) == set(TRACE_KEYS) for t in out)


# --- traces in a real store -----------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    clock = Clock()
    clock.advance(T / 1000)
    cfg = MessageStoreConfig(store_path_root_dir=str(tmp_path), mapped_file_size_commitlog=64 * 1024,
                             mapped_file_size_consume_queue=20 * 100, max_hash_slot_num=100,
                             max_index_num=400)
    s = MessageStore(cfg, clock)
    assert s.load()
    s.start()
    yield s
    s.shutdown()


def put_trace(store, body: str, keys: list[str], topic=RMQ_SYS_TRACE_TOPIC, n=0) -> None:
    """A trace message as AsyncTraceDispatcher sends it: keys = the traced msgIds and keys."""
    rec = MessageRecord(topic=topic, body=body.encode(), properties={
        "KEYS": " ".join(keys), "UNIQ_KEY": f"TRACE{n:027d}", "WAIT": "true"},
        born_host=("10.1.2.3", 50000))
    assert store.put_message(rec).status.name == "PUT_OK"


def test_traces_for_finds_by_index(store):
    other = "AC1415116D1418B4AAC217FE1B4E9999"
    put_trace(store, "garbage" + F + C, [MSG_ID], n=0)
    put_trace(store, sub_after(), [MSG_ID, "k1", "k2"], n=1)
    # One trace message batching contexts of two messages (keys of both).
    put_trace(store, pub(msg_id=other) + end_tx() + sub_before(), [other, MSG_ID, "k1"], n=2)
    put_trace(store, pub(), [MSG_ID, "k1", "k2"], n=3)
    put_trace(store, pub(), [MSG_ID], topic="OTHER_TRACE_TOPIC", n=4)

    traces = traces_for(store, RMQ_SYS_TRACE_TOPIC, MSG_ID)
    assert [t["traceType"] for t in traces] == ["Pub", "EndTransaction", "SubBefore", "SubAfter"]
    assert [t["timestamp"] for t in traces] == [T, T + 5, T + 10, T + 30]
    assert all(t["msgId"] == MSG_ID for t in traces)
    # TraceView reports the trace message's born IP when the context carries no client host.
    assert {t["clientHost"] for t in traces} == {"10.1.2.3"}

    assert [t["traceType"] for t in traces_for(store, RMQ_SYS_TRACE_TOPIC, other)] == ["Pub"]
    assert len(traces_for(store, "OTHER_TRACE_TOPIC", MSG_ID)) == 1
    assert traces_for(store, RMQ_SYS_TRACE_TOPIC, "nope") == []
    # max_records bounds the trace messages read (the index answers newest first).
    newest = traces_for(store, RMQ_SYS_TRACE_TOPIC, MSG_ID, max_records=1)
    assert [t["traceType"] for t in newest] == ["Pub"]
