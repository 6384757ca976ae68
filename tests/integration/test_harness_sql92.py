"""SQL92 property filters through the blocking harness."""

from __future__ import annotations

import pytest
from twisted.internet import defer

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import unique


@pytest.mark.rocketmq(broker_config={"enable_property_filter": True})
def test_collector_with_sql92_expression_gets_only_matching_messages(rocketmq):
    """collector(expression_type="SQL92") receives only messages whose properties match."""
    topic = unique("T")
    producer = rocketmq.producer()
    producer.send(Message(topic, b"create", properties={"amount": "0"}))
    inbox = rocketmq.collector(topic, expression="amount > 100", expression_type="SQL92")
    for amount in (50, 150, 99, 300):
        producer.send(Message(topic, b"amount-%d" % amount, properties={"amount": str(amount)}))
    got = inbox.wait_for(2)
    assert sorted(m.body for m in got) == [b"amount-150", b"amount-300"]
    with pytest.raises(defer.TimeoutError):
        inbox.wait_for(3, timeout=1.0)
