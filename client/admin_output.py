"""Output helpers of ``rmq-emu admin``: mqadmin-style aligned tables, timestamps, ``--json``."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any


class UsageError(Exception):
    """A wrong or missing option (exit status 2)."""


# --- output ------------------------------------------------------------------------------------
def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns left-aligned to their widest cell, two spaces apart, headers prefixed ``#``
    (mqadmin's ``%-Ns`` layouts)."""
    head = [f"#{h}" for h in headers]
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(head[i])] + [len(r[i]) for r in cells]) for i in range(len(head))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    for r in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def format_ms(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString2`` style: ``yyyy-MM-dd HH:mm:ss,SSS``."""
    if ms <= 0:
        return ""
    dt = datetime.fromtimestamp(ms / 1000)
    return dt.strftime("%Y-%m-%d %H:%M:%S") + f",{ms % 1000:03d}"


def parse_timestamp(text: str) -> int:
    """``-s``: milliseconds, ``now``, or ``yyyy-MM-dd#HH:mm:ss:SSS`` (local time)."""
    if text == "now":
        return int(time.time() * 1000)
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        dt = datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise UsageError(f"bad timestamp {text!r}: use ms, 'now' or yyyy-MM-dd#HH:mm:ss:SSS") \
            from None
    return int(dt.timestamp() * 1000)


class Output:
    """Collects what a command prints: text lines, or one JSON document with ``--json``."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.lines: list[str] = []
        self.doc: Any = None

    def text(self, line: str = "") -> None:
        self.lines.append(line)

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.lines.append(format_table(headers, rows))

    def render(self) -> str:
        if self.as_json:
            return json.dumps(self.doc, indent=2, sort_keys=True, default=str)
        return "\n".join(self.lines)


def _mq_version_names() -> tuple[str, ...]:
    """``MQVersion.Version`` of 4.9.8 in ordinal order (613 names, V4_9_8 = 409)."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"] + [f"V3_0_0_BETA{i}" for i in range(1, 6)]
    for beta in range(6, 10):
        names += [f"V3_0_0_BETA{beta}_SNAPSHOT", f"V3_0_0_BETA{beta}"]
    names.append("V3_0_0_FINAL")
    for major in (3, 4, 5):
        for minor in range(10):
            # 3.0 goes on from .1 to .15; 3.3 to 3.9 have no .0; every other line is .0 to .9.
            patches = range(1, 16) if (major, minor) == (3, 0) else \
                range(1, 10) if major == 3 and minor > 2 else range(10)
            for patch in patches:
                names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


_VERSION_NAMES = _mq_version_names()


def version_desc(ordinal: int) -> str:
    """``MQVersion.getVersionDesc``: the name of a client's version ordinal (past the end:
    ``HIGHER_VERSION``)."""
    return _VERSION_NAMES[min(max(int(ordinal), 0), len(_VERSION_NAMES) - 1)]


def human_ms(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: local time as ``yyyyMMddHHmmssSSS``."""
    seconds, millis = divmod(int(ms), 1000)
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds)) + f"{millis:03d}"


def java_time(ms: int) -> str:
    """``UtilAll.formatDate(date, YYYY_MM_DD_HH_MM_SS)``: local ``yyyy-MM-dd HH:mm:ss``."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
