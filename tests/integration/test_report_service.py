"""``rmq-emu report serve`` end to end: a real service process with its own Spark session, the
``rmq-emu report`` command finding it through its state file or ``--server``, two reports
served in a row, a store it cannot read refused in one line, and SIGTERM stopping it cleanly."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark"))
from storegen import T0, BrokerStore  # noqa: E402

from rocketmq_emu.broker.commitlog.record import MessageRecord  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 300


def _write_store(root: str) -> None:
    """TopicA: 6 messages over a minute; group G1 committed 2 of them on queue 0."""
    st = BrokerStore(root, file_size=64 * 1024)
    for i in range(6):
        st.put(MessageRecord(
            topic="TopicA", body=b"x" * 50, queue_id=0, store_host=("192.168.0.10", 10911),
            born_host=("10.0.0.1", 5001), born_timestamp=T0 + i * 10_000 - 1,
            store_timestamp=T0 + i * 10_000, properties={"UNIQ_KEY": f"A{i:031d}"},
        ))
    st.commit_offsets({"TopicA@G1": {0: 2}})
    st.close()


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    """The environment of every process here: this module's own state file."""
    state = tmp_path_factory.mktemp("service-state") / "report-service.json"
    return {**os.environ, "RMQ_EMU_REPORT_STATE": str(state), "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("service-store"))
    _write_store(root)
    return root


@pytest.fixture(scope="module")
def service(env):
    """A running ``report serve``: (process, URL). Stopped here if a test did not stop it."""
    proc = subprocess.Popen([sys.executable, "-m", "rocketmq_emu.reports", "serve"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    url = None
    for line in proc.stdout:
        if line.startswith("report service: http://"):
            url = line.split()[2]
            break
    assert url, f"report serve exited {proc.wait(timeout=READY_TIMEOUT)} before it was ready"
    yield proc, url
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _report(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", "report", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _get(url: str, path: str) -> tuple[int, dict]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def _post(url: str, body: dict) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request("POST", "/reports", json.dumps(body).encode(),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_the_service_says_it_is_ready_and_where(service, env):
    """GET /health names the process and its URL; the state file says the same."""
    proc, url = service
    status, health = _get(url, "/health")
    assert status == 200 and health["status"] == "ok"
    assert health["pid"] == proc.pid and health["url"] == url and not health["busy"]
    state = json.loads(Path(env["RMQ_EMU_REPORT_STATE"]).read_text())
    assert state["pid"] == proc.pid and state["url"] == url


def test_two_reports_run_in_the_service_the_command_finds(service, env, store, tmp_path):
    """`rmq-emu report all` with no --server finds the service by its state file; `report
    traffic --server URL` names it. Both print their pages as a local report does, and the
    service counts both."""
    _, url = service
    first = _report(env, "all", "--store", store, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr[-3000:]
    assert f"report service {url}: all" in first.stderr
    assert f"all: {tmp_path / 'a' / 'index.html'}" in first.stdout
    assert "[consumers 1/5]" in first.stderr  # the progress lines come through
    lag = (tmp_path / "a" / "consumers" / "lag_by_group.csv").read_text().splitlines()
    assert lag[0].endswith(",lag") and lag[1].split(",")[-1] == "4"  # 6 written, 2 committed
    second = _report(env, "traffic", "--store", store, "--out", str(tmp_path / "b"),
                     "--server", url)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"traffic: {tmp_path / 'b' / 'traffic' / 'index.html'}" in second.stdout
    assert (tmp_path / "b" / "traffic" / "messages_over_time.png").is_file()
    assert _get(url, "/health")[1]["served"] >= 2


def test_a_store_the_service_cannot_read_is_refused_in_one_line(service, tmp_path, env):
    """A directory holding no store: 400 with the one line the command prints, at once; the
    command itself says the same line and exits 2."""
    _, url = service
    (tmp_path / "empty").mkdir()
    status, body = _post(url, {"name": "all", "stores": [str(tmp_path / "empty")],
                               "out": str(tmp_path / "out")})
    assert status == 400
    assert "holds no RocketMQ store" in json.loads(body)["error"]
    relative = _post(url, {"name": "all", "stores": [str(tmp_path)], "out": "out"})
    assert relative[0] == 400 and "absolute" in json.loads(relative[1])["error"]
    result = _report(env, "all", "--store", str(tmp_path / "empty"), "--server", url)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "holds no RocketMQ store" in result.stderr


def test_an_unreachable_server_is_one_line(tmp_path, env, store):
    """--server naming nothing that answers: one error line, exit status 2, no Spark."""
    result = _report(env, "traffic", "--store", store, "--server", "127.0.0.1:9")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("rmq-emu: error: report service http://127.0.0.1:9")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_sigterm_stops_the_service_cleanly(service, env):
    """SIGTERM: exit status 0, the stop said, the state file gone (the next report runs here)."""
    proc, _ = service
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0
    rest = proc.stdout.read()
    assert "report service: SIGTERM, stopping" in rest and "report service stopped" in rest
    assert not Path(env["RMQ_EMU_REPORT_STATE"]).exists()
