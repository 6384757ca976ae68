"""``bench/first_delivery.py`` runs end to end: both flows deliver and are printed, and a median
over the target is exit status 1. A smoke test of the benchmark's wiring, not a measurement:
the target is 0 ms so that the check always trips, whatever the machine's speed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "first_delivery.py"


def test_bench_first_delivery_prints_both_flows_and_fails_over_its_target() -> None:
    proc = subprocess.run([sys.executable, str(BENCH), "--runs", "1", "--target-ms", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines[2:4]] == ["collector-first", "create_topic-first"]
    assert lines[-1].startswith("collector-first median") and "over the 0 ms target" in lines[-1]
