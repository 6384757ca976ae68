"""The Python producer against the embedded broker: sync, async, oneway, batch, orderly, keys."""

from __future__ import annotations

import pytest_twisted

from rocketmq_emu.broker.message import decode_offset_msg_id
from rocketmq_emu.client.message import Message, MessageQueue, SendStatus
from rocketmq_emu.client.producer import Producer
from rocketmq_emu.client.testing import unique


def pull_all(cluster, topic: str, expected: int, expression: str = "*"):
    """Pull every queue of ``topic`` from offset 0 until ``expected`` messages were seen."""
    consumer = cluster.pull_consumer()
    out = []
    for mq in consumer.fetch_subscribe_queues(topic):
        out.extend(consumer.pull(mq, expression, 0, 64).messages)
    assert len(out) >= expected, f"pulled {len(out)} of {expected}"
    return out


def test_sync_send_returns_send_ok_with_uniq_and_offset_ids(rocketmq):
    """A sync send answers SEND_OK, msg_id = UNIQ_KEY, offset id naming the broker."""
    producer = rocketmq.producer()
    topic = unique("T")
    result = producer.send(Message(topic, b"hello", tags="a", keys="k1"))
    assert result.status is SendStatus.SEND_OK
    assert len(result.msg_id) == 32 and result.msg_id != result.offset_msg_id
    host, port, _ = decode_offset_msg_id(result.offset_msg_id)
    assert f"{host}:{port}" == rocketmq.broker_addr
    (msg,) = pull_all(rocketmq, topic, 1)
    assert (msg.body, msg.tags, msg.keys, msg.msg_id) == (b"hello", "a", ["k1"], result.msg_id)


def test_user_properties_travel(rocketmq):
    """User properties arrive on the consumed message."""
    producer = rocketmq.producer()
    topic = unique("T")
    producer.send(Message(topic, b"x", properties={"trace": "abc"}))
    (msg,) = pull_all(rocketmq, topic, 1)
    assert msg.properties["trace"] == "abc"


@pytest_twisted.ensureDeferred
async def test_async_send_with_the_twisted_api(rocketmq):
    """Producer.send returns a Deferred; many sends in flight all succeed."""
    producer = Producer(unique("pg"), rocketmq.namesrv_addr)
    await producer.start()
    try:
        topic = unique("T")
        results = [await d for d in [producer.send(Message(topic, f"m{i}".encode())) for i in range(5)]]
        assert {r.status for r in results} == {SendStatus.SEND_OK}
        assert len({r.msg_id for r in results}) == 5
    finally:
        await producer.shutdown()


def test_send_async_of_the_blocking_facade(rocketmq):
    """send_async returns at once; wait() gives the SendResult and the callback sees it."""
    producer = rocketmq.producer()
    seen = []
    res = producer.send_async(Message(unique("T"), b"x"), callback=seen.append)
    assert res.wait().status is SendStatus.SEND_OK
    assert seen and seen[0].status is SendStatus.SEND_OK


def test_oneway_send_is_stored(rocketmq):
    """A oneway send gets no answer but the message is stored."""
    producer = rocketmq.producer()
    topic = unique("T")
    producer.send(Message(topic, b"first"))  # creates the topic
    producer.send_oneway(Message(topic, b"oneway"))
    inbox = rocketmq.collector(topic)
    assert sorted(m.body for m in inbox.wait_for(2)) == [b"first", b"oneway"]


def test_batch_send(rocketmq):
    """A batch lands as consecutive messages in one queue; msg_id joins the UNIQ_KEYs."""
    producer = rocketmq.producer()
    topic = unique("T")
    result = producer.send_batch([Message(topic, f"b{i}".encode(), keys=f"k{i}") for i in range(3)])
    assert result.status is SendStatus.SEND_OK
    ids = result.msg_id.split(",")
    assert len(ids) == 3
    msgs = sorted(pull_all(rocketmq, topic, 3), key=lambda m: m.queue_offset)
    assert [m.body for m in msgs] == [b"b0", b"b1", b"b2"]
    assert [m.msg_id for m in msgs] == ids
    assert len({m.queue_id for m in msgs}) == 1
    assert [m.queue_offset for m in msgs] == list(range(result.queue_offset, result.queue_offset + 3))


def test_orderly_send_keeps_one_key_on_one_queue(rocketmq):
    """send_orderly with the same arg always picks the same queue."""
    producer = rocketmq.producer()
    topic = unique("T")
    queues = {producer.send_orderly(Message(topic, f"o{i}".encode()), arg=7).message_queue
              for i in range(5)}
    assert len(queues) == 1


def test_send_to_an_explicit_queue(rocketmq):
    """queue= sends to that queue."""
    producer = rocketmq.producer()
    topic = unique("T")
    producer.send(Message(topic, b"create"))
    r = producer.send(Message(topic, b"q2"), queue=MessageQueue(topic, "broker-a", 2))
    assert r.message_queue.queue_id == 2


def test_large_body_is_compressed_and_inflated(rocketmq):
    """A body over 4 KiB travels zlib-compressed and is inflated on receipt."""
    producer = rocketmq.producer()
    topic = unique("T")
    body = b"0123456789" * 1000
    producer.send(Message(topic, body))
    (msg,) = pull_all(rocketmq, topic, 1)
    assert msg.body == body and msg.sys_flag & 0x1


def test_query_by_key_and_view_by_id(rocketmq):
    """Admin finds a message by key, by offset id and by UNIQ_KEY."""
    producer = rocketmq.producer()
    topic = unique("T")
    r = producer.send(Message(topic, b"findme", keys=["order-42"]))
    admin = rocketmq.admin()
    (by_key,) = admin.query_by_key(topic, "order-42")
    assert by_key.body == b"findme"
    assert admin.view_message(r.offset_msg_id).body == b"findme"
    assert admin.view_message(r.msg_id, topic=topic).body == b"findme"


def test_admin_create_and_list_topics(rocketmq):
    """A created topic has the requested queues and is listed by the name server."""
    admin = rocketmq.admin()
    topic = unique("Created")
    admin.create_topic(topic, 3)
    assert topic in admin.list_topics()
    consumer = rocketmq.pull_consumer()
    assert len(consumer.fetch_subscribe_queues(topic)) == 3
