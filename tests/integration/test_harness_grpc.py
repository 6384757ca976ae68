"""The harness (``rocketmq`` fixture, EmbeddedCluster) serves RocketMQ 5's gRPC MessagingService:
its endpoint, and POP invisible times and delivery timestamps on the controllable clock."""

from __future__ import annotations

import pytest
import pytest_twisted
from harness_grpc_support import GrpcClient, cls, delivery_ms, received

from rocketmq_emu.broker.grpc.status import Code
from rocketmq_emu.client.testing import EmbeddedCluster, unique


@pytest.fixture
def client(rocketmq):
    """A raw grpcio client of the fixture's endpoint."""
    c = GrpcClient(rocketmq.grpc_endpoint)
    yield c
    c.close()


def test_grpc_endpoint_is_a_free_loopback_port_serving_routes(rocketmq, client):
    """grpc_endpoint is 127.0.0.1:<port> and QueryRoute answers a created topic there."""
    host, port = rocketmq.grpc_endpoint.split(":")
    assert host == "127.0.0.1" and int(port) > 0
    topic = unique("T")
    rocketmq.create_topic(topic)
    req = cls("QueryRouteRequest")()
    req.topic.name = topic
    resp = client.unary("QueryRoute", req, "QueryRouteResponse")
    assert resp.status.code == Code.OK
    assert resp.message_queues[0].broker.endpoints.addresses[0].port == int(port)


@pytest.mark.rocketmq(grpc_port=None)
def test_grpc_port_none_leaves_the_endpoint_out(rocketmq):
    """grpc_port=None starts no gRPC endpoint (grpc_endpoint is None)."""
    assert rocketmq.grpc_endpoint is None and rocketmq.cluster.grpc is None


@pytest_twisted.ensureDeferred
async def test_embedded_cluster_grpc_endpoint_only_while_running(tmp_path):
    """EmbeddedCluster's grpc_endpoint is None before the start and a host:port while running."""
    cluster = EmbeddedCluster(store_dir=tmp_path / "s")
    assert cluster.grpc_endpoint is None
    await cluster.start_async()
    try:
        assert cluster.grpc_endpoint == cluster.cluster.grpc.address
    finally:
        await cluster.stop_async()


@pytest.mark.rocketmq(clock="manual")
def test_unacked_message_comes_back_after_clock_travels_past_30_minute_invisible_time(rocketmq, client):
    """Received with a 30-minute invisible time, a message is invisible until the clock
    advances 30 minutes, then received again (attempt 2), and the delivery timestamps follow."""
    topic, group = unique("T"), unique("G")
    rocketmq.create_topic(topic)
    assert client.send(topic, b"come back").entries[0].status.code == Code.OK
    first = client.receive(topic, group, invisible_s=30 * 60)
    [msg] = received(first)
    assert msg.body == b"come back" and msg.system_properties.delivery_attempt == 1
    assert delivery_ms(first) == int(rocketmq.clock.seconds() * 1000)
    assert received(client.receive(topic, group, invisible_s=30 * 60)) == []
    rocketmq.clock.advance(30 * 60)
    again = client.receive(topic, group, invisible_s=60)
    [msg] = received(again)
    assert msg.body == b"come back" and msg.system_properties.delivery_attempt == 2
    assert delivery_ms(again) == int(rocketmq.clock.seconds() * 1000)


@pytest.mark.rocketmq(clock="manual")
def test_unacked_message_is_received_again_after_a_broker_restart(rocketmq, client):
    """Received and not acked, then the broker restarts: after the invisible time the message
    comes back (attempt 2); acked ones never do, across restarts."""
    topic, group = unique("T"), unique("G")
    rocketmq.create_topic(topic)
    client.send(topic, b"keep me")
    client.send(topic, b"acked")
    first = received(client.receive(topic, group, invisible_s=60))
    assert sorted(m.body for m in first) == [b"acked", b"keep me"]
    acked = next(m for m in first if m.body == b"acked")
    assert client.ack(topic, group, acked).status.code == Code.OK
    rocketmq.restart_broker()
    rocketmq.clock.advance(61)
    again = received(client.receive(topic, group, invisible_s=60))
    assert [(m.body, m.system_properties.delivery_attempt) for m in again] == [(b"keep me", 2)]
    assert client.ack(topic, group, again[0]).status.code == Code.OK
    rocketmq.restart_broker()
    rocketmq.clock.advance(61)
    assert received(client.receive(topic, group, invisible_s=60)) == []
