"""``bench/report_latency.py`` runs end to end on a tiny store: the session-alone, the cold
``report all`` and the warm (report service) runs exit 0 and their medians are printed. Smoke
tests of the benchmark's wiring, not measurements: no figure is checked. Each phase runs alone
(``--only``): all of them in a row take longer than a test may."""

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


def test_report_latency_bench_times_a_cold_report_all() -> None:
    """One ``report all`` on 40 messages in a fresh process: its median and target."""
    out = run_bench("--only", "cold", "--messages", "40")
    assert "\ncold " in out and "SparkSession alone" not in out
    assert "targets: cold <= 20 s" in out and "cold <= 1024 MiB" in out


def test_report_latency_bench_times_warm_reports_in_the_service() -> None:
    """The service started once, ``all`` and ``traffic`` sent to it, SIGTERM ends it with 0."""
    out = run_bench("--only", "warm", "--messages", "40")
    assert "report service ready in" in out and "SIGTERM -> exit 0" in out
    assert "\nwarm all " in out and "\nwarm traffic " in out
    assert "warm all <= 3 s" in out and "warm traffic <= 2 s" in out
