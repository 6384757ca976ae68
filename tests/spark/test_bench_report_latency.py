"""``bench/report_latency.py`` runs end to end on a tiny store: the session-alone and the
``report all`` runs exit 0 and the median table is printed. A smoke test of the benchmark's
wiring, not a measurement: no figure is checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

BENCH = Path(__file__).resolve().parents[2] / "bench" / "report_latency.py"


def test_report_latency_bench_runs() -> None:
    """One round on 40 messages prints both medians and the targets line."""
    proc = subprocess.run([sys.executable, str(BENCH), "--messages", "40", "--repeat", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "SparkSession alone" in proc.stdout and "\nreport all " in proc.stdout
    assert "targets: report all <= 20 s" in proc.stdout
