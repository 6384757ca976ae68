"""The control API's bearer token over loopback HTTP: none needed by default (the harness and
``rmq-emu up --control-port``), required with ``--control-token`` and when ``--control-host``
is not loopback (then generated and printed once when not given)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from control_api_support import call

from rocketmq_emu.client.testing import TEST_BROKER_CONF, free_broker_port, free_port

ROOT = Path(__file__).resolve().parents[2]


def request(base: str, path: str, token: str | None = None,
            method: str = "GET") -> tuple[int, dict, dict]:
    """(status, JSON body, headers) of one call, with ``Authorization: Bearer token`` if given."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    req = urllib.request.Request(base + path, headers=headers, method=method,
                                 data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


@contextmanager
def run_up(tmp_path: Path, *extra: str) -> Iterator[tuple[str, str]]:
    """``rmq-emu up --control-port`` with ``extra`` options until its control API line; yields
    (base URL over 127.0.0.1, its output so far); stopped with SIGINT (exit 0)."""
    control = free_port()
    out_path = tmp_path / "up.log"
    conf = tmp_path / "broker.conf"
    conf.write_text(TEST_BROKER_CONF)
    argv = [sys.executable, "-m", "rocketmq_emu.broker.cli", "up", "--grpc-port", "0",
            "--store", str(tmp_path / "store"), "--namesrv-port", str(free_port()),
            "--broker-port", str(free_broker_port()), "--control-port", str(control),
            "-c", str(conf), *extra]
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            deadline = time.monotonic() + 60
            while b"control API http" not in out_path.read_bytes():
                assert proc.poll() is None, out_path.read_text()
                assert time.monotonic() < deadline, "rmq-emu up not ready"
                time.sleep(0.1)
            yield f"http://127.0.0.1:{control}", out_path.read_text()
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                assert proc.wait(20) == 0, out_path.read_text()
            finally:
                if proc.poll() is None:
                    proc.kill()


@pytest.mark.rocketmq(control_port=0)
def test_the_harness_on_loopback_needs_no_token(rocketmq):
    """EmbeddedCluster(control_port=0) serves on 127.0.0.1 without authentication, as before."""
    assert rocketmq.controls.token is None
    status, health = call(rocketmq, "GET", "/health")
    assert status == 200 and health["broker_running"]


def test_up_with_control_token_requires_it_on_loopback(tmp_path):
    """`--control-token T`: no Authorization or a wrong token is 401 (JSON error, Bearer
    challenge), the token is served; the token is not printed."""
    with run_up(tmp_path, "--control-token", "T0k-en_1") as (base, output):
        assert "T0k-en_1" not in output and "control API token" not in output
        assert "Authorization: Bearer" in output
        status, body, headers = request(base, "/health")
        assert status == 401 and "bearer token" in body["error"]
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert headers["Content-Type"] == "application/json"
        status, body, headers = request(base, "/reset", "wrong", method="POST")
        assert status == 401 and body == {"error": "invalid bearer token"}
        assert headers["WWW-Authenticate"].startswith("Bearer")
        status, health, _ = request(base, "/health", "T0k-en_1")
        assert status == 200 and health["broker_running"]
        assert request(base, "/reset", "T0k-en_1", method="POST")[:2] == (200, {"ok": True})


def test_up_on_a_non_loopback_host_prints_a_generated_token_and_requires_it(tmp_path):
    """`--control-host 0.0.0.0` without a token: one generated token line before `ready`;
    requests (over 127.0.0.1) need it."""
    with run_up(tmp_path, "--control-host", "0.0.0.0") as (base, output):
        lines = output.splitlines()
        token_lines = [i for i, line in enumerate(lines)
                       if line.startswith("rmq-emu: control API token: ")]
        assert len(token_lines) == 1, output
        assert token_lines[0] < next(i for i, line in enumerate(lines) if "ready" in line)
        token = lines[token_lines[0]].split(": ", 2)[2]
        assert re.fullmatch(r"[A-Za-z0-9_-]{40,}", token), token
        assert "control API http://0.0.0.0:" in output
        status, _, headers = request(base, "/health")
        assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
        assert request(base, "/health", token + "x")[0] == 401
        status, health, _ = request(base, "/health", token)
        assert status == 200 and health["broker_running"]


@pytest.mark.parametrize("argv, message", [
    (["--control-token", "", "--control-port", "0"], "--control-token"),
    (["--control-token", "has space", "--control-port", "0"], "--control-token"),
    (["--control-host", "0.0.0.0"], "need --control-port"),
])
def test_up_refuses_unusable_control_options(tmp_path, argv, message):
    """An empty or unsendable token, or control options without --control-port: exit 2, one line."""
    out = subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", "up",
                          "--store", str(tmp_path / "s"), *argv],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
