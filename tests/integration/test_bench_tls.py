"""``bench/tls.py`` runs end to end: plain and TLS loads against the switch-off and the
permissive broker answer without an error and the table is printed. A smoke test of the
benchmark's wiring (sub-second phases), not a measurement: no figure is checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tls.py"


def test_bench_tls_quick_runs() -> None:
    """One round of short phases exits 0 and names every phase in the best-of table."""
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--repeat", "1", "--duration", "0.3", "--warmup", "0.1",
         "--connections", "20"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    table = proc.stdout.split("best of 1", 1)[1]
    for phase in ("send, switch off", "send, permissive", "send, permissive, TLS",
                  "connect, switch off", "connect, permissive", "connect, permissive, TLS"):
        assert f"\n{phase} " in table, proc.stdout
