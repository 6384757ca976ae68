"""``bench/report_latency.py`` runs end to end on a tiny store: the session-alone and the
``report all`` runs exit 0 and their medians are printed. Smoke tests of the benchmark's
wiring, not measurements: no figure is checked. Each phase runs alone (``--only``): the two in a
row take longer than a test may."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

BENCH = Path(__file__).resolve().parents[2] / "bench" / "report_latency.py"


def run_bench(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(BENCH), "--repeat", "1", *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc.stdout


def test_report_latency_bench_times_the_session_alone() -> None:
    """One SparkSession start and stop: its median is printed, no report runs."""
    out = run_bench("--only", "session")
    assert "SparkSession alone" in out and "\nreport all " not in out


def test_report_latency_bench_times_report_all() -> None:
    """One ``report all`` on 40 messages: its median and the targets line are printed."""
    out = run_bench("--only", "report", "--messages", "40")
    assert "\nreport all " in out and "SparkSession alone" not in out
    assert "targets: report all <= 20 s" in out
