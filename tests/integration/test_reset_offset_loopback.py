"""Offset reset by time (222 → 220) and consumer status (223 → 221) over loopback."""

from __future__ import annotations

import pytest_twisted
from issue7_support import create_topic, send_bodies, sleep, wait_for
from twisted.internet import reactor

from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.bodies import decode_offset_table, mq_key
from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.push_consumer import BROADCASTING, PushConsumer


async def _send(namesrv, topic, bodies):
    await send_bodies(namesrv.addr, topic, bodies, group="reset-p")


def _reset_cmd(topic, group, timestamp, force=True):
    return RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {
        "topic": topic, "group": group, "timestamp": str(timestamp),
        "isForce": "true" if force else "false"})


@pytest_twisted.ensureDeferred
async def test_reset_to_the_beginning_redelivers_to_a_live_clustering_consumer(cluster):
    """After consuming everything, resetting to timestamp 0 makes the consumer read the topic
    again; the broker's offset table holds the reset offsets."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "ResetT", 1)
    await _send(namesrv, "ResetT", [b"a", b"b", b"c"])
    inbox: list = []
    consumer = PushConsumer("reset-g", namesrv.addr, reactor=reactor,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: inbox.extend(msgs) or True)
    consumer.subscribe("ResetT", "*")
    await consumer.start()
    admin = RemotingClient(reactor)
    try:
        await wait_for(lambda: len(inbox) == 3, what="first pass")
        await consumer.persist_offsets()
        resp = await admin.invoke(broker.addr, _reset_cmd("ResetT", "reset-g", 0), 5.0)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        table = decode_offset_table(resp.body)
        assert table == {("ResetT", broker.config.broker_name, 0): 0}
        await wait_for(lambda: len(inbox) == 6, what="redelivery after the reset")
        assert [m.body for m in inbox[3:]] == [b"a", b"b", b"c"]
    finally:
        await admin.close()
        await consumer.shutdown()


@pytest_twisted.ensureDeferred
async def test_reset_without_online_consumer_updates_offsets_and_says_not_online(cluster):
    """No client of the group online: CONSUMER_NOT_ONLINE (206), offsets still stored."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "ResetOff", 1)
    await _send(namesrv, "ResetOff", [b"x", b"y"])
    broker.store.consumer_offsets.commit_offset("t", "gone-g", "ResetOff", 0, 2)
    admin = RemotingClient(reactor)
    try:
        resp = await admin.invoke(broker.addr, _reset_cmd("ResetOff", "gone-g", 0), 5.0)
        assert resp.code == ResponseCode.CONSUMER_NOT_ONLINE
        assert resp.remark.startswith("Consumer not online, so can not reset offset")
        assert broker.store.consumer_offsets.query_offset("gone-g", "ResetOff", 0) == 0
        unknown = await admin.invoke(broker.addr, _reset_cmd("ResetOff", "never-g", 0), 5.0)
        assert (unknown.code, unknown.remark) == (ResponseCode.SYSTEM_ERROR,
                                                  "THe consumer group <never-g> not exist")
    finally:
        await admin.close()


@pytest_twisted.ensureDeferred
async def test_broadcasting_consumer_is_reset_client_side(cluster):
    """A BROADCASTING group has no broker offsets: the reset still reaches it (no 'group not
    exist') and the broker stores nothing for it."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "ResetB", 1)
    await _send(namesrv, "ResetB", [b"1", b"2"])
    inbox: list = []
    consumer = PushConsumer("bcast-g", namesrv.addr, reactor=reactor, message_model=BROADCASTING,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: inbox.extend(msgs) or True)
    consumer.subscribe("ResetB", "*")
    await consumer.start()
    admin = RemotingClient(reactor)
    try:
        await wait_for(lambda: len(inbox) == 2, what="first pass")
        resp = await admin.invoke(broker.addr, _reset_cmd("ResetB", "bcast-g", 0), 5.0)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        await wait_for(lambda: len(inbox) == 4, what="broadcast redelivery")
        assert broker.store.consumer_offsets.query_offset("bcast-g", "ResetB", 0) == -1
    finally:
        await admin.close()
        await consumer.shutdown()


@pytest_twisted.ensureDeferred
async def test_consumer_status_collects_client_offsets(cluster):
    """223 asks each client (221) and answers {"consumerTable":{clientId:{mq:offset}}}."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "StatusT", 1)
    await _send(namesrv, "StatusT", [b"s1", b"s2"])
    inbox: list = []
    consumer = PushConsumer("status-g", namesrv.addr, reactor=reactor,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: inbox.extend(msgs) or True)
    consumer.subscribe("StatusT", "*")
    await consumer.start()
    admin = RemotingClient(reactor)
    try:
        await wait_for(lambda: len(inbox) == 2, what="consumption")
        await sleep(0.1)
        resp = await admin.invoke(broker.addr, RemotingCommand.request(
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            {"topic": "StatusT", "group": "status-g"}), 5.0)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        doc = loads_lenient(resp.body)
        per_client = doc["consumerTable"][consumer.client_id]
        offsets = {mq_key(k): v for k, v in per_client.items()}
        assert offsets == {("StatusT", broker.config.broker_name, 0): 2}
    finally:
        await admin.close()
        await consumer.shutdown()
