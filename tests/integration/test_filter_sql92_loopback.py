"""SQL92 subscriptions through our client over loopback (heartbeat, CHECK_CLIENT_CONFIG, pull)."""

from __future__ import annotations

import pytest
import pytest_twisted
from issue7_support import create_topic, sleep, start_cluster, stop_cluster, wait_for
from twisted.internet import reactor

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.message import Message, MQClientError
from rocketmq_emu.client.producer import Producer
from rocketmq_emu.client.push_consumer import PushConsumer


@pytest.fixture
def filtering(tmp_path):
    namesrv, broker = start_cluster(tmp_path, enable_property_filter=True)
    yield namesrv, broker
    stop_cluster(namesrv, broker)


@pytest.fixture
def plain(tmp_path):
    namesrv, broker = start_cluster(tmp_path)
    yield namesrv, broker
    stop_cluster(namesrv, broker)


def _consumer(namesrv, group, inbox):
    return PushConsumer(group, namesrv.addr, reactor=reactor,
                        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                        listener=lambda msgs, ctx: inbox.extend(msgs) or True)


@pytest_twisted.ensureDeferred
async def test_sql92_consumer_gets_only_matching_messages(filtering):
    """``a BETWEEN 2 AND 4 AND color = 'red'`` selects by user properties on the broker."""
    namesrv, _broker = filtering
    await create_topic(namesrv.addr, "SqlTopic", 2)
    producer = Producer("sql-p", namesrv.addr, reactor=reactor)
    await producer.start()
    inbox: list = []
    consumer = _consumer(namesrv, "sql-c", inbox)
    consumer.subscribe("SqlTopic", "a BETWEEN 2 AND 4 AND color = 'red'", "SQL92")
    try:
        await consumer.start()
        for i in range(1, 7):
            color = "red" if i != 3 else "blue"
            await producer.send(Message("SqlTopic", f"m{i}".encode(),
                                        properties={"a": str(i), "color": color}))
        await producer.send(Message("SqlTopic", b"no-props"))
        await wait_for(lambda: len(inbox) >= 2, what="two matching messages")
        await sleep(0.5)
        assert sorted(m.body for m in inbox) == [b"m2", b"m4"]
    finally:
        await consumer.shutdown()
        await producer.shutdown()


@pytest_twisted.ensureDeferred
async def test_sql92_refused_when_property_filter_disabled(plain):
    """enablePropertyFilter=false (RocketMQ's default): CHECK_CLIENT_CONFIG answers
    SYSTEM_ERROR and start() fails like Java's MQClientException."""
    namesrv, _broker = plain
    await create_topic(namesrv.addr, "SqlOff", 1)
    consumer = _consumer(namesrv, "sql-off", [])
    consumer.subscribe("SqlOff", "a > 1", "SQL92")
    with pytest.raises(MQClientError) as info:
        await consumer.start()
    assert "The broker does not support consumer to filter message by SQL92" in str(info.value)


@pytest_twisted.ensureDeferred
async def test_bad_expression_fails_check_client_config(filtering):
    """A syntax error is SUBSCRIPTION_PARSE_FAILED (23) with the parser's message."""
    namesrv, _broker = filtering
    await create_topic(namesrv.addr, "SqlBad", 1)
    consumer = _consumer(namesrv, "sql-bad", [])
    consumer.subscribe("SqlBad", "a >", "SQL92")
    with pytest.raises(MQClientError) as info:
        await consumer.start()
    assert "CODE: 23" in str(info.value)
    assert "ParseException" in str(info.value)


@pytest_twisted.ensureDeferred
async def test_pull_with_bad_sql_in_the_request_is_23_not_an_exception(filtering):
    """A raw PULL_MESSAGE carrying a bad SQL92 subscription gets 23 and a remark."""
    namesrv, broker = filtering
    await create_topic(namesrv.addr, "SqlRaw", 1)
    from rocketmq_emu.broker.remoting.client import RemotingClient

    client = RemotingClient(reactor)
    try:
        cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, {
            "consumerGroup": "raw", "topic": "SqlRaw", "queueId": "0", "queueOffset": "0",
            "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0",
            "suspendTimeoutMillis": "0", "subscription": "a >>> 1", "subVersion": "0",
            "expressionType": "SQL92"})
        resp = await client.invoke(broker.addr, cmd, 5.0)
        assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert resp.remark == "parse the consumer's subscription failed"
    finally:
        await client.close()
