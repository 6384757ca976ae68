"""Conformance rules on the calls of RocketMQ 5's gRPC SDKs (issue 17)."""

from __future__ import annotations

from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING
from rocketmq_emu.broker.conformance.grpc_rules import check_call
from rocketmq_emu.broker.grpc import messages

SDK = {"x-mq-client-id": "host@1@0", "x-mq-language": "PYTHON", "x-mq-client-version": "5.1.2"}
NOW = 1_700_000_000_000


def send_request(topic: str = "T", tag: str = "a", body: bytes = b"x") -> object:
    """A SendMessageRequest with one message as the SDKs build it."""
    request = messages.protocol().messages["SendMessageRequest"]()
    m = request.messages.add()
    m.topic.name = topic
    m.body = body
    m.system_properties.tag = tag
    m.system_properties.message_id = "01ABC"
    return request


def summary(found: list) -> list[tuple[str, str, str]]:
    """(kind, severity, field) of each observation."""
    return [(o.kind, o.severity, o.field) for o in found]


def test_sdk_call_with_its_headers_conforms() -> None:
    """A call carrying client id, language and version gives nothing."""
    assert check_call("QueryRoute", SDK, None, NOW) == []


def test_call_without_client_id_is_an_error() -> None:
    """The proxy answers CLIENT_ID_REQUIRED without x-mq-client-id."""
    headers = {k: v for k, v in SDK.items() if k != "x-mq-client-id"}
    assert summary(check_call("Heartbeat", headers, None, NOW)) == [
        ("grpc.header", ERROR, "x-mq-client-id")]


def test_unknown_language_is_a_warning() -> None:
    """x-mq-language that is no LanguageCode name differs."""
    assert summary(check_call("QueryRoute", {**SDK, "x-mq-language": "COBOL"}, None, NOW)) == [
        ("grpc.header", WARNING, "x-mq-language")]


def test_missing_version_is_info() -> None:
    """Without x-mq-client-version the proxy cannot tell the SDK's version."""
    headers = {k: v for k, v in SDK.items() if k != "x-mq-client-version"}
    assert summary(check_call("QueryRoute", headers, None, NOW)) == [
        ("grpc.header", INFO, "x-mq-client-version")]


def test_message_the_proxy_accepts_conforms() -> None:
    """A plain message to a legal topic gives nothing."""
    assert check_call("SendMessage", SDK, send_request(), NOW) == []


def test_tag_with_double_bar_is_an_error_named_by_the_proxy_code() -> None:
    """A tag with "||" is refused by the proxy: an error carrying its status code."""
    [obs] = check_call("SendMessage", SDK, send_request(tag="a||b"), NOW)
    assert (obs.kind, obs.severity, obs.sent) == ("grpc.message", ERROR, "ILLEGAL_MESSAGE_TAG")


def test_illegal_topic_is_an_error() -> None:
    """A topic name with a space is refused."""
    [obs] = check_call("SendMessage", SDK, send_request(topic="a b"), NOW)
    assert obs.severity == ERROR and "ILLEGAL_TOPIC" in obs.sent
