"""A consumer made before its topic exists gets the first message as soon as the send creates
the topic: its route is looked for again on a short backoff (``client.route_watch``), not at
its next rebalance. Each consumer here rebalances once an hour, so only the backoff can
deliver within the test."""

from __future__ import annotations

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import unique, wait_until

NO_REBALANCE = 3600.0


def test_a_collector_made_before_its_topic_gets_the_message_that_creates_it(rocketmq):
    topic = unique("Orders")
    inbox = rocketmq.collector(topic, rebalance_interval=NO_REBALANCE)
    rocketmq.producer().send(Message(topic, b'{"id": 1}'))
    assert inbox.wait_for(1)[0].body == b'{"id": 1}'


def test_a_push_consumer_made_before_its_topic_gets_the_message_that_creates_it(rocketmq):
    topic = unique("Orders")
    got: list = []
    rocketmq.push_consumer(topic, lambda msgs, ctx: got.extend(msgs), rebalance_interval=NO_REBALANCE,
                           consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    rocketmq.producer().send(Message(topic, b"first"))
    wait_until(lambda: got, timeout=10.0, what="the first message")
    assert [m.body for m in got] == [b"first"]


def test_a_lite_pull_consumer_made_before_its_topic_polls_the_message_that_creates_it(rocketmq):
    topic = unique("Orders")
    consumer = rocketmq.lite_pull_consumer(topic, rebalance_interval=NO_REBALANCE)
    rocketmq.producer().send(Message(topic, b"first"))
    assert [m.body for m in consumer.poll(timeout=10.0)] == [b"first"]
