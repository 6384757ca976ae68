"""The conformance checker's message rules (broker/conformance/message_rules.py): what a send
request's topic, properties, body and batch blocks say, compared with the Java 4.9.8 client and
broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING, Observation
from rocketmq_emu.broker.conformance.message_rules import check_send, java_int, show
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.processors.batch_codec import BatchMessage, encode_batch

SEND_CODES = (10, 310, 320, 324, 325)
REQUESTS = Path(__file__).resolve().parents[1] / "fixtures" / "frames" / "requests.json"
#: What the Java 4.9.8 client sends for one message (properties in its order).
JAVA_PROPS = properties_to_string({"KEYS": "key1", "UNIQ_KEY": "FD00000000000000000000000000000",
                                   "WAIT": "true", "TAGS": "TagA"})


def v2(topic: str = "TopicTest", props: str = JAVA_PROPS, batch: str = "false",
       sys_flag: str = "0") -> dict[str, str]:
    """A SEND_MESSAGE_V2 header as the Java client fills it."""
    return {"a": "PID_TEST", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": sys_flag,
            "g": "1795298625584", "h": "0", "i": props, "j": "0", "k": "false", "m": batch,
            "n": "broker-a"}


def send(props: str = JAVA_PROPS, body: bytes = b"Hello RocketMQ", **kw: str) -> list[Observation]:
    """The observations for a 310 with these properties and body."""
    return check_send(310, v2(props=props, **kw), body)


def found(obs: list[Observation], kind: str) -> list[Observation]:
    """The observations of one kind."""
    return [o for o in obs if o.kind == kind]


def batch(*messages: tuple[bytes, dict[str, str]], **kw: str) -> list[Observation]:
    """The observations for a 320 carrying these (body, properties) messages."""
    body = encode_batch([BatchMessage(0, b, properties_to_string(p)) for b, p in messages])
    kw.setdefault("batch", "true")
    kw.setdefault("props", "WAIT\u0001true")
    return check_send(320, v2(**kw), body)


INNER = {"KEYS": "key1", "UNIQ_KEY": "FD01", "WAIT": "true", "TAGS": "TagA"}


# --- message.topic -----------------------------------------------------------------------------

def test_java_style_send_has_no_observation():
    """A message shaped as the Java client sends it yields nothing."""
    assert send() == []


def test_blank_topic_is_an_error():
    """A blank topic is refused by TopicValidator."""
    (o,) = found(send(topic="  "), "message.topic")
    assert (o.severity, o.field, o.java_class) == (ERROR, "b", "TopicValidator")


def test_topic_with_illegal_characters_is_an_error():
    """A topic with a space is refused (SYSTEM_ERROR, illegal characters)."""
    (o,) = found(send(topic="a b"), "message.topic")
    assert o.severity == ERROR and "illegal characters" in o.message


def test_topic_of_128_characters_is_an_error():
    """TopicValidator's maximum is 127 characters."""
    assert found(send(topic="t" * 128), "message.topic")[0].severity == ERROR


def test_topic_of_127_characters_is_fine():
    """127 characters is still a valid topic."""
    assert found(send(topic="t" * 127), "message.topic") == []


def test_not_allowed_send_topic_is_an_error():
    """SCHEDULE_TOPIC_XXXX is in NOT_ALLOWED_SEND_TOPIC_SET: NO_PERMISSION."""
    (o,) = found(send(topic="SCHEDULE_TOPIC_XXXX"), "message.topic")
    assert o.severity == ERROR and "NO_PERMISSION" in o.message


def test_system_topic_clients_may_send_to_is_fine():
    """RMQ_SYS_TRACE_TOPIC is a system topic the Java trace dispatcher sends to."""
    assert found(send(topic="RMQ_SYS_TRACE_TOPIC"), "message.topic") == []


def test_send_message_v1_reads_the_topic_key():
    """Code 10 carries the topic under its V1 name."""
    (o,) = check_send(10, {"topic": "a b", "properties": JAVA_PROPS}, b"x")
    assert (o.kind, o.field) == ("message.topic", "topic")


# --- message.property.reserved -----------------------------------------------------------------

def test_trailing_separator_is_info():
    """A properties string ending with \\u0002 (C++ clients) is harmless: info."""
    (o,) = found(send(props=JAVA_PROPS + "\u0002"), "message.property.reserved")
    assert o.severity == INFO


def test_trailing_separator_is_one_finding_for_every_message():
    """What the observation shows does not depend on the message, so it is counted once."""
    first = send(props="UNIQ_KEY\u0001A1\u0002")
    assert first == send(props="UNIQ_KEY\u0001B2\u0002")


def test_empty_piece_is_a_warning():
    """Two separators in a row leave an empty piece the Java client never writes."""
    (o,) = found(send(props="KEYS\u0001k\u0002\u0002TAGS\u0001t"), "message.property.reserved")
    assert o.severity == WARNING


def test_piece_without_value_separator_is_an_error():
    """A value containing \\u0002 leaves a tail without \\u0001 that the broker drops."""
    (o,) = found(send(props="KEYS\u0001a\u0002b\u0002TAGS\u0001t"), "message.property.reserved")
    assert (o.severity, o.sent) == (ERROR, "b")


def test_piece_with_empty_name_is_an_error():
    """A piece starting with \\u0001 has no name: the broker drops it."""
    (o,) = found(send(props="\u0001v\u0002TAGS\u0001t"), "message.property.reserved")
    assert o.severity == ERROR and "empty name" in o.message


def test_piece_with_two_value_separators_is_an_error():
    """A name containing \\u0001 shifts the split: the broker reads another name."""
    (o,) = found(send(props="na\u0001me\u0001v"), "message.property.reserved")
    assert o.severity == ERROR and o.sent == "na\\u0001me\\u0001v"


def test_duplicate_name_is_an_error():
    """A name that appears twice: the broker keeps the last value."""
    (o,) = found(send(props="TAGS\u0001a\u0002TAGS\u0001b"), "message.property.reserved")
    assert (o.severity, o.field) == (ERROR, "TAGS")


def test_many_bad_pieces_give_one_observation_with_a_count():
    """Each symptom is reported once per string, counting its pieces."""
    (o,) = found(send(props="a\u0002b\u0002c\u0002K\u0001v"), "message.property.reserved")
    assert "(3 such pieces)" in o.message and o.sent == "a"


def test_empty_value_is_info():
    """KEYS with an empty value (Java's setKeys("")) is dropped by the broker: info."""
    (o,) = send(props="KEYS\u0001\u0002TAGS\u0001t")
    assert (o.kind, o.severity, o.field) == ("message.property.empty", INFO, "KEYS")


def test_properties_over_short_max_are_an_error():
    """The store refuses properties over 32767 bytes."""
    (o,) = found(send(props="K\u0001" + "v" * 32767), "message.property.size")
    assert o.severity == ERROR


def test_long_values_are_cut_in_the_observation():
    """An observation shows at most 80 characters of what was sent."""
    (o,) = found(send(topic="x" * 500), "message.topic")
    assert len(o.sent) == 80


# --- message.body.size ---------------------------------------------------------------------------

def test_body_over_max_message_size_is_an_error():
    """A body over maxMessageSize is refused with MESSAGE_ILLEGAL."""
    (o,) = check_send(310, v2(), b"x" * 11, max_message_size=10)
    assert (o.kind, o.severity) == ("message.body.size", ERROR)


def test_body_of_max_message_size_is_fine():
    """A body of exactly maxMessageSize is stored."""
    assert check_send(310, v2(), b"x" * 10, max_message_size=10) == []


def test_empty_body_is_a_warning():
    """The broker stores an empty body, but the Java client refuses to send one."""
    (o,) = send(body=b"")
    assert (o.kind, o.severity, o.java_class) == ("message.body.size", WARNING, "Validators")


# --- message.delay -------------------------------------------------------------------------------

def test_delay_not_a_number_is_an_error():
    """Integer.parseInt throws on DELAY 'soon': SYSTEM_ERROR."""
    (o,) = send(props="DELAY\u0001soon")
    assert (o.kind, o.severity) == ("message.delay", ERROR)


def test_delay_beyond_int_range_is_an_error():
    """A DELAY outside the int range throws NumberFormatException too."""
    assert send(props="DELAY\u00012147483648")[0].severity == ERROR


def test_delay_above_max_level_is_a_warning():
    """Level 19 is clamped to the highest level, 18."""
    (o,) = send(props="DELAY\u000119")
    assert (o.kind, o.severity) == ("message.delay", WARNING)


def test_delay_within_levels_is_fine():
    """Level 3 (the Java sample's) is a plain delayed message."""
    assert send(props="DELAY\u00013") == []


def test_delay_zero_is_info():
    """Level 0 means no delay: info."""
    (o,) = send(props="DELAY\u00010")
    assert (o.kind, o.severity) == ("message.delay", INFO)


def test_negative_delay_is_info():
    """A negative level means no delay too."""
    assert send(props="DELAY\u0001-2")[0].severity == INFO


@pytest.mark.parametrize("name", ["TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS"])
def test_timer_property_is_info(name):
    """A 5.x timer property is ignored by a 4.9.8 broker: info."""
    (o,) = send(props=f"{name}\u00011000")
    assert (o.kind, o.severity, o.field) == ("message.delay", INFO, name)


def test_java_int_accepts_a_plus_sign():
    """Integer.parseInt accepts a leading '+'."""
    assert java_int("+3") == 3


# --- message.tags --------------------------------------------------------------------------------

def test_tag_with_double_bar_is_a_warning():
    """A subscription splits on '||', so no expression names tag 'a||b'."""
    (o,) = send(props="TAGS\u0001a||b")
    assert (o.kind, o.severity, o.java_class) == ("message.tags", WARNING, "FilterAPI")


def test_tag_with_surrounding_space_is_a_warning():
    """A subscription trims each tag, so no expression names ' a'."""
    assert found(send(props="TAGS\u0001 a"), "message.tags")[0].severity == WARNING


def test_plain_tag_is_fine():
    """A tag with a single '|' is still subscribable."""
    assert send(props="TAGS\u0001a|b") == []


# --- message.batch -------------------------------------------------------------------------------

def test_java_style_batch_has_no_observation():
    """Two messages as MessageBatch encodes them yield nothing."""
    assert batch((b"b1", INNER), (b"b2", INNER)) == []


def test_batch_code_without_batch_flag_is_an_error():
    """A 4.9.8 broker stores a 320 without m=true as one message."""
    (o,) = batch((b"b1", INNER), batch="false")
    assert (o.kind, o.severity, o.field) == ("message.batch", ERROR, "m")


def test_undecodable_batch_body_is_an_error():
    """A body that is no sequence of encoded messages is an error, not an exception."""
    (o,) = check_send(320, v2(batch="true"), b"\x00\x00\x00\x30garbage")
    assert (o.kind, o.severity, o.field) == ("message.batch", ERROR, "body")


def test_batch_to_retry_topic_is_an_error():
    """The Java client refuses a batch to %RETRY%; 5.x brokers answer MESSAGE_ILLEGAL."""
    (o,) = batch((b"b1", INNER), topic="%RETRY%GID")
    assert (o.kind, o.severity) == ("message.batch", ERROR)


def test_batch_header_delay_is_an_error():
    """CommitLog.asyncPutMessages refuses a batch with a DELAY level."""
    (o,) = batch((b"b1", INNER), props="WAIT\u0001true\u0002DELAY\u00012")
    assert (o.kind, o.severity, o.field) == ("message.batch", ERROR, "DELAY")


def test_batch_header_delay_zero_is_fine():
    """DELAY 0 on a batch asks for no delay and is stored."""
    assert batch((b"b1", INNER), props="WAIT\u0001true\u0002DELAY\u00010") == []


def test_batch_with_transaction_sys_flag_is_an_error():
    """A batch with the prepared-transaction sysFlag is refused."""
    (o,) = batch((b"b1", INNER), sys_flag="4")
    assert (o.kind, o.field) == ("message.batch", "f")


def test_inner_delay_is_an_error():
    """A delayed message inside a batch is stored undelayed; the Java client refuses it."""
    (o,) = batch((b"b1", {**INNER, "DELAY": "3"}))
    assert (o.kind, o.severity, o.java_class) == ("message.batch", ERROR, "MessageBatch")


def test_mixed_wait_values_are_a_warning():
    """Inner messages with different WAIT values: the broker follows the header."""
    (o,) = batch((b"b1", INNER), (b"b2", {**INNER, "WAIT": "false"}))
    assert (o.kind, o.severity, o.field) == ("message.batch", WARNING, "WAIT")


def test_inner_empty_body_is_a_warning():
    """The Java client checks each batch message's body; an empty one is refused there."""
    (o,) = batch((b"", INNER))
    assert (o.kind, o.severity, o.field) == ("message.body.size", WARNING, "body#0")


def test_inner_properties_are_checked():
    """A separator symptom inside a batch message names the message."""
    body = encode_batch([BatchMessage(0, b"x", "KEYS\u0001a\u0002b")])
    (o,) = check_send(320, v2(batch="true", props="WAIT\u0001true"), body)
    assert o.field == "body#0" and o.message.startswith("batch message #0: ")


def test_batch_body_over_max_is_an_error():
    """DefaultMessageStore.checkMessages refuses a batch body over maxMessageSize."""
    body = encode_batch([BatchMessage(0, b"x" * 50, "")])
    obs = check_send(320, v2(batch="true", props=""), body, max_message_size=40)
    assert found(obs, "message.body.size")[0].severity == ERROR


def test_send_message_v2_with_batch_flag_is_read_as_a_batch():
    """A 310 with m=true takes the broker's batch path, so its blocks are checked."""
    body = encode_batch([BatchMessage(0, b"x", properties_to_string({"DELAY": "2"}))])
    (o,) = check_send(310, v2(batch="true", props=""), body)
    assert o.kind == "message.batch"


def test_reply_with_batch_flag_is_read_as_one_message():
    """ReplyMessageProcessor has no batch path: the body is one message."""
    assert check_send(325, v2(batch="true"), b"not a batch") == []


# --- robustness and the Java client's own frames --------------------------------------------------

def test_show_spells_out_separators():
    """Observations show \\u0001 and \\u0002 as text."""
    assert show("a\u0001b\u0002") == "a\\u0001b\\u0002"


def test_non_string_header_values_are_read():
    """A client sending numbers in extFields (ali-ons) is still checked."""
    assert check_send(10, {"topic": 5, "properties": None}, b"x") == []  # type: ignore[dict-item]


_TEXT = st.text(alphabet=st.sampled_from(list("ab|%-_ 1\u0001\u0002\u00e9")), max_size=30)
_KEYS = st.sampled_from(["b", "i", "m", "f", "topic", "properties", "batch", "sysFlag", "x"])


@settings(max_examples=300, deadline=None)
@given(code=st.sampled_from(SEND_CODES),
       ext=st.dictionaries(_KEYS, st.one_of(_TEXT, st.sampled_from(["true", "4", "DELAY"]))),
       body=st.binary(max_size=80))
def test_check_send_never_raises(code, ext, body):
    """Arbitrary headers and bodies give observations, never an exception."""
    obs = check_send(code, ext, body)
    assert all(isinstance(o, Observation) and o.kind != "message.check" for o in obs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=8), _TEXT), max_size=4))
def test_check_send_never_raises_on_wellformed_batches(messages):
    """Any well-framed batch, whatever its properties hold, is checked without an exception."""
    body = encode_batch([BatchMessage(0, b, p) for b, p in messages])
    obs = check_send(320, v2(batch="true"), body)
    assert all(o.kind != "message.check" for o in obs)


def java_send_frames() -> list[tuple[int, dict[str, str], bytes]]:
    """(code, extFields, body) of every send frame in the Java 4.9.8 capture
    (tests/fixtures/frames/requests.json, every body whole)."""
    frames = []
    for req in json.loads(REQUESTS.read_text())["java-4.9.8"]:
        header = req["header"]
        if header["code"] in SEND_CODES:
            frames.append((header["code"], header.get("extFields") or {},
                           bytes.fromhex(req["body_hex"])))
    return frames


def test_java_client_frames_give_no_error_and_no_warning():
    """Every send frame the Java 4.9.8 client sent (its 310 sends and 320 batch, whole)
    passes without error or warning."""
    frames = java_send_frames()
    assert {code for code, _, _ in frames} >= {310, 320}
    for code, ext, body in frames:
        obs = check_send(code, ext, body)
        assert [o for o in obs if o.severity in (ERROR, WARNING)] == [], (code, ext)
