"""The conformance report files: ``conformance.json`` and ``conformance.html``.

``rmq-emu up --conformance-report DIR`` writes both when the process stops (the cluster writes
them after its brokers have closed their connections, so what a disconnect reveals is in).
The JSON is what ``GET /conformance`` answers; the HTML is one self-contained page: a table of
clients with their counts per severity, then every finding.
"""

from __future__ import annotations

import datetime
import html
import json
import os
from pathlib import Path
from typing import Any

from rocketmq_emu.broker.conformance.findings import DESCRIPTIONS, SEVERITIES
from rocketmq_emu.broker.remoting.codes import request_name

JSON_NAME = "conformance.json"
HTML_NAME = "conformance.html"

_STYLE = """
body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; margin-bottom: 2em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eee; }
.error { background: #fdd; } .warning { background: #ffd; } .info { background: #eef; }
"""


def write_report(report: dict[str, Any], directory: str | os.PathLike[str]) -> list[Path]:
    """Write ``report`` (``Findings.to_json`` / ``ConformanceMonitor.snapshot``) as
    ``conformance.json`` and ``conformance.html`` in ``directory`` (created if missing);
    returns the two paths. Each file is written whole, then renamed into place."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in ((JSON_NAME, json.dumps(report, indent=2, ensure_ascii=False) + "\n"),
                       (HTML_NAME, render_html(report))):
        path = target / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        paths.append(path)
    return paths


def _cell(value: Any) -> str:
    return f"<td>{html.escape('' if value is None else str(value))}</td>"


def _time(epoch_ms: Any) -> str:
    """Epoch milliseconds as UTC ``YYYY-MM-DD HH:MM:SS.mmm``."""
    if not isinstance(epoch_ms, int):
        return ""
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{epoch_ms % 1000:03d}"


def legend() -> str:
    """Every severity with what it means (``<b>error</b> = ...``), comma separated."""
    return ", ".join(f"<b>{html.escape(severity)}</b> = {html.escape(DESCRIPTIONS[severity])}"
                     for severity in SEVERITIES)


def render_html(report: dict[str, Any]) -> str:
    """One HTML page of ``report``: the clients, then the findings (values escaped)."""
    summary = report.get("summary", {})
    rows = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
            "<title>rmq-emu conformance report</title>", f"<style>{_STYLE}</style></head><body>",
            "<h1>Conformance report</h1>",
            "<p>What each client sent, checked against Apache RocketMQ's Java client 4.9.8 and "
            "the broker: " + legend() + ".</p>",
            "<p>" + ", ".join(f"{html.escape(str(k))}: {int(v)}" for k, v in summary.items())
            + "</p>", "<h2>Clients</h2>", "<table><tr><th>client id</th><th>address</th>"
            "<th>language</th><th>version</th><th>error</th><th>warning</th><th>info</th></tr>"]
    for c in report.get("clients", []):
        rows.append("<tr>" + "".join(_cell(c.get(k)) for k in (
            "clientId", "address", "language", "version", "error", "warning", "info")) + "</tr>")
    rows += ["</table>", "<h2>Findings</h2>",
             "<table><tr><th>severity</th><th>client</th><th>language / version</th>"
             "<th>request</th><th>field</th><th>sent</th><th>expected</th><th>message</th>"
             "<th>Java class</th><th>count</th><th>first seen</th><th>last seen</th></tr>"]
    for f in report.get("findings", []):
        severity = str(f.get("severity", ""))
        code = f.get("code")
        request = "" if code is None else f"{code} {request_name(int(code))}"
        rows.append(f'<tr class="{html.escape(severity)}">' + "".join(_cell(v) for v in (
            severity, f.get("clientId"), f"{f.get('language')} / {f.get('version')}", request,
            f.get("field"), f.get("sent"), f.get("expected"), f.get("message"),
            f.get("javaClass"), f.get("count"), _time(f.get("firstSeen")),
            _time(f.get("lastSeen")))) + "</tr>")
    rows += ["</table>", "</body></html>", ""]
    return "\n".join(rows)
