"""Time travel: the broker's clock is the cluster's controllable clock."""

from __future__ import annotations

import pytest
from twisted.internet import defer

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import unique, wait_until


@pytest.mark.rocketmq(clock="manual")
def test_two_hour_delay_level_is_delivered_by_advance(rocketmq):
    """Level 18 (2 h) is not delivered before advance(7200) and is delivered right after."""
    topic = unique("T")
    producer = rocketmq.producer()
    producer.send(Message(topic, b"create"))
    inbox = rocketmq.collector(topic)
    inbox.wait_for(1)
    sent_at = rocketmq.clock.seconds()
    producer.send(Message(topic, b"later", delay_level=18))
    rocketmq.clock.advance(7199)
    with pytest.raises(defer.TimeoutError):
        inbox.wait_for(2, timeout=0.5)
    rocketmq.clock.advance(1)
    late = inbox.wait_for(2)[1]
    assert late.body == b"later"
    assert late.store_timestamp >= int((sent_at + 7200) * 1000)


@pytest.mark.rocketmq(clock="manual")
def test_deliver_at_arbitrary_time(rocketmq):
    """deliver_at (TIMER_DELIVER_MS) is held until the clock reaches it, across an hour."""
    topic = unique("T")
    producer = rocketmq.producer()
    producer.send(Message(topic, b"create"))
    inbox = rocketmq.collector(topic)
    inbox.wait_for(1)
    due = rocketmq.clock.seconds() + 3725.5
    producer.send(Message(topic, b"at", deliver_at=due))
    rocketmq.clock.advance(3700)
    with pytest.raises(defer.TimeoutError):
        inbox.wait_for(2, timeout=0.5)
    rocketmq.clock.advance(30)
    assert inbox.wait_for(2)[1].body == b"at"


@pytest.mark.rocketmq(clock="manual")
def test_relative_delay_and_several_due_times(rocketmq):
    """delay= (TIMER_DELAY_MS) messages come out in due order as time advances."""
    topic = unique("T")
    producer = rocketmq.producer()
    producer.send(Message(topic, b"create"))
    inbox = rocketmq.collector(topic)
    inbox.wait_for(1)
    for seconds in (600, 60, 86400):
        producer.send(Message(topic, str(seconds).encode(), delay=seconds))
    rocketmq.clock.advance(601)
    assert [m.body for m in inbox.wait_for(3)[1:]] == [b"60", b"600"]
    rocketmq.clock.advance(86400)
    assert inbox.wait_for(4)[3].body == b"86400"


def test_follow_mode_clock_moves_with_wall_time(rocketmq):
    """The default clock follows wall time; advance adds an offset the store timestamps show."""
    producer = rocketmq.producer()
    topic = unique("T")
    before = rocketmq.clock.seconds()
    rocketmq.clock.advance(86400)
    r = producer.send(Message(topic, b"tomorrow"))
    assert r.status.name == "SEND_OK"
    consumer = rocketmq.pull_consumer()
    (mq,) = [q for q in consumer.fetch_subscribe_queues(topic) if q.queue_id == r.message_queue.queue_id]
    (msg,) = consumer.pull(mq, "*", 0, 4).messages
    assert msg.store_timestamp >= int((before + 86400) * 1000)
    wait_until(lambda: rocketmq.clock.seconds() > before + 86400, what="time to move")


def test_follow_mode_advance_delivers_timers_and_levels(rocketmq):
    """In follow mode advance() fires what came due too: a 1 h deliver_at and the 1 h level."""
    topic = unique("T")
    producer = rocketmq.producer()
    producer.send(Message(topic, b"create"))
    inbox = rocketmq.collector(topic)
    inbox.wait_for(1)
    producer.send(Message(topic, b"timer", deliver_at=rocketmq.clock.seconds() + 3600))
    producer.send(Message(topic, b"level", delay_level=17))  # 1h
    rocketmq.clock.advance(3601)
    assert sorted(m.body for m in inbox.wait_for(3)[1:]) == [b"level", b"timer"]
