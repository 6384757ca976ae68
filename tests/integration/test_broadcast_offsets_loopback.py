"""BROADCASTING consumers keep their offsets in a local file and resume from it."""

from __future__ import annotations

import pytest_twisted
from issue7_support import create_topic, send_bodies, wait_for
from twisted.internet import reactor

from rocketmq_emu.client.instance import ClientInstance
from rocketmq_emu.client.message import MessageQueue
from rocketmq_emu.client.push_consumer import BROADCASTING, PushConsumer


async def _send(namesrv, topic, bodies):
    await send_bodies(namesrv.addr, topic, bodies, group="bc-p")


async def _consume_until(namesrv, offsets_dir, inbox, count):
    instance = ClientInstance(namesrv.addr, reactor, instance_name="bc-restart")
    consumer = PushConsumer("bc-file-g", namesrv.addr, reactor=reactor, instance=instance,
                            message_model=BROADCASTING, local_offset_store_dir=offsets_dir,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: inbox.extend(msgs) or True)
    consumer.subscribe("BcFile", "*")
    await consumer.start()
    try:
        await wait_for(lambda: len(inbox) >= count, what=f"{count} messages")
    finally:
        await consumer.shutdown()
        await instance.shutdown()
    return consumer


@pytest_twisted.ensureDeferred
async def test_restarted_broadcasting_consumer_resumes_from_its_offsets_file(cluster, tmp_path):
    """A broadcasting consumer restarted with the same client id reads only what arrived after
    its shutdown: the offsets it wrote to {dir}/{clientId}/{group}/offsets.json, not the
    broker (which stores nothing for the group)."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "BcFile", 1)
    await _send(namesrv, "BcFile", [b"a", b"b"])
    first: list = []
    consumer = await _consume_until(namesrv, str(tmp_path / "offsets"), first, 2)
    name = broker.config.broker_name
    assert consumer.local_offsets.load() == {MessageQueue("BcFile", name, 0): 2}
    assert broker.store.consumer_offsets.query_offset("bc-file-g", "BcFile", 0) == -1
    await _send(namesrv, "BcFile", [b"c"])
    second: list = []
    await _consume_until(namesrv, str(tmp_path / "offsets"), second, 1)
    assert [m.body for m in second] == [b"c"]
