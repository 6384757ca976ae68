"""Cold start stays cheap: `rmq-emu --help` and `up`'s start path import nothing they do not
need (issue 5, issue 12 items 4 and 5). Each check runs in a fresh interpreter (no sockets)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The [reports] extra: `--help` and every non-report command must run without it.
REPORTS_EXTRA = ("pyspark", "pandas", "pyarrow", "numpy", "matplotlib")
#: Never imported by `up`'s start path. (construct is: the byte layouts' structs are derived
#: from their construct declarations at import, rocketmq_emu.broker.layout; and so is pdb,
#: which construct.debug imports: about 2 ms once Twisted is loaded.)
NOT_AT_START = (*REPORTS_EXTRA, "lark", "rocketmq_emu.client",
                "rocketmq_emu.reports", "rocketmq_emu.broker.filter.parser",
                # TLS: only when tls.server.mode or tls.config.file is set (issue 15). (OpenSSL
                # itself is loaded by twisted.internet.tcp whenever pyOpenSSL is installed.)
                "rocketmq_emu.broker.tls.sniff", "rocketmq_emu.broker.tls.context",
                "rocketmq_emu.broker.tls.certs")

#: Makes importing the [reports] extra's packages fail, as in an install without the extra.
BLOCK_EXTRA = f"""
import sys
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {REPORTS_EXTRA!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Blocker())
"""


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def _modules_after(code: str) -> set[str]:
    out = _run(code + "\nimport sys\nprint(' '.join(sys.modules))")
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def _loaded(mods: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods for n in names if m == n or m.startswith(n + "."))


def test_start_path_imports_nothing_it_does_not_need():
    """`up`'s modules (CLI, controller, schedule services, name server) leave the heavy ones out."""
    mods = _modules_after(
        "from rocketmq_emu.broker import cli\n"
        "cli.build_parser(['up'])\n"
        "import rocketmq_emu.broker.controller, rocketmq_emu.namesrv.server\n"
        "from rocketmq_emu.broker.schedule import ScheduleServices\n"
    )
    assert _loaded(mods, NOT_AT_START) == []


def test_crc32c_is_not_loaded_at_start():
    """crc32c (which imports importlib.metadata) stays a lazy placeholder until a CRC is needed."""
    out = _run(
        "import sys\n"
        "import rocketmq_emu.broker.controller\n"
        "from rocketmq_emu.broker.schedule import ScheduleServices\n"
        "print(type(sys.modules.get('crc32c')).__name__)\n"
        "import rocketmq_emu.broker.schedule.checkpoint as cp\n"
        "print(cp.crc32c.crc32c(b'123456789'))\n"
    )
    assert out.stdout.split() == ["_LazyModule", str(0xE3069283)], out.stderr


def test_help_imports_no_area_and_no_twisted():
    """`rmq-emu --help` builds its parser without Twisted, the broker or another area's CLI."""
    mods = _modules_after("from rocketmq_emu.broker import cli\ncli.build_parser(['--help'])")
    assert _loaded(mods, ("twisted", "rocketmq_emu.broker.controller", "rocketmq_emu.client",
                          "rocketmq_emu.reports", *REPORTS_EXTRA)) == []


def test_help_works_without_the_reports_extra():
    """`rmq-emu --help` exits 0 and lists `report` when the extra's packages cannot import."""
    out = _run(BLOCK_EXTRA + "from rocketmq_emu.broker import cli\ncli.main(['--help'])")
    assert out.returncode == 0, out.stderr
    assert " report " in out.stdout and "admin" in out.stdout


def test_report_help_works_without_the_reports_extra():
    """Registering the `report` subparser imports none of the extra (its --help exits 0)."""
    out = _run(BLOCK_EXTRA + "from rocketmq_emu.broker import cli\ncli.main(['report', '--help'])")
    assert out.returncode == 0, out.stderr
    assert "--store" in out.stdout


def test_report_without_the_extra_says_what_to_install(tmp_path):
    """`rmq-emu report` on a store, without the extra and with no report service to send it
    to: exit 1 and one stderr line with the pip command."""
    (tmp_path / "commitlog").mkdir()
    out = _run(BLOCK_EXTRA + "from rocketmq_emu.broker import cli\n"
               f"sys.exit(cli.main(['report', 'traffic', '--store', {str(tmp_path)!r}]))")
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        "rmq-emu report: needs pyspark, pandas, pyarrow, numpy, matplotlib (not installed): "
        "pip install 'rocketmq-emu[reports]'"]


def test_compiling_a_sql92_expression_loads_the_parser():
    """The lazy entry points still compile: broker.filter.compile_sql92 and the pull filter."""
    mods = _modules_after(
        "from rocketmq_emu.broker.filter import compile_sql92, FilterError\n"
        "from rocketmq_emu.broker.filter.message_filter import sql92_record_filter\n"
        "assert compile_sql92('a > 1').matches({'a': '2'})\n"
        "sql92_record_filter('b = 1')\n"
        "try:\n    compile_sql92('a >')\nexcept FilterError:\n    pass\n"
        "else:\n    raise SystemExit('no FilterError')\n"
    )
    assert "lark" in mods
