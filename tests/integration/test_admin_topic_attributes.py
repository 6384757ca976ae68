"""``rmq-emu admin updateTopic -a`` (RocketMQ 5 topic attributes) against a running name server +
broker: typed topics persist in topics.json and survive a restart; refusals come back with
the broker's remark."""

from __future__ import annotations

import json

import pytest
import pytest_twisted
from issue7_support import send_bodies
from twisted.internet import reactor

from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.topic_message_type import TopicMessageType, topic_message_type
from rocketmq_emu.client.admin import Admin
from rocketmq_emu.client.admin_cli import build_parser, execute
from rocketmq_emu.client.message import MQBrokerError


async def admin(namesrv, *argv: str) -> tuple[int, str]:
    """Run one admin command in-process (same reactor as the cluster)."""
    args = build_parser().parse_args([argv[0], "-n", namesrv.addr, *argv[1:]])
    return await execute(args, reactor)


def message_type(broker, topic: str) -> TopicMessageType:
    return topic_message_type(broker.store.topic_config.select_topic_config(topic))


async def start_broker(namesrv, tmp_path) -> BrokerController:
    """A broker on ``tmp_path/store`` (as ``issue7_support.start_cluster``, awaited in-test)."""
    cfg = BrokerConfig(listen_port=0, namesrv_addr=namesrv.addr,
                       store_path_root_dir=str(tmp_path / "store"),
                       mapped_file_size_commit_log=1024 * 1024,
                       mapped_file_size_consume_queue=300 * 20)
    broker = BrokerController(cfg, reactor=reactor, host="127.0.0.1", enable_vip_channel=False)
    await broker.start()
    return broker


@pytest_twisted.ensureDeferred
async def test_update_topic_with_attributes_persists_and_survives_restart(cluster, tmp_path):
    """-a +message.type=FIFO types the topic (topics.json as 5.x writes it, reloaded at start);
    a later update without -a keeps the type; an auto-created topic is NORMAL."""
    namesrv, broker = cluster
    broker2 = None
    try:
        status, text = await admin(namesrv, "updateTopic", "-b", broker.addr, "-t", "FifoT",
                                   "-a", "+message.type=FIFO")
        assert status == 0, text
        assert f"create topic to {broker.addr} success." in text
        assert text.rstrip().endswith("attributes={+message.type=FIFO}]")
        status, text = await admin(namesrv, "updateTopic", "-b", broker.addr, "-t", "FifoT",
                                   "-w", "4", "-r", "4")
        assert status == 0, text
        assert message_type(broker, "FifoT") is TopicMessageType.FIFO
        await send_bodies(namesrv.addr, "AutoT", [b"x"])
        assert broker.store.topic_config.select_topic_config("AutoT").attributes == {}
        assert message_type(broker, "AutoT") is TopicMessageType.NORMAL
        # topics.json is written in the store's flush thread: a job queued behind it runs after.
        await broker.store.disk_sync.submit(lambda: None)
        path = tmp_path / "store" / "config" / "topics.json"
        table = json.loads(path.read_text())["topicConfigTable"]
        assert table["FifoT"]["attributes"] == {"message.type": "FIFO"}
        assert table["FifoT"]["writeQueueNums"] == 4
        await broker.stop()
        broker2 = await start_broker(namesrv, tmp_path)
        assert message_type(broker2, "FifoT") is TopicMessageType.FIFO
        status, text = await admin(namesrv, "updateTopic", "-b", broker2.addr, "-t", "FifoT",
                                   "--attributes=-message.type")
        assert status == 0, text
        assert broker2.store.topic_config.select_topic_config("FifoT").attributes == {}
    finally:
        if broker2 is not None:
            await broker2.stop()


@pytest_twisted.ensureDeferred
async def test_update_topic_refusals(cluster):
    """A bad value or unknown key fails with the broker's remark; a malformed -a never leaves
    the client (usage error); MIXED is INVALID_PARAMETER by default."""
    namesrv, broker = cluster
    status, text = await admin(namesrv, "updateTopic", "-b", broker.addr, "-t", "BadT",
                               "-a", "+message.type=ORDERLY")
    assert status == 1
    assert "value is not in set: [UNSPECIFIED, MIXED, TRANSACTION, FIFO, DELAY, NORMAL]" in text
    status, text = await admin(namesrv, "updateTopic", "-b", broker.addr, "-t", "BadT",
                               "-a", "+colour=red")
    assert status == 1 and "unsupported key: colour" in text
    status, text = await admin(namesrv, "updateTopic", "-b", broker.addr, "-t", "BadT",
                               "-a", "message.type=FIFO")
    assert status == 2 and "add/alter attribute format is wrong: message.type" in text
    assert broker.store.topic_config.select_topic_config("BadT") is None

    client = Admin(namesrv.addr, reactor=reactor)
    try:
        with pytest.raises(MQBrokerError) as info:
            await client.create_topic("MixT", 4, broker_addr=broker.addr,
                                      attributes="+message.type=MIXED")
        assert info.value.code == ResponseCode.INVALID_PARAMETER
        assert "MIXED message type is not supported." in str(info.value)
        await client.create_topic("DelayT", 4, broker_addr=broker.addr,
                                  attributes="+message.type=DELAY")
    finally:
        await client.shutdown()
    assert message_type(broker, "DelayT") is TopicMessageType.DELAY
