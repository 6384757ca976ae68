"""Cold start stays cheap: `rmq-emu up`'s imports leave the SQL92 parser (lark) unloaded until
a SQL92 subscription needs it (issue 5: start to accepting connections under 1 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
                         cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    return set(out.stdout.split())


def test_broker_and_namesrv_imports_leave_lark_unloaded():
    """Importing the CLI, broker controller and name server does not import lark."""
    mods = _modules_after("import broker.cli, broker.controller, namesrv.server")
    assert "lark" not in mods
    assert "rocketmq_emu.broker.filter.parser" not in mods


def test_compiling_a_sql92_expression_loads_the_parser():
    """The lazy entry points still compile: broker.filter.compile_sql92 and the pull filter."""
    mods = _modules_after(
        "from broker.filter import compile_sql92, FilterError\n"
        "from broker.filter.message_filter import sql92_record_filter\n"
        "assert compile_sql92('a > 1').matches({'a': '2'})\n"
        "sql92_record_filter('b = 1')\n"
        "try:\n    compile_sql92('a >')\nexcept FilterError:\n    pass\n"
        "else:\n    raise SystemExit('no FilterError')\n"
    )
    assert "lark" in mods
