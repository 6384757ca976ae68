"""Conformance rules on what real clients sent (tests/fixtures/frames/requests.json, taken from
the shared captures): the Java client 4.9.8 is the reference and gets no error or warning; the
C++ clients' batch flag is an error naming the field and "1" (issue 17)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from rocketmq_emu.broker.conformance.findings import ERROR, WARNING, Observation
from rocketmq_emu.broker.conformance.message_rules import check_send
from rocketmq_emu.broker.conformance.monitor import SEND_CODES
from rocketmq_emu.broker.conformance.request_rules import check_request
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
