"""Typed headers read extFields the way Apache RocketMQ's Java decoders do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.remoting import headers as h
from rocketmq_emu.broker.remoting.command import decode
from rocketmq_emu.broker.remoting.headers import HeaderError, SendMessageRequestHeader

FRAMES = json.loads((Path(__file__).parents[1] / "fixtures/frames/frames.json").read_text())


def _golden(prefix: str, code: int, serialize: str = "JSON"):
    frame = next(f for f in FRAMES if f["name"].startswith(prefix)
                 and f["header"]["code"] == code and f["serialize"] == serialize)
    return decode(bytes.fromhex(frame["hex"]))


def test_java_binary_send_v2_frame_parses_into_v1_header():
    """The Java ROCKETMQ-serialized SEND_MESSAGE_V2 maps letters a..n onto V1 names."""
    cmd = _golden("java", 310, "ROCKETMQ")
    hdr = SendMessageRequestHeader.from_request(cmd.code, cmd.ext_fields)
    assert (hdr.producer_group, hdr.topic, hdr.default_topic) == ("PID_TEST", "TopicTest", "TBW102")
    assert (hdr.default_topic_queue_nums, hdr.queue_id, hdr.sys_flag, hdr.flag) == (4, 0, 0, 0)
    assert hdr.born_timestamp == 1795298660650 and hdr.bname == "broker-a"
    assert hdr.unit_mode is False and hdr.batch is False and hdr.reconsume_times == 0
    assert "TAGS\x01TagA" in hdr.properties


def test_ali_ons_numeric_send_header_parses_after_coercion():
    """ali-ons' JS numbers/booleans in a SEND_MESSAGE_V2 header parse like Java strings."""
    cmd = _golden("ali-ons", 310)
    hdr = SendMessageRequestHeader.from_v2(cmd.ext_fields)
    assert hdr.default_topic_queue_nums == 4 and hdr.unit_mode is False
    assert "m" not in cmd.ext_fields and hdr.batch is False


def test_v2_round_trip_through_letters():
    """to_v2_ext_fields produces the letters from_v2 reads back."""
    hdr = SendMessageRequestHeader("g", "T", "TBW102", 4, 1, 0, 123, 0, "a\x01b\x02", 0,
                                   False, True, 16, "broker-a")
    ext = hdr.to_v2_ext_fields()
    assert ext["m"] == "true" and ext["n"] == "broker-a" and ext["g"] == "123"
    assert SendMessageRequestHeader.from_v2(ext) == hdr


@pytest.mark.parametrize("text, expected", [
    ("true", True), ("TRUE", True), ("True", True), ("1", False), ("yes", False), ("", False),
])
def test_booleans_follow_boolean_parse_boolean(text, expected):
    """A boolean is true only for case-insensitive "true" (C++ "1" batches are not batches)."""
    ext = {"producerGroup": "g", "topic": "T", "defaultTopic": "TBW102",
           "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
           "bornTimestamp": "1", "flag": "0", "batch": text}
    assert SendMessageRequestHeader.from_ext_fields(ext).batch is expected


def test_missing_required_field_names_the_field():
    """A missing @CFNotNull field raises HeaderError naming the wire field."""
    with pytest.raises(HeaderError, match=r"<queueId> is null"):
        h.GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T"})


def test_missing_required_v2_letter_names_letter_and_v1_name():
    """A missing V2 letter is reported as the letter and its V1 meaning."""
    with pytest.raises(HeaderError, match=r"<e> \(queueId\)"):
        SendMessageRequestHeader.from_v2({"a": "g", "b": "T", "c": "TBW102", "d": "4"})


@pytest.mark.parametrize("bad", ["abc", "1.5", " 4", "2147483648", "0x10", ""])
def test_invalid_required_int_raises(bad):
    """Integer.parseInt rejects these: a required field with such a value raises HeaderError."""
    with pytest.raises(HeaderError, match="queueId"):
        h.GetMinOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": bad})


def test_long_field_accepts_64_bit_values():
    """Long fields take values beyond the int32 range."""
    hdr = h.ViewMessageRequestHeader.from_ext_fields({"offset": str(2**40)})
    assert hdr.offset == 2**40


def test_invalid_optional_field_is_ignored_like_java(caplog):
    """An unparsable optional value is logged and left at its default."""
    hdr = h.PullMessageRequestHeader.from_ext_fields({
        "consumerGroup": "g", "topic": "T", "queueId": "1", "queueOffset": "0",
        "maxMsgNums": "32", "sysFlag": "2", "commitOffset": "0",
        "suspendTimeoutMillis": "15000", "subVersion": "0", "maxMsgBytes": "lots"})
    assert hdr.max_msg_bytes is None and "maxMsgBytes" in caplog.text


def test_unknown_ext_fields_are_ignored():
    """Keys a header does not declare (bname, AccessKey, ...) do not disturb parsing."""
    hdr = h.UnregisterClientRequestHeader.from_ext_fields(
        {"clientID": "c", "AccessKey": "", "Signature": "x", "producerGroup": "P"})
    assert (hdr.client_id, hdr.producer_group, hdr.consumer_group) == ("c", "P", None)


def test_response_header_emits_only_strings_and_skips_none():
    """to_ext_fields writes Java's toString forms and leaves None fields out."""
    ext = h.SendMessageResponseHeader(msg_id="AB", queue_id=3, queue_offset=9).to_ext_fields()
    assert ext == {"msgId": "AB", "queueId": "3", "queueOffset": "9"}
    assert h.QueryDataVersionResponseHeader(changed=False).to_ext_fields() == {"changed": "false"}


def test_golden_pull_and_offset_frames_parse():
    """Captured PULL_MESSAGE / QUERY_CONSUMER_OFFSET / UPDATE frames parse into typed headers."""
    pull = h.PullMessageRequestHeader.from_ext_fields(_golden("java", 11).ext_fields)
    assert pull.max_msg_nums == 32 and pull.suspend_timeout_millis == 15000
    q = h.QueryConsumerOffsetRequestHeader.from_ext_fields(_golden("java", 14).ext_fields)
    assert q.queue_id >= 0 and q.topic
    u = h.UpdateConsumerOffsetRequestHeader.from_ext_fields(_golden("ali-ons", 15).ext_fields)
    assert u.commit_offset == -1  # ali-ons commits -1 before it has consumed anything
    r = h.GetRouteInfoRequestHeader.from_ext_fields(_golden("rocketmq-nodejs", 105).ext_fields)
    assert r.topic


def test_every_header_class_round_trips_its_own_fields():
    """For every header class, from_ext_fields(to_ext_fields(x)) == x with all fields set."""
    samples = {h.STR: "v", h.INT: 7, h.LONG: 2**40, h.BOOL: True}
    for name in h.__all__:
        cls = getattr(h, name)
        if not (isinstance(cls, type) and issubclass(cls, h.CommandHeader)) or not cls.SPEC:
            continue
        value = cls(**{attr: samples[kind] for attr, _w, kind, _r in cls.SPEC})
        assert cls.from_ext_fields(value.to_ext_fields()) == value, name


@settings(deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1), st.booleans(),
       st.text(min_size=1))
def test_hypothesis_round_trip_end_transaction(i, long_, flag, text):
    """EndTransactionRequestHeader survives to_ext_fields/from_ext_fields for any values."""
    hdr = h.EndTransactionRequestHeader(text, long_, long_, i, flag, text, text, None)
    assert h.EndTransactionRequestHeader.from_ext_fields(hdr.to_ext_fields()) == hdr


def _java_parse_int(text, bits):
    """Reference Integer.parseInt / Long.parseLong: optional sign, decimal digits, in range."""
    import re
    if not re.fullmatch(r"[+-]?\d+", text):
        return None
    value = int(text)
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None


_numberish = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.text(alphabet="0123456789+- x٣", max_size=21),
)


@settings(deadline=None)
@given(queue_id=_numberish, queue_offset=_numberish)
def test_generated_parser_matches_java_number_parsing(queue_id, queue_offset):
    """Int/long fields accept exactly what Integer.parseInt / Long.parseLong accept."""
    ext = {"consumerGroup": "g", "topic": "T", "queueId": queue_id, "queueOffset": queue_offset,
           "maxMsgNums": "32", "sysFlag": "2", "commitOffset": "0",
           "suspendTimeoutMillis": "15000", "subVersion": "0"}
    want_qid, want_off = _java_parse_int(queue_id, 32), _java_parse_int(queue_offset, 64)
    if want_qid is None or want_off is None:
        with pytest.raises(HeaderError):
            h.PullMessageRequestHeader.from_ext_fields(ext)
    else:
        hdr = h.PullMessageRequestHeader.from_ext_fields(ext)
        assert (hdr.queue_id, hdr.queue_offset) == (want_qid, want_off)
