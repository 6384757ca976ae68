"""Request-reply through our client over loopback (325 → 326 push to the requester)."""

from __future__ import annotations

import pytest
import pytest_twisted
from issue7_support import create_topic
from twisted.internet import defer, reactor

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.producer import Producer
from rocketmq_emu.client.push_consumer import PushConsumer
from rocketmq_emu.client.request_reply import (
    RequestTimeoutError,
    create_reply_message,
    request,
    send_reply,
)


@pytest_twisted.ensureDeferred
async def test_request_gets_the_reply_pushed_by_the_broker(cluster):
    """A replier consuming the request answers with create_reply_message + send_reply; the
    requester's request() fires with that reply (same CORRELATION_ID, MSG_TYPE=reply)."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "RpcTopic", 2)
    replier_producer = Producer("replier-p", namesrv.addr, reactor=reactor)
    await replier_producer.start()
    requester = Producer("requester", namesrv.addr, reactor=reactor)
    await requester.start()
    seen = []

    def on_request(msgs, ctx):
        for m in msgs:
            seen.append(m)
            reply = create_reply_message(m, b"pong:" + m.body)
            defer.ensureDeferred(_reply(replier_producer, reply))
        return True

    async def _reply(p, reply):
        await send_reply(p, reply)

    consumer = PushConsumer("replier", namesrv.addr, reactor=reactor, listener=on_request,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe("RpcTopic", "*")
    await consumer.start()
    try:
        reply = await request(requester, Message("RpcTopic", b"ping"), timeout=10.0)
        assert reply.body == b"pong:ping"
        assert reply.topic == f"{broker.config.broker_cluster_name}_REPLY_TOPIC"
        assert reply.properties["MSG_TYPE"] == "reply"
        assert reply.properties["CORRELATION_ID"] == seen[0].properties["CORRELATION_ID"]
        assert seen[0].properties["REPLY_TO_CLIENT"] == requester.client_id
        assert seen[0].properties["TTL"] == "10000"
        assert "PUSH_REPLY_TIME" in reply.properties
    finally:
        await consumer.shutdown()
        await requester.shutdown()
        await replier_producer.shutdown()


@pytest_twisted.ensureDeferred
async def test_request_without_replier_times_out(cluster):
    """No reply within the timeout → RequestTimeoutError."""
    namesrv, _broker = cluster
    requester = Producer("lonely", namesrv.addr, reactor=reactor)
    await requester.start()
    try:
        with pytest.raises(RequestTimeoutError):
            await request(requester, Message("NobodyListens", b"hello?"), timeout=0.5)
    finally:
        await requester.shutdown()


@pytest_twisted.ensureDeferred
async def test_reply_to_an_unknown_client_is_refused(cluster):
    """A reply whose REPLY_TO_CLIENT has no producer connection gets SYSTEM_ERROR."""
    namesrv, broker = cluster
    replier = Producer("replier-x", namesrv.addr, reactor=reactor)
    await replier.start()
    try:
        cluster_name = broker.config.broker_cluster_name
        msg = Message(f"{cluster_name}_REPLY_TOPIC", b"orphan", properties={
            "CORRELATION_ID": "c-1", "REPLY_TO_CLIENT": "10.9.9.9@nobody", "TTL": "3000",
            "MSG_TYPE": "reply"})
        with pytest.raises(Exception) as info:
            await send_reply(replier, msg)
        assert "channel of <10.9.9.9@nobody> not found" in str(info.value)
    finally:
        await replier.shutdown()
