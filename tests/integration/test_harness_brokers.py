"""Two brokers in one cluster: the producer retries on the other broker, consumers read both."""

from __future__ import annotations

import pytest

from rocketmq_emu.client.message import Message, SendStatus
from rocketmq_emu.client.testing import unique

pytestmark = pytest.mark.rocketmq(brokers=2)


def test_cluster_has_two_brokers_registered(rocketmq):
    """Both brokers are up and routed for a topic created on the cluster."""
    assert set(rocketmq.broker_addrs) == {"broker-a", "broker-b"}
    topic = unique("T")
    rocketmq.create_topic(topic, 2)
    queues = rocketmq.pull_consumer().fetch_subscribe_queues(topic)
    assert {q.broker_name for q in queues} == {"broker-a", "broker-b"} and len(queues) == 4


def test_failure_on_one_broker_is_retried_on_the_other(rocketmq):
    """SYSTEM_ERROR on broker-a only: every send still succeeds, on broker-b."""
    topic = unique("T")
    rocketmq.create_topic(topic, 2)
    producer = rocketmq.producer()
    producer.send(Message(topic, b"warm-up"))
    rule = rocketmq.faults.error("SEND_MESSAGE_V2", "SYSTEM_ERROR", target="broker-a")
    results = [producer.send(Message(topic, f"m{i}".encode())) for i in range(6)]
    assert {r.status for r in results} == {SendStatus.SEND_OK}
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}
    assert rule.hits >= 1
    faulted = [r for r in rocketmq.faults.records(code=310, target="broker-a") if r.fault]
    assert len(faulted) == rule.hits
    assert not [r for r in rocketmq.faults.records(code=310, target="broker-b") if r.fault]


def test_stopped_broker_is_avoided_and_consumers_read_both(rocketmq):
    """With broker-a stopped, sends land on broker-b; after its restart a consumer gets all."""
    topic = unique("T")
    rocketmq.create_topic(topic, 2)
    producer = rocketmq.producer(send_timeout=5.0)
    before = [producer.send(Message(topic, f"a{i}".encode())) for i in range(4)]
    assert {r.message_queue.broker_name for r in before} == {"broker-a", "broker-b"}
    rocketmq.stop_broker("broker-a")
    during = [producer.send(Message(topic, f"b{i}".encode())) for i in range(4)]
    assert {r.message_queue.broker_name for r in during} == {"broker-b"}
    rocketmq.start_broker("broker-a")
    inbox = rocketmq.collector(topic)
    got = inbox.wait_for(8, timeout=20)
    assert sorted(m.body for m in got) == sorted([f"a{i}".encode() for i in range(4)]
                                                + [f"b{i}".encode() for i in range(4)])
    assert {m.broker_name for m in got} == {"broker-a", "broker-b"}
