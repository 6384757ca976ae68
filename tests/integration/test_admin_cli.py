"""``rmq-emu admin`` subcommands against a running name server + broker."""

from __future__ import annotations

import json
import os
import sys

import pytest_twisted
from issue7_support import create_topic, send_bodies, wait_for
from twisted.internet import reactor, utils

from rocketmq_emu.client.admin_cli import build_parser, execute
from rocketmq_emu.client.admin_output import format_table, parse_timestamp
from rocketmq_emu.client.push_consumer import PushConsumer


async def admin(namesrv, *argv: str) -> tuple[int, str]:
    """Run one admin command in-process (same reactor as the cluster)."""
    args = build_parser().parse_args([argv[0], "-n", namesrv.addr, *argv[1:]])
    return await execute(args, reactor)


async def _send(namesrv, topic, n, keys=None):
    return await send_bodies(namesrv.addr, topic, [f"body-{i}".encode() for i in range(n)],
                             group="admin-p", keys=keys)


@pytest_twisted.ensureDeferred
async def test_update_topic_then_list_route_and_status(cluster):
    """updateTopic creates the topic; topicList / topicRoute / topicStatus show it."""
    namesrv, broker = cluster
    status, text = await admin(namesrv, "updateTopic", "-b", broker.addr, "-t", "AdmT",
                               "-r", "2", "-w", "2")
    assert status == 0, text
    assert f"create topic to {broker.addr} success." in text
    await broker.register_broker_all()
    status, text = await admin(namesrv, "topicList")
    assert status == 0 and "AdmT" in text.splitlines()
    status, text = await admin(namesrv, "topicRoute", "-t", "AdmT", "--json")
    route = json.loads(text)
    assert route["queueDatas"][0]["writeQueueNums"] == 2
    await _send(namesrv, "AdmT", 3)
    status, text = await admin(namesrv, "topicStatus", "-t", "AdmT")
    lines = text.splitlines()
    assert lines[0].split() == ["#Broker", "Name", "#QID", "#Min", "Offset", "#Max", "Offset",
                                "#Last", "Updated"]
    status, doc = await admin(namesrv, "topicStatus", "-t", "AdmT", "--json")
    rows = json.loads(doc)
    assert sorted(r["queueId"] for r in rows) == [0, 1]
    assert sum(r["maxOffset"] for r in rows) == 3


@pytest_twisted.ensureDeferred
async def test_cluster_list_and_broker_status(cluster):
    """clusterList lists the broker; brokerStatus prints its runtime info."""
    namesrv, broker = cluster
    status, text = await admin(namesrv, "clusterList")
    assert status == 0, text
    assert text.splitlines()[0].startswith("#Cluster Name")
    assert broker.addr in text and "DefaultCluster" in text
    status, text = await admin(namesrv, "brokerStatus", "-b", broker.addr)
    assert status == 0
    assert any(line.startswith("brokerVersionDesc") for line in text.splitlines())
    status, doc = await admin(namesrv, "brokerStatus", "-c", "DefaultCluster", "--json")
    assert "msgPutTotalTodayNow" in json.loads(doc)[broker.addr]


@pytest_twisted.ensureDeferred
async def test_query_message_by_id_and_key(cluster):
    """queryMsgById reads the message an offset id names; queryMsgByKey finds it by KEYS."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "AdmQ", 1)
    [sent] = await _send(namesrv, "AdmQ", 1, keys="order-42")
    status, text = await admin(namesrv, "queryMsgById", "-i", sent.offset_msg_id)
    assert status == 0, text
    assert "Topic:               AdmQ" in text
    assert "body-0" in text
    broker.store.flush()
    status, doc = await admin(namesrv, "queryMsgByKey", "-t", "AdmQ", "-k", "order-42", "--json")
    assert status == 0, doc
    assert [m["msgId"] for m in json.loads(doc)] == [sent.msg_id]


@pytest_twisted.ensureDeferred
async def test_consumer_progress_and_reset_offset_by_time(cluster):
    """consumerProgress shows broker/consumer offsets; resetOffsetByTime (group offline → the
    offsets are written directly, as mqadmin's fallback) moves the group back to 0."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "AdmC", 1)
    await _send(namesrv, "AdmC", 4)
    broker.store.consumer_offsets.commit_offset("t", "adm-g", "AdmC", 0, 4)
    broker.store.topic_config.create_topic_in_send_message_back_method("%RETRY%adm-g", 1, 6)
    await broker.register_broker_all()
    status, text = await admin(namesrv, "consumerProgress", "-g", "adm-g")
    assert status == 0, text
    assert "Consume Diff Total: 0" in text
    status, text = await admin(namesrv, "resetOffsetByTime", "-g", "adm-g", "-t", "AdmC",
                               "-s", "0")
    assert status == 0, text
    assert text.splitlines()[0].startswith("rollback consumer offset by specified group[adm-g]")
    assert broker.store.consumer_offsets.query_offset("adm-g", "AdmC", 0) == 0
    status, doc = await admin(namesrv, "consumerProgress", "-g", "adm-g", "--json")
    assert json.loads(doc)["diffTotal"] == 4


@pytest_twisted.ensureDeferred
async def test_consumer_progress_names_the_client_ip_holding_each_queue(cluster):
    """consumerProgress fills Client IP from the group's connections and their running info
    (mqadmin's getMessageQueueAllocationResult): the live consumer's IP on its queue."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "AdmIp", 1)
    await _send(namesrv, "AdmIp", 2)
    inbox: list = []
    consumer = PushConsumer("adm-ip-g", namesrv.addr, reactor=reactor,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: inbox.extend(msgs) or True)
    consumer.subscribe("AdmIp", "*")
    await consumer.start()
    try:
        await wait_for(lambda: len(inbox) == 2, what="consumed")
        status, doc = await admin(namesrv, "consumerProgress", "-g", "adm-ip-g", "--json")
        assert status == 0, doc
        queues = {q["topic"]: q["clientIP"] for q in json.loads(doc)["queues"]}
        assert queues["AdmIp"] == "127.0.0.1"
    finally:
        await consumer.shutdown()


@pytest_twisted.ensureDeferred
async def test_delete_topic(cluster):
    """deleteTopic removes the topic from the broker and the name server."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "AdmDel", 1)
    status, text = await admin(namesrv, "deleteTopic", "-t", "AdmDel", "-c", "DefaultCluster")
    assert status == 0, text
    assert "delete topic [AdmDel] from NameServer success." in text
    assert broker.store.topic_config.select_topic_config("AdmDel") is None
    status, text = await admin(namesrv, "topicList")
    assert "AdmDel" not in text.splitlines()


@pytest_twisted.ensureDeferred
async def test_usage_error_and_failure_statuses(cluster):
    """A missing required flag exits 2; an unknown topic's route exits 1."""
    namesrv, _broker = cluster
    status, text = await admin(namesrv, "topicStatus")
    assert status == 2 and "-t topic is required" in text
    status, text = await admin(namesrv, "topicStatus", "-t", "NoSuchTopic")
    assert status == 1


@pytest_twisted.ensureDeferred
async def test_rmq_emu_admin_command_line(cluster):
    """``rmq-emu admin clusterList --json`` as a process prints JSON naming the broker."""
    namesrv, broker = cluster
    out, err, code = await utils.getProcessOutputAndValue(
        sys.executable, ["-m", "rocketmq_emu.broker.cli", "admin", "clusterList", "-n", namesrv.addr,
                         "--json"], env=dict(os.environ), path=os.getcwd())
    assert code == 0, err
    assert json.loads(out)[0]["addr"] == broker.addr


def test_format_table_aligns_columns():
    """Columns are padded to the widest cell with '#'-prefixed headers."""
    text = format_table(("Topic", "QID"), [("a", 0), ("longer-topic", 12)])
    lines = text.splitlines()
    assert lines[0] == "#Topic        #QID"
    assert lines[2] == "longer-topic  12"


def test_parse_timestamp_forms():
    """-s accepts ms, 'now' and yyyy-MM-dd#HH:mm:ss:SSS."""
    assert parse_timestamp("1700000000000") == 1700000000000
    assert parse_timestamp("-1") == -1
    assert abs(parse_timestamp("now") - parse_timestamp("now")) < 1000
    assert parse_timestamp("2024-01-02#03:04:05:006") % 1000 == 6
