"""Conformance rules on a broker session: heartbeats, unregistering, offsets, long polling,
transaction check-backs (issue 17)."""

from __future__ import annotations

import json

from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING
from rocketmq_emu.broker.conformance.session_rules import SessionRules

HB = json.dumps({"clientID": "c1", "consumerDataSet": [{"groupName": "G"}],
                 "producerDataSet": []}).encode()
PULL = {"consumerGroup": "G", "topic": "T", "queueId": "0", "queueOffset": "0",
        "maxMsgNums": "32", "sysFlag": "2", "commitOffset": "0", "suspendTimeoutMillis": "15000",
        "subVersion": "0"}


def kinds(found: list) -> list[tuple[str, str]]:
    """(kind, severity) of each observation."""
    return [(o.kind, o.severity) for o in found]


def test_heartbeats_every_30_s_are_conformant() -> None:
    """Heartbeats at the Java client's interval give nothing."""
    rules = SessionRules()
    assert [rules.on_request("c", 34, {}, HB, t * 30_000) for t in range(5)] == [[]] * 5


def test_heartbeat_gap_beyond_channel_expiry_is_an_error() -> None:
    """More than 120 s between heartbeats: the broker drops the client."""
    rules = SessionRules()
    rules.on_request("c", 34, {}, HB, 0)
    assert kinds(rules.on_request("c", 34, {}, HB, 121_000)) == [("session.heartbeat", ERROR)]


def test_heartbeat_gap_of_90_s_is_a_warning() -> None:
    """Three times the Java interval works but differs."""
    rules = SessionRules()
    rules.on_request("c", 34, {}, HB, 0)
    assert kinds(rules.on_request("c", 34, {}, HB, 90_000)) == [("session.heartbeat", WARNING)]


def test_client_traffic_without_heartbeat_is_a_warning_once() -> None:
    """Sending for 35 s without a heartbeat is noted once."""
    rules = SessionRules()
    rules.on_request("c", 11, PULL, b"", 0)
    assert rules.on_request("c", 11, PULL, b"", 10_000) == []
    assert kinds(rules.on_request("c", 11, PULL, b"", 36_000)) == [("session.heartbeat", WARNING)]
    assert rules.on_request("c", 11, PULL, b"", 80_000) == []


def test_overdue_notes_a_silent_connection_without_heartbeat() -> None:
    """Time alone reveals a connection that never sent a heartbeat."""
    rules = SessionRules()
    rules.on_request("c", 10, {}, b"", 0)
    [(conn, obs)] = rules.overdue(40_000)
    assert conn == "c" and obs.kind == "session.heartbeat"


def test_consumer_closing_without_unregister_is_a_warning() -> None:
    """A consumer that disconnects without UNREGISTER_CLIENT is noted at close."""
    rules = SessionRules()
    rules.on_request("c", 34, {}, HB, 0)
    [obs] = rules.on_close("c", 1_000)
    assert (obs.kind, obs.severity, obs.sent) == ("session.unregister", WARNING, "G")


def test_consumer_that_unregisters_closes_cleanly() -> None:
    """UNREGISTER_CLIENT for the group before closing gives nothing."""
    rules = SessionRules()
    rules.on_request("c", 34, {}, HB, 0)
    rules.on_request("c", 35, {"clientID": "c1", "consumerGroup": "G"}, b"", 500)
    assert rules.on_close("c", 1_000) == []


def test_offset_commit_beyond_max_offset_is_a_warning() -> None:
    """UPDATE_CONSUMER_OFFSET past the queue's max offset is noted."""
    rules = SessionRules()
    ext = {"consumerGroup": "G", "topic": "T", "queueId": "1", "commitOffset": "9"}
    found = rules.on_request("c", 15, ext, b"", 0, max_offset=lambda topic, qid: 5)
    assert kinds(found) == [("session.offset", WARNING)]
    assert rules.on_request("c", 15, {**ext, "commitOffset": "5"}, b"", 0,
                            max_offset=lambda topic, qid: 5) == []


def test_pull_commit_offset_beyond_max_offset_is_a_warning() -> None:
    """A pull carrying a commit (sysFlag bit 0) past the max offset is noted."""
    rules = SessionRules()
    found = rules.on_request("c", 11, {**PULL, "sysFlag": "3", "commitOffset": "7"}, b"", 0,
                             max_offset=lambda topic, qid: 2)
    assert kinds(found) == [("session.offset", WARNING)]


def test_pull_suspended_longer_than_java_asks_is_a_warning() -> None:
    """A suspend timeout above 30 s is noted; Java's 15 s is not."""
    rules = SessionRules()
    assert rules.on_request("c", 11, PULL, b"", 0) == []
    found = rules.on_request("c", 11, {**PULL, "suspendTimeoutMillis": "60000"}, b"", 0)
    assert kinds(found) == [("session.suspend", WARNING)]


def test_unanswered_check_back_is_a_warning_after_60_s() -> None:
    """A CHECK_TRANSACTION_STATE without END_TRANSACTION is noted after 60 s."""
    rules = SessionRules()
    rules.on_request("c", 34, {}, HB, 0)
    rules.on_check_sent("c", {"commitLogOffset": "100"}, 1_000)
    assert rules.overdue(30_000) == []
    [(_conn, obs)] = rules.overdue(61_000)
    assert (obs.kind, obs.severity) == ("session.check", WARNING)


def test_answered_check_back_is_conformant() -> None:
    """END_TRANSACTION for the checked offset clears the check."""
    rules = SessionRules()
    rules.on_request("c", 34, {}, HB, 0)
    rules.on_check_sent("c", {"commitLogOffset": "100"}, 1_000)
    rules.on_request("c", 37, {"commitLogOffset": "100", "fromTransactionCheck": "true"}, b"",
                     2_000)
    assert rules.overdue(120_000) == []


def consumer_heartbeat(**data: object) -> bytes:
    """A heartbeat whose one ConsumerData has ``data``."""
    return json.dumps({"clientID": "c1", "consumerDataSet": [{"groupName": "G", **data}]}).encode()


def test_heartbeat_enums_by_name_are_conformant() -> None:
    """ConsumerData enums written by name, as the Java client does, give nothing."""
    body = consumer_heartbeat(consumeType="CONSUME_PASSIVELY", messageModel="CLUSTERING",
                              consumeFromWhere="CONSUME_FROM_FIRST_OFFSET")
    assert SessionRules().on_request("c", 34, {}, body, 0) == []


def test_heartbeat_enum_ordinal_is_info_naming_what_the_broker_reads() -> None:
    """An ordinal (the C++ clients') is read by fastjson as the enum of that position: info."""
    [obs] = SessionRules().on_request("c", 34, {}, consumer_heartbeat(consumeFromWhere=4), 0)
    assert (obs.kind, obs.severity, obs.field, obs.sent, obs.expected) == (
        "body.heartbeat", INFO, "consumeFromWhere", "4", "CONSUME_FROM_FIRST_OFFSET")


def test_heartbeat_enum_out_of_range_is_an_error() -> None:
    """A value that is neither a name nor an ordinal of the enum is an error."""
    [obs] = SessionRules().on_request("c", 34, {}, consumer_heartbeat(messageModel=7), 0)
    assert (obs.kind, obs.severity, obs.field) == ("body.heartbeat", ERROR, "messageModel")
