"""Push, pull and lite-pull consumers against the embedded broker: clustering, broadcasting,
rebalance, tags, orderly, offsets, retry and DLQ."""

from __future__ import annotations

import threading
import time

import pytest

from rocketmq_emu.client.blocking import BlockingLitePullConsumer
from rocketmq_emu.client.message import Message, MQClientError, decode_messages
from rocketmq_emu.client.push_consumer import BROADCASTING, ConsumeStatus
from rocketmq_emu.client.testing import unique, wait_until


def make_topic(cluster, queues: int = 4) -> str:
    topic = unique("T")
    cluster.create_topic(topic, queues)
    return topic


def test_push_consumer_receives_with_tag_filter(rocketmq):
    """A push consumer with 'a || b' gets tags a and b, not c."""
    topic = make_topic(rocketmq)
    inbox = rocketmq.collector(topic, expression="a || b")
    producer = rocketmq.producer()
    for tag in ("a", "b", "c", "a"):
        producer.send(Message(topic, tag.encode(), tags=tag))
    got = inbox.wait_for(3)
    assert sorted(m.tags for m in got) == ["a", "a", "b"]
    assert all(m.tags != "c" for m in inbox.messages)


def test_two_clustering_consumers_split_the_queues_and_a_third_resplits(rocketmq):
    """4 queues over 2 members: 2 each; a third member joining triggers a re-split through
    NOTIFY_CONSUMER_IDS_CHANGED (periodic rebalancing is set to 10 minutes)."""
    topic = make_topic(rocketmq, 4)
    group = unique("G")
    slow = {"rebalance_interval": 600.0}
    c1 = rocketmq.push_consumer(topic, lambda m, c: True, group=group, **slow)
    c2 = rocketmq.push_consumer(topic, lambda m, c: True, group=group, **slow)

    def sizes(*cs):
        return sorted(len([q for q in c.assigned_queues if q.topic == topic]) for c in cs)

    wait_until(lambda: sizes(c1, c2) == [2, 2], what="a 2/2 split")
    c3 = rocketmq.push_consumer(topic, lambda m, c: True, group=group, **slow)
    wait_until(lambda: sizes(c1, c2, c3) == [1, 1, 2], what="a 1/1/2 split")
    owned = [q for c in (c1, c2, c3) for q in c.assigned_queues if q.topic == topic]
    assert len(owned) == len(set(owned)) == 4


def test_clustering_group_consumes_each_message_once(rocketmq):
    """Two members of one group (split settled) together see every message exactly once."""
    topic = make_topic(rocketmq, 4)
    group = unique("G")
    seen: list[bytes] = []
    lock = threading.Lock()

    def listener(msgs, ctx):
        with lock:
            seen.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    members = [rocketmq.push_consumer(topic, listener, group=group,
                                      consume_from_where="CONSUME_FROM_FIRST_OFFSET")
               for _ in range(2)]
    # Once the split is settled; during a re-split RocketMQ delivers at least once, not once.
    wait_until(lambda: sorted(len([q for q in m.assigned_queues if q.topic == topic])
                              for m in members) == [2, 2], what="a 2/2 split")
    producer = rocketmq.producer()
    for i in range(12):
        producer.send(Message(topic, f"m{i}".encode()))
    wait_until(lambda: len(seen) >= 12, what="12 messages")
    assert sorted(seen) == sorted(f"m{i}".encode() for i in range(12))


def test_broadcasting_consumers_each_get_everything(rocketmq):
    """Two BROADCASTING members of one group both receive every message."""
    topic = make_topic(rocketmq, 2)
    group = unique("G")
    a = rocketmq.collector(topic, group=group, message_model=BROADCASTING)
    b = rocketmq.collector(topic, group=group, message_model=BROADCASTING)
    producer = rocketmq.producer()
    for i in range(4):
        producer.send(Message(topic, f"m{i}".encode()))
    assert sorted(m.body for m in a.wait_for(4)) == sorted(m.body for m in b.wait_for(4))


def test_orderly_consumer_sees_one_queue_in_order(rocketmq):
    """An orderly consumer gets the messages of a queue in send order (queues locked)."""
    topic = make_topic(rocketmq, 4)
    producer = rocketmq.producer()
    for i in range(10):
        producer.send_orderly(Message(topic, f"{i}".encode()), arg=3)
    inbox = rocketmq.collector(topic, orderly=True)
    got = inbox.wait_for(10)
    assert [int(m.body) for m in got] == list(range(10))


def test_offsets_are_committed(rocketmq):
    """After consumption the group's committed offsets reach the queue ends (lag 0)."""
    topic = make_topic(rocketmq, 2)
    group = unique("G")
    producer = rocketmq.producer()
    for i in range(6):
        producer.send(Message(topic, f"m{i}".encode()))
    inbox = rocketmq.collector(topic, group=group, persist_interval=0.2)
    inbox.wait_for(6)
    admin = rocketmq.admin()

    def lag_zero():
        progress = admin.consumer_progress(group, [topic])
        return progress and sum(p.lag for p in progress) == 0 and sum(p.consumer_offset for p in progress) == 6

    wait_until(lag_zero, what="lag 0")
    # Without topics, the group's topics come from the brokers' offset tables.
    assert {p.mq.topic for p in admin.consumer_progress(group)} >= {topic}


@pytest.mark.rocketmq(clock="manual")
def test_failed_message_comes_back_through_the_retry_topic(rocketmq):
    """RECONSUME_LATER sends the message back; it returns after level 3 (10 s) with
    reconsume_times 1 and its original topic."""
    topic = make_topic(rocketmq, 1)
    attempts = []

    def listener(msgs, ctx):
        attempts.extend(msgs)
        return ConsumeStatus.RECONSUME_LATER if len(attempts) == 1 else ConsumeStatus.CONSUME_SUCCESS

    rocketmq.push_consumer(topic, listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    rocketmq.producer().send(Message(topic, b"flaky"))
    wait_until(lambda: len(attempts) >= 1, what="first delivery")
    wait_until(lambda: rocketmq.clock.pending() > 0 and rocketmq.faults.records(code=36),
               what="send back")
    assert len(attempts) == 1
    rocketmq.clock.advance(10)
    wait_until(lambda: len(attempts) >= 2, what="redelivery")
    again = attempts[1]
    assert (again.body, again.topic, again.reconsume_times) == (b"flaky", topic, 1)


@pytest.mark.rocketmq(clock="manual")
def test_message_failing_past_max_reconsume_times_lands_in_the_dlq(rocketmq):
    """With max_reconsume_times=1 the second failure moves the message to %DLQ%group."""
    topic = make_topic(rocketmq, 1)
    group = unique("G")
    attempts = []
    rocketmq.push_consumer(topic, lambda msgs, ctx: attempts.extend(msgs) or False, group=group,
                           max_reconsume_times=1, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    rocketmq.producer().send(Message(topic, b"poison"))
    wait_until(lambda: len(rocketmq.faults.records(code=36)) >= 1, what="first send back")
    rocketmq.clock.advance(10)
    wait_until(lambda: len(rocketmq.faults.records(code=36)) >= 2, what="second send back")
    dlq = f"%DLQ%{group}"
    # RocketMQ creates the DLQ write-only (PermName.PERM_WRITE): read it from the store.
    wait_until(lambda: rocketmq.store.get_max_offset_in_queue(dlq, 0) == 1, what="the DLQ message")
    found = rocketmq.store.get_message(group, dlq, 0, 0, 8)
    (dead,) = decode_messages(b"".join(bytes(m) for m in found.messages))
    assert dead.body == b"poison" and len(attempts) == 2
    assert dead.properties.get("RETRY_TOPIC", topic) == topic


def test_pull_consumer_explicit_offsets(rocketmq):
    """PullConsumer pulls from a chosen offset and stores offsets on the broker."""
    topic = make_topic(rocketmq, 1)
    producer = rocketmq.producer()
    for i in range(5):
        producer.send(Message(topic, f"m{i}".encode()))
    puller = rocketmq.pull_consumer(group=unique("P"))
    (mq,) = puller.fetch_subscribe_queues(topic)
    result = puller.pull(mq, "*", 2, 10)
    assert [m.body for m in result.messages] == [b"m2", b"m3", b"m4"]
    assert (result.next_begin_offset, result.max_offset) == (5, 5)
    puller.update_offset(mq, 5)
    assert puller.fetch_offset(mq) == 5
    empty = puller.pull(mq, "*", 5, 10)
    assert empty.status.name == "NO_NEW_MSG" and empty.messages == []


def test_lite_pull_consumer_polls(rocketmq):
    """A lite pull consumer hands out messages through poll()."""
    topic = make_topic(rocketmq, 2)
    producer = rocketmq.producer()
    for i in range(4):
        producer.send(Message(topic, f"m{i}".encode()))
    consumer = rocketmq.lite_pull_consumer(topic)
    got = []
    deadline = time.monotonic() + 15
    while len(got) < 4 and time.monotonic() < deadline:
        got.extend(consumer.poll(timeout=1.0))
    assert sorted(m.body for m in got) == [b"m0", b"m1", b"m2", b"m3"]


def _poll_until(consumer, count, seconds=15.0):
    got = []
    deadline = time.monotonic() + seconds
    while len(got) < count and time.monotonic() < deadline:
        got.extend(consumer.poll(timeout=0.5))
    return got


def _assigned_lite(rocketmq, mqs):
    consumer = BlockingLitePullConsumer(unique("lite"), rocketmq.namesrv_addr,
                                        consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.assign(mqs)
    consumer.start()
    return rocketmq._track(consumer)


def test_lite_pull_assign_reads_only_the_named_queues(rocketmq):
    """assign([queue 1]) reads that queue alone, whatever the group's rebalance would say."""
    topic = make_topic(rocketmq, 2)
    producer = rocketmq.producer()
    for i in range(6):
        producer.send(Message(topic, f"m{i}".encode()))
    mq0, mq1 = sorted(rocketmq.pull_consumer().fetch_subscribe_queues(topic),
                      key=lambda q: q.queue_id)
    in_q1 = rocketmq.store.get_max_offset_in_queue(topic, 1)
    assert in_q1 > 0
    got = _poll_until(_assigned_lite(rocketmq, [mq1]), in_q1)
    assert len(got) == in_q1 and {m.queue_id for m in got} == {1}


def test_lite_pull_seek_rereads_from_an_offset_and_rejects_one_out_of_range(rocketmq):
    """seek(mq, 1) drops what is buffered and reads again from offset 1; an offset past the
    queue's max is refused with 'Seek offset illegal' (DefaultLitePullConsumerImpl.seek)."""
    topic = make_topic(rocketmq, 1)
    producer = rocketmq.producer()
    for i in range(4):
        producer.send(Message(topic, f"m{i}".encode()))
    (mq,) = rocketmq.pull_consumer().fetch_subscribe_queues(topic)
    consumer = _assigned_lite(rocketmq, [mq])
    assert [m.body for m in _poll_until(consumer, 4)] == [b"m0", b"m1", b"m2", b"m3"]
    consumer.seek(mq, 1)
    assert [m.body for m in _poll_until(consumer, 3)] == [b"m1", b"m2", b"m3"]
    with pytest.raises(MQClientError, match="Seek offset illegal"):
        consumer.seek(mq, 99)
    consumer.seek_to_end(mq)
    producer.send(Message(topic, b"m4"))
    assert [m.body for m in _poll_until(consumer, 1)] == [b"m4"]


def test_lite_pull_subscribe_and_assign_are_mutually_exclusive(rocketmq):
    """A subscribed lite pull consumer cannot also assign queues."""
    topic = make_topic(rocketmq, 1)
    consumer = rocketmq.lite_pull_consumer(topic)
    (mq,) = rocketmq.pull_consumer().fetch_subscribe_queues(topic)
    with pytest.raises(MQClientError, match="mutually exclusive"):
        consumer.assign([mq])


def test_orderly_failure_suspends_and_retries_in_place(rocketmq):
    """An orderly listener failing once sees the same message again before the next one."""
    topic = make_topic(rocketmq, 1)
    seen = []

    def listener(msgs, ctx):
        seen.extend((m.body, m.reconsume_times) for m in msgs)
        return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT if len(seen) == 1 else True

    producer = rocketmq.producer()
    for i in range(3):
        producer.send_orderly(Message(topic, f"{i}".encode()), arg=0)
    rocketmq.push_consumer(topic, listener, orderly=True, orderly_suspend=0.1,
                           consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    wait_until(lambda: len(seen) >= 4, what="4 deliveries")
    assert seen == [(b"0", 0), (b"0", 1), (b"1", 0), (b"2", 0)]


def test_admin_reset_offset_by_time_replays_messages(rocketmq):
    """Resetting the group to the beginning (RESET_CONSUMER_CLIENT_OFFSET) replays everything."""
    topic = make_topic(rocketmq, 2)
    group = unique("G")
    producer = rocketmq.producer()
    for i in range(4):
        producer.send(Message(topic, f"m{i}".encode()))
    inbox = rocketmq.collector(topic, group=group)
    inbox.wait_for(4)
    rocketmq.admin().reset_offset_by_time(group, topic, 0)
    again = inbox.wait_for(8)
    assert sorted(m.body for m in again[4:]) == [b"m0", b"m1", b"m2", b"m3"]


def test_admin_running_info_and_consume_directly(rocketmq):
    """GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY reach the Python consumer."""
    topic = make_topic(rocketmq, 1)
    group = unique("G")
    seen = []
    consumer = rocketmq.push_consumer(topic, lambda msgs, ctx: seen.extend(msgs) or True, group=group)
    wait_until(lambda: consumer.assigned_queues, what="an assigned queue")
    admin = rocketmq.admin()
    info = admin.consumer_running_info(group, consumer.client_id)
    assert info["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert (topic, "broker-a", 0) in info["mqTable"]
    sent = rocketmq.producer().send(Message(topic, b"direct"))
    wait_until(lambda: seen, what="normal delivery")
    result = admin.consume_message_directly(group, consumer.client_id, sent.offset_msg_id)
    assert result["consumeResult"] == "CR_SUCCESS"
    assert [m.body for m in seen] == [b"direct", b"direct"]


def test_pull_consumer_long_polls(rocketmq):
    """A blocking pull on an empty queue is held and answered when a message arrives."""
    from rocketmq_emu.client.blocking import run_blocking

    topic = make_topic(rocketmq, 1)
    puller = rocketmq.pull_consumer()
    (mq,) = puller.fetch_subscribe_queues(topic)
    pending = puller._target.pull(mq, "*", 0, 8, block=True, suspend_ms=10000)
    assert not pending.called
    rocketmq.producer().send(Message(topic, b"wake"))
    result = run_blocking(lambda: pending, timeout=8)
    assert [m.body for m in result.messages] == [b"wake"]
