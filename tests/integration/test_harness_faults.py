"""Every fault of the harness, seen by the Python client."""

from __future__ import annotations

import time

import pytest

from rocketmq_emu.client.message import Message, MQBrokerError, MQClientError, SendStatus
from rocketmq_emu.client.testing import unique, wait_until


def ready(cluster, **kw):
    """A producer whose topic route is known (the first send creates the topic)."""
    producer = cluster.producer(**kw)
    topic = unique("T")
    producer.send(Message(topic, b"warm-up"))
    return producer, topic


def stored(cluster, topic: str) -> int:
    return sum(cluster.store.get_max_offset_in_queue(topic, q) for q in range(8))


def test_error_rule_system_busy_fails_the_send(rocketmq):
    """error SYSTEM_BUSY on 310: the send raises MQBrokerError code 2 (not retried)."""
    producer, topic = ready(rocketmq)
    rocketmq.faults.error("SEND_MESSAGE_V2", "SYSTEM_BUSY")
    with pytest.raises(MQBrokerError) as err:
        producer.send(Message(topic, b"x"))
    assert err.value.code == 2
    assert stored(rocketmq, topic) == 1


def test_error_rule_flush_disk_timeout_is_a_result(rocketmq):
    """FLUSH_DISK_TIMEOUT is a SendResult status, as in the Java client."""
    producer, topic = ready(rocketmq)
    rocketmq.faults.error(310, "FLUSH_DISK_TIMEOUT", times=1)
    assert producer.send(Message(topic, b"x")).status is SendStatus.FLUSH_DISK_TIMEOUT


def test_retryable_error_is_retried(rocketmq):
    """A SYSTEM_ERROR once is retried and the second attempt succeeds."""
    producer, topic = ready(rocketmq)
    rule = rocketmq.faults.error(310, "SYSTEM_ERROR", times=1)
    assert producer.send(Message(topic, b"x")).status is SendStatus.SEND_OK
    assert rule.hits == 1
    assert len([r for r in rocketmq.faults.records(code=310) if r.fault]) == 1


def test_drop_makes_the_send_time_out(rocketmq):
    """drop: no answer, the client times out after its budget; nothing is stored."""
    producer, topic = ready(rocketmq, send_timeout=0.5)
    rocketmq.faults.drop(310)
    t0 = time.monotonic()
    with pytest.raises(MQClientError):
        producer.send(Message(topic, b"x"))
    assert time.monotonic() - t0 >= 0.45
    assert stored(rocketmq, topic) == 1


def test_drop_response_stores_but_the_client_times_out(rocketmq):
    """drop_response: the message is stored although the client saw a timeout."""
    producer, topic = ready(rocketmq, send_timeout=0.5, retry_times=0)
    rocketmq.faults.drop_response(310)
    with pytest.raises(MQClientError):
        producer.send(Message(topic, b"x"))
    assert stored(rocketmq, topic) == 2


def test_delay_slows_the_answer(rocketmq):
    """delay 0.3 s: the send succeeds, no sooner than 0.3 s."""
    producer, topic = ready(rocketmq)
    rocketmq.faults.delay(310, 0.3)
    t0 = time.monotonic()
    assert producer.send(Message(topic, b"x")).status is SendStatus.SEND_OK
    assert time.monotonic() - t0 >= 0.3
    (rec,) = [r for r in rocketmq.faults.records(code=310) if r.fault == "delay"]
    assert rec.latency_ms >= 300


def test_close_connection_then_recover(rocketmq):
    """close on 310 once: that send fails over a closed connection, the retry reconnects."""
    producer, topic = ready(rocketmq, retry_times=0)
    rocketmq.faults.close_connection(310, times=1)
    with pytest.raises(MQClientError):
        producer.send(Message(topic, b"x"))
    assert producer.send(Message(topic, b"y")).status is SendStatus.SEND_OK


def test_namesrv_fault(rocketmq):
    """An error rule on the name server's GET_ROUTEINFO_BY_TOPIC leaves new topics unroutable."""
    producer = rocketmq.producer()
    rocketmq.faults.error("GET_ROUTEINFO_BY_TOPIC", "SYSTEM_ERROR", target="namesrv")
    with pytest.raises((MQBrokerError, MQClientError)):
        producer.send(Message(unique("T"), b"x"))


def test_stop_and_restart_keep_the_store(rocketmq):
    """stop_broker refuses sends; start_broker serves the old messages again."""
    producer, topic = ready(rocketmq, send_timeout=1.0)
    producer.send(Message(topic, b"kept"))
    rocketmq.stop_broker()
    with pytest.raises(MQClientError):
        producer.send(Message(topic, b"lost"))
    rocketmq.start_broker()
    assert stored(rocketmq, topic) == 2
    wait_until(lambda: _sends(producer, topic), what="sends to work again")


def _sends(producer, topic) -> bool:
    try:
        return producer.send(Message(topic, b"again")).status is SendStatus.SEND_OK
    except Exception:
        return False


def test_unreachable_and_reachable(rocketmq):
    """make_unreachable refuses connections; make_reachable restores service."""
    producer, topic = ready(rocketmq, send_timeout=1.0)
    rocketmq.make_unreachable()
    with pytest.raises(MQClientError):
        producer.send(Message(topic, b"x"))
    rocketmq.make_reachable()
    wait_until(lambda: _sends(producer, topic), what="sends to work again")


def test_close_connections_clients_reconnect(rocketmq):
    """close_connections drops every client connection; the next send reconnects."""
    producer, topic = ready(rocketmq)
    rocketmq.close_connections()
    wait_until(lambda: _sends(producer, topic), what="a send after reconnecting")


def test_request_log_records_code_header_and_timing(rocketmq):
    """Every request is recorded with its code, header fields and times."""
    producer, topic = ready(rocketmq)
    producer.send(Message(topic, b"x", tags="t"))
    sends = rocketmq.faults.records(code="SEND_MESSAGE_V2", target="broker")
    assert len(sends) == 2
    last = sends[-1]
    assert last.ext_fields["b"] == topic and "TAGS\x01t" in last.ext_fields["i"]
    assert last.response_code == 0 and last.latency_ms is not None
    assert last.time <= rocketmq.clock.seconds() and last.wall <= time.time()
    assert rocketmq.faults.records(code=105, target="namesrv")


def test_consumer_keeps_consuming_across_a_broker_restart(rocketmq):
    """A push consumer re-registers with a restarted broker and gets later messages promptly."""
    producer, topic = ready(rocketmq)
    inbox = rocketmq.collector(topic)
    inbox.wait_for(1)
    rocketmq.restart_broker()
    wait_until(lambda: _sends(producer, topic), what="sends after the restart")
    assert [m.body for m in inbox.wait_for(2, timeout=15)][1] == b"again"
