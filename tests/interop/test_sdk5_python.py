"""The RocketMQ 5.x Python SDK (PyPI ``rocketmq-python-client==5.1.2``, gRPC) against
``rmq-emu up --grpc-port``, unmodified: producer (normal, FIFO, delay, recall, transaction
with check-back), SimpleConsumer (receive, ack, invisible time, change invisible duration, DLQ),
PushConsumer (retry, FIFO order, FIFO dead letters), and the same store as the 4.x remoting
clients (PyPI ``rocketmq==0.4.4``). Each client runs in a subprocess (clients/sdk5_py_*.py).

Invisible times and delivery timestamps are travelled with the business clock (control API),
never waited for.
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
    wait_consumers,
    wait_dlq,
    wait_events,
)

from rocketmq_emu.client.testing_tools import free_port


@pytest.fixture(scope="module")
def grpc_emulator(tmp_path_factory) -> Emulator:
    """``rmq-emu up`` with gRPC and the control API on free ports; the transaction check runs
    every second for half messages older than 3 s."""
    tmp = tmp_path_factory.mktemp("sdk5-python")
    conf = tmp / "broker.conf"
    conf.write_text(TEST_BROKER_CONF +
                    "transactionTimeOut=3000\ntransactionCheckInterval=1000\n"
                    "recallMessageEnable=true\n")
    emu = start_emulator(tmp, ["-c", str(conf)], grpc_port=free_port(), control_port=free_port())
    yield emu
    stop_emulator(emu)


@pytest.fixture
def sdk(request, tmp_path, grpc_emulator, sdk5_python) -> ClientLauncher:
    """Launcher for the 5.x Python SDK scripts against the module's emulator."""
    launcher = ClientLauncher(tmp_path, grpc_emulator, None, None, sdk5_py=sdk5_python)
    request.addfinalizer(launcher.close)
    return launcher


@pytest.fixture
def both(request, tmp_path, grpc_emulator, sdk5_python, pypi_rocketmq) -> ClientLauncher:
    """Launcher for the 5.x SDK scripts and the PyPI rocketmq 0.4.4 (remoting) scripts."""
    launcher = ClientLauncher(tmp_path, grpc_emulator, pypi_rocketmq, None, sdk5_py=sdk5_python)
    request.addfinalizer(launcher.close)
    return launcher


def _consumer(sdk: ClientLauncher, script: str, **config):
    cp = sdk.sdk5_python(script, **config)
    cp.wait_for(lambda evs: any(e["event"] == "started" for e in evs), 30, "start")
    return cp


def _produce(sdk: ClientLauncher, **config):
    prod = sdk.sdk5_python("sdk5_py_producer.py", **config)
    prod.wait(45)
    return prod


def test_simple_consumer_receives_and_acks_what_the_producer_sent(sdk):
    """Normal messages sent with the 5.x Producer reach a SimpleConsumer once each, intact."""
    topic, group = unique("S5Normal"), unique("GID_S5Normal")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group, expect=4)
    prod = _produce(sdk, topic=topic, count=4, tag="TagA", body_prefix="normal")
    sent = prod.events("sent")
    assert len(sent) == 4, prod.diagnostics()
    cons.wait(40)
    got = cons.events("received")
    assert sorted((e["message_id"], e["body"]) for e in got) == sorted(
        (e["message_id"], e["body"]) for e in sent), cons.diagnostics()
    assert all(e["delivery_attempt"] == 1 and e["tag"] == "TagA" and not e["corrupted"]
               and e["receipt_handle"] for e in got), cons.diagnostics()
    assert len(cons.events("acked")) == 4 and not cons.events("ack_error"), cons.diagnostics()


def test_message_type_not_accepted_by_the_topic_is_refused_by_the_sdk(sdk):
    """The route's accept_message_types make the SDK refuse a FIFO message for a NORMAL topic."""
    topic = unique("S5Mismatch")
    update_topic(sdk.emulator, topic)
    prod = _produce(sdk, topic=topic, mode="fifo", groups=["A"])
    errors = prod.events("send_error")
    assert [e["type"] for e in errors] == ["IllegalArgumentException"], prod.diagnostics()
    assert "accept message types" in errors[0]["error"]


def test_unacked_message_comes_back_after_its_invisible_time(sdk):
    """A message not acked within its 30 s invisible time is received again, attempt 2."""
    topic, group = unique("S5Redeliver"), unique("GID_S5Redeliver")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group,
                     invisible_s=30, ack_from_attempt=2, expect=1)
    sent = _produce(sdk, topic=topic, count=1).events("sent")
    first = wait_events(cons, 1)[0]
    assert first["delivery_attempt"] == 1
    advance_clock(sdk.emulator, 31)
    again = wait_events(cons, 1, delivery_attempt=2)[0]
    assert (again["message_id"], again["body"]) == (sent[0]["message_id"], sent[0]["body"])
    assert again["receipt_handle"] != first["receipt_handle"]
    cons.wait(30)
    assert [e["delivery_attempt"] for e in cons.events("acked")] == [2], cons.diagnostics()


def test_change_invisible_duration_reschedules_the_redelivery(sdk):
    """Shortening the invisible time to 5 s brings the message back after 5 s, attempt 2."""
    topic, group = unique("S5Change"), unique("GID_S5Change")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group,
                     invisible_s=30, change_to_s=5, ack_from_attempt=2, expect=1)
    _produce(sdk, topic=topic, count=1)
    changed = cons.wait_for(lambda evs: matching(evs, "changed") or matching(evs, "change_error"),
                            20, "change invisible duration")
    changed = matching(changed, "changed")
    assert changed and changed[0]["new_handle"] != changed[0]["old_handle"], cons.diagnostics()
    advance_clock(sdk.emulator, 6)
    assert wait_events(cons, 1, delivery_attempt=2)
    cons.wait(30)
    assert len(cons.events("acked")) == 1, cons.diagnostics()


def test_ack_with_the_changed_receipt_handle_ends_the_delivery(sdk):
    """After ChangeInvisibleDuration, acking with the new handle succeeds and nothing returns."""
    topic, group = unique("S5AckChanged"), unique("GID_S5AckChanged")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group,
                     invisible_s=30, change_to_s=60, ack_after_change=True)
    _produce(sdk, topic=topic, count=1)
    cons.wait_for(lambda evs: matching(evs, "acked") or matching(evs, "ack_error")
                  or matching(evs, "change_error"), 20, "ack after change")
    assert cons.events("acked") and not cons.events("ack_error"), cons.diagnostics()
    advance_clock(sdk.emulator, 61)
    time.sleep(7)  # more than one long-polling round (5 s)
    assert len(cons.events("received")) == 1, cons.diagnostics()
    cons.stop()


def test_message_goes_to_the_dead_letter_queue_after_max_attempts(sdk):
    """With retryMaxTimes=2, a never-acked message is delivered 3 times, then is in %DLQ%."""
    topic, group = unique("S5Dlq"), unique("GID_S5Dlq")
    update_topic(sdk.emulator, topic)
    update_subscription_group(sdk.emulator, group, retryMaxTimes=2)
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group,
                     invisible_s=20, ack_from_attempt=0)
    sent = _produce(sdk, topic=topic, count=1, body_prefix="dead").events("sent")
    for n in range(1, 4):
        wait_events(cons, n)
        advance_clock(sdk.emulator, 21)
    dlq = wait_dlq(sdk.emulator, group)  # the consumer keeps polling meanwhile
    cons.stop()
    assert [m["body"] for m in dlq] == [sent[0]["body"]], cons.diagnostics()
    assert [e["delivery_attempt"] for e in cons.events("received")] == [1, 2, 3], \
        cons.diagnostics()


def test_delay_message_is_delivered_at_its_delivery_timestamp(sdk):
    """A DELAY message stays invisible until the clock reaches its delivery timestamp."""
    topic, group = unique("S5Delay"), unique("GID_S5Delay")
    update_topic(sdk.emulator, topic, message_type="DELAY")
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group, expect=1)
    deliver_at = (business_now_ms(sdk.emulator) + 60_000) // 1000 * 1000
    prod = _produce(sdk, topic=topic, mode="delay", deliver_at_ms=deliver_at)
    assert len(prod.events("sent")) == 1, prod.diagnostics()
    time.sleep(3)
    assert cons.events("received") == [], cons.diagnostics()
    advance_clock(sdk.emulator, 61)
    got = wait_events(cons, 1)[0]
    assert got["delivery_timestamp"] == deliver_at
    assert got["message_type"] == 3  # DELAY
    cons.wait(30)


def test_recalled_delay_message_is_never_delivered(sdk):
    """Producer.recall_message with the send's recall handle: of two DELAY messages due at
    the same time, the recalled one is not delivered when the clock passes it."""
    topic, group = unique("S5Recall"), unique("GID_S5Recall")
    update_topic(sdk.emulator, topic, message_type="DELAY")
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group, expect=1)
    deliver_at = (business_now_ms(sdk.emulator) + 60_000) // 1000 * 1000
    prod = _produce(sdk, topic=topic, mode="delay", deliver_at_ms=deliver_at, count=2,
                    recall=[0])
    sent = prod.events("sent")
    assert len(sent) == 2 and all(e["recall_handle"] for e in sent), prod.diagnostics()
    assert [e["message_id"] for e in prod.events("recalled")] == [sent[0]["message_id"]], \
        prod.diagnostics()
    advance_clock(sdk.emulator, 61)
    got = wait_events(cons, 1)
    assert [e["body"] for e in got] == [sent[1]["body"]]
    time.sleep(3)
    assert [e["body"] for e in cons.events("received")] == [sent[1]["body"]], \
        cons.diagnostics()
    cons.wait(30)


def test_transaction_commits_and_check_back_commits_the_undecided_one(sdk):
    """A committed transaction is delivered; an undecided one is checked back over Telemetry,
    the checker's COMMIT (EndTransaction from the server check) delivers it too."""
    topic, group = unique("S5Tx"), unique("GID_S5Tx")
    update_topic(sdk.emulator, topic, message_type="TRANSACTION")
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group, expect=2)
    prod = sdk.sdk5_python("sdk5_py_producer.py", topic=topic, mode="transaction", count=2,
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
    topic, group = unique("S5Push"), unique("GID_S5Push")
    update_topic(sdk.emulator, topic)
    cons = _consumer(sdk, "sdk5_py_push_consumer.py", topic=topic, group=group,
                     fail_below_attempt=2, expect=1)
    _produce(sdk, topic=topic, count=1, body_prefix="push")
    cons.wait(40)
    got = [(e["body"], e["delivery_attempt"], e["result"]) for e in cons.events("received")]
    assert got == [("push-0", 1, "FAILURE"), ("push-0", 2, "SUCCESS")], cons.diagnostics()


def test_fifo_order_holds_per_message_group_under_two_push_consumers(sdk):
    """Two PushConsumers of a FIFO group get each message group's messages in send order."""
    topic, group = unique("S5Fifo"), unique("GID_S5Fifo")
    update_topic(sdk.emulator, topic, message_type="FIFO")
    update_subscription_group(sdk.emulator, group, consumeMessageOrderly=True)
    consumers = [_consumer(sdk, "sdk5_py_push_consumer.py", topic=topic, group=group,
                           consume_ms=100, timeout=40) for _ in range(2)]
    assert all(c.events("started")[0]["fifo"] for c in consumers), consumers[0].diagnostics()
    prod = _produce(sdk, topic=topic, mode="fifo", groups=["A", "B", "C"], count=12,
                    body_prefix="fifo")
    assert len(prod.events("sent")) == 12, prod.diagnostics()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = [e for c in consumers for e in c.events("received")]
        if len({e["body"] for e in got}) == 12:
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
    """A FIFO PushConsumer that keeps failing uses its attempts, then ForwardMessageToDeadLetterQueue."""
    topic, group = unique("S5FifoDlq"), unique("GID_S5FifoDlq")
    update_topic(sdk.emulator, topic, message_type="FIFO")
    update_subscription_group(sdk.emulator, group, consumeMessageOrderly=True, retryMaxTimes=1)
    cons = _consumer(sdk, "sdk5_py_push_consumer.py", topic=topic, group=group,
                     fail_always=True, timeout=30)
    sent = _produce(sdk, topic=topic, mode="fifo", groups=["A"], body_prefix="fifodead")
    wait_events(cons, 2)
    dlq = wait_dlq(sdk.emulator, group)
    cons.stop()
    assert [m["body"] for m in dlq] == [sent.events("sent")[0]["body"]], cons.diagnostics()
    assert len(cons.events("received")) == 2, cons.diagnostics()


def test_message_sent_over_grpc_is_consumed_by_a_remoting_push_consumer(both):
    """A 5.x SDK message is consumed by PyPI rocketmq 0.4.4's push consumer (one store)."""
    topic, group = unique("S5Cross"), unique("GID_S5Cross")
    update_topic(both.emulator, topic)
    cons = both.python("py_push_consumer.py", "--topic", topic, "--group", group,
                       "--expect", "3", "--timeout", "40")
    cons.wait_for(lambda evs: any(e["event"] == "started" for e in evs), 30, "start")
    wait_consumers(both.emulator, group, 1)
    sent = _produce(both, topic=topic, count=3, tag="TagX", body_prefix="g2r").events("sent")
    cons.wait(50)
    got = cons.events("msg")
    assert sorted(e["body"] for e in got) == sorted(e["body"] for e in sent), cons.diagnostics()
    assert {e["msg_id"] for e in got} == {e["message_id"] for e in sent}
    assert {e["tags"] for e in got} == {"TagX"}


def test_message_sent_over_remoting_is_received_by_the_5x_simple_consumer(both):
    """A PyPI rocketmq 0.4.4 message is received (tag, keys, body) by the 5.x SimpleConsumer."""
    topic, group = unique("S5CrossBack"), unique("GID_S5CrossBack")
    update_topic(both.emulator, topic)
    cons = _consumer(both, "sdk5_py_simple_consumer.py", topic=topic, group=group, expect=3)
    prod = both.run_python("py_producer.py", "--topic", topic, "--mode", "sync", "--count", "3",
                           "--body-prefix", "r2g")
    assert len(prod.events("sent")) == 3, prod.diagnostics()
    cons.wait(40)
    got = sorted(cons.events("received"), key=lambda e: e["body"])
    assert [e["body"] for e in got] == ["r2g-0", "r2g-1", "r2g-2"], cons.diagnostics()
    assert [e["keys"] for e in got] == [["key-0"], ["key-1"], ["key-2"]]
    assert {e["tag"] for e in got} == {"TagA"} and not any(e["corrupted"] for e in got)


def test_conformance_of_a_producer_and_simple_consumer_has_no_error_or_warning(sdk):
    """A 5.x producer and SimpleConsumer earn no conformance error or warning (GET /conformance), and the
    SDK is listed as a PYTHON client."""
    topic, group = unique("S5Conf"), unique("GID_S5Conf")
    update_topic(sdk.emulator, topic)
    forget_findings(sdk.emulator)
    cons = _consumer(sdk, "sdk5_py_simple_consumer.py", topic=topic, group=group, expect=2)
    prod = _produce(sdk, topic=topic, count=2, tag="TagA", body_prefix="conf")
    assert len(prod.events("sent")) == 2, prod.diagnostics()
    cons.wait(40)
    assert len(cons.events("acked")) == 2, cons.diagnostics()
    report = settled_findings(sdk.emulator)
    assert [f for f in report["findings"] if f["severity"] in ("error", "warning")] == []
    assert "PYTHON" in {c["language"] for c in report["clients"]}, report["clients"]
