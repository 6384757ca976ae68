"""The HTTP control API on an in-process cluster (``EmbeddedCluster(control_port=0)`` through the
``rocketmq`` fixture's marker)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from control_api_support import call

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.blocking import run_blocking
from rocketmq_emu.client.message import Message, MQBrokerError
from rocketmq_emu.client.testing import unique

pytestmark = pytest.mark.rocketmq(control_port=0)


@pytest.fixture
def cluster(rocketmq):
    return rocketmq




def get_text(cluster, path: str, accept: str) -> tuple[str, str]:
    """GET ``path`` with an Accept header; the content type and the text of the answer."""
    from twisted.internet import threads

    def do() -> tuple[str, str]:
        req = urllib.request.Request(f"http://127.0.0.1:{cluster.control_port}{path}",
                                     headers={"Accept": accept})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.headers["content-type"], resp.read().decode()

    return run_blocking(threads.deferToThread, do)


def send_code_10(cluster, topic: str, body: bytes) -> int:
    """A SEND_MESSAGE (10) as the C++ clients send it, on a bare remoting connection."""
    from twisted.internet import defer, reactor

    from rocketmq_emu.broker.remoting.client import RemotingClient

    ext = {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102",
           "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
           "bornTimestamp": "1", "flag": "0", "properties": "", "batch": "false"}

    async def go() -> int:
        client = RemotingClient(reactor)
        try:
            resp = await client.invoke(cluster.broker_addr,
                                       RemotingCommand.request(RequestCode.SEND_MESSAGE, ext, body))
            return resp.code
        finally:
            await client.close()

    return run_blocking(lambda: defer.ensureDeferred(go()))


def test_root_points_to_openapi(cluster):
    """GET / answers JSON linking /openapi.json and the dashboard (the dashboard's page to a
    browser), and is itself described in the OpenAPI document."""
    status, root = call(cluster, "GET", "/")
    assert status == 200 and root["openapi"] == "/openapi.json" and root["dashboard"] == "/"
    _, doc = call(cluster, "GET", "/openapi.json")
    assert set(root["paths"]) == set(doc["paths"]) and "/" in doc["paths"]
    kind, page = get_text(cluster, "/", "text/html,application/xhtml+xml,*/*;q=0.8")
    assert kind.startswith("text/html") and '<script src="/dashboard/core.js">' in page


def test_requests_code_send_matches_every_send_code(cluster):
    """/requests?code=SEND lists SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE; a code
    name matches only its own code; comma-separated codes match any of them."""
    topic = unique("T")
    producer = cluster.producer()
    producer.send(Message(topic, b"v2"))
    producer.send_batch([Message(topic, b"b1"), Message(topic, b"b2")])
    assert send_code_10(cluster, topic, b"v1") == ResponseCode.SUCCESS

    def codes(query: str) -> list[int]:
        status, recs = call(cluster, "GET", f"/requests?code={query}")
        assert status == 200
        return sorted(r["code"] for r in recs)

    assert codes("SEND") == codes("send") == [10, 310, 320]
    assert codes("SEND_MESSAGE") == [10] and codes("SEND_MESSAGE_V2") == [310]
    assert codes("SEND_MESSAGE,310") == [10, 310]
    assert call(cluster, "GET", "/requests?code=SEND_NOTHING")[0] == 400


def test_fault_rule_codes_accept_the_send_family(cluster):
    """A fault rule given "codes": ["SEND"] covers codes 10, 310 and 320."""
    status, rule = call(cluster, "POST", "/faults", {"action": "drop", "codes": ["SEND"]})
    assert status == 200 and rule["codes"] == [10, 310, 320]


def test_openapi_lists_every_route(cluster):
    """/openapi.json is an OpenAPI 3 document naming the endpoints."""
    status, doc = call(cluster, "GET", "/openapi.json")
    assert status == 200 and doc["openapi"] == "3.0.3"
    assert {"/clock/advance", "/faults", "/requests", "/topics", "/offsets", "/reset"} <= set(doc["paths"])


def test_clock_advance_and_mode(cluster):
    """POST /clock/advance moves the broker clock; /clock/mode switches to manual."""
    _, before = call(cluster, "GET", "/clock")
    status, after = call(cluster, "POST", "/clock/advance", {"seconds": 3600})
    assert status == 200 and after["now_ms"] - before["now_ms"] >= 3_600_000
    _, manual = call(cluster, "POST", "/clock/mode", {"mode": "manual"})
    assert manual["mode"] == "manual" and cluster.clock.mode == "manual"


def test_fault_rules_over_http_reach_the_client(cluster):
    """A rule added over HTTP fails a send; deleting it restores service; /requests shows it."""
    producer = cluster.producer()
    topic = unique("T")
    producer.send(Message(topic, b"ok"))
    status, rule = call(cluster, "POST", "/faults",
                        {"action": "error", "codes": ["SEND_MESSAGE_V2"], "error_code": "SYSTEM_BUSY"})
    assert status == 200 and rule["codes"] == [310]
    with pytest.raises(MQBrokerError):
        producer.send(Message(topic, b"busy"))
    _, rules = call(cluster, "GET", "/faults")
    assert [r["hits"] for r in rules] == [1]
    _, recs = call(cluster, "GET", "/requests?code=310")
    assert [r["fault"] for r in recs] == [None, "error"]
    assert call(cluster, "DELETE", f"/faults/{rule['id']}")[0] == 200
    assert producer.send(Message(topic, b"again")).status.name == "SEND_OK"


def test_topics_and_offsets_state(cluster):
    """/topics shows queue max offsets, /messages the stored messages, /offsets a group's
    committed offsets and lag."""
    topic = unique("T")
    status, created = call(cluster, "POST", "/topics", {"topic": topic, "queues": 1})
    assert status == 200 and created["brokers"] == ["broker-a"]
    producer = cluster.producer()
    for i in range(3):
        producer.send(Message(topic, f"m{i}".encode()))
    _, info = call(cluster, "GET", f"/topics/{topic}")
    [queue] = info["queues"]
    assert (queue["queueId"], queue["minOffset"], queue["maxOffset"]) == (0, 0, 3)
    assert queue["lastUpdateTimestamp"] > 0
    _, msgs = call(cluster, "GET", f"/messages?topic={topic}&queueId=0&offset=1&max=5")
    assert [(m["queueOffset"], m["body"]) for m in msgs] == [(1, "m1"), (2, "m2")]
    assert msgs[0]["bodyEncoding"] == "utf-8" and len(msgs[0]["msgId"]) == 32
    _, topics = call(cluster, "GET", "/topics")
    assert topic in {t["topic"] for t in topics}
    consumer = cluster.pull_consumer(group="G-ctl")
    (mq,) = consumer.fetch_subscribe_queues(topic)
    consumer.update_offset(mq, 2)
    _, offsets = call(cluster, "GET", "/offsets?group=G-ctl")
    assert offsets == [{"group": "G-ctl", "topic": topic, "queueId": 0, "offset": 2,
                        "maxOffset": 3, "lag": 1}]


def test_broker_stop_start_and_reset(cluster):
    """POST /broker/stop and /broker/start; /reset clears rules and records."""
    call(cluster, "POST", "/faults", {"action": "drop", "codes": [34]})
    assert call(cluster, "POST", "/broker/stop")[1] == {"ok": True}
    assert call(cluster, "GET", "/health")[1]["broker_running"] is False
    assert call(cluster, "GET", "/topics")[0] == 404
    assert call(cluster, "POST", "/broker/start")[1] == {"ok": True}
    assert call(cluster, "GET", "/health")[1]["broker_running"] is True
    call(cluster, "POST", "/reset")
    assert call(cluster, "GET", "/faults")[1] == [] and call(cluster, "GET", "/requests")[1] == []


def test_bad_requests_are_answered_with_errors(cluster):
    """Unknown endpoints 404, bad rules 400, with an error message."""
    assert call(cluster, "GET", "/nope")[0] == 404
    status, body = call(cluster, "POST", "/faults", {"action": "explode"})
    assert status == 400 and "action" in body["error"]
    assert call(cluster, "POST", "/clock/advance", {})[0] == 400
    assert call(cluster, "DELETE", "/faults/999")[0] == 404
