"""Recording against a broker that is not this emulator's own process: ``rmq-emu proxy`` in front
of an upstream name server and broker (a separate ``rmq-emu up``: the only broker CI has), a
session of PyPI ``rocketmq==0.4.4`` (the C++ client: sync sends auto-creating the topic, then a
pull consumer) recorded through it, then ``rmq-emu replay`` against a fresh emulator: 0 differed.
The C++ client's broker traffic goes through the proxy because the route answers it gets name
the proxy's broker port."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time

from interop_support import ROOT, ClientLauncher, start_emulator, stop_emulator, unique
from test_replay_pypi_rocketmq import cpp_send_then_pull, replays_all_matched

from rocketmq_emu.broker.recording.plan import build_plan
from rocketmq_emu.broker.remoting.codes import RequestCode

PROXY_LINE = re.compile(r"^rmq-emu: proxy name server (\S+:\d+) relays to ")


def start_proxy(upstream: str, record: str, log_path) -> tuple[subprocess.Popen, str]:
    """``rmq-emu proxy`` as a user runs it; its name server address, read from the banner."""
    log = open(log_path, "w")  # noqa: SIM115 - the child's output, read back below
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketmq_emu.broker.cli", "proxy", "--upstream", upstream,
         "--record", record], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))
    log.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log_path.read_text().splitlines():
            m = PROXY_LINE.match(line)
            if m:
                return proc, m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"no proxy banner:\n{log_path.read_text()}")


def test_cpp_session_recorded_through_the_proxy_replays_against_a_fresh_emulator(
        tmp_path, pypi_rocketmq):
    path = tmp_path / "proxied.rec"
    for name in ("upstream-emu", "fresh-emu"):
        (tmp_path / name).mkdir()
    upstream = start_emulator(tmp_path / "upstream-emu")
    proxy, proxy_namesrv = start_proxy(upstream.namesrv, str(path), tmp_path / "proxy.log")
    launcher = ClientLauncher(tmp_path, dataclasses.replace(upstream, namesrv=proxy_namesrv),
                              pypi_rocketmq, None)
    topic = unique("ProxyCpp")
    try:
        cpp_send_then_pull(launcher, topic, "proxy")
    finally:
        launcher.close()
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(30) == 0, (tmp_path / "proxy.log").read_text()
        stop_emulator(upstream)
    plan = build_plan(path.read_bytes())
    codes = {e.request.code for e in plan.compared}
    assert RequestCode.PULL_MESSAGE in codes and codes & {RequestCode.SEND_MESSAGE,
                                                          RequestCode.SEND_MESSAGE_V2}
    assert {e.request.language for e in plan.exchanges} == {"CPP"}
    assert len({e.port for e in plan.exchanges}) >= 2  # the name server's and a broker's
    replays_all_matched(path, len(plan.compared), tmp_path / "fresh-emu")
