"""Transactions and request-reply through the blocking facade on the embedded cluster; the
check-back is driven by advancing the cluster's controllable clock."""

from __future__ import annotations

import time

import pytest

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.request_reply import blocking_request, create_reply_message, send_reply
from rocketmq_emu.client.testing import unique
from rocketmq_emu.client.transaction import BlockingTransactionProducer, LocalTransactionState


@pytest.mark.rocketmq(clock="manual")
def test_check_back_fires_when_the_cluster_clock_passes_the_interval(rocketmq):
    """UNKNOW stays invisible; advancing the clock by transactionCheckInterval (60 s) makes the
    broker ask the producer, whose check listener commits."""
    topic = unique("Tx")
    rocketmq.create_topic(topic, 1)
    checked = []

    def check(msg):
        checked.append(msg.properties.get("UNIQ_KEY"))
        return LocalTransactionState.COMMIT_MESSAGE

    producer = BlockingTransactionProducer(unique("txg"), rocketmq.namesrv_addr,
                                           check_listener=check)
    producer.start()
    inbox = rocketmq.collector(topic)
    try:
        result = producer.send_message_in_transaction(
            Message(topic, b"later"), lambda msg, arg: LocalTransactionState.UNKNOW)
        time.sleep(0.5)
        assert inbox.messages == []
        assert checked == []
        rocketmq.clock.advance(60)
        got = inbox.wait_for(1)
        assert [m.body for m in got] == [b"later"]
        assert checked == [result.msg_id]
    finally:
        producer.shutdown()


def test_blocking_commit_and_request_reply(rocketmq):
    """The blocking producer commits; blocking_request gets the reply a consumer's listener
    sends with send_reply."""
    topic, rpc = unique("TxB"), unique("Rpc")
    rocketmq.create_topic(topic, 1)
    rocketmq.create_topic(rpc, 1)
    producer = BlockingTransactionProducer(unique("txb"), rocketmq.namesrv_addr)
    producer.start()
    inbox = rocketmq.collector(topic)
    replier = rocketmq.producer()

    def answer(msgs, ctx):
        # Under pytest-twisted listeners run in the reactor: use the Twisted API here.
        for m in msgs:
            send_reply(replier._target, create_reply_message(m, m.body.upper()))
        return True

    rocketmq.push_consumer(rpc, answer, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    requester = rocketmq.producer()
    try:
        producer.send_message_in_transaction(
            Message(topic, b"now"), lambda msg, arg: LocalTransactionState.COMMIT_MESSAGE)
        assert [m.body for m in inbox.wait_for(1)] == [b"now"]
        reply = blocking_request(requester, Message(rpc, b"hello"), timeout=15.0)
        assert reply.body == b"HELLO"
    finally:
        producer.shutdown()
