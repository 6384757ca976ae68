"""``rmq-emu up --control-port``: a fault set through the HTTP control API is what a real client
(PyPI ``rocketmq==0.4.4``, the C++ client, in a subprocess) experiences."""

from __future__ import annotations

import json
import urllib.request

import pytest
from interop_support import ClientLauncher, start_emulator, stop_emulator, unique

from rocketmq_emu.client.testing import free_port


def api(base: str, method: str, path: str, body: dict | None = None):
    """One JSON call to the control API."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def controlled(tmp_path_factory):
    """``rmq-emu up`` with the control API on a free port."""
    port = free_port()
    emu = start_emulator(tmp_path_factory.mktemp("controlled"), ["--control-port", str(port)])
    try:
        yield emu, f"http://127.0.0.1:{port}"
    finally:
        stop_emulator(emu)


def _send(launcher: ClientLauncher, topic: str, count: int, name: str):
    return launcher.run_python("py_producer.py", "--topic", topic, "--mode", "sync", "--count",
                               str(count), "--group", f"PID_{name}", "--body-prefix", name)


def test_control_api_serves_its_openapi_description(controlled):
    """GET /openapi.json describes the fault and clock endpoints."""
    _, base = controlled
    doc = api(base, "GET", "/openapi.json")
    assert doc["openapi"].startswith("3.") and "/faults" in doc["paths"]
    assert "/clock/advance" in doc["paths"]


def test_real_client_sees_an_injected_system_busy(controlled, tmp_path, pypi_rocketmq):
    """SYSTEM_BUSY on sends, set over HTTP, fails the C++ client's sends until removed."""
    emu, base = controlled
    launcher = ClientLauncher(tmp_path, emu, pypi_rocketmq, None)
    try:
        topic = unique("CtlTopic")
        api(base, "POST", "/topics", {"topic": topic, "queues": 4})
        ok = _send(launcher, topic, 1, "before")
        assert [e["status"] for e in ok.events("sent")] == ["OK"], ok.diagnostics()

        rule = api(base, "POST", "/faults", {
            "action": "error", "codes": ["SEND_MESSAGE", "SEND_MESSAGE_V2"],
            "error_code": "SYSTEM_BUSY", "remark": "injected by the test"})
        assert rule["error_code"] == 2
        since = max([r["seq"] for r in api(base, "GET", "/requests")] or [0])
        busy = _send(launcher, topic, 2, "during")
        assert busy.events("sent") == [], busy.diagnostics()
        assert len(busy.events("send_error")) == 2, busy.diagnostics()
        faulted = [r for r in api(base, "GET", f"/requests?since={since}")
                   if r["fault"] == "error"]
        assert faulted and all(r["response_code"] == 2 for r in faulted)
        assert {r["ext_fields"].get("topic") or r["ext_fields"].get("b") for r in faulted} == {topic}

        api(base, "DELETE", f"/faults/{rule['id']}")
        after = _send(launcher, topic, 1, "after")
        assert [e["status"] for e in after.events("sent")] == ["OK"], after.diagnostics()
    finally:
        launcher.close()


def test_send_family_finds_the_cpp_clients_send_message(controlled, tmp_path, pypi_rocketmq):
    """PyPI rocketmq 0.4.4 sends SEND_MESSAGE (10): /requests?code=SEND lists it,
    code=SEND_MESSAGE_V2 does not."""
    emu, base = controlled
    launcher = ClientLauncher(tmp_path, emu, pypi_rocketmq, None)
    try:
        topic = unique("CtlFamily")
        since = max([r["seq"] for r in api(base, "GET", "/requests")] or [0])
        sent = _send(launcher, topic, 1, "family")
        assert [e["status"] for e in sent.events("sent")] == ["OK"], sent.diagnostics()

        def codes(code: str) -> list[int]:
            recs = api(base, "GET", f"/requests?since={since}&code={code}")
            return [r["code"] for r in recs
                    if (r["ext_fields"].get("topic") or r["ext_fields"].get("b")) == topic]

        assert codes("SEND") == [10]
        assert codes("SEND_MESSAGE_V2") == []
    finally:
        launcher.close()
