"""``bench/conformance.py`` runs end to end: the broker answers every send with the monitor
attached and detached, both figures are printed and the bench's own frames make no finding.
A smoke test of the benchmark's wiring, not a measurement: no figure is checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "conformance.py"


def test_bench_conformance_quick_runs() -> None:
    """One short round exits 0, prints both send figures and finds nothing in its frames."""
    proc = subprocess.run([sys.executable, str(BENCH), "--repeat", "1", "--count", "640"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "send CPU, monitor off" in proc.stdout and "monitor +" in proc.stdout.replace(
        "monitor -", "monitor +"), proc.stdout
    assert "{'error': 0, 'warning': 0, 'info': 0}" in proc.stdout, proc.stdout
