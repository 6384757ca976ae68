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
