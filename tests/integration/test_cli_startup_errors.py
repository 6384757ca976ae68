"""Expected startup failures of ``rmq-emu``: non-zero exit, at most three lines on stderr naming
the cause and what to do, no traceback (issue 12 item 2). Subprocesses on loopback ports."""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketmq_emu.client import testing_tools

ROOT = Path(__file__).resolve().parents[2]
#: A small commitlog: a start that gets as far as the store must not write 1 GiB.
SMALL_CONF = f"mappedFileSizeCommitLog={1 << 20}\n"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m rocketmq_emu.broker.cli ARGS`` to its exit (it must exit on its own); ``up``
    gets a free gRPC port unless the test names one."""
    if args and args[0] == "up" and "--grpc-port" not in args:
        args = (*args, "--grpc-port", "0")
    return subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def assert_one_line_failure(result: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit status non-zero, 1 to 3 stderr lines containing every needle, no traceback."""
    lines = result.stderr.splitlines()
    assert result.returncode != 0, result
    assert 1 <= len(lines) <= 3, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


def free_port() -> int:
    """A free loopback port whose port - 2 and port + 2 are free too."""
    for _ in range(500):
        port = testing_tools.free_port()
        try:
            for other in (port - 2, port + 2):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", other))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port")


@pytest.fixture
def busy() -> Iterator[socket.socket]:
    """A listening socket on a loopback port that others are free around."""
    s = socket.socket()
    s.bind(("127.0.0.1", free_port()))
    s.listen()
    yield s
    s.close()


@pytest.fixture
def conf(tmp_path: Path) -> str:
    path = tmp_path / "broker.conf"
    path.write_text(SMALL_CONF)
    return str(path)


def _port(s: socket.socket) -> int:
    return s.getsockname()[1]


def test_up_namesrv_port_in_use(tmp_path, busy, conf):
    """`up` with its name server port taken names the port and --namesrv-port."""
    result = run_cli("up", "-c", conf, "--store", str(tmp_path / "s"),
                     "--namesrv-port", str(_port(busy)), "--broker-port", str(free_port()))
    assert_one_line_failure(result, f":{_port(busy)}", "name server port", "--namesrv-port")


def test_up_broker_port_in_use(tmp_path, busy, conf):
    """`up` with its broker port taken names the port and --broker-port."""
    result = run_cli("up", "-c", conf, "--store", str(tmp_path / "s"),
                     "--namesrv-port", str(free_port()), "--broker-port", str(_port(busy)))
    assert_one_line_failure(result, f":{_port(busy)}", "broker port", "--broker-port")


def test_up_vip_port_in_use(tmp_path, busy, conf):
    """`up` whose VIP port (listenPort - 2) is taken fails, naming that port."""
    result = run_cli("up", "-c", conf, "--store", str(tmp_path / "s"),
                     "--namesrv-port", str(free_port()), "--broker-port", str(_port(busy) + 2))
    assert_one_line_failure(result, f":{_port(busy)}", "listenPort-2", "--broker-port")


def test_up_control_port_in_use(tmp_path, busy, conf):
    """`up --control-port` with that port taken names it and --control-port."""
    result = run_cli("up", "-c", conf, "--store", str(tmp_path / "s"),
                     "--namesrv-port", str(free_port()), "--broker-port", str(free_port()),
                     "--control-port", str(_port(busy)))
    assert_one_line_failure(result, f":{_port(busy)}", "--control-port")


def test_up_grpc_port_in_use(tmp_path, busy, conf):
    """`up --grpc-port` with that port taken names it, "gRPC port" and --grpc-port."""
    result = run_cli("up", "-c", conf, "--store", str(tmp_path / "s"),
                     "--namesrv-port", str(free_port()), "--broker-port", str(free_port()),
                     "--grpc-port", str(_port(busy)))
    assert_one_line_failure(result, f":{_port(busy)}", "gRPC port", "--grpc-port")


def test_namesrv_port_in_use(busy):
    """`namesrv` with its port taken names the port and --port."""
    result = run_cli("namesrv", "--port", str(_port(busy)))
    assert_one_line_failure(result, f":{_port(busy)}", "--port")


def test_broker_port_in_use(tmp_path, busy, conf):
    """`broker` with its port taken names the port and --port."""
    result = run_cli("broker", "-c", conf, "-n", "127.0.0.1:1", "--store", str(tmp_path / "s"),
                     "--port", str(_port(busy)))
    assert_one_line_failure(result, f":{_port(busy)}", "--port")


def test_store_locked_by_another_process(tmp_path, conf):
    """A store whose lock file another process holds is named, with the lock file."""
    store = tmp_path / "s"
    store.mkdir()
    fd = os.open(store / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # this test is the other instance
        result = run_cli("up", "-c", conf, "--store", str(store),
                         "--namesrv-port", str(free_port()), "--broker-port", str(free_port()))
    finally:
        os.close(fd)
    assert_one_line_failure(result, str(store / "lock"), "in use", "--store")


def test_store_path_cannot_be_created(tmp_path, conf):
    """A store path under a regular file is named, with what to do."""
    (tmp_path / "file").write_text("")
    store = tmp_path / "file" / "store"
    result = run_cli("up", "-c", conf, "--store", str(store),
                     "--namesrv-port", str(free_port()), "--broker-port", str(free_port()))
    assert_one_line_failure(result, str(store), "--store")


def test_bad_broker_conf_value_names_file_line_and_key(tmp_path):
    """A bad flushDiskType names broker.conf, its line and the key."""
    path = tmp_path / "broker.conf"
    path.write_text("brokerName=b\nflushDiskType=SOMETIMES\n")
    result = run_cli("broker", "-c", str(path), "--store", str(tmp_path / "s"))
    assert_one_line_failure(result, f"{path}:2 flushDiskType", "SOMETIMES")


def test_unusable_store_config_file_is_one_line(tmp_path, conf):
    """topics.json and its .bak both unusable: one line naming the file."""
    config = tmp_path / "s" / "config"
    config.mkdir(parents=True)
    for name in ("topics.json", "topics.json.bak"):
        (config / name).write_text("{not json")
    result = run_cli("up", "-c", conf, "--store", str(tmp_path / "s"),
                     "--namesrv-port", str(free_port()), "--broker-port", str(free_port()))
    assert_one_line_failure(result, str(config / "topics.json"))


def test_commitlog_of_another_file_size_is_one_line(tmp_path, conf):
    """A commitlog written with another mappedFileSizeCommitLog: one line naming the file."""
    store = tmp_path / "s" / "commitlog"
    store.mkdir(parents=True)
    (store / "00000000000000000000").write_bytes(bytes(4096))
    result = run_cli("up", "-c", conf, "--store", str(tmp_path / "s"),
                     "--namesrv-port", str(free_port()), "--broker-port", str(free_port()))
    assert_one_line_failure(result, str(store / "00000000000000000000"), "mappedFileSize")


def test_debug_shows_the_traceback(busy):
    """--debug adds the traceback to the one-line message."""
    result = run_cli("--debug", "namesrv", "--port", str(_port(busy)))
    assert result.returncode != 0
    assert "Traceback" in result.stderr and "--port" in result.stderr
