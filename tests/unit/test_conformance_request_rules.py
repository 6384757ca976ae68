"""Conformance rules on one request: codes, identity, header keys and values (issue 17)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING
from rocketmq_emu.broker.conformance.request_rules import check_request
from rocketmq_emu.broker.remoting.codes import SERIALIZE_JSON, SERIALIZE_ROCKETMQ

SEND_V1 = {"producerGroup": "g", "topic": "T", "defaultTopic": "TBW102",
           "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
           "bornTimestamp": "1700000000000", "flag": "0", "properties": "",
           "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}
SEND_V2 = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0",
           "g": "1700000000000", "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}


def java(code: int, ext: dict[str, str], **kw: object) -> list:
    """The observations for a request as the Java client 4.9.8 labels it."""
    return check_request(code, kw.get("language", "JAVA"), kw.get("version", 409),  # type: ignore[arg-type]
                         kw.get("serialize", SERIALIZE_JSON), ext)  # type: ignore[arg-type]


def test_java_send_has_no_finding() -> None:
    """A send header as the Java client writes it is conformant."""
    assert java(10, SEND_V1) == [] and java(310, SEND_V2) == []


def test_cpp_batch_flag_one_is_an_error_naming_field_and_value() -> None:
    """batch="1" is read as false by Boolean.parseBoolean: an error naming field and value."""
    [obs] = java(10, {**SEND_V1, "batch": "1"}, language="CPP", version=63)
    assert (obs.kind, obs.severity, obs.field, obs.sent) == ("header.boolean", ERROR, "batch", "1")
    assert "ONE message" in obs.message and obs.java_class == "SendMessageRequestHeader"


def test_v2_batch_letter_is_named_with_its_meaning() -> None:
    """The V2 letter m is reported as "m (batch)"."""
    [obs] = java(310, {**SEND_V2, "m": "1"})
    assert obs.field == "m (batch)" and obs.severity == ERROR


def test_boolean_zero_is_a_warning() -> None:
    """"0" is read as false, as the C++ clients mean it: works, but differs."""
    [obs] = java(10, {**SEND_V1, "unitMode": "0"})
    assert obs.severity == WARNING and obs.sent == "0"


def test_number_that_is_not_a_number_is_an_error() -> None:
    """A queueId Integer.parseInt refuses is an error."""
    [obs] = java(10, {**SEND_V1, "queueId": "x1"})
    assert (obs.kind, obs.severity, obs.field) == ("header.number", ERROR, "queueId")


def test_number_out_of_range_is_an_error() -> None:
    """An int header beyond Integer.MAX_VALUE is an error."""
    [obs] = java(10, {**SEND_V1, "queueId": str(2**31)})
    assert obs.kind == "header.number" and "refuses" in obs.message


def test_missing_required_key_is_an_error() -> None:
    """A @CFNotNull key left out is an error."""
    ext = dict(SEND_V1)
    del ext["producerGroup"]
    [obs] = java(10, ext)
    assert (obs.kind, obs.severity, obs.field) == ("header.missing", ERROR, "producerGroup")


def test_misspelled_key_is_a_warning_with_a_suggestion() -> None:
    """A key close to a missing optional field is a warning naming it."""
    ext = {k: v for k, v in SEND_V1.items() if k != "reconsumeTimes"}
    [obs] = java(10, {**ext, "reconsumeTime": "0"})
    assert (obs.kind, obs.severity, obs.expected) == ("header.unknown", WARNING, "reconsumeTimes")


def test_unknown_key_is_info() -> None:
    """A key no header field resembles is info (the broker ignores it)."""
    [obs] = java(105, {"topic": "T", "OnsChannel": "ALIYUN"}, language="CPP")
    assert (obs.kind, obs.severity, obs.field) == ("header.unknown", INFO, "OnsChannel")


def test_acl_and_stream_hook_keys_are_known() -> None:
    """AccessKey, Signature, SecurityToken, ReqT and an RpcRequestHeader's bname are Java's."""
    ext = {"topic": "T", "consumerGroup": "g", "queueId": "0", "AccessKey": "a",
           "Signature": "s", "SecurityToken": "t", "ReqT": "1", "bname": "broker-a"}
    assert java(14, ext) == []


def test_code_of_5x_only_is_a_warning() -> None:
    """POP_MESSAGE exists from 5.x: a 4.9.8 broker refuses it."""
    [obs] = java(200050, {})
    assert (obs.kind, obs.severity) == ("request.code", WARNING)


def test_unknown_code_is_an_error() -> None:
    """A code Apache RocketMQ never defined is an error."""
    [obs] = java(4242, {})
    assert (obs.kind, obs.severity, obs.sent) == ("request.code", ERROR, "4242")


def test_unknown_language_is_an_error() -> None:
    """A language that is no LanguageCode name is an error."""
    [obs] = java(34, {}, language="COBOL")
    assert (obs.kind, obs.severity) == ("request.language", ERROR)


def test_old_java_version_is_a_warning() -> None:
    """JAVA with a version older than V3_4_9 gets the old client's treatment."""
    [obs] = java(34, {}, version=100)
    assert (obs.kind, obs.severity) == ("request.version", WARNING)


def test_rocketmq_header_from_another_language_is_info() -> None:
    """Only the Java client writes ROCKETMQ binary headers."""
    [obs] = java(34, {}, language="CPP", serialize=SERIALIZE_ROCKETMQ)
    assert (obs.kind, obs.severity) == ("request.serialize", INFO)


@given(st.integers(-10, 300_000), st.text(max_size=8), st.integers(-5, 1000),
       st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=8))
def test_check_request_never_raises(code: int, language: str, version: int,
                                    ext: dict[str, str]) -> None:
    """Any request values give a list of observations, never an exception."""
    assert isinstance(check_request(code, language, version, SERIALIZE_JSON, ext), list)


def test_json_numbers_in_extfields_are_one_info_naming_the_keys() -> None:
    """ali-ons' numbers and booleans: one info per JSON type, naming the keys (read right)."""
    found = check_request(34, "JAVA", 121, SERIALIZE_JSON, {},
                          (("queueId", "number"), ("sysFlag", "number"), ("x", "boolean")))
    assert {(o.kind, o.severity, o.field, o.sent) for o in found} == {
        ("header.json", INFO, "queueId, sysFlag", "number"), ("header.json", INFO, "x", "boolean")}
