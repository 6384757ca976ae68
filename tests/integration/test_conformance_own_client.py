"""The project's own client (rocketmq_emu.client) in ordinary use earns no conformance finding:
it sends what Apache RocketMQ's Java client 4.9.8 sends (issue 17)."""

from __future__ import annotations

import time

import pytest
from twisted.internet import reactor, task

from rocketmq_emu.client.blocking import run_blocking
from rocketmq_emu.client.message import Message
from rocketmq_emu.client.request_reply import blocking_request, create_reply_message, send_reply
from rocketmq_emu.client.testing import unique
from rocketmq_emu.client.transaction import BlockingTransactionProducer, LocalTransactionState


def _use_everything(rocketmq) -> None:
    """Sends (single, batch, delayed, async), push, pull and lite pull consumers, transactions
    (commit and rollback) and request-reply; every client shut down at the end."""
    topic, tx_topic, rpc = unique("Own"), unique("OwnTx"), unique("OwnRpc")
    for t in (topic, tx_topic, rpc):
        rocketmq.create_topic(t, 2)
    clients = []
    producer = rocketmq.producer()
    clients.append(producer)
    inbox = rocketmq.collector(topic)
    clients.append(inbox.consumer)
    producer.send(Message(topic, b"single", tags="TagA", keys=["k1"]))
    producer.send_batch([Message(topic, b"b1", tags="TagB"), Message(topic, b"b2", tags="TagB")])
    producer.send(Message(topic, b"delayed", delay_level=1))
    producer.send_async(Message(topic, b"async")).wait()
    assert sorted(m.body for m in inbox.wait_for(5, timeout=20)) == [
        b"async", b"b1", b"b2", b"delayed", b"single"]

    puller = rocketmq.pull_consumer()
    clients.append(puller)
    queues = puller.fetch_subscribe_queues(topic)
    pulled = [m for mq in queues for m in puller.pull(mq, "*", 0, 32).messages]
    assert len(pulled) == 5
    for mq in queues:
        puller.update_offset(mq, puller.max_offset(mq))
        assert puller.fetch_offset(mq) == puller.max_offset(mq)
    lite = rocketmq.lite_pull_consumer(topic)
    clients.append(lite)
    got: list = []
    deadline = time.monotonic() + 20
    while len(got) < 5 and time.monotonic() < deadline:
        got += lite.poll(timeout=1.0)
    assert len(got) == 5

    tx = BlockingTransactionProducer(unique("txg"), rocketmq.namesrv_addr)
    tx.start()
    clients.append(tx)
    tx_inbox = rocketmq.collector(tx_topic)
    clients.append(tx_inbox.consumer)
    tx.send_message_in_transaction(Message(tx_topic, b"commit"),
                                   lambda msg, arg: LocalTransactionState.COMMIT_MESSAGE)
    tx.send_message_in_transaction(Message(tx_topic, b"rollback"),
                                   lambda msg, arg: LocalTransactionState.ROLLBACK_MESSAGE)
    assert [m.body for m in tx_inbox.wait_for(1)] == [b"commit"]

    replier = rocketmq.producer()
    clients.append(replier)

    def answer(msgs, ctx):
        for m in msgs:  # listeners run in the reactor under pytest-twisted: Twisted API
            send_reply(replier._target, create_reply_message(m, m.body.upper()))
        return True

    clients.append(rocketmq.push_consumer(rpc, answer,
                                          consume_from_where="CONSUME_FROM_FIRST_OFFSET"))
    assert blocking_request(producer, Message(rpc, b"hello"), timeout=15.0).body == b"HELLO"
    for client in reversed(clients):
        client.shutdown()


@pytest.mark.rocketmq(strict_conformance=True)
def test_ordinary_use_of_our_client_earns_no_finding(rocketmq):
    """Sends, batches, delays, push/pull/lite pull consumers, transactions and request-reply of
    rocketmq_emu.client, watched as JAVA clients: no error (strict mode), no warning, no info."""
    _use_everything(rocketmq)
    # The closed connections' session rules run while the reactor does.
    run_blocking(task.deferLater, reactor, 0.5, lambda: None)
    clients = run_blocking(rocketmq.cluster.conformance.snapshot)["clients"]
    assert len(clients) >= 6 and {c["language"] for c in clients} == {"JAVA"}, clients
    assert rocketmq.conformance("error") == []
    assert rocketmq.conformance() == []
