"""Conformance rules on what real clients sent (tests/fixtures/frames/requests.json, taken from
the shared captures): the Java client 4.9.8 is the reference and gets no error or warning; the
C++ clients' batch flag is an error naming the field and "1"; each finding kind is shown on a
captured Java request changed in one place (issue 17)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING, Observation
from rocketmq_emu.broker.conformance.message_rules import check_send
from rocketmq_emu.broker.conformance.monitor import SEND_CODES
from rocketmq_emu.broker.conformance.request_rules import check_request
from rocketmq_emu.broker.conformance.session_rules import SessionRules
from rocketmq_emu.broker.remoting.codes import SERIALIZE_JSON, SERIALIZE_ROCKETMQ
from rocketmq_emu.broker.remoting.command import coerce_ext_fields

REQUESTS = Path(__file__).resolve().parents[1] / "fixtures" / "frames" / "requests.json"


@cache
def observations(client: str) -> tuple[Observation, ...]:
    """Every observation the request and message rules make on one capture file."""
    found: list[Observation] = []
    for req in json.loads(REQUESTS.read_text())[client]:
        header = req["header"]
        ext = coerce_ext_fields(header.get("extFields"))
        serialize = SERIALIZE_ROCKETMQ if req["serialize"] == "ROCKETMQ" else SERIALIZE_JSON
        found += check_request(header["code"], header.get("language", "JAVA"),
                               header.get("version", 0), serialize, ext)
        if header["code"] in SEND_CODES and req["body_hex"] is not None:
            found += check_send(header["code"], ext, bytes.fromhex(req["body_hex"]))
    return tuple(found)


def test_the_java_client_gets_no_error_or_warning() -> None:
    """Every request of the Java client 4.9.8 (send, batch, consumers, transactions) conforms."""
    bad = [o for o in observations("java-4.9.8") if o.severity in (ERROR, WARNING)]
    assert bad == []


def test_the_java_capture_covers_the_ordinary_uses() -> None:
    """The Java capture holds sends, a 320 batch, pulls, offsets, heartbeats and transactions."""
    codes = {r["header"]["code"] for r in json.loads(REQUESTS.read_text())["java-4.9.8"]}
    assert {310, 320, 11, 14, 15, 34, 35, 37, 105} <= codes


@pytest.mark.parametrize(("client", "code", "field"), [
    ("rocketmq-py044", 10, "batch"), ("rocketmq-python-cvs", 310, "m (batch)")])
def test_cpp_batch_flag_is_an_error_naming_field_and_value(client: str, code: int,
                                                           field: str) -> None:
    """The C++ clients' batch flag "1" is an error naming the field and the value."""
    errors = [o for o in observations(client) if o.severity == ERROR]
    assert [(o.kind, o.code, o.field, o.sent) for o in errors] == [
        ("header.boolean", code, field, "1")]


def test_cpp_clients_add_a_key_the_java_client_does_not_send() -> None:
    """rocketmq 0.4.4 sends OnsChannel on every request: info, the broker ignores it."""
    fields = {(o.kind, o.field, o.severity) for o in observations("rocketmq-py044")}
    assert ("header.unknown", "OnsChannel", "info") in fields


@pytest.mark.parametrize("client", ["ali-ons", "rocketmq-nodejs"])
def test_javascript_clients_get_no_error(client: str) -> None:
    """ali-ons and rocketmq-nodejs send nothing the Java broker misreads."""
    assert [o for o in observations(client) if o.severity == ERROR] == []


# --- each finding kind on a captured Java request, changed in one place --------------------------
def java_request(code: int) -> tuple[dict[str, str], bytes]:
    """The first request of ``code`` the Java client 4.9.8 sent whose whole frame was captured:
    its extFields and body."""
    for req in json.loads(REQUESTS.read_text())["java-4.9.8"]:
        if req["header"]["code"] == code and req["body_hex"] is not None:
            return coerce_ext_fields(req["header"].get("extFields")), bytes.fromhex(
                req["body_hex"])
    raise LookupError(code)


def judged(code: int, ext: dict[str, str], body: bytes = b"x", language: str = "JAVA",
           version: int = 409) -> set[tuple[str, str]]:
    """(kind, severity) of what the request and message rules find."""
    found = check_request(code, language, version, SERIALIZE_JSON, ext)
    if code in SEND_CODES:
        found += check_send(code, ext, body)
    return {(o.kind, o.severity) for o in found}


def _send() -> tuple[dict[str, str], bytes]:
    return java_request(310)


@pytest.mark.parametrize(("kind", "severity", "change"), [
    ("header.boolean", ERROR, lambda e, b: ({**e, "m": "1"}, b)),
    ("header.boolean", WARNING, lambda e, b: ({**e, "k": "0"}, b)),
    ("header.number", ERROR, lambda e, b: ({**e, "e": "zero"}, b)),
    ("header.missing", ERROR, lambda e, b: ({k: v for k, v in e.items() if k != "a"}, b)),
    ("header.unknown", INFO, lambda e, b: ({**e, "OnsChannel": "ALIYUN"}, b)),
    ("message.topic", ERROR, lambda e, b: ({**e, "b": "Topic Test"}, b)),
    ("message.property.reserved", ERROR, lambda e, b: ({**e, "i": e["i"] + "\u0002x"}, b)),
    ("message.body.size", ERROR, lambda e, b: (e, b"x" * (4 * 1024 * 1024 + 1))),
    ("message.body.size", WARNING, lambda e, b: (e, b"")),
    ("message.delay", ERROR, lambda e, b: ({**e, "i": e["i"] + "\u0002DELAY\u0001soon"}, b)),
    ("message.delay", WARNING, lambda e, b: ({**e, "i": e["i"] + "\u0002DELAY\u000120"}, b)),
    ("message.tags", WARNING, lambda e, b: ({**e, "i": e["i"].replace("TagA", "A||B")}, b)),
])
def test_each_finding_kind_on_a_changed_java_send(kind: str, severity: str, change) -> None:
    """The captured Java send, changed in one place, earns exactly that finding."""
    ext, body = _send()
    assert judged(310, ext, body) == set()
    assert (kind, severity) in judged(310, *change(ext, body))


def test_batch_code_without_batch_flag_is_an_error_on_a_java_batch_header() -> None:
    """A 320 whose m flag is not true (the Java client's batch header changed) is an error."""
    ext, _body = _send()
    assert ("message.batch", ERROR) in judged(320, {**ext, "m": "false"}, b"")


@pytest.mark.parametrize(("kind", "severity", "code", "language", "version"), [
    ("request.code", ERROR, 4242, "JAVA", 409),
    ("request.code", WARNING, 200050, "JAVA", 409),
    ("request.language", ERROR, 105, "COBOL", 409),
    ("request.version", WARNING, 105, "JAVA", 7),
])
def test_request_kinds_on_a_java_route_query(kind: str, severity: str, code: int,
                                             language: str, version: int) -> None:
    """The captured route query under another code, language or version earns that finding."""
    ext, _body = java_request(105)
    assert judged(105, ext) == set()
    assert (kind, severity) in judged(code, ext, language=language, version=version)


def test_session_kinds_on_captured_java_requests() -> None:
    """The Java client's heartbeat, pull, offset commit, unregister and END_TRANSACTION drive
    every session finding when changed in time or value, and none as captured."""
    heartbeat = json.loads(java_request(34)[1])
    consumer = json.dumps({**heartbeat, "consumerDataSet": [{"groupName": "GID_TEST"}]}).encode()
    pull, _ = java_request(11)
    commit, _ = java_request(15)
    end, _ = java_request(37)
    rules = SessionRules()
    assert rules.on_request("c", 34, {}, consumer, 0) == []
    assert rules.on_request("c", 11, pull, b"", 1_000, max_offset=lambda t, q: 10) == []
    assert rules.on_request("c", 15, commit, b"", 2_000, max_offset=lambda t, q: 10) == []
    seen = {(o.kind, o.severity) for o in
            rules.on_request("c", 11, {**pull, "suspendTimeoutMillis": "60000"}, b"", 3_000)
            + rules.on_request("c", 15, {**commit, "commitOffset": "99"}, b"", 4_000,
                               max_offset=lambda t, q: 10)
            + rules.on_request("c", 34, {}, consumer, 200_000)}
    rules.on_check_sent("c", {"commitLogOffset": end["commitLogOffset"]}, 200_000)
    assert rules.overdue(230_000) == []
    seen |= {(o.kind, o.severity) for _c, o in rules.overdue(261_000)}
    seen |= {(o.kind, o.severity) for o in rules.on_close("c", 262_000)}
    assert seen == {("session.suspend", WARNING), ("session.offset", WARNING),
                    ("session.heartbeat", ERROR), ("session.check", WARNING),
                    ("session.unregister", WARNING)}


def test_java_unregister_and_check_answer_leave_no_session_finding() -> None:
    """With the captured UNREGISTER_CLIENT and END_TRANSACTION, the session closes clean."""
    heartbeat = json.loads(java_request(34)[1])
    consumer = json.dumps({**heartbeat, "consumerDataSet": [{"groupName": "GID_TEST"}]}).encode()
    end, _ = java_request(37)
    rules = SessionRules()
    rules.on_request("c", 34, {}, consumer, 0)
    rules.on_check_sent("c", {"commitLogOffset": end["commitLogOffset"]}, 1_000)
    rules.on_request("c", 37, end, b"", 2_000)
    rules.on_request("c", 35, {"clientID": heartbeat["clientID"], "consumerGroup": "GID_TEST"},
                     b"", 3_000)
    assert rules.overdue(100_000) == [] and rules.on_close("c", 100_000) == []


def test_java_sessions_as_captured_leave_no_session_finding() -> None:
    """The Java client's broker connections, replayed through the session rules in order and
    closed, earn nothing (it heartbeats and unregisters before closing)."""
    rules = SessionRules()
    found: list[Observation] = []
    connections = set()
    for req in json.loads(REQUESTS.read_text())["java-4.9.8"]:
        if req["connection"].endswith("->ns"):
            continue
        connections.add(req["connection"])
        header = req["header"]
        found += rules.on_request(req["connection"], header["code"],
                                  coerce_ext_fields(header.get("extFields")),
                                  bytes.fromhex(req["body_hex"]), 0)
    for conn in connections:
        found += rules.on_close(conn, 1_000)
    assert len(connections) > 3 and found == []


@pytest.mark.parametrize(("client", "infos"), [
    ("java-4.9.8", set()), ("ali-ons", set()),
    ("rocketmq-py044", {("consumeType", "0"), ("consumeType", "1"), ("messageModel", "1"),
                        ("consumeFromWhere", "0")}),
    ("rocketmq-python-cvs", {("consumeType", "1"), ("messageModel", "1"),
                             ("consumeFromWhere", "0")})])
def test_heartbeat_enums_as_captured(client: str, infos: set) -> None:
    """The C++ clients' heartbeats give ConsumerData's enums as ordinals (info: fastjson reads
    them right); the Java client and ali-ons write the names."""
    rules = SessionRules()
    found: list[Observation] = []
    for req in json.loads(REQUESTS.read_text())[client]:
        if req["header"]["code"] == 34:
            found += rules.on_request(req["connection"], 34, {},
                                      bytes.fromhex(req["body_hex"]), 0)
    assert {(o.field, o.sent) for o in found} == infos
    assert {(o.kind, o.severity) for o in found} <= {("body.heartbeat", INFO)}


def test_ali_ons_numbers_in_extfields_are_info_from_the_decoded_frame() -> None:
    """ali-ons' captured pull frame holds JSON numbers: the decoder says which, an info."""
    from rocketmq_emu.broker.remoting.command import decode

    frames = json.loads((REQUESTS.parent / "frames.json").read_text())
    [pull] = [f for f in frames if f["name"].startswith("ali-ons") and f["header"]["code"] == 11][:1]
    cmd = decode(bytes.fromhex(pull["hex"]))
    found = check_request(cmd.code, cmd.language, cmd.version, cmd.serialize_type,
                          cmd.ext_fields, cmd.json_types)
    assert [(o.kind, o.severity, o.sent) for o in found] == [("header.json", INFO, "number")]
    assert "queueId" in found[0].field
