"""The package as users install it: its import names coexist with theirs, and the plain install
(no extras) runs the broker and the pytest fixture without Spark."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The modules a user's project commonly has that the repository's folders are named after.
USER_MODULES = ("client", "broker", "namesrv", "reports")

USER_TESTS = '''
import broker
import client
import namesrv
import reports

from rocketmq_emu.client.message import Message


def test_my_own_modules_are_imported():
    """The project's own top-level modules win over nothing of the emulator's."""
    assert {client.OWNER, broker.OWNER, namesrv.OWNER, reports.OWNER} == {"user"}


def test_the_fixture_sends_and_consumes(rocketmq):
    """The rocketmq fixture works in a project with those modules."""
    producer = rocketmq.producer()
    inbox = rocketmq.collector("Orders")
    assert producer.send(Message("Orders", b"order-1")).status.name == "SEND_OK"
    assert inbox.wait_for(1)[0].body == b"order-1"
'''


def user_project(tmp: Path) -> Path:
    """A project with its own ``client.py``, ``broker.py``, ... and a test using the fixture."""
    project = tmp / "project"
    project.mkdir()
    for name in USER_MODULES:
        (project / f"{name}.py").write_text('OWNER = "user"\n')
    (project / "test_orders.py").write_text(USER_TESTS)
    return project


def run_pytest(python: str, project: Path) -> subprocess.CompletedProcess:
    """``python -m pytest`` in ``project`` as its owner runs it (the project's folder first on
    ``sys.path``), with no plugin autoload other than the installed entry points."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("PYTHONPATH", None)
    # --basetemp: the inner run's temporary directories stay beside the project (pytest would
    # otherwise number them beside the outer run's and prune the outer run's).
    return subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--basetemp", str(project.parent / "basetemp")], cwd=project,
                          env=env, capture_output=True, text=True, timeout=300)


def test_plugin_loads_beside_a_users_client_module(tmp_path: Path) -> None:
    """A project with client.py, broker.py, namesrv.py and reports.py runs the fixture."""
    result = run_pytest(sys.executable, user_project(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


@pytest.fixture(scope="module")
def light_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with ``pip install rocketmq-emu`` from this tree, no extras."""
    tmp = tmp_path_factory.mktemp("light")
    source = tmp / "src"
    # A copy without the development venv or build leftovers, so the wheel is built from what
    # the repository holds and the checkout is left untouched.
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", "*.so", "store", ".hypothesis",
        ".pytest_cache", ".ruff_cache"))
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    pip = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q",
                          str(source), "pytest"], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return env_dir


def test_light_install_has_no_spark(light_venv: Path) -> None:
    """The plain install brings none of the reports extra's packages."""
    probe = subprocess.run(
        [str(light_venv / "bin" / "python"), "-c",
         "import importlib.util as u; print([m for m in ('pyspark', 'pandas', 'pyarrow', "
         "'matplotlib', 'numpy') if u.find_spec(m)])"],
        capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr


def test_light_install_runs_the_fixture(light_venv: Path, tmp_path: Path) -> None:
    """Broker, name server, client and pytest plugin work from the plain install."""
    result = run_pytest(str(light_venv / "bin" / "python"), user_project(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_light_install_report_names_the_extra(light_venv: Path, tmp_path: Path) -> None:
    """``rmq-emu report`` on a store without the extra exits with one line giving the pip
    command."""
    (tmp_path / "commitlog").mkdir()
    result = subprocess.run(
        [str(light_venv / "bin" / "rmq-emu"), "report", "traffic", "--store", str(tmp_path),
         "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "pip install 'rocketmq-emu[reports]'" in lines[0]
    assert "Traceback" not in result.stdout + result.stderr


def test_light_install_help_works(light_venv: Path) -> None:
    """``rmq-emu --help`` lists every subcommand without the extra."""
    result = subprocess.run([str(light_venv / "bin" / "rmq-emu"), "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for sub in ("up", "namesrv", "broker", "admin", "report"):
        assert sub in result.stdout
