"""POP check-point strings: extraInfo (ExtraInfoUtil), the proxy's ReceiptHandle, and the
startOffsetInfo / msgOffsetInfo / orderCountInfo fields (Apache RocketMQ 5.3.3). Golden strings
are derived by reading the named Java method."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.pop import extra_info as ei
from rocketmq_emu.broker.pop import names

LONGS = st.integers(-(2**63), 2**63 - 1)
INTS = st.integers(-(2**31), 2**31 - 1)
#: Names without the separators (Java's split would cut them too).
NAMES = st.text(st.characters(codec="utf-8", exclude_characters=" ;,@"), min_size=1, max_size=12)
MARKS = st.sampled_from([ei.NORMAL_TOPIC, ei.RETRY_TOPIC, ei.RETRY_TOPIC_V2])
TOPICS = st.one_of(
    NAMES.filter(lambda t: not t.startswith("%RETRY%")),
    st.builds(names.pop_retry_topic_v1, NAMES.filter(lambda t: "+" not in t),
              NAMES.filter(lambda g: "+" not in g)),
    st.builds(names.pop_retry_topic_v2, NAMES, NAMES),
)


def test_build_extra_info_seven_fields():
    """ExtraInfoUtil.buildExtraInfo (7 args): space-joined, retry mark "0" for a normal topic."""
    assert ei.build_extra_info(100, 1700000000000, 60000, 3, "TopicA", "broker-a", 2) == (
        "100 1700000000000 60000 3 0 broker-a 2")


def test_build_extra_info_eight_fields_retry_v1():
    """ExtraInfoUtil.buildExtraInfo (8 args): V1 retry topic %RETRY%G_T gets mark "1"."""
    assert ei.build_extra_info(7, 5, 60000, 999, "%RETRY%G_TopicA", "b", 0, 9) == (
        "7 5 60000 999 1 b 0 9")


def test_retry_marks():
    """ExtraInfoUtil.getRetry(topic): "2" for %RETRY%..+.., "1" for other %RETRY%, else "0"."""
    assert [ei.retry_mark(t) for t in ("T", "%RETRY%G_T", "%RETRY%G+T", "%RETRY%G")] == [
        "0", "1", "2", "1"]


def test_parse_extra_info_fields():
    """ExtraInfoUtil getters: fields 0..7 of the split string."""
    info = ei.ExtraInfo.parse("100 1700000000000 60000 3 2 broker-a 2 105")
    assert info == ei.ExtraInfo(100, 1700000000000, 60000, 3, "2", "broker-a", 2, 105)
    assert info.real_topic("T", "G") == "%RETRY%G+T" and not info.is_order


def test_parse_extra_info_without_queue_offset():
    """A seven-field extraInfo has no queue offset; getQueueOffset on it fails."""
    parts = ei.split_extra_info("1 2 3 999 0 b 4")
    assert ei.ExtraInfo.parse("1 2 3 999 0 b 4").queue_offset is None
    assert ei.is_order(parts)
    with pytest.raises(ValueError, match="getQueueOffset"):
        ei.get_queue_offset(parts)


def test_short_extra_info_is_rejected():
    """ExtraInfoUtil getters throw on too few fields (IllegalArgumentException)."""
    with pytest.raises(ValueError, match="getBrokerName"):
        ei.ExtraInfo.parse("1 2 3 4 0")


def test_non_numeric_extra_info_is_rejected():
    """Long.valueOf on a non-number (NumberFormatException)."""
    with pytest.raises(ValueError):
        ei.ExtraInfo.parse("x 2 3 4 0 b 1 5")


def test_java_split_drops_trailing_empty_fields():
    """String.split: trailing empty strings go, inner ones stay, no separator keeps the text."""
    assert ei.java_split("a  b  ", " ") == ["a", "", "b"]
    assert ei.java_split("", " ") == [""]
    assert ei.java_split(",,", ",") == []


def test_real_topic_with_unknown_mark():
    """getRealTopic(topic, cid, retry) refuses an unknown mark; the String[] overload doesn't."""
    with pytest.raises(ValueError):
        ei.real_topic("T", "G", "x")
    assert ei.get_real_topic(["1", "2", "3", "4", "x"], "T", "G") == "T"


def test_receipt_handle_is_pop_ck_plus_commit_log_offset():
    """ConsumerProcessor.createHandle appends the commit-log offset; ReceiptHandle.decode reads
    it as the ninth field."""
    pop_ck = ei.build_extra_info(100, 1700000000000, 60000, 3, "T", "broker-a", 2, 105)
    handle = ei.create_handle(pop_ck, 4096)
    assert handle == "100 1700000000000 60000 3 0 broker-a 2 105 4096"
    rh = ei.ReceiptHandle.decode(handle)
    assert rh == ei.ReceiptHandle(100, 1700000000000, 60000, 3, "0", "broker-a", 2, 105, 4096)
    assert rh.next_visible_time == 1700000060000 and rh.is_expired(1700000060000)
    assert not rh.is_expired(1700000059999)
    assert ei.ExtraInfo.parse(handle) == rh.to_extra_info() == ei.ExtraInfo.parse(pop_ck)


def test_receipt_handle_with_eight_fields():
    """ReceiptHandle.decode: commitLogOffset -1 without a ninth field; encode writes nine."""
    rh = ei.ReceiptHandle.decode("1 2 3 4 1 b 5 6")
    assert rh.commit_log_offset == -1 and rh.encode() == "1 2 3 4 1 b 5 6 -1"
    assert rh.is_retry_topic and rh.real_topic("T", "G") == "%RETRY%G_T"


def test_receipt_handle_needs_eight_fields():
    """ReceiptHandle.decode: fewer than eight fields is a parse failure."""
    with pytest.raises(ValueError, match="dataList size 7"):
        ei.ReceiptHandle.decode("1 2 3 4 1 b 5")


def test_start_offset_info_golden():
    """buildStartOffsetInfo twice: "<mark> <queueId> <offset>" joined by ";"."""
    b = ei.InfoBuilder().add_start_offset("T", 0, 10).add_start_offset("%RETRY%G+T", 1, 5)
    assert str(b) == "0 0 10;2 1 5"
    assert ei.parse_start_offset_info(str(b)) == {"0@0": 10, "2@1": 5}


def test_msg_offset_info_golden():
    """buildMsgOffsetInfo: offsets joined by ","; parseMsgOffsetInfo keys "<mark>@<queueId>"."""
    b = ei.InfoBuilder().add_msg_offsets("T", 3, [10, 11, 12]).add_msg_offsets("%RETRY%G_T", 0, [7])
    assert str(b) == "0 3 10,11,12;1 0 7"
    assert ei.parse_msg_offset_info(str(b)) == {"0@3": [10, 11, 12], "1@0": [7]}


def test_order_count_info_golden():
    """buildQueueIdOrderCountInfo + buildQueueOffsetOrderCountInfo; keys as
    getStartOffsetInfoMapKey and getQueueOffsetMapKey build them."""
    b = ei.InfoBuilder().add_queue_id_order_count("T", 3, 2)
    b.add_queue_offset_order_count("T", 3, 100, 4)
    assert str(b) == "0 3 2;0 qo3%100 4"
    counts = ei.parse_order_count_info(str(b))
    assert counts == {ei.start_offset_info_key("T", 3): 2,
                      ei.queue_offset_map_key("T", 3, 100): 4} == {"0@3": 2, "0@qo3%100": 4}


def test_start_offset_key_from_pop_ck():
    """getStartOffsetInfoMapKey(topic, popCk, key): the mark comes from the POP_CK string."""
    assert ei.start_offset_info_key("T", 5, pop_ck="1 2 3 4 2 b 5 6") == "2@5"
    assert ei.start_offset_info_key("%RETRY%G_T", 5) == "1@5"


def test_empty_info_parses_to_none():
    """parse*Info return null for a null or empty string."""
    assert [ei.parse_start_offset_info(""), ei.parse_msg_offset_info(None),
            ei.parse_order_count_info("")] == [None, None, None]


@pytest.mark.parametrize("bad", ["0 1", "0 1 2 3", "0 1 2;;0 2 3", "0 1 2;0 1 3"])
def test_malformed_or_duplicate_info_is_rejected(bad):
    """Not three fields per entry, or a repeated key: IllegalArgumentException in Java."""
    with pytest.raises(ValueError, match="startOffsetInfo"):
        ei.parse_start_offset_info(bad)


@given(LONGS, LONGS, LONGS, INTS, TOPICS, NAMES, INTS, st.none() | LONGS)
def test_extra_info_round_trip(ck, pop_time, invisible, revive, topic, broker, qid, qoff):
    """buildExtraInfo then the getters give back every field (the topic as its mark)."""
    text = ei.build_extra_info(ck, pop_time, invisible, revive, topic, broker, qid, qoff)
    info = ei.ExtraInfo.parse(text)
    assert info == ei.ExtraInfo(ck, pop_time, invisible, revive, ei.retry_mark(topic), broker,
                                qid, qoff)
    assert info.encode() == text


@given(st.builds(ei.ReceiptHandle, LONGS, LONGS, LONGS, INTS, MARKS, NAMES, INTS, LONGS, LONGS))
def test_receipt_handle_round_trip(rh):
    """ReceiptHandle encode then decode is the identity."""
    assert ei.ReceiptHandle.decode(rh.encode()) == rh


def _topic_for(mark: str) -> str:
    return {"0": "T", "1": "%RETRY%G_T", "2": "%RETRY%G+T"}[mark]


@given(st.dictionaries(st.tuples(MARKS, INTS), LONGS, min_size=1, max_size=6))
def test_start_offset_info_round_trip(entries):
    """buildStartOffsetInfo per queue then parseStartOffsetInfo gives the map back."""
    b = ei.InfoBuilder()
    for (mark, qid), offset in entries.items():
        b.add_start_offset(_topic_for(mark), qid, offset)
    assert ei.parse_start_offset_info(str(b)) == {f"{m}@{q}": o for (m, q), o in entries.items()}


@given(st.dictionaries(st.tuples(MARKS, INTS), st.lists(LONGS, min_size=1, max_size=5),
                       min_size=1, max_size=6))
def test_msg_offset_info_round_trip(entries):
    """buildMsgOffsetInfo per queue then parseMsgOffsetInfo gives the offset lists back."""
    b = ei.InfoBuilder()
    for (mark, qid), offsets in entries.items():
        b.add_msg_offsets(_topic_for(mark), qid, offsets)
    assert ei.parse_msg_offset_info(str(b)) == {f"{m}@{q}": o for (m, q), o in entries.items()}


@given(st.dictionaries(st.tuples(MARKS, INTS, st.none() | LONGS), INTS, min_size=1, max_size=6))
def test_order_count_info_round_trip(entries):
    """Queue-id and queue-offset order counts parse back under the keys the client looks up."""
    b = ei.InfoBuilder()
    expected = {}
    for (mark, qid, qoff), count in entries.items():
        topic = _topic_for(mark)
        if qoff is None:
            b.add_queue_id_order_count(topic, qid, count)
            expected[ei.start_offset_info_key(topic, qid)] = count
        else:
            b.add_queue_offset_order_count(topic, qid, qoff, count)
            expected[ei.queue_offset_map_key(topic, qid, qoff)] = count
    assert ei.parse_order_count_info(str(b)) == expected
