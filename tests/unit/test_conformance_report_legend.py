"""The legend of ``conformance.html`` (broker/conformance/report.py) says what every severity
means (issue 25: it read ``info .``)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from rocketmq_emu.broker.conformance.findings import SEVERITIES, Client, Findings, Observation
from rocketmq_emu.broker.conformance.report import HTML_NAME, write_report


class _Paragraphs(HTMLParser):
    """The text of each ``<p>`` of a page, tags removed."""

    def __init__(self) -> None:
        super().__init__()
        self.paragraphs: list[str] = []
        self._open = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "p":
            self._open = True
            self.paragraphs.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "p":
            self._open = False

    def handle_data(self, data: str) -> None:
        if self._open:
            self.paragraphs[-1] += data


def test_the_legend_describes_every_severity(tmp_path) -> None:
    """The written page's legend gives each severity (error, warning, info) a description of
    its own: ``severity = some words``, none left bare."""
    log = Findings()
    log.add(Client("127.0.0.1:5000", "127.0.0.1:5000", "CPP", 63),
            Observation("header.boolean", "info", 10, "batch", "1", '"true" or "false"',
                        "batch=1 is read as false", "SendMessageRequestHeader"), 1)
    write_report(log.to_json(), tmp_path)
    parser = _Paragraphs()
    parser.feed((tmp_path / HTML_NAME).read_text(encoding="utf-8"))
    [legend] = [p for p in parser.paragraphs if "error =" in p]
    described = {}
    names = "|".join(SEVERITIES)
    for severity in SEVERITIES:
        found = re.search(rf"\b{severity} = (.+?)(?:, (?:{names}) =|\.$)", legend)
        assert found, f"{severity!r} has no description in {legend!r}"
        described[severity] = found.group(1)
    assert all(len(text.split()) >= 2 for text in described.values()), described
    assert len(set(described.values())) == len(SEVERITIES)
