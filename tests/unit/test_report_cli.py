"""`python -m rocketmq_emu.reports`, the report command without the broker CLI."""

from __future__ import annotations

import subprocess
import sys


def test_module_entry_point_runs_the_report_command(tmp_path):
    """`python -m rocketmq_emu.reports` parses the report arguments and checks the store."""
    proc = subprocess.run([sys.executable, "-m", "rocketmq_emu.reports", "all",
                           "--store", str(tmp_path / "missing")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "store directory" in proc.stderr and "does not exist" in proc.stderr
