"""Fault rules and the request log of the control API (over HTTP) on gRPC calls, by RPC name,
against the ``rocketmq`` fixture's gRPC endpoint with a raw grpcio client."""

from __future__ import annotations

import time

import grpc
import pytest
from control_api_support import call
from harness_grpc_support import CLIENT_ID, GrpcClient, cls, received

from rocketmq_emu.broker.grpc.status import Code
from rocketmq_emu.client.testing import unique

pytestmark = pytest.mark.rocketmq(control_port=0)


@pytest.fixture
def cluster(rocketmq):
    return rocketmq


@pytest.fixture
def client(cluster):
    """A raw grpcio client of the cluster's endpoint."""
    c = GrpcClient(cluster.grpc_endpoint)
    yield c
    c.close()


@pytest.fixture
def topic(cluster):
    """A fresh topic with 4 queues."""
    name = unique("T")
    cluster.create_topic(name)
    return name


def stored(cluster, topic: str) -> int:
    """How many messages the topic's queues hold (GET /topics/{topic})."""
    _, info = call(cluster, "GET", f"/topics/{topic}")
    return sum(q["maxOffset"] - q["minOffset"] for q in info["queues"])


def add_rule(cluster, rule: dict) -> dict:
    """POST /faults; the rule as answered."""
    status, answer = call(cluster, "POST", "/faults", rule)
    assert status == 200, answer
    return answer


def test_rule_by_rpc_name_targets_grpc(cluster):
    """A rule naming SendMessage in codes is a gRPC rule: target grpc, rpcs [SendMessage]."""
    rule = add_rule(cluster, {"action": "error", "codes": ["SendMessage"]})
    assert rule["target"] == "grpc" and rule["rpcs"] == ["SendMessage"] and rule["codes"] is None


def test_error_rule_answers_send_with_a_status_code_unprocessed(cluster, client, topic):
    """status_code TOO_MANY_REQUESTS: SendMessage is answered OK with that Status, nothing stored."""
    add_rule(cluster, {"action": "error", "codes": ["SendMessage"], "status_code": "TOO_MANY_REQUESTS",
                       "remark": "busy now"})
    resp = client.send(topic, b"x")
    assert (resp.status.code, resp.status.message) == (Code.TOO_MANY_REQUESTS, "busy now")
    assert stored(cluster, topic) == 0


def test_error_rule_maps_error_code_as_the_proxy_does(cluster, client, topic):
    """error_code SYSTEM_BUSY (the default) becomes the Status TOO_MANY_REQUESTS, as the proxy maps it."""
    add_rule(cluster, {"action": "error", "rpcs": ["SendMessage"]})
    assert client.send(topic, b"x").status.code == Code.TOO_MANY_REQUESTS


def test_error_rule_with_grpc_status_ends_the_call_with_it(cluster, client, topic):
    """grpc_status UNAVAILABLE: the call fails with gRPC status UNAVAILABLE."""
    add_rule(cluster, {"action": "error", "codes": ["SendMessage"], "grpc_status": "UNAVAILABLE"})
    with pytest.raises(grpc.RpcError) as err:
        client.send(topic, b"x")
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "rmq-emu fault" in err.value.details()


def test_delay_rule_answers_send_late_after_storing(cluster, client, topic):
    """delay 1 s: SendMessage succeeds, answered at least a second late."""
    add_rule(cluster, {"action": "delay", "codes": ["SendMessage"], "delay": 1.0})
    start = time.monotonic()
    resp = client.send(topic, b"x")
    assert resp.status.code == Code.OK and time.monotonic() - start >= 1.0
    assert stored(cluster, topic) == 1


def test_drop_rule_never_answers_and_stores_nothing(cluster, client, topic):
    """drop: SendMessage gets no answer (DEADLINE_EXCEEDED) and nothing is stored."""
    add_rule(cluster, {"action": "drop", "codes": ["SendMessage"]})
    with pytest.raises(grpc.RpcError) as err:
        client.send(topic, b"x", timeout=1.5)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert stored(cluster, topic) == 0


def test_drop_response_rule_stores_the_message_but_never_answers(cluster, client, topic):
    """drop_response: SendMessage times out, yet the message is stored."""
    add_rule(cluster, {"action": "drop_response", "codes": ["SendMessage"]})
    with pytest.raises(grpc.RpcError) as err:
        client.send(topic, b"x", timeout=1.5)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert stored(cluster, topic) == 1


def test_drop_response_on_receive_loses_the_messages_until_the_invisible_time(cluster, client, topic):
    """drop_response on ReceiveMessage: the message is popped but never delivered; it comes back
    (attempt 2) once the clock passes its invisible time."""
    group = unique("G")
    client.send(topic, b"lost once")
    add_rule(cluster, {"action": "drop_response", "codes": ["ReceiveMessage"], "times": 1})
    with pytest.raises(grpc.RpcError):
        client.receive(topic, group, invisible_s=60, polling_s=1)
    call(cluster, "POST", "/clock/advance", {"seconds": 61})
    [msg] = received(client.receive(topic, group, invisible_s=60))
    assert msg.body == b"lost once" and msg.system_properties.delivery_attempt == 2


def test_delay_rule_holds_receive_responses(cluster, client, topic):
    """delay 1 s on ReceiveMessage: the message arrives, at least a second late."""
    client.send(topic, b"late")
    add_rule(cluster, {"action": "delay", "codes": ["ReceiveMessage"], "delay": 1.0})
    start = time.monotonic()
    [msg] = received(client.receive(topic, unique("G")))
    assert msg.body == b"late" and time.monotonic() - start >= 1.0


def test_health_names_the_grpc_endpoint(cluster):
    """GET /health answers the gRPC endpoint."""
    _, health = call(cluster, "GET", "/health")
    assert health["grpc"] == cluster.grpc_endpoint


def test_close_rule_closes_the_connection(cluster, client, topic):
    """close: the HTTP/2 connection is closed; the call fails UNAVAILABLE."""
    add_rule(cluster, {"action": "close", "codes": ["SendMessage"], "times": 1})
    with pytest.raises(grpc.RpcError) as err:
        client.send(topic, b"x")
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_broker_rule_faults_the_remoting_request_a_grpc_call_becomes(cluster, client, topic):
    """A target-broker rule on SEND faults the SEND_MESSAGE a SendMessage becomes (the proxy's
    Local mode: INTERNAL_SERVER_ERROR with the broker's remark); the gRPC call is not hit by it."""
    add_rule(cluster, {"action": "error", "codes": ["SEND"], "error_code": "SYSTEM_BUSY"})
    status = client.send(topic, b"x").status
    assert (status.code, status.message) == (Code.INTERNAL_SERVER_ERROR, "[rmq-emu fault] SYSTEM_BUSY")
    _, recs = call(cluster, "GET", "/requests?code=SendMessage")
    assert [r["fault"] for r in recs] == [None]


def test_request_log_lists_grpc_calls_by_rpc_name_and_peer(cluster, client, topic):
    """/requests?code=SendMessage lists the gRPC call: target grpc, RPC name, peer, client id,
    grpc_status OK; the remoting request it became is logged under the broker."""
    client.send(topic, b"x")
    _, recs = call(cluster, "GET", "/requests?code=SendMessage")
    [rec] = recs
    assert (rec["target"], rec["rpc"], rec["name"], rec["client_id"], rec["grpc_status"]) == (
        "grpc", "SendMessage", "SendMessage", CLIENT_ID, "OK")
    assert rec["peer"].startswith("127.0.0.1:") and rec["ext_fields"]["x-mq-language"] == "PYTHON"
    _, sends = call(cluster, "GET", "/requests?code=SEND&target=broker")
    assert [r["name"] for r in sends] == ["SEND_MESSAGE"]


def test_request_log_target_grpc_lists_only_grpc_calls(cluster, client, topic):
    """/requests?target=grpc lists the gRPC calls only (QueryRoute, SendMessage)."""
    route = cls("QueryRouteRequest")()
    route.topic.name = topic
    client.unary("QueryRoute", route, "QueryRouteResponse")
    client.send(topic, b"x")
    _, recs = call(cluster, "GET", "/requests?target=grpc")
    assert [r["rpc"] for r in recs] == ["QueryRoute", "SendMessage"]
