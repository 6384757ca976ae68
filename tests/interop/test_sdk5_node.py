"""The RocketMQ 5.x Node.js SDK (npm ``rocketmq-client-nodejs@1.0.8``, gRPC) against
``rmq-emu up --grpc-port``, unmodified: producer (normal, FIFO, delay to the millisecond,
transaction with check-back), SimpleConsumer (receive, ack, invisible time, change invisible
duration), PushConsumer (retry, FIFO order under two consumers, FIFO dead letters). Each client
runs in a subprocess (clients/sdk5_node_*.js).

This SDK version only uses message queue 0 of a route for sending and simple receiving (its load
balancers compare the queue id with the master broker id 0); the tests hold with that.
Invisible times and delivery timestamps are travelled with the business clock (control API).
"""

from __future__ import annotations

import time

import pytest
from conformance_support import forget_findings, settled_findings
from interop_support import (
    TEST_BROKER_CONF,
    ClientLauncher,
    Emulator,
    advance_clock,
    business_now_ms,
    matching,
    start_emulator,
    stop_emulator,
    unique,
    update_subscription_group,
    update_topic,
    wait_dlq,
    wait_events,
)

from rocketmq_emu.client.testing_tools import free_port


@pytest.fixture(scope="module")
def grpc_emulator(tmp_path_factory) -> Emulator:
    """``rmq-emu up`` with gRPC and the control API on free ports; the transaction check runs
    every second for half messages older than 3 s."""
    tmp = tmp_path_factory.mktemp("sdk5-node")
    conf = tmp / "broker.conf"
    conf.write_text(TEST_BROKER_CONF +
                    "transactionTimeOut=3000\ntransactionCheckInterval=1000\n")
    emu = start_emulator(tmp, ["-c", str(conf)], grpc_port=free_port(), control_port=free_port())
    yield emu
    stop_emulator(emu)


@pytest.fixture
def sdk(request, tmp_path, grpc_emulator, sdk5_nodejs) -> ClientLauncher:
    """Launcher for the 5.x Node SDK scripts against the module's emulator."""
    launcher = ClientLauncher(tmp_path, grpc_emulator, None, None, sdk5_npm=sdk5_nodejs)
    request.addfinalizer(launcher.close)
    return launcher


def _consumer(sdk: ClientLauncher, script: str, **config):
    cp = sdk.sdk5_node(script, **config)
    cp.wait_for(lambda evs: any(e["event"] == "started" for e in evs), 30, "start")
    return cp


def _produce(sdk: ClientLauncher, **config):
    prod = sdk.sdk5_node("sdk5_node_producer.js", **config)
    prod.wait(45)
    return prod


def test_simple_consumer_receives_and_acks_what_the_producer_sent(sdk):
    """Normal messages sent with the Node Producer reach a SimpleConsumer once each, intact."""
    topic, group = unique("N5Normal"), unique("GID_N5Normal")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_node_simple_consumer.js", topic=topic, group=group, expect=4)
    prod = _produce(sdk, topic=topic, count=4, tag="TagA", body_prefix="normal")
    sent = prod.events("sent")
    assert len(sent) == 4, prod.diagnostics()
    cons.wait(40)
    got = cons.events("received")
    assert sorted((e["message_id"], e["body"]) for e in got) == sorted(
        (e["message_id"], e["body"]) for e in sent), cons.diagnostics()
    assert all(e["delivery_attempt"] == 1 and e["tag"] == "TagA" and not e["corrupted"]
               and e["properties"] == {"index": e["body"].split("-")[1]} for e in got), \
        cons.diagnostics()
    assert len(cons.events("acked")) == 4 and not cons.events("ack_error"), cons.diagnostics()


def test_message_type_not_accepted_by_the_topic_is_refused_by_the_sdk(sdk):
    """The route's accept_message_types make the SDK refuse a FIFO message for a NORMAL topic."""
    topic = unique("N5Mismatch")
    update_topic(sdk.emulator, topic)
    prod = _produce(sdk, topic=topic, mode="fifo", groups=["A"])
    errors = prod.events("send_error")
    assert [e["type"] for e in errors] == ["TypeError"], prod.diagnostics()
    assert "accept message types" in errors[0]["error"]


def test_unacked_message_comes_back_after_its_invisible_time(sdk):
    """A message not acked within its 30 s invisible time is received again, attempt 2."""
    topic, group = unique("N5Redeliver"), unique("GID_N5Redeliver")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_node_simple_consumer.js", topic=topic, group=group,
                     invisible_s=30, ack_from_attempt=2, expect=1)
    sent = _produce(sdk, topic=topic, count=1).events("sent")
    first = wait_events(cons, 1)[0]
    assert first["delivery_attempt"] == 1
    advance_clock(sdk.emulator, 31)
    again = wait_events(cons, 1, delivery_attempt=2)[0]
    assert (again["message_id"], again["body"]) == (sent[0]["message_id"], sent[0]["body"])
    cons.wait(30)
    assert [e["delivery_attempt"] for e in cons.events("acked")] == [2], cons.diagnostics()


def test_change_invisible_duration_reschedules_the_redelivery(sdk):
    """Shortening the invisible time to 5 s (new receipt handle) brings the message back after 5 s."""
    topic, group = unique("N5Change"), unique("GID_N5Change")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_node_simple_consumer.js", topic=topic, group=group,
                     invisible_s=30, change_to_s=5, ack_from_attempt=2, expect=1)
    _produce(sdk, topic=topic, count=1)
    evs = cons.wait_for(lambda evs: matching(evs, "changed") or matching(evs, "change_error"),
                        20, "change invisible duration")
    changed = matching(evs, "changed")
    assert changed and changed[0]["new_handle"] != changed[0]["old_handle"], cons.diagnostics()
    advance_clock(sdk.emulator, 6)
    assert wait_events(cons, 1, delivery_attempt=2)
    cons.wait(30)
    assert len(cons.events("acked")) == 1, cons.diagnostics()


def test_delay_message_is_delivered_at_its_delivery_timestamp(sdk):
    """A DELAY message stays invisible until the clock reaches its timestamp, kept to the ms."""
    topic, group = unique("N5Delay"), unique("GID_N5Delay")
    update_topic(sdk.emulator, topic, message_type="DELAY")
    cons = _consumer(sdk, "sdk5_node_simple_consumer.js", topic=topic, group=group, expect=1)
    deliver_at = business_now_ms(sdk.emulator) + 60_123
    prod = _produce(sdk, topic=topic, mode="delay", deliver_at_ms=deliver_at)
    assert len(prod.events("sent")) == 1, prod.diagnostics()
    time.sleep(3)
    assert cons.events("received") == [], cons.diagnostics()
    advance_clock(sdk.emulator, 61)
    assert wait_events(cons, 1)[0]["delivery_timestamp"] == deliver_at
    cons.wait(30)


def test_transaction_commits_and_check_back_commits_the_undecided_one(sdk):
    """A committed transaction is delivered; an undecided one is checked back over Telemetry,
    the checker's COMMIT (EndTransaction from the server check) delivers it too."""
    topic, group = unique("N5Tx"), unique("GID_N5Tx")
    update_topic(sdk.emulator, topic, message_type="TRANSACTION")
    cons = _consumer(sdk, "sdk5_node_simple_consumer.js", topic=topic, group=group, expect=2)
    prod = sdk.sdk5_node("sdk5_node_producer.js", topic=topic, mode="transaction", count=2,
                         unknown=[1], wait_checks=1, body_prefix="tx", timeout=30)
    prod.wait(50)
    sent = prod.events("sent")
    assert len(sent) == 2 and all(e["transaction_id"] for e in sent), prod.diagnostics()
    assert [e["body"] for e in prod.events("checked")] == ["tx-1"], prod.diagnostics()
    cons.wait(40)
    assert sorted(e["body"] for e in cons.events("received")) == ["tx-0", "tx-1"], \
        cons.diagnostics()


def test_push_consumer_gets_a_failed_message_again_with_attempt_2(sdk):
    """A PushConsumer's FAILURE is retried by the server: the message returns, attempt 2."""
    topic, group = unique("N5Push"), unique("GID_N5Push")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_node_push_consumer.js", topic=topic, group=group,
                     fail_below_attempt=2, expect=1)
    started = cons.events("started")[0]
    assert started["receive_batch_size"] > 0 and not started["fifo"], cons.diagnostics()
    _produce(sdk, topic=topic, count=1, body_prefix="push")
    cons.wait(40)
    got = [(e["body"], e["delivery_attempt"], e["result"]) for e in cons.events("received")]
    assert got == [("push-0", 1, "FAILURE"), ("push-0", 2, "SUCCESS")], cons.diagnostics()


def test_fifo_order_holds_per_message_group_under_two_push_consumers(sdk):
    """Two PushConsumers of a FIFO group get each message group's messages in send order."""
    topic, group = unique("N5Fifo"), unique("GID_N5Fifo")
    update_topic(sdk.emulator, topic, message_type="FIFO")
    update_subscription_group(sdk.emulator, group, consumeMessageOrderly=True)
    consumers = [_consumer(sdk, "sdk5_node_push_consumer.js", topic=topic, group=group,
                           consume_ms=100, timeout=40) for _ in range(2)]
    assert all(c.events("started")[0]["fifo"] for c in consumers), consumers[0].diagnostics()
    prod = _produce(sdk, topic=topic, mode="fifo", groups=["A", "B", "C"], count=12,
                    body_prefix="fifo")
    assert len(prod.events("sent")) == 12, prod.diagnostics()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if len({e["body"] for c in consumers for e in c.events("received")}) == 12:
            break
        time.sleep(0.2)
    for c in consumers:
        c.stop()
    got = sorted((e for c in consumers for e in c.events("received")),
                 key=lambda e: e["received_ms"])
    assert {e["body"] for e in got} == {f"fifo-{i}" for i in range(12)}, consumers[0].diagnostics()
    for g in "ABC":
        order = [int(e["body"].split("-")[1]) for e in got if e["group"] == g]
        assert order == sorted(order) and len(order) == 4, (g, order)


def test_fifo_push_consumer_forwards_to_the_dead_letter_queue(sdk):
    """A FIFO PushConsumer that keeps failing ends with ForwardMessageToDeadLetterQueue: the
    message is in %DLQ%group."""
    topic, group = unique("N5FifoDlq"), unique("GID_N5FifoDlq")
    update_topic(sdk.emulator, topic, message_type="FIFO")
    update_subscription_group(sdk.emulator, group, consumeMessageOrderly=True, retryMaxTimes=1)
    cons = _consumer(sdk, "sdk5_node_push_consumer.js", topic=topic, group=group,
                     fail_always=True, timeout=30)
    sent = _produce(sdk, topic=topic, mode="fifo", groups=["A"], body_prefix="fifodead")
    wait_events(cons, 1)
    dlq = wait_dlq(sdk.emulator, group)
    cons.stop()
    assert [m["body"] for m in dlq] == [sent.events("sent")[0]["body"]], cons.diagnostics()


def test_conformance_of_a_producer_and_simple_consumer_has_no_error_or_warning(sdk):
    """A 5.x Node producer and SimpleConsumer earn no conformance error or warning (GET /conformance); the
    SDK is listed with the language it sends, x-mq-language "HTTP" (BaseClient.js), not
    NODE_JS."""
    topic, group = unique("N5Conf"), unique("GID_N5Conf")
    update_topic(sdk.emulator, topic)
    forget_findings(sdk.emulator)
    cons = _consumer(sdk, "sdk5_node_simple_consumer.js", topic=topic, group=group, expect=2)
    prod = _produce(sdk, topic=topic, count=2, tag="TagA", body_prefix="conf")
    assert len(prod.events("sent")) == 2, prod.diagnostics()
    cons.wait(40)
    assert len(cons.events("acked")) == 2, cons.diagnostics()
    report = settled_findings(sdk.emulator)
    assert [f for f in report["findings"] if f["severity"] in ("error", "warning")] == []
    assert {(c["language"], c["version"]) for c in report["clients"]} == {("HTTP", "1.0.8")}
