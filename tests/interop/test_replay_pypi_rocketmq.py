"""Record and replay with a real client: a session of PyPI ``rocketmq==0.4.4`` (the C++ client:
sync sends auto-creating the topic from TBW102, then a pull consumer reading them) is recorded
with ``rmq-emu up --record`` and replayed with ``rmq-emu replay`` against a fresh emulator.

Nothing had to be masked beyond the replay's defaults (broker/recording/compare.py): the C++
client's request bytes are replayed verbatim, so its client id, message keys and UNIQ_KEYs come
back as recorded; what the store assigns (offsets, offset message ids, times, addresses) is
masked by default."""

from __future__ import annotations

import subprocess
import sys

from interop_support import ClientLauncher, start_emulator, stop_emulator, unique

from rocketmq_emu.broker.recording.plan import build_plan
from rocketmq_emu.broker.remoting.codes import RequestCode

COUNT = 4


def cpp_send_then_pull(launcher: ClientLauncher, topic: str, name: str) -> None:
    """The C++ client's session: COUNT sync sends (the topic auto-created), then a pull
    consumer reading them (groups PID_<name> and CID_<name>)."""
    producer = launcher.run_python(
        "py_producer.py", "--topic", topic, "--mode", "sync", "--count", str(COUNT),
        "--group", f"PID_{name}")
    assert len(producer.events("sent")) == COUNT, producer.diagnostics()
    consumer = launcher.run_python("py_pull_consumer.py", "--topic", topic, "--group",
                                   f"CID_{name}", "--expect", str(COUNT))
    assert len(consumer.events("msg")) == COUNT, consumer.diagnostics()


def test_recorded_cpp_session_replays_against_a_fresh_emulator(tmp_path, pypi_rocketmq):
    """Every answer of the replay has the recorded shape: ``0 differed``, exit status 0."""
    path = tmp_path / "cpp.rec"
    for name in ("recorded-emu", "fresh-emu"):
        (tmp_path / name).mkdir()
    recorded = start_emulator(tmp_path / "recorded-emu", extra=["--record", str(path)])
    launcher = ClientLauncher(tmp_path, recorded, pypi_rocketmq, None)
    topic = unique("ReplayCpp")
    try:
        cpp_send_then_pull(launcher, topic, "replay")
    finally:
        launcher.close()
        stop_emulator(recorded)
    plan = build_plan(path.read_bytes())
    codes = {e.request.code for e in plan.compared}
    assert {RequestCode.SEND_MESSAGE_V2, RequestCode.PULL_MESSAGE} <= codes \
        or {RequestCode.SEND_MESSAGE, RequestCode.PULL_MESSAGE} <= codes
    assert {e.request.language for e in plan.exchanges} == {"CPP"}
    replays_all_matched(path, len(plan.compared), tmp_path / "fresh-emu")


def replays_all_matched(path, n: int, store_dir) -> None:
    """``rmq-emu replay`` of ``path`` against a fresh emulator in ``store_dir``: all ``n``
    compared requests matched, exit status 0."""
    fresh = start_emulator(store_dir)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rocketmq_emu.broker.cli", "replay", str(path),
             "--namesrv", fresh.namesrv], capture_output=True, text=True, timeout=300)
    finally:
        stop_emulator(fresh)
    assert done.stdout.splitlines()[-1] == \
        f"replayed {n} requests: {n} matched, 0 timing, 0 differed", done.stdout + done.stderr
    assert done.returncode == 0
