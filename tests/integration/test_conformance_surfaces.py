"""Where the conformance findings show (issue 17): GET/DELETE /conformance on the control API and
its OpenAPI document, ``rmq-emu up --conformance-report DIR``, the ``rocketmq`` fixture's
``conformance()`` and ``strict_conformance``, and a session rule seen end to end. The bad
requests are raw remoting commands as the C++ clients send them."""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from control_api_support import call

from rocketmq_emu.broker.cli import READY
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.blocking import run_blocking
from rocketmq_emu.client.testing import free_broker_port, free_port, unique
from rocketmq_emu.client.testing_tools import wait_until

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]


def cpp_send(topic: str, batch: str) -> RemotingCommand:
    """SEND_MESSAGE (10) as PyPI rocketmq 0.4.4 sends it: language CPP, version 63, the batch
    flag written ``batch`` ("1" for a batch)."""
    ext = {"producerGroup": "PID_cpp", "topic": topic, "defaultTopic": "TBW102",
           "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
           "bornTimestamp": str(int(time.time() * 1000)), "flag": "0",
           "properties": "", "reconsumeTimes": "0", "unitMode": "false", "batch": batch}
    return RemotingCommand.request(RequestCode.SEND_MESSAGE, ext, b"body", language="CPP",
                                   version=63)


def invoke(cluster, *commands: RemotingCommand) -> list[int]:
    """Send ``commands`` one after the other on one fresh broker connection, then close it;
    the answers' codes."""
    from twisted.internet import defer, reactor

    from rocketmq_emu.broker.remoting.client import RemotingClient

    async def go() -> list[int]:
        client = RemotingClient(reactor)
        try:
            return [(await client.invoke(cluster.broker_addr, cmd)).code for cmd in commands]
        finally:
            await client.close()

    return run_blocking(lambda: defer.ensureDeferred(go()))


def wait_finding(cluster, severity: str, kind: str, timeout: float = 5.0) -> dict:
    """The first ``kind`` finding of ``severity`` once the cluster has it (the reactor runs
    meanwhile)."""
    return wait_until(lambda: [f for f in cluster.conformance(severity) if f["kind"] == kind],
                      timeout, f"a {severity} {kind} finding")[0]


def pause(seconds: float) -> None:
    """Wait while the reactor runs (a connection's close is seen meanwhile)."""
    from twisted.internet import reactor, task

    run_blocking(task.deferLater, reactor, seconds, lambda: None)


BATCH_FLAG = ("header.boolean", "error", RequestCode.SEND_MESSAGE, "batch", "1", "CPP")


def _shape(finding: dict) -> tuple:
    return (finding["kind"], finding["severity"], finding["code"], finding["field"],
            finding["sent"], finding["language"])


# --- the control API -----------------------------------------------------------------------


@pytest.mark.rocketmq(control_port=0)
def test_get_conformance_lists_the_cpp_batch_flag(rocketmq):
    """GET /conformance lists a C++ batch="1" as an error of a CPP client, counted in the
    summary and the client's row."""
    invoke(rocketmq, cpp_send(unique("T"), "1"))
    status, report = call(rocketmq, "GET", "/conformance")
    assert status == 200
    assert [_shape(f) for f in report["findings"]] == [BATCH_FLAG]
    assert report["summary"] == {"error": 1, "warning": 0, "info": 0}
    assert [(c["language"], c["version"], c["error"]) for c in report["clients"]] == [
        ("CPP", 63, 1)]


@pytest.mark.rocketmq(control_port=0)
def test_delete_conformance_forgets_the_findings(rocketmq):
    """DELETE /conformance answers ok; GET then lists no finding and no client."""
    invoke(rocketmq, cpp_send(unique("T"), "1"))
    assert call(rocketmq, "DELETE", "/conformance") == (200, {"ok": True})
    status, report = call(rocketmq, "GET", "/conformance")
    assert (status, report["findings"], report["clients"]) == (200, [], [])
    assert report["summary"] == {"error": 0, "warning": 0, "info": 0}


@pytest.mark.rocketmq(control_port=0)
def test_openapi_describes_get_and_delete_conformance(rocketmq):
    """The OpenAPI document has /conformance with GET (naming the finding fields) and DELETE."""
    _, doc = call(rocketmq, "GET", "/openapi.json")
    path = doc["paths"]["/conformance"]
    assert set(path) >= {"get", "delete"}
    assert "severity" in json.dumps(path["get"]) and "javaClass" in json.dumps(path["get"])


# --- the pytest fixture ----------------------------------------------------------------------


def test_fixture_conformance_returns_the_finding_filtered_by_severity(rocketmq):
    """rocketmq.conformance() lists the C++ batch flag; conformance("error") keeps it,
    conformance("warning") does not."""
    invoke(rocketmq, cpp_send(unique("T"), "1"))
    assert [_shape(f) for f in rocketmq.conformance()] == [BATCH_FLAG]
    assert [_shape(f) for f in rocketmq.conformance("error")] == [BATCH_FLAG]
    assert rocketmq.conformance("warning") == []


STRICT_TESTS = '''
import time

import pytest
from twisted.internet import defer, reactor

from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.cli import READY
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.blocking import run_blocking


def send(cluster, batch):
    ext = {"producerGroup": "PID_cpp", "topic": "StrictT", "defaultTopic": "TBW102",
           "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
           "bornTimestamp": str(int(time.time() * 1000)), "flag": "0", "properties": "",
           "reconsumeTimes": "0", "unitMode": "false", "batch": batch}
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE, ext, b"x", language="CPP",
                                  version=63)

    async def go():
        client = RemotingClient(reactor)
        try:
            return (await client.invoke(cluster.broker_addr, cmd)).code
        finally:
            await client.close()

    return run_blocking(lambda: defer.ensureDeferred(go()))


@pytest.mark.rocketmq(strict_conformance=True)
def test_cpp_batch_flag(rocketmq):
    assert send(rocketmq, "1") == 0


@pytest.mark.rocketmq(strict_conformance=True)
def test_java_batch_flag(rocketmq):
    assert send(rocketmq, "false") == 0
'''


def test_strict_conformance_fails_only_the_test_with_an_error_finding(pytester):
    """strict_conformance=True: the test that sent batch="1" fails at teardown naming the
    client and the finding; the one that sent batch="false" passes."""
    pytester.makepyfile(test_strict=STRICT_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_cpp_batch_flag*",
        "*strict_conformance: the clients sent what the Java client does not:*",
        '*CPP *: header batch="1" is read by Boolean.parseBoolean as false*',
        "ERROR test_strict.py::test_cpp_batch_flag - Failed: strict_conformance*"])
    assert "test_java_batch_flag - " not in result.stdout.str()


# --- session rules end to end ----------------------------------------------------------------


def test_consumer_closing_without_unregister_is_a_warning(rocketmq):
    """A consumer that heartbeats its group and closes its connection without
    UNREGISTER_CLIENT: warning session.unregister naming the group."""
    group = unique("GID")
    body = json.dumps({"clientID": unique("127.0.0.1@cpp"), "producerDataSet": [],
                       "consumerDataSet": [{
                           "groupName": group, "consumeType": "CONSUME_PASSIVELY",
                           "messageModel": "CLUSTERING",
                           "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                           "subscriptionDataSet": [], "unitMode": False}]}).encode()
    assert invoke(rocketmq, RemotingCommand.request(RequestCode.HEART_BEAT, {}, body)) == [0]
    found = wait_finding(rocketmq, "warning", "session.unregister")
    assert (found["field"], found["sent"]) == ("consumerGroup", group)


def test_consumer_that_unregisters_earns_no_session_warning(rocketmq):
    """The same consumer sending UNREGISTER_CLIENT before closing earns no finding."""
    group, client_id = unique("GID"), unique("127.0.0.1@java")
    body = json.dumps({"clientID": client_id, "producerDataSet": [], "consumerDataSet": [{
        "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": [],
        "unitMode": False}]}).encode()
    unregister = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {
        "clientID": client_id, "consumerGroup": group})
    assert invoke(rocketmq, RemotingCommand.request(RequestCode.HEART_BEAT, {}, body),
                  unregister) == [0, 0]
    pause(0.5)  # the close is seen
    assert rocketmq.conformance() == []


def test_offset_committed_beyond_the_max_offset_is_a_warning(rocketmq):
    """UPDATE_CONSUMER_OFFSET of 100 on an empty queue: warning session.offset on
    commitOffset."""
    topic = unique("T")
    rocketmq.create_topic(topic, 1)
    commit = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": unique("GID"), "topic": topic, "queueId": "0", "commitOffset": "100"})
    invoke(rocketmq, commit)
    found = wait_finding(rocketmq, "warning", "session.offset")
    assert (found["code"], found["field"]) == (RequestCode.UPDATE_CONSUMER_OFFSET,
                                               "commitOffset")
    assert "offset 100" in found["message"]


# --- rmq-emu up --conformance-report DIR -----------------------------------------------------


def _blocking_send(addr: str, cmd: RemotingCommand) -> int:
    """One request on a fresh socket; the answer's code."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(cmd.encode())
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            data += chunk
    return RemotingCommand.decode_frame(data[4:]).code


def test_up_writes_the_conformance_report_when_stopped(tmp_path):
    """`rmq-emu up --conformance-report DIR`: after a C++ batch flag and SIGTERM, DIR holds
    conformance.json (findings with language, severity and message) and conformance.html."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"mappedFileSizeCommitLog={1 << 20}\n")
    ns, broker = free_port(), free_broker_port()
    report = tmp_path / "report" / "sub"
    log = tmp_path / "up.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rocketmq_emu.broker.cli", "up", "--store",
             str(tmp_path / "store"), "--namesrv-port", str(ns), "--broker-port", str(broker),
             "--host", "127.0.0.1", "--grpc-port", "0", "-c", str(conf),
             "--conformance-report", str(report)],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while READY not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        assert _blocking_send(f"127.0.0.1:{broker}", cpp_send(unique("T"), "1")) == 0
        assert not (report / "conformance.json").exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0, log.read_text()
    data = json.loads((report / "conformance.json").read_text())
    assert isinstance(data["findings"], list)
    assert all({"language", "severity", "message"} <= set(f) for f in data["findings"])
    assert [_shape(f) for f in data["findings"] if f["severity"] == "error"] == [BATCH_FLAG]
    page = (report / "conformance.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and 'class="error"' in page
    assert "Boolean.parseBoolean" in page


def test_conformance_report_into_an_unwritable_place_is_one_line(tmp_path):
    """--conformance-report under a regular file: exit 2, one line naming the option, no
    traceback."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", "up",
                          "--conformance-report", str(blocker / "dir"), "--store",
                          str(tmp_path / "store"), "--grpc-port", "0"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 2, out
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "--conformance-report" in out.stderr and "Traceback" not in out.stderr
