"""``rmq-emu up`` on a store whose config file and its ``.bak`` are both unusable stops with one
line naming the file (no traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rocketmq_emu.client.testing_tools import free_port

ROOT = Path(__file__).resolve().parents[2]
SMALL_STORE = ("mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\n"
               "maxHashSlotNum=1000\nmaxIndexNum=4000\n")


def run_up(tmp_path: Path, timeout: float = 30) -> subprocess.CompletedProcess:
    """``rmq-emu up`` on ``tmp_path/store``, expected to exit by itself."""
    conf = tmp_path / "broker.conf"
    conf.write_text(SMALL_STORE)
    return subprocess.run(
        [sys.executable, "-m", "rocketmq_emu.broker.cli", "up", "--grpc-port", "0", "--store",
         str(tmp_path / "store"), "--namesrv-port", str(free_port()), "--broker-port",
         str(free_port()), "--host", "127.0.0.1", "-c", str(conf)],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_unusable_file_and_backup_stop_the_start_with_one_line(tmp_path):
    """Truncated consumerOffset.json and .bak: exit 1, one ``cannot start`` line naming the
    file, no traceback."""
    config = tmp_path / "store" / "config"
    config.mkdir(parents=True)
    for name in ("consumerOffset.json", "consumerOffset.json.bak"):
        (config / name).write_text('{"offsetTable":{"T@g":{"0":')
    proc = run_up(tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "cannot start" in line]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"rmq-emu: cannot start: config file {config}/consumerOffset.json"
                               " is unusable (not valid JSON"), lines[0]
    assert f"its backup {config}/consumerOffset.json.bak is unusable" in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
