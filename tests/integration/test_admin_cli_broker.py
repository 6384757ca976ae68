"""``rmq-emu admin`` broker subcommands (admin_cli_broker) and queryMsgById by UNIQ_KEY,
against a running name server + broker."""

from __future__ import annotations

import json
import logging

import pytest_twisted
from issue7_support import create_topic, send_bodies
from twisted.internet import reactor

from rocketmq_emu.client.admin_cli import build_parser, execute
from rocketmq_emu.client.producer import Producer


async def admin(namesrv, *argv: str) -> tuple[int, str]:
    """Run one admin command in-process (same reactor as the cluster)."""
    args = build_parser().parse_args([argv[0], "-n", namesrv.addr, *argv[1:]])
    return await execute(args, reactor)


async def _send(namesrv, topic, n):
    return await send_bodies(namesrv.addr, topic, [f"body-{i}".encode() for i in range(n)],
                             group="adm-bp")


@pytest_twisted.ensureDeferred
async def test_broker_consume_stats_prints_lagging_queues(cluster):
    """brokerConsumeStats prints the group's queue with its diff and the Diff Total."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "BcsT", 1)
    await _send(namesrv, "BcsT", 3)
    broker.store.subscription_groups.find_subscription_group_config("bcs-g")
    broker.store.consumer_offsets.commit_offset("t", "bcs-g", "BcsT", 0, 1)
    status, text = await admin(namesrv, "brokerConsumeStats", "-b", broker.addr)
    assert status == 0, text
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["#Topic", "#Group"]
    assert any(line.split()[:2] == ["BcsT", "bcs-g"] and line.split()[6] == "2"
               for line in lines[1:])
    assert lines[-1] == "Diff Total: 2"


@pytest_twisted.ensureDeferred
async def test_query_cq_prints_the_units_like_mqadmin(cluster):
    """queryCq prints max/min and one ConsumeQueueData per unit from the index."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "CqT", 1)
    await _send(namesrv, "CqT", 3)
    status, text = await admin(namesrv, "queryCq", "-t", "CqT", "-q", "0", "-i", "1", "-c", "5")
    assert status == 0, text
    assert "max: 3, min: 0" in text
    assert [line for line in text.splitlines() if line.startswith("idx: ")] == \
        ["idx: 1", "idx: 2"]
    assert "ConsumeQueueData{physicOffset=" in text and "msg='null'}" in text


@pytest_twisted.ensureDeferred
async def test_producer_lists_the_connected_producer(cluster):
    """producer prints each instance of each producer group the broker knows."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "PrT", 1)
    p = Producer("adm-live-p", namesrv.addr, reactor=reactor)
    await p.start()
    try:
        from rocketmq_emu.client.message import Message

        await p.send(Message("PrT", b"x"))
        await p.instance.send_heartbeat_to_all_brokers()  # the periodic one, now
        status, text = await admin(namesrv, "producer", "-b", broker.addr)
        assert status == 0, text
        assert "producer group (adm-live-p) instance : clientId=" in text
        assert "remoteIP=/127.0.0.1:" in text
    finally:
        await p.shutdown()


@pytest_twisted.ensureDeferred
async def test_stats_all_counts_messages_put_in_the_last_minute(cluster):
    """statsAll shows the topic's InMsg24Hour from TOPIC_PUT_NUMS once sampled."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "SaT", 1)
    await _send(namesrv, "SaT", 4)
    next(p for p in broker.processors if hasattr(p, "stats_items")).stats_items \
        .sampling_in_seconds()
    status, doc = await admin(namesrv, "statsAll", "-t", "SaT", "--json")
    assert status == 0, doc
    [row] = json.loads(doc)
    assert (row["topic"], row["inMsg24Hour"], row["outMsg24Hour"]) == ("SaT", 4, "NO_CONSUMER")


@pytest_twisted.ensureDeferred
async def test_clone_group_offset_copies_the_offsets(cluster):
    """cloneGroupOffset writes the source group's offsets for the destination group."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "ClT", 1)
    await _send(namesrv, "ClT", 3)
    broker.store.consumer_offsets.commit_offset("t", "cl-src", "ClT", 0, 2)
    status, text = await admin(namesrv, "cloneGroupOffset", "-s", "cl-src", "-d", "cl-dst",
                               "-t", "ClT")
    assert status == 0, text
    assert text == "clone group offset success. srcGroup[cl-src], destGroup=[cl-dst], topic[ClT]"
    assert broker.store.consumer_offsets.query_offset("cl-dst", "ClT", 0) == 2


@pytest_twisted.ensureDeferred
async def test_clean_commands_print_success_for_the_cluster(cluster):
    """cleanExpiredCQ, cleanUnusedTopic and deleteExpiredCommitLog reach every broker of -c."""
    namesrv, broker = cluster
    for name in ("cleanExpiredCQ", "cleanUnusedTopic", "deleteExpiredCommitLog"):
        status, text = await admin(namesrv, name, "-c", "DefaultCluster")
        assert (status, text) == (0, "success"), name


@pytest_twisted.ensureDeferred
async def test_broker_status_without_broker_or_cluster_says_so(cluster):
    """brokerStatus with neither -b nor -c is a usage error in one line."""
    namesrv, _broker = cluster
    status, text = await admin(namesrv, "brokerStatus")
    assert status == 2
    assert text == "rmq-emu admin brokerStatus: needs -b brokerAddr or -c clusterName"


@pytest_twisted.ensureDeferred
async def test_query_msg_by_uniq_key_finds_the_message_without_a_bogus_connection(
        cluster, caplog):
    """queryMsgById -i UNIQ_KEY -t topic finds the message by QUERY_MESSAGE and never
    connects to the address the id's bytes decode to (no 'malformed frame')."""
    namesrv, broker = cluster
    await create_topic(namesrv.addr, "UqT", 1)
    [sent] = await _send(namesrv, "UqT", 1)
    broker.store.flush()
    caplog.set_level(logging.DEBUG)
    status, text = await admin(namesrv, "queryMsgById", "-i", sent.msg_id, "-t", "UqT")
    assert status == 0, text
    assert f"OffsetID:            {sent.offset_msg_id}" in text
    assert "malformed" not in caplog.text and "VIEW_MESSAGE_BY_ID" not in caplog.text


@pytest_twisted.ensureDeferred
async def test_query_msg_by_uniq_key_without_topic_says_what_is_missing(cluster):
    """queryMsgById -i UNIQ_KEY without -t: mqadmin's no-message answer and the hint."""
    namesrv, _broker = cluster
    await create_topic(namesrv.addr, "UqN", 1)
    [sent] = await _send(namesrv, "UqN", 1)
    status, text = await admin(namesrv, "queryMsgById", "-i", sent.msg_id)
    assert status == 1
    assert "query message by id finished, but no message." in text and "-t topic" in text
