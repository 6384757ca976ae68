"""Delayed delivery over the wire survives a broker restart: nothing lost, nothing doubled."""

from __future__ import annotations

import pytest
from twisted.internet import defer

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import unique


@pytest.mark.rocketmq(clock="manual")
def test_timer_and_level_messages_survive_a_broker_restart(rocketmq):
    """Timer messages in this bucket, the next and a later one, plus a delay-level message,
    are each delivered exactly once across a restart in the middle of the first bucket."""
    topic = unique("T")
    producer = rocketmq.producer()
    producer.send(Message(topic, b"create"))
    inbox = rocketmq.collector(topic)
    inbox.wait_for(1)
    now = rocketmq.clock.seconds()
    for label, seconds in (("a", 60), ("b", 120), ("c", 3 * 3600), ("d", 26 * 3600)):
        producer.send(Message(topic, label.encode(), deliver_at=now + seconds))
    producer.send(Message(topic, b"lvl", delay_level=16))  # 30 min
    rocketmq.clock.advance(90)
    assert [m.body for m in inbox.wait_for(2)[1:]] == [b"a"]
    rocketmq.restart_broker()
    rocketmq.clock.advance(60)
    got = inbox.wait_for(3)
    assert got[2].body == b"b"
    rocketmq.clock.advance(1800)
    rocketmq.clock.advance(3 * 3600)
    rocketmq.clock.advance(23 * 3600)
    bodies = sorted(m.body for m in inbox.wait_for(6)[1:])
    assert bodies == [b"a", b"b", b"c", b"d", b"lvl"]
    with pytest.raises(defer.TimeoutError):
        inbox.wait_for(7, timeout=1.0)
