"""The conformance findings log and its report files (issue 17)."""

from __future__ import annotations

import json
from pathlib import Path

from rocketmq_emu.broker.conformance.findings import (
    ERROR,
    INFO,
    Client,
    Findings,
    Observation,
)
from rocketmq_emu.broker.conformance.report import render_html, write_report

CPP = Client("127.0.0.1:5000", "127.0.0.1:5000", "CPP", 63)
OBS = Observation("header.boolean", ERROR, 10, "batch", "1", '"true" or "false"',
                  "batch=1 is read as false", "SendMessageRequestHeader")


def test_same_observation_is_counted_with_first_and_last_time() -> None:
    """A repeated deviation is one finding with its count and times."""
    log = Findings()
    log.add(CPP, OBS, 1_000)
    log.add(CPP, OBS, 5_000)
    [f] = log.to_json()["findings"]
    assert (f["count"], f["firstSeen"], f["lastSeen"]) == (2, 1_000, 5_000)


def test_finding_carries_what_the_issue_names() -> None:
    """Client, code, field, sent, expected, severity, times, count and Java class."""
    log = Findings()
    log.add(CPP, OBS, 1)
    [f] = log.to_json()["findings"]
    assert {"clientId", "language", "version", "code", "field", "sent", "expected",
            "severity", "message", "javaClass", "firstSeen", "lastSeen", "count"} <= set(f)


def test_findings_move_to_the_client_id_once_known() -> None:
    """Findings made under the address move to the clientID the client sends later."""
    log = Findings()
    log.add(CPP, OBS, 1)
    log.rename_client(CPP.address, Client("10.0.0.1@42", CPP.address, "CPP", 63))
    [f] = log.to_json()["findings"]
    assert f["clientId"] == "10.0.0.1@42" and f["address"] == CPP.address


def test_errors_come_first_and_summary_counts_severities() -> None:
    """The list is ordered by severity; the summary counts each."""
    log = Findings()
    log.add(CPP, Observation("header.unknown", INFO, 10, "OnsChannel", "OnsChannel", "", "m",
                             "X"), 1)
    log.add(CPP, OBS, 2)
    report = log.to_json()
    assert [f["severity"] for f in report["findings"]] == ["error", "info"]
    assert report["summary"] == {"error": 1, "warning": 0, "info": 1}


def test_a_client_without_findings_is_listed() -> None:
    """A conformant client appears in the clients list with zero counts."""
    log = Findings()
    log.note_client(Client("java@1", "127.0.0.1:1", "JAVA", 409))
    assert log.to_json()["clients"] == [{"clientId": "java@1", "address": "127.0.0.1:1",
                                         "language": "JAVA", "version": 409, "error": 0,
                                         "warning": 0, "info": 0}]


def test_report_files_hold_the_json_and_an_escaped_page(tmp_path: Path) -> None:
    """conformance.json is the findings object; conformance.html escapes what clients sent."""
    log = Findings()
    log.add(CPP, Observation("header.unknown", INFO, 10, "<x>", "<script>", "", "m", "X"), 1)
    json_path, html_path = write_report(log.to_json(), tmp_path / "out")
    data = json.loads(json_path.read_text())
    assert data["findings"][0]["language"] == "CPP" and "severity" in data["findings"][0]
    page = html_path.read_text()
    assert "&lt;script&gt;" in page and "<script>" not in page


def test_html_names_the_request_code() -> None:
    """The page names each finding's request code."""
    log = Findings()
    log.add(CPP, OBS, 1)
    assert "10 SEND_MESSAGE" in render_html(log.to_json())


def test_html_shows_first_and_last_time_seen() -> None:
    """The page gives each finding's first and last time (UTC)."""
    log = Findings()
    log.add(CPP, OBS, 1_700_000_000_123)
    log.add(CPP, OBS, 1_700_000_060_000)
    page = render_html(log.to_json())
    assert "2023-11-14 22:13:20.123" in page and "2023-11-14 22:14:20.000" in page


def test_a_full_log_counts_what_it_drops_and_keeps_counting_known_findings() -> None:
    """Past max_entries new findings are dropped (counted), known ones still counted."""
    log = Findings(max_entries=1)
    log.add(CPP, OBS, 1)
    log.add(CPP, Observation("header.number", ERROR, 10, "queueId", "x", "", "m", "X"), 2)
    log.add(CPP, OBS, 3)
    report = log.to_json()
    assert [f["count"] for f in report["findings"]] == [2] and report["dropped"] == 1
