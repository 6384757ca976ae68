"""rocketmq_emu.broker.pop.revive_bodies: the revive topic's CK / ACK / batch-ACK bodies.

The golden strings are derived by reading apache/rocketmq 8fc57f1 (5.3.3+), never captured:
fastjson 1.2.83 writes one key per public getter, named by the ``@JSONField`` of its field, in
``SortField`` order (JSON names compared as Java strings), null objects omitted.
``PopCheckPoint``: getters getBitMap (bm), getBrokerName (bn), getCId (c, field ``cid``),
getQueueOffsetDiff (d), getInvisibleTime (it), getNum (n), getPopTime (pt), getQueueId (q),
getReviveTime (no field: ``reviveTime``), getReviveOffset (ro), getRePutTimes (rp),
getStartOffset (so), getTopic (t). ``AckMsg``: getAckOffset (ao), getBrokerName (bn),
getConsumerGroup (c), getPopTime (pt), getQueueId (q), getStartOffset (so), getTopic (t);
``BatchAckMsg`` adds getAckOffsetList (aol).
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.pop.revive_bodies import (
    AckMsg,
    BatchAckMsg,
    PopCheckPoint,
    acked_indexes,
    decode_revive_body,
    get_bit,
    java_byte,
    java_int,
    set_bit,
    unacked_indexes,
)

LONG = st.integers(-(2**63), 2**63 - 1)
INT = st.integers(-(2**31), 2**31 - 1)
BYTE = st.integers(-128, 127)
NAME = st.text(alphabet="%|abcXYZ019_-", min_size=1, max_size=12)
OPT_NAME = st.none() | NAME

cks = st.builds(
    PopCheckPoint, start_offset=LONG, pop_time=st.integers(0, 2**62), invisible_time=st.integers(
        0, 2**40), bit_map=INT, num=BYTE, queue_id=INT, topic=OPT_NAME, cid=OPT_NAME,
    revive_offset=LONG, queue_offset_diff=st.none() | st.lists(INT, max_size=32),
    broker_name=OPT_NAME, re_put_times=st.none() | st.integers(0, 99).map(str))
acks = st.builds(AckMsg, ack_offset=LONG, start_offset=LONG, consumer_group=OPT_NAME,
                 topic=OPT_NAME, queue_id=INT, pop_time=LONG, broker_name=OPT_NAME)
batch_acks = st.builds(BatchAckMsg, ack_offset=LONG, start_offset=LONG, consumer_group=OPT_NAME,
                       topic=OPT_NAME, queue_id=INT, pop_time=LONG, broker_name=OPT_NAME,
                       ack_offset_list=st.none() | st.lists(LONG, max_size=32))


def _pop_ck() -> PopCheckPoint:
    """A CK as PopMessageProcessor.appendCheckPoint builds it: 3 messages at offsets 100, 101, 104."""
    ck = PopCheckPoint(start_offset=100, pop_time=1700000000000, invisible_time=60000, num=3,
                       queue_id=2, topic="TopicA", cid="GroupA", broker_name="broker-a")
    for diff in (0, 1, 4):
        ck.add_diff(diff)
    return ck


# --- golden bodies -----------------------------------------------------------------------------
def test_checkpoint_golden_body():
    """A fresh CK: keys bm bn c d it n pt q reviveTime ro so t, rp and other nulls left out."""
    assert _pop_ck().encode() == (
        b'{"bm":0,"bn":"broker-a","c":"GroupA","d":[0,1,4],"it":60000,"n":3,"pt":1700000000000,'
        b'"q":2,"reviveTime":1700000060000,"ro":0,"so":100,"t":"TopicA"}')


def test_checkpoint_golden_body_of_a_re_put_ck():
    """PopReviveService.rePutCK's CK: rp is a string, written between ro and so."""
    ck = PopCheckPoint.single(topic="T", cid="G", queue_id=0, offset=7, pop_time=1000,
                              invisible_time=30000, broker_name="b")
    ck.re_put_times = "1"
    assert ck.encode() == (b'{"bm":0,"bn":"b","c":"G","d":[0],"it":30000,"n":1,"pt":1000,"q":0,'
                           b'"reviveTime":31000,"ro":0,"rp":"1","so":7,"t":"T"}')


def test_checkpoint_of_an_old_broker_has_no_d():
    """No queueOffsetDiff and no strings: only the primitive getters and reviveTime are written."""
    assert PopCheckPoint().encode() == (
        b'{"bm":0,"it":0,"n":0,"pt":0,"q":0,"reviveTime":0,"ro":0,"so":0}')


def test_checkpoint_bitmap_with_bit_31_is_written_negative():
    """bm is a Java int: the 32nd message's bit makes it negative."""
    ck = PopCheckPoint(num=32)
    ck.mark_acked(31)
    assert b'"bm":-2147483648' in ck.encode()


def test_ack_golden_body():
    """AckMsg: ao bn c pt q so t."""
    ack = AckMsg(ack_offset=101, start_offset=100, consumer_group="GroupA", topic="TopicA",
                 queue_id=2, pop_time=1700000000000, broker_name="broker-a")
    assert ack.encode() == (b'{"ao":101,"bn":"broker-a","c":"GroupA","pt":1700000000000,"q":2,'
                            b'"so":100,"t":"TopicA"}')


def test_batch_ack_golden_body():
    """BatchAckMsg as PopBufferMergeService writes it: ao stays 0, no brokerName, aol after ao."""
    batch = BatchAckMsg(ack_offset_list=[100, 104], start_offset=100, consumer_group="GroupA",
                        topic="TopicA", queue_id=2, pop_time=1700000000000)
    assert batch.encode() == (b'{"ao":0,"aol":[100,104],"c":"GroupA","pt":1700000000000,"q":2,'
                              b'"so":100,"t":"TopicA"}')


def test_bodies_are_valid_json():
    """Every body parses as standard JSON (fastjson's object keys never appear here)."""
    assert orjson.loads(_pop_ck().encode())["reviveTime"] == 1700000060000


# --- reading -----------------------------------------------------------------------------------
def test_ack_reads_the_long_alternate_names():
    """AckMsgTest's long form (alternateNames) reads as the short one."""
    long_form = (b'{"ackOffset":100,"brokerName":"brokerName","consumerGroup":"group",'
                 b'"popTime":1670212915531,"queueId":3,"startOffset":200,"topic":"topic"}')
    assert AckMsg.decode(long_form) == AckMsg(100, 200, "group", "topic", 3, 1670212915531,
                                              "brokerName")


def test_batch_ack_reads_the_long_alternate_names():
    """BatchAckMsgTest's long form, with a space in the list, reads back."""
    long_form = ('{"ackOffsetList":[100, 101],"consumerGroup":"group",'
                 '"popTime":1679454922000,"queueId":3,"startOffset":200,"topic":"topic"}')
    msg = BatchAckMsg.decode(long_form)
    assert (msg.ack_offset_list, msg.start_offset, msg.queue_id) == ([100, 101], 200, 3)


def test_checkpoint_decode_ignores_revive_time_and_unknown_keys():
    """reviveTime has no setter; it is recomputed from pt + it."""
    ck = PopCheckPoint.decode(b'{"pt":5,"it":7,"reviveTime":999,"zz":[1],"n":1}')
    assert (ck.revive_time, ck.num) == (12, 1)


def test_checkpoint_decode_accepts_numbers_as_strings_and_nulls():
    """Numbers in strings are read, nulls leave Java's defaults."""
    ck = PopCheckPoint.decode('{"so":"42","q":null,"t":null,"rp":3,"d":["1",2]}')
    assert (ck.start_offset, ck.queue_id, ck.topic, ck.re_put_times, ck.queue_offset_diff) == (
        42, 0, None, "3", [1, 2])


def test_decode_narrows_to_java_widths():
    """n is a Java byte: 200 reads as -56, as a cast would give it."""
    assert PopCheckPoint.decode(b'{"n":200}').num == java_byte(200) == -56


def test_decode_rejects_a_non_object():
    """A JSON array is no revive body."""
    with pytest.raises(ValueError):
        AckMsg.decode(b"[1]")


def test_decode_by_tag():
    """ck, ack and bAck select the body class; any other tag gives None."""
    assert isinstance(decode_revive_body("ck", _pop_ck().encode()), PopCheckPoint)
    assert type(decode_revive_body("ack", AckMsg().encode())) is AckMsg
    assert isinstance(decode_revive_body("bAck", BatchAckMsg().encode()), BatchAckMsg)
    assert decode_revive_body("other", b"{}") is None


# --- round trips -------------------------------------------------------------------------------
@given(cks)
def test_checkpoint_round_trips(ck):
    """decode(encode(ck)) == ck for values within Java's widths."""
    assert PopCheckPoint.decode(ck.encode()) == ck


@given(acks)
def test_ack_round_trips(ack):
    """decode(encode(ack)) == ack."""
    assert AckMsg.decode(ack.encode()) == ack


@given(batch_acks)
def test_batch_ack_round_trips(batch):
    """decode(encode(batch)) == batch (a null aol reads back as the empty default)."""
    back = BatchAckMsg.decode(batch.encode())
    if batch.ack_offset_list is None:
        batch.ack_offset_list = []
    assert back == batch


@given(cks)
def test_checkpoint_keys_are_in_java_string_order(ck):
    """The keys come out sorted as fastjson's SortField sorts them."""
    keys = list(orjson.loads(ck.encode()))
    assert keys == sorted(keys)


# --- bitmap helpers ----------------------------------------------------------------------------
@given(INT, st.integers(0, 31))
def test_set_bit_then_get_bit(value, index):
    """A set bit reads true, a cleared one false, other bits unchanged."""
    on, off = set_bit(value, index, True), set_bit(value, index, False)
    assert get_bit(on, index) and not get_bit(off, index)
    assert on & ~(1 << index) & 0xFFFFFFFF == off & ~(1 << index) & 0xFFFFFFFF == (
        value & ~(1 << index) & 0xFFFFFFFF)


@given(INT, st.integers(0, 31))
def test_set_bit_stays_a_java_int(value, index):
    """setBit's result is a signed 32-bit value."""
    assert java_int(set_bit(value, index)) == set_bit(value, index)


@given(INT, st.integers(32, 63))
def test_set_bit_past_31_changes_nothing(value, index):
    """(int)(value | 1L << index) drops bits 32..63."""
    assert set_bit(value, index) == value


@given(st.integers(32, 63))
def test_get_bit_past_31_reads_the_sign(index):
    """getBit widens the int with its sign: a negative bitmap answers true past bit 31."""
    assert get_bit(-1, index) and not get_bit(0x7FFFFFFF, index)


@given(INT, st.integers(0, 32))
def test_acked_and_unacked_indexes_partition_num(bit_map, num):
    """Every index below num is either acknowledged or not, never both."""
    acked, unacked = acked_indexes(bit_map, num), unacked_indexes(bit_map, num)
    assert sorted(acked + unacked) == list(range(num)) and not set(acked) & set(unacked)


def test_index_of_ack_uses_the_diff_list():
    """With d, an offset's index is its position in d; an offset not popped is -1."""
    ck = _pop_ck()
    assert [ck.index_of_ack(o) for o in (99, 100, 101, 102, 104, 105)] == [-1, 0, 1, -1, 2, -1]


def test_index_of_ack_without_diff_is_offset_minus_start_below_num():
    """An old-broker CK (no d) covers start_offset .. start_offset + num - 1."""
    ck = PopCheckPoint(start_offset=10, num=3)
    assert [ck.index_of_ack(o) for o in (9, 10, 12, 13)] == [-1, 0, 2, -1]


@given(st.integers(0, 2**40), st.lists(st.integers(0, 10_000), min_size=1, max_size=32,
                                       unique=True))
def test_ack_offset_by_index_inverts_index_of_ack(start, diffs):
    """ackOffsetByIndex(indexOfAck(o)) == o for every popped offset."""
    ck = PopCheckPoint(start_offset=start, num=len(diffs), queue_offset_diff=sorted(diffs))
    for j in range(len(diffs)):
        assert ck.index_of_ack(ck.ack_offset_by_index(j)) == j


def test_acking_leaves_the_unacked_offsets_for_revive():
    """Acking 101 leaves 100 and 104 for revive."""
    ck = _pop_ck()
    assert ck.ack(101) and not ck.ack(102)
    assert (ck.bit_map, ck.unacked_offsets()) == (0b10, [100, 104])


def test_negative_index_into_diff_raises():
    """List.get(-1) throws in Java: IndexError here."""
    with pytest.raises(IndexError):
        _pop_ck().ack_offset_by_index(-1)


def test_parse_re_put_times():
    """Absent is 0, an int is itself, anything Integer.parseInt refuses is 127."""
    assert [PopCheckPoint(re_put_times=v).parse_re_put_times()
            for v in (None, "3", "+4", " 3", "1_0", "x", "9999999999")] == [0, 3, 4, 127, 127,
                                                                              127, 127]


def test_revive_time_and_ck_deliver_time():
    """reviveTime = pt + it; the CK message is due ackTimeInterval (1 s) earlier."""
    ck = _pop_ck()
    assert (ck.revive_time, ck.deliver_time_ms()) == (1700000060000, 1700000059000)


# --- unique ids and merge keys -----------------------------------------------------------------
def test_ck_and_ack_unique_ids():
    """genCkUniqueId / genAckUniqueId: topic@qid@offset@group@popTime@broker@tag."""
    ack = AckMsg(ack_offset=101, start_offset=100, consumer_group="GroupA", topic="TopicA",
                 queue_id=2, pop_time=1700000000000)
    assert _pop_ck().unique_id() == "TopicA@2@100@GroupA@1700000000000@broker-a@ck"
    assert ack.unique_id() == "TopicA@2@101@GroupA@1700000000000@null@ack"


def test_batch_ack_unique_id_uses_java_list_to_string():
    """genBatchAckUniqueId: the offsets as [a, b], no broker name."""
    batch = BatchAckMsg(ack_offset_list=[100, 104], consumer_group="G", topic="T", pop_time=5)
    assert batch.unique_id() == "T@0@[100, 104]@G@5@bAck"


def test_ack_finds_its_ck_by_merge_key():
    """An ACK without brokerName takes the reading broker's name, then matches the CK's key."""
    ack = AckMsg(ack_offset=101, start_offset=100, consumer_group="GroupA", topic="TopicA",
                 queue_id=2, pop_time=1700000000000)
    assert ack.merge_key("broker-a") == _pop_ck().merge_key() == (
        "TopicAGroupA21001700000000000broker-a")
