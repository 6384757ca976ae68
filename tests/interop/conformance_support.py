"""Reading the emulator's conformance findings (``GET /conformance`` on the control API) after
real clients ran: forget what came before, let the clients' connections close, then read."""

from __future__ import annotations

import time
from typing import Any

from interop_support import Emulator, control


def forget_findings(emu: Emulator) -> None:
    """``DELETE /conformance``: what earlier tests' clients sent is not counted."""
    control(emu, "DELETE", "/conformance")


def settled_findings(emu: Emulator, timeout: float = 5.0) -> dict[str, Any]:
    """``GET /conformance`` once two reads 0.3 s apart agree (the exited clients' connections
    are closed and what a close reveals, e.g. a consumer that never unregistered, is in)."""
    deadline = time.monotonic() + timeout
    last = control(emu, "GET", "/conformance")
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = control(emu, "GET", "/conformance")
        if _counts(now) == _counts(last):
            return now
        last = now
    return last


def _counts(report: dict[str, Any]) -> list[tuple]:
    return sorted((f["clientId"], f["kind"], f["code"], f["field"], f["sent"], f["count"])
                  for f in report["findings"])


def seen(report: dict[str, Any], severity: str | None = None,
         language: str | None = None) -> set[tuple]:
    """(kind, severity, code, field, sent) of the findings (of ``severity``, of clients of
    ``language``), whichever client made them."""
    return {(f["kind"], f["severity"], f["code"], f["field"], f["sent"])
            for f in report["findings"]
            if (severity is None or f["severity"] == severity)
            and (language is None or f["language"] == language)}
