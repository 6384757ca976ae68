"""`python -m rocketmq_emu.reports`, the report command without the broker CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rocketmq_emu.reports.cli import INSTALL_HINT, missing_packages

_MISSING = missing_packages()


# Without the extra the command stops at its install hint (exit 1) before it looks at --store:
# tests/unit/test_startup_imports.py covers that path.
@pytest.mark.skipif(bool(_MISSING),
                    reason=f"needs {', '.join(_MISSING)} (the [reports] extra): {INSTALL_HINT}")
def test_module_entry_point_runs_the_report_command(tmp_path):
    """`python -m rocketmq_emu.reports` parses the report arguments and checks the store."""
    proc = subprocess.run([sys.executable, "-m", "rocketmq_emu.reports", "all",
                           "--store", str(tmp_path / "missing")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "store directory" in proc.stderr and "does not exist" in proc.stderr
