"""The commitlog record format, held to golden bytes and to its construct declaration."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.commitlog.record import (
    BLANK,
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    RECORD,
    MessageRecord,
    RecordError,
    body_crc,
    decode_record,
    encode_blank,
    encode_record,
    iter_records,
    peek,
)
from rocketmq_emu.broker.message import pack_host

# Written by hand from protocol.md section 4.1: an IPv4, V1 record, field by field.
GOLDEN_FIELDS = [
    "00000068",  # TOTALSIZE = 104 = 91 + body 2 + topic 1 + props 10
    "daa320a7",  # MAGICCODE V1
    "58932aac",  # BODYCRC = zlib.crc32(b"hi") (0xd8932aac) & 0x7fffffff
    "00000003",  # QUEUEID
    "00000007",  # FLAG
    "0000000000000005",  # QUEUEOFFSET
    "0000000000000400",  # PHYSICALOFFSET = 1024
    "00000000",  # SYSFLAG
    "0000018bcfe56800",  # BORNTIMESTAMP = 1700000000000
    "7f000001" "0000d431",  # BORNHOST 127.0.0.1:54321
    "0000018bcfe56bE8",  # STORETIMESTAMP = 1700000001000
    "0a000005" "00002a9f",  # STOREHOST 10.0.0.5:10911
    "00000002",  # RECONSUMETIMES
    "0000000000000000",  # PREPARED TRANSACTION OFFSET
    "00000002" "6869",  # BODY "hi"
    "01" "54",  # TOPIC "T"
    "",  # PROPERTIES: int16 length + "TAGS\x01a\x02K\x01v", filled in golden_hex()
]


def golden_record() -> MessageRecord:
    return MessageRecord(
        topic="T",
        body=b"hi",
        queue_id=3,
        flag=7,
        queue_offset=5,
        physical_offset=1024,
        born_timestamp=1700000000000,
        born_host=("127.0.0.1", 54321),
        store_timestamp=1700000001000,
        store_host=("10.0.0.5", 10911),
        reconsume_times=2,
        properties_str="TAGS\x01a\x02K\x01v",
        properties={"TAGS": "a", "K": "v"},
        body_crc=body_crc(b"hi"),
    )


def golden_hex() -> str:
    fields = list(GOLDEN_FIELDS)
    fields[-1] = "000a" + b"TAGS\x01a\x02K\x01v".hex()
    return "".join(fields).lower()


def test_body_crc_is_java_crc32_with_sign_bit_cleared():
    """BODYCRC is zlib CRC-32 masked with 0x7FFFFFFF, not CRC-32C."""
    body = b"\xff" * 7
    assert zlib.crc32(body) & 0x80000000  # this body exercises the sign bit
    assert body_crc(body) == zlib.crc32(body) & 0x7FFFFFFF


def test_struct_encoder_matches_hand_written_golden_bytes():
    """The fast encoder produces the golden bytes written from the spec."""
    assert encode_record(golden_record()).hex() == golden_hex()


def test_construct_spec_matches_hand_written_golden_bytes():
    """The construct declaration builds the same golden bytes."""
    rec = golden_record()
    built = RECORD.build(
        dict(
            totalSize=104, magicCode=MESSAGE_MAGIC_CODE, bodyCRC=rec.body_crc, queueId=3, flag=7,
            queueOffset=5, physicalOffset=1024, sysFlag=0, bornTimestamp=rec.born_timestamp,
            bornHost=pack_host("127.0.0.1", 54321), storeTimestamp=rec.store_timestamp,
            storeHostAddress=pack_host("10.0.0.5", 10911), reconsumeTimes=2,
            preparedTransactionOffset=0, body=b"hi", topic=b"T",
            properties=b"TAGS\x01a\x02K\x01v",
        )
    )
    assert built.hex() == golden_hex()


def test_decoder_reads_every_golden_field():
    """Decoding the golden bytes gives back every field."""
    rec = decode_record(bytes.fromhex(golden_hex()), check_crc=True)
    assert (rec.topic, rec.body, rec.queue_id, rec.flag) == ("T", b"hi", 3, 7)
    assert (rec.queue_offset, rec.physical_offset, rec.reconsume_times) == (5, 1024, 2)
    assert rec.born_host == ("127.0.0.1", 54321) and rec.store_host == ("10.0.0.5", 10911)
    assert rec.properties == {"TAGS": "a", "K": "v"} and rec.total_size == 104


def test_ipv6_hosts_set_sysflag_bits_and_widen_host_blocks():
    """An IPv6 born/store host sets sysFlag 0x10/0x20 and takes 20 bytes each."""
    rec = MessageRecord(topic="T", body=b"x", born_host=("::1", 1), store_host=("fe80::2", 2))
    data = encode_record(rec)
    assert len(data) == 91 + 24 + 1 + 1
    out = decode_record(data)
    assert out.sys_flag & 0x30 == 0x30
    assert out.born_host == ("::1", 1) and out.store_host == ("fe80::2", 2)


def test_long_topic_uses_v2_magic_with_two_byte_length():
    """Topics over 127 bytes get MAGIC V2 and a 2-byte topic length."""
    topic = "t" * 200
    data = encode_record(MessageRecord(topic=topic, body=b"b"))
    assert peek(data, 0)[1] == MESSAGE_MAGIC_CODE_V2
    assert decode_record(data).topic == topic
    assert RECORD.parse(data).topic == topic.encode()


def test_short_topic_keeps_v1_magic():
    """Topics up to 127 bytes stay on MAGIC V1, which 4.x clients expect."""
    assert peek(encode_record(MessageRecord(topic="t" * 127)), 0)[1] == MESSAGE_MAGIC_CODE


def test_blank_filler_is_size_then_blank_magic():
    """The end-of-file filler is the remaining length and BLANK_MAGIC_CODE."""
    assert encode_blank(300).hex() == "0000012ccbd43194"
    assert BLANK.parse(encode_blank(300)).totalSize == 300


def test_iter_records_stops_at_blank_and_at_zeroes():
    """Iteration stops at a BLANK filler and at the zeroed unwritten tail."""
    a = encode_record(MessageRecord(topic="A", body=b"1"))
    b = encode_record(MessageRecord(topic="B", body=b"2"))
    assert [r.topic for _, r in iter_records(a + b + bytes(32))] == ["A", "B"]
    assert [r.topic for _, r in iter_records(a + encode_blank(50) + b)] == ["A"]


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d[:4] + b"\x00\x00\x00\x00" + d[8:], "MAGICCODE"),
        (lambda d: b"\x7f\x00\x00\x00" + d[4:], "TOTALSIZE"),
        (lambda d: d[:84] + b"\x00\x00\x7f\x00" + d[88:], "BODYLENGTH"),
        (lambda d: d[:60], "TOTALSIZE"),
    ],
)
def test_corrupt_record_names_the_field(mutate, field):
    """A corrupt record raises RecordError naming the offending field."""
    data = mutate(bytes.fromhex(golden_hex()))
    with pytest.raises(RecordError, match=field):
        decode_record(data)


def test_crc_check_detects_a_flipped_body_byte():
    """check_crc catches a body that no longer matches BODYCRC."""
    data = bytearray.fromhex(golden_hex())
    data[88] ^= 1
    with pytest.raises(RecordError, match="BODYCRC"):
        decode_record(bytes(data), check_crc=True)


def test_blank_magic_constant_value():
    """BLANK_MAGIC_CODE is 0xCBD43194 as a signed int."""
    assert BLANK_MAGIC_CODE & 0xFFFFFFFF == 0xCBD43194


hosts = st.one_of(
    st.tuples(st.ip_addresses(v=4).map(str), st.integers(0, 65535)),
    st.tuples(st.ip_addresses(v=6).map(str), st.integers(0, 65535)),
)
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), min_size=1, max_size=20)


@given(
    topic=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=300),
    body=st.binary(max_size=300),
    props=st.dictionaries(text, text, max_size=5),
    born=hosts,
    store=hosts,
    ints=st.tuples(st.integers(0, 2**31 - 1), st.integers(-(2**31), 2**31 - 1),
                   st.integers(0, 2**62), st.integers(0, 2**62), st.integers(0, 2**40)),
)
def test_round_trip_and_construct_agree(topic, body, props, born, store, ints):
    """Any record round-trips through the fast path, and construct parses it identically."""
    qid, flag, qoff, phys, ts = ints
    rec = MessageRecord(topic=topic, body=body, queue_id=qid, flag=flag, properties=props,
                        queue_offset=qoff, physical_offset=phys, born_timestamp=ts,
                        store_timestamp=ts + 1, born_host=born, store_host=store)
    data = encode_record(rec)
    out = decode_record(data, check_crc=True)
    assert (out.topic, out.body, out.properties) == (topic, body, props)
    assert (out.queue_id, out.flag, out.queue_offset, out.physical_offset) == (qid, flag, qoff, phys)
    assert out.born_host == born and out.store_host == store
    parsed = RECORD.parse(data)
    assert RECORD.build(parsed) == data
    assert parsed.body == body and parsed.totalSize == len(data)


def test_derived_offsets_are_message_decoders_positions():
    """The named offsets equal Java MessageDecoder's *_POSITION constants (IPv4 shape)."""
    from rocketmq_emu.broker.commitlog import record

    assert (record.MAGIC_CODE_AT, record.PHYSICAL_OFFSET_AT, record.SYS_FLAG_AT) == (4, 28, 36)
    assert (record.STORE_TIMESTAMP_AT, record.BODY_LENGTH_AT) == (56, 84)
    assert (record.QUEUE_OFFSET_AT, record.BORN_HOST_AT, record.BODY_CRC_AT) == (20, 48, 8)


def test_derived_structs_have_the_hand_written_formats():
    """V4 (88 bytes), HEAD (48), PEEK and the blank are the formats the record always had."""
    from rocketmq_emu.broker.commitlog import record

    assert record.V4.format == ">iiiiiqqiq8sq8siqi" and record.V4.size == 88
    assert record.HEAD.format == ">iiiiiqqiq" and record.HEAD.size == 48
    assert record.PEEK.format == record.BLANK_STRUCT.format == ">ii"
    assert (record.MIN_RECORD_SIZE, record.END_FILE_MIN_BLANK_LENGTH) == (91, 8)


def test_ipv6_shapes_shift_the_later_offsets_by_twelve_per_host():
    """A 20-byte host moves storeTimestamp and bodyLength by 12 bytes per IPv6 host."""
    from rocketmq_emu.broker.commitlog import record

    assert [record.store_timestamp_at(f) for f in (0, 0x10, 0x20, 0x30)] == [56, 68, 56, 68]
    assert [record.body_length_at(f) for f in (0, 0x10, 0x20, 0x30)] == [84, 96, 96, 108]


@pytest.mark.parametrize("sys_flag", [0, 0x10, 0x20, 0x30])
def test_record_size_is_the_declarations_size(sys_flag):
    """record_size adds the variable parts to the declaration's fixed size for every shape."""
    from rocketmq_emu.broker.commitlog.record import record_size

    born = ("::1", 1) if sys_flag & 0x10 else ("127.0.0.1", 1)
    store = ("::2", 2) if sys_flag & 0x20 else ("127.0.0.2", 2)
    rec = MessageRecord(topic="t" * 130, body=b"xyz", born_host=born, store_host=store,
                        properties={"K": "v"})
    assert len(encode_record(rec)) == record_size(3, 130, 3, sys_flag)
