"""AdminStatsProcessor (303, 308, 314, 315, 317, 321, 328): bodies with the Java field names."""

from __future__ import annotations

import json
import re

import pytest
from processor_support import FakeConn, heartbeat_cmd, pull_cmd, send_v2

from rocketmq_emu.broker.processors.admin_stats import AdminStatsProcessor, java_date
from rocketmq_emu.broker.processors.admin_stats_items import StatsItem
from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.pull import PullMessageProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


@pytest.fixture
def proc(ctx):
    return AdminStatsProcessor(ctx)


@pytest.fixture
def send(ctx):
    p = SendMessageProcessor(ctx)
    return lambda topic, queue_id=0: p.process_send(send_v2(topic, queue_id=queue_id), FakeConn())


def req(code, **ext):
    return RemotingCommand.request(code, {k: str(v) for k, v in ext.items()})


def call(proc, code, **ext):
    return proc.handlers()[code](req(code, **ext), FakeConn())


def test_time_span_body_has_queue_time_span_fields(ctx, proc, send):
    """303 lists every write queue as a QueueTimeSpan, including the *TimeStampStr getters."""
    send("TS")
    resp = call(proc, RequestCode.QUERY_CONSUME_TIME_SPAN, topic="TS", group="g")
    spans = json.loads(resp.body)["consumeTimeSpanSet"]
    assert len(spans) == 4
    assert list(spans[0]) == ["consumeTimeStamp", "consumeTimeStampStr", "delayTime",
                              "maxTimeStamp", "maxTimeStampStr", "messageQueue",
                              "minTimeStamp", "minTimeStampStr"]


def test_time_span_of_a_lagging_group_reports_the_wait(ctx, proc, send):
    """303: a group at offset 0 has waited since the first message's store time."""
    send("TS2")
    ctx.consumer_offsets.commit_offset("c", "g", "TS2", 0, 0)
    stored = ctx.store.get_message_store_timestamp("TS2", 0, 0)
    ctx.clock.advance(5)
    q0 = json.loads(call(proc, RequestCode.QUERY_CONSUME_TIME_SPAN, topic="TS2",
                         group="g").body)["consumeTimeSpanSet"][0]
    assert q0["minTimeStamp"] == q0["maxTimeStamp"] == q0["consumeTimeStamp"] == stored
    assert q0["delayTime"] == ctx.now_ms() - stored
    assert q0["minTimeStampStr"] == java_date(stored)


def test_time_span_of_an_unknown_topic(proc):
    """303 answers TOPIC_NOT_EXIST for a topic without config."""
    resp = call(proc, RequestCode.QUERY_CONSUME_TIME_SPAN, topic="Nope", group="g")
    assert (resp.code, resp.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[Nope] not exist")


def test_java_date_uses_the_hash_separated_pattern():
    """UtilAll.YYYY_MM_DD_HH_MM_SS_SSS is yyyy-MM-dd#HH:mm:ss:SSS."""
    assert re.fullmatch(r"\d{4}-\d\d-\d\d#\d\d:\d\d:\d\d:123", java_date(1_700_000_000_123))


def test_correction_offset_takes_the_minimum_and_marks_a_behind_compare_group(ctx, proc, send):
    """308: min offset over the other groups; Long.MAX where the compare group is behind."""
    for _ in range(6):
        send("CO", 0)
        send("CO", 1)
    offsets = ctx.consumer_offsets
    offsets.commit_offset("c", "a", "CO", 0, 5)
    offsets.commit_offset("c", "b", "CO", 0, 3)
    offsets.commit_offset("c", "b", "CO", 1, 4)
    offsets.commit_offset("c", "cmp", "CO", 1, 2)
    body = json.loads(call(proc, RequestCode.QUERY_CORRECTION_OFFSET, topic="CO",
                           compareGroup="cmp", filterGroups="a,cmp").body)
    assert body == {"correctionOffsets": {"0": 3, "1": 2**63 - 1}}


def test_clone_group_offset_copies_every_topic_without_a_topic(ctx, proc, send):
    """314 with a blank topic clones each topic the source group has offsets on."""
    send("C1")
    send("C2")
    ctx.consumer_offsets.commit_offset("c", "src", "C1", 0, 1)
    ctx.consumer_offsets.commit_offset("c", "src", "C2", 0, 1)
    resp = call(proc, RequestCode.CLONE_GROUP_OFFSET, srcGroup="src", destGroup="dst",
                offline="false")
    assert resp.code == ResponseCode.SUCCESS
    assert ctx.consumer_offsets.which_topic_by_consumer("dst") == {"C1", "C2"}


def test_clone_group_offset_skips_a_topic_the_online_group_does_not_subscribe(ctx, proc, send):
    """314: an online source group's unsubscribed topics are not cloned unless offline."""
    send("C3")
    ctx.consumer_offsets.commit_offset("c", "src", "C3", 0, 1)
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("c1", "src", "Other"), FakeConn(7))
    call(proc, RequestCode.CLONE_GROUP_OFFSET, srcGroup="src", destGroup="dst", topic="C3")
    assert ctx.consumer_offsets.query_offset("dst", "C3", 0) == -1


def test_stats_data_of_an_item_never_counted(proc):
    """315: no such stats item -> SYSTEM_ERROR 'The stats <name> <key> not exist'."""
    resp = call(proc, RequestCode.VIEW_BROKER_STATS_DATA, statsName="TOPIC_PUT_NUMS",
                statsKey="Never")
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR,
                                        "The stats <TOPIC_PUT_NUMS> <Never> not exist")


def test_stats_data_counts_puts_in_the_minute_window(ctx, proc, send):
    """315: TOPIC_PUT_NUMS' minute window sums the puts sampled in it (BrokerStatsData)."""
    proc.stats_items.sampling_in_seconds()
    for _ in range(3):
        send("ST")
    ctx.clock.advance(10)
    proc.stats_items.sampling_in_seconds()
    body = json.loads(call(proc, RequestCode.VIEW_BROKER_STATS_DATA,
                           statsName="TOPIC_PUT_NUMS", statsKey="ST").body)
    assert list(body) == ["statsDay", "statsHour", "statsMinute"]
    assert body["statsMinute"] == {"avgpt": 1.0, "sum": 3, "tps": 0.3}
    assert body["statsDay"] == {"avgpt": 0.0, "sum": 0, "tps": 0.0}


def test_stats_item_keeps_seven_minute_snapshots():
    """StatsItem.samplingInSeconds keeps the last 7 snapshots (a one-minute window)."""
    item = StatsItem()
    for i in range(10):
        item.value += 10
        item.times += 1
        item.sample("minute", i * 10_000)
    assert len(item.lists["minute"]) == 7
    assert item.snapshot("minute").sum == 60


def test_broker_totals_history_pairs_put_and_get_totals_per_snapshot(ctx, proc, send):
    """The broker's put and get totals at each 10 s snapshot, a total 0 before its item's
    zero baseline and an instant one of them does not know left out."""
    items = proc.stats_items
    assert items.broker_totals_history() == []
    send("H")
    ctx.clock.advance(10)
    items.sampling_in_seconds()  # the put item starts: baseline 10 s back, then 1
    t1 = int(ctx.clock.seconds() * 1000)
    PullMessageProcessor(ctx).process(pull_cmd("H", 0, 0, group="hg"), FakeConn())
    send("H")
    ctx.clock.advance(10.5)
    items.sampling_in_seconds()  # the get item starts: its baseline falls between puts'
    t2 = int(ctx.clock.seconds() * 1000)
    assert items.broker_totals_history() == [(t1 - 10_000, 0, 0), (t1, 1, 0), (t2, 2, 1)]
    assert ctx.stats_items is items


def test_stats_group_get_nums_is_keyed_topic_at_group(ctx, proc, send):
    """315: pulled messages count under GROUP_GET_NUMS 'topic@group'."""
    send("GG")
    PullMessageProcessor(ctx).process(pull_cmd("GG", 0, 0, group="gg"), FakeConn())
    proc.stats_items.sampling_in_seconds()
    resp = call(proc, RequestCode.VIEW_BROKER_STATS_DATA, statsName="GROUP_GET_NUMS",
                statsKey="GG@gg")
    assert json.loads(resp.body)["statsMinute"]["sum"] == 1


def test_broker_consume_stats_lists_each_subscription_group(ctx, proc, send):
    """317: ConsumeStatsList with brokerAddr, group -> [ConsumeStats] and totalDiff."""
    for _ in range(3):
        send("BC")
    ctx.subscription_groups.find_subscription_group_config("bcg")
    ctx.consumer_offsets.commit_offset("c", "bcg", "BC", 0, 1)
    body = call(proc, RequestCode.GET_BROKER_CONSUME_STATS, isOrder="false").body
    assert body.startswith(b'{"brokerAddr":"10.0.0.5:10911","consumeStatsList":[')
    assert body.endswith(b'],"totalDiff":2}')
    assert b'{"bcg":[{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,' \
           b'"topic":"BC"}:{"brokerOffset":3,"consumerOffset":1,"lastTimestamp":' in body


def test_broker_consume_stats_with_is_order_skips_plain_topics(ctx, proc, send):
    """317 with isOrder=true leaves out topics that are not order topics."""
    send("BO")
    ctx.subscription_groups.find_subscription_group_config("bog")
    ctx.consumer_offsets.commit_offset("c", "bog", "BO", 0, 0)
    body = call(proc, RequestCode.GET_BROKER_CONSUME_STATS, isOrder="true").body
    assert b'{"bog":[]}' in body


def test_query_consume_queue_returns_raw_units(ctx, proc, send):
    """321: QueryConsumeQueueResponseBody with ConsumeQueueData units from the index."""
    for _ in range(3):
        send("QC")
    body = json.loads(call(proc, RequestCode.QUERY_CONSUME_QUEUE, topic="QC", queueId=0,
                           index=1, count=10).body)
    assert (body["minQueueIndex"], body["maxQueueIndex"]) == (0, 3)
    units = body["queueData"]
    assert len(units) == 2
    assert list(units[0]) == ["eval", "physicOffset", "physicSize", "tagsCode"]
    assert units[0]["physicOffset"] == ctx.store.get_consume_queue_units("QC", 0, 1, 1)[0][0]


def test_query_consume_queue_names_an_offline_group(ctx, proc, send):
    """321 with a consumerGroup not online: filterData says so, no subscriptionData."""
    send("QO")
    body = json.loads(call(proc, RequestCode.QUERY_CONSUME_QUEUE, topic="QO", queueId=0,
                           index=0, count=1, consumerGroup="off").body)
    assert body["filterData"] == "off@QO is not online!" and "subscriptionData" not in body


def test_query_consume_queue_of_a_missing_queue(proc):
    """321 on a queue the store does not have: SYSTEM_ERROR '<qid>@<topic> is not exist!'."""
    resp = call(proc, RequestCode.QUERY_CONSUME_QUEUE, topic="QX", queueId=2, index=0, count=1)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "2@QX is not exist!")


def test_query_consume_queue_past_the_end_has_no_body(ctx, proc, send):
    """321 with an index past the last unit: SUCCESS, a remark and no body, as Java."""
    send("QE")
    resp = call(proc, RequestCode.QUERY_CONSUME_QUEUE, topic="QE", queueId=0, index=5, count=1)
    assert (resp.code, resp.remark, resp.body) == (ResponseCode.SUCCESS,
                                                   "Index 5 of 0@QE is not exist!", b"")


def test_all_producer_info_is_a_producer_table(ctx, proc):
    """328: ProducerTableInfo {"data": {group: [ProducerInfo]}} with remoteIP as /ip:port."""
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("p1", "", "T", producer="PG"),
                                          FakeConn(9))
    data = json.loads(call(proc, RequestCode.GET_ALL_PRODUCER_INFO).body)["data"]
    [info] = data["PG"]
    assert list(info) == ["clientId", "language", "lastUpdateTimestamp", "remoteIP", "version"]
    assert (info["clientId"], info["remoteIP"]) == ("p1", "/192.168.1.20:9")
