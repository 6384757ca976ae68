"""TLS through the harness and the project's own client: ``@pytest.mark.rocketmq(tls=...)``
sets the ports' ``tls.server.mode``; with ``"enforcing"`` the cluster's clients speak TLS (as
``tls.enable`` follows the mode in RocketMQ), and a plain client is turned away."""

from __future__ import annotations

import pytest

from rocketmq_emu.broker.tls.config import TlsMode
from rocketmq_emu.client.message import Message, MQClientError
from rocketmq_emu.client.testing import unique

TOPIC = unique("TlsT")


@pytest.mark.rocketmq(tls="enforcing")
def test_enforcing_cluster_clients_send_and_consume_over_tls(rocketmq):
    """The cluster's producer and push consumer reach name server and broker over TLS."""
    assert rocketmq.client_tls
    assert rocketmq.cluster.namesrv.tls.mode is TlsMode.ENFORCING
    rocketmq.create_topic(TOPIC)
    collector = rocketmq.collector(TOPIC)
    result = rocketmq.producer().send(Message(TOPIC, b"over tls"))
    assert result.status.name == "SEND_OK"
    assert [m.body for m in collector.wait_for(1, timeout=20)] == [b"over tls"]


@pytest.mark.rocketmq(tls="enforcing")
def test_enforcing_cluster_refuses_a_plain_client(rocketmq):
    """A client asked for plain connections (tls=False) cannot even fetch a route."""
    producer = rocketmq.producer(tls=False, send_timeout=2.0)
    with pytest.raises(MQClientError):
        producer.send(Message(TOPIC, b"plain"))


def test_default_cluster_serves_plain_and_tls_clients(rocketmq):
    """RocketMQ's default (permissive): a plain and a TLS producer both send to one cluster."""
    assert not rocketmq.client_tls
    topic = unique("TlsDefault")
    rocketmq.create_topic(topic)
    for tls in (False, True):
        result = rocketmq.producer(tls=tls).send(Message(topic, f"tls={tls}".encode()))
        assert result.status.name == "SEND_OK"
