"""The POP/ACK hot paths against the straightforward definitions they replace: Java widths with
their in-range shortcut, the bitmap counted with ``int.bit_count``, bodies written with one
``orjson.dumps`` of a dict, the ACK unique id and extraInfo parsing without generic helpers.
Each reference here is the earlier implementation, kept as the specification."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.pop import extra_info as ei
from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.java_bits import (
    acked_indexes,
    get_bit,
    java_byte,
    java_int,
    java_long,
    set_bit,
    unacked_count,
    unacked_indexes,
)
from rocketmq_emu.broker.pop.revive_bodies import AckMsg, BatchAckMsg, PopCheckPoint

ANY_INT = st.integers(-(2**70), 2**70) | st.booleans()
LONG = st.integers(-(2**63), 2**63 - 1)
INT = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=12)  # any characters: escaping must match too
OPT_TEXT = st.none() | TEXT


def _wrap_ref(value: int, bits: int) -> int:
    mask = (1 << bits) - 1
    value = int(value) & mask
    return value - (1 << bits) if value >> (bits - 1) else value


def _get_bit_ref(value: int, index: int) -> bool:
    """``DataConverter.getBit`` spelled out: (long) of the int, & ``1L << index``."""
    return (_wrap_ref(value, 32) & _wrap_ref(1 << (index & 63), 64)) != 0


def _dump_ref(pairs) -> bytes:
    """The per-key writer the bodies used before (one jsonutil.dumps per key and value)."""
    return b"{" + b",".join(jsonutil.dumps(k) + b":" + jsonutil.dumps(v)
                            for k, v in pairs if v is not None) + b"}"


def _ack_pairs(ack: AckMsg):
    return (("ao", java_long(ack.ack_offset)), ("bn", ack.broker_name),
            ("c", ack.consumer_group), ("pt", java_long(ack.pop_time)),
            ("q", java_int(ack.queue_id)), ("so", java_long(ack.start_offset)), ("t", ack.topic))


# --- Java widths and the bitmap ----------------------------------------------------------------
@given(ANY_INT)
def test_java_widths_match_twos_complement_narrowing(value):
    """In range or not, bool or int: the casts give the wrapped int."""
    for fn, bits in ((java_byte, 8), (java_int, 32), (java_long, 64)):
        out = fn(value)
        assert out == _wrap_ref(value, bits) and type(out) is int


@given(st.integers(-(2**40), 2**40), st.integers(0, 200))
def test_get_bit_matches_data_converter(value, index):
    """Shift-and-test equals the widened mask test for any index (taken mod 64)."""
    assert get_bit(value, index) == _get_bit_ref(value, index)


@given(st.integers(-(2**40), 2**40), st.integers(0, 200), st.booleans())
def test_set_bit_matches_data_converter(value, index, flag):
    """``(int)((long) value | 1L << index)`` (or ``& ~``)."""
    wide = _wrap_ref(_wrap_ref(value, 32), 64)
    bit = 1 << (index & 63)
    assert set_bit(value, index, flag) == _wrap_ref(wide | bit if flag else wide & ~bit, 32)


@given(INT, st.integers(-5, 200))
def test_index_lists_and_count_match_the_per_bit_scan(bit_map, num):
    """acked/unacked indexes and the unacked count equal a getBit loop over ``range(num)``,
    past 64 (indexes wrap) and for a negative num (nothing) too."""
    acked = [j for j in range(num) if _get_bit_ref(bit_map, j)]
    unacked = [j for j in range(num) if not _get_bit_ref(bit_map, j)]
    assert acked_indexes(bit_map, num) == acked
    assert unacked_indexes(bit_map, num) == unacked
    assert unacked_count(bit_map, num) == len(unacked)


@given(st.lists(st.integers(0, 31), max_size=40, unique=True), st.integers(1, 32))
def test_checkpoint_unacked_count_follows_acks(acked, num):
    """A CK's count drops by one per newly acknowledged message and is 0 once all are."""
    ck = PopCheckPoint(num=num, queue_offset_diff=list(range(num)))
    for index in acked:
        if index < num:
            ck.ack(index)
        assert ck.unacked_count() == len(ck.unacked_offsets())
    for index in range(num):
        ck.ack(index)
    assert ck.unacked_count() == 0 and ck.unacked_offsets() == []


# --- bodies ------------------------------------------------------------------------------------
acks = st.builds(AckMsg, ack_offset=LONG, start_offset=LONG, consumer_group=OPT_TEXT,
                 topic=OPT_TEXT, queue_id=INT, pop_time=LONG, broker_name=OPT_TEXT)


@given(acks)
def test_ack_body_is_byte_identical_to_the_per_key_writer(ack):
    """Any strings (escapes included), nulls left out: same bytes as before."""
    assert ack.encode() == _dump_ref(_ack_pairs(ack))


@given(acks, st.none() | st.lists(LONG, max_size=32))
def test_batch_ack_body_is_byte_identical_to_the_per_key_writer(ack, aol):
    """``ao aol bn c pt q so t``."""
    batch = BatchAckMsg(ack_offset=ack.ack_offset, start_offset=ack.start_offset,
                        consumer_group=ack.consumer_group, topic=ack.topic,
                        queue_id=ack.queue_id, pop_time=ack.pop_time,
                        broker_name=ack.broker_name, ack_offset_list=aol)
    pairs = list(_ack_pairs(batch))
    pairs.insert(1, ("aol", aol))
    assert batch.encode() == _dump_ref(pairs)


@given(st.builds(PopCheckPoint, start_offset=LONG, pop_time=st.integers(0, 2**62),
                 invisible_time=st.integers(0, 2**40), bit_map=INT, num=st.integers(-128, 127),
                 queue_id=INT, topic=OPT_TEXT, cid=OPT_TEXT, revive_offset=LONG,
                 queue_offset_diff=st.none() | st.lists(INT, max_size=32),
                 broker_name=OPT_TEXT, re_put_times=OPT_TEXT))
def test_checkpoint_body_is_byte_identical_to_the_per_key_writer(ck):
    """``bm bn c d it n pt q reviveTime ro rp so t``."""
    assert ck.encode() == _dump_ref((
        ("bm", java_int(ck.bit_map)), ("bn", ck.broker_name), ("c", ck.cid),
        ("d", ck.queue_offset_diff), ("it", java_long(ck.invisible_time)),
        ("n", java_byte(ck.num)), ("pt", java_long(ck.pop_time)), ("q", java_int(ck.queue_id)),
        ("reviveTime", ck.revive_time), ("ro", java_long(ck.revive_offset)),
        ("rp", ck.re_put_times), ("so", java_long(ck.start_offset)), ("t", ck.topic)))
    assert orjson.loads(ck.encode())["reviveTime"] == ck.revive_time


# --- unique ids --------------------------------------------------------------------------------
def _j_ref(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@given(OPT_TEXT, INT | st.booleans(), LONG, OPT_TEXT, LONG, OPT_TEXT)
def test_ack_unique_id_matches_java_concatenation(topic, queue_id, offset, group, pop_time,
                                                  broker):
    """``topic@queueId@ackOffset@group@popTime@brokerName@ack`` with Java's ``null``/``true``."""
    expected = "@".join([_j_ref(v) for v in (topic, queue_id, offset, group, pop_time, broker)]
                        + ["ack"])
    assert names.ack_unique_id(topic, queue_id, offset, group, pop_time, broker) == expected
    ack = AckMsg(ack_offset=offset, consumer_group=group, topic=topic, queue_id=queue_id,
                 pop_time=pop_time, broker_name=broker)
    assert ack.unique_id() == expected


# --- extraInfo ---------------------------------------------------------------------------------
def _fields_ref(extra_info: str):
    """The getters one by one, as ``ExtraInfo.parse`` read them before."""
    parts = ei.split_extra_info(extra_info)
    return (ei.get_ck_queue_offset(parts), ei.get_pop_time(parts), ei.get_invisible_time(parts),
            ei.get_revive_qid(parts), ei.get_retry(parts), ei.get_broker_name(parts),
            ei.get_queue_id(parts), ei.get_queue_offset(parts) if len(parts) > 7 else None)


NUMBER_TEXT = (st.integers(-(2**64), 2**64).map(str) | st.sampled_from(
    ["", "+1", "-0", "007", "1e3", " 1", "١٢", "9223372036854775807", "9223372036854775808",
     "2147483647", "2147483648", "-2147483649", "99999999999999999999"]))


@given(st.lists(NUMBER_TEXT | st.sampled_from(["0", "1", "2", "broker-a"]), min_size=0,
                max_size=10))
def test_extra_info_fields_match_the_getters(fields):
    """Same values, or ValueError both ways, for any field strings (Java's number rules)."""
    text = " ".join(fields)
    try:
        expected = _fields_ref(text)
    except ValueError:
        try:
            ei.extra_info_fields(text)
        except ValueError:
            return
        raise AssertionError(f"{text!r} should raise") from None
    assert ei.extra_info_fields(text) == expected
    assert ei.ExtraInfo.parse(text) == ei.ExtraInfo(*expected)


def test_extra_info_fields_of_a_receipt_handle_ignore_the_ninth():
    """A gRPC receipt handle: the commit-log offset (ninth field) is not read."""
    assert ei.extra_info_fields("100 1700000000000 60000 3 2 broker-a 2 105 123456") == (
        100, 1700000000000, 60000, 3, "2", "broker-a", 2, 105)
