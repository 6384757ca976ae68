"""AdminBrokerProcessor: topics, runtime info, stats with fastjson MessageQueue keys, groups."""

from __future__ import annotations

import json
import re

import pytest
from processor_support import FakeConn, heartbeat_cmd, send_v2

from rocketmq_emu.broker.processors.admin import AdminBrokerProcessor
from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


@pytest.fixture
def changes():
    return []


@pytest.fixture
def admin(ctx, changes):
    return AdminBrokerProcessor(ctx, lambda: changes.append(1))


@pytest.fixture
def send(ctx):
    p = SendMessageProcessor(ctx)
    return lambda topic, queue_id=0: p.process_send(send_v2(topic, queue_id=queue_id), FakeConn())


def req(code, body=b"", **ext):
    return RemotingCommand.request(code, {k: str(v) for k, v in ext.items()}, body)


def create(topic, read=2, write=2, perm=6):
    return req(RequestCode.UPDATE_AND_CREATE_TOPIC, topic=topic, defaultTopic="TBW102",
               readQueueNums=read, writeQueueNums=write, perm=perm,
               topicFilterType="SINGLE_TAG", topicSysFlag=0, order="false")


def mq_map(body: bytes) -> dict:
    """Parse fastjson's object-keyed map back into {(topic, queueId): value}."""
    text = body.decode()
    out = {}
    for key, value in re.findall(r'(\{"brokerName"[^}]*\}):(\{[^}]*\})', text):
        k = json.loads(key)
        out[(k["topic"], k["queueId"])] = json.loads(value)
    return out


def test_create_topic_stores_its_config_and_re_registers(ctx, admin, changes):
    """UPDATE_AND_CREATE_TOPIC creates the topic and triggers a name-server registration."""
    resp = admin.update_and_create_topic(create("NewT", 3, 5), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    tc = ctx.topic_config.select_topic_config("NewT")
    assert (tc.read_queue_nums, tc.write_queue_nums) == (3, 5) and changes == [1]


def test_create_topic_refuses_system_topics(ctx, admin):
    """A system topic name is refused with 'conflict with system topic'."""
    resp = admin.update_and_create_topic(create("SCHEDULE_TOPIC_XXXX"), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR and "conflict with system topic" in resp.remark


def test_delete_topic_forgets_config_queues_and_offsets(ctx, admin, send, changes):
    """DELETE_TOPIC_IN_BROKER removes the topic, its consume queues and offsets."""
    send("Gone")
    ctx.consumer_offsets.commit_offset("x", "g", "Gone", 0, 1)
    admin.delete_topic(req(RequestCode.DELETE_TOPIC_IN_BROKER, topic="Gone"), FakeConn())
    assert ctx.topic_config.select_topic_config("Gone") is None
    assert ctx.store.get_max_offset_in_queue("Gone", 0) == 0
    assert ctx.consumer_offsets.query_offset("g", "Gone", 0) == -1 and changes == [1]


def test_all_topic_config_is_the_serialize_wrapper(ctx, admin, send):
    """GET_ALL_TOPIC_CONFIG answers the TopicConfigSerializeWrapper."""
    send("T1")
    body = json.loads(admin.get_all_topic_config(req(RequestCode.GET_ALL_TOPIC_CONFIG),
                                                 FakeConn()).body)
    assert body["topicConfigTable"]["T1"]["writeQueueNums"] == 4
    assert set(body["dataVersion"]) == {"counter", "timestamp"}


def test_runtime_info_uses_rocketmq_key_names(ctx, admin, send):
    """GET_BROKER_RUNTIME_INFO is a KVTable with RocketMQ's keys and counters."""
    send("T1")
    body = json.loads(admin.get_broker_runtime_info(req(RequestCode.GET_BROKER_RUNTIME_INFO),
                                                    FakeConn()).body)
    table = body["table"]
    assert table["brokerVersionDesc"] == "V4_9_8" and table["msgPutTotalTodayNow"] == "1"
    assert table["commitLogDirCapacity"].startswith("Total : ")
    assert all(isinstance(v, str) for v in table.values())


def test_broker_config_is_java_properties(ctx, admin):
    """GET_BROKER_CONFIG answers key=value lines with RocketMQ's key names."""
    resp = admin.get_broker_config(req(RequestCode.GET_BROKER_CONFIG), FakeConn())
    lines = resp.body.decode().splitlines()
    assert "brokerClusterName=DefaultCluster" in lines and "autoCreateTopicEnable=true" in lines
    assert "version" in resp.ext_fields


def test_topic_stats_use_message_queue_object_keys(ctx, admin, send):
    """GET_TOPIC_STATS_INFO writes Map<MessageQueue,TopicOffset> with object keys."""
    send("S1", 1)
    send("S1", 1)
    body = admin.get_topic_stats_info(req(RequestCode.GET_TOPIC_STATS_INFO, topic="S1"),
                                      FakeConn()).body
    stats = mq_map(body)
    assert stats[("S1", 1)]["maxOffset"] == 2 and stats[("S1", 0)]["maxOffset"] == 0
    assert stats[("S1", 1)]["lastUpdateTimestamp"] > 0
    assert len(stats) == 4
    assert body.startswith(b'{"offsetTable":{{"brokerName":')


def test_consume_stats_compare_broker_and_consumer_offsets(ctx, admin, send):
    """GET_CONSUME_STATS reports brokerOffset and consumerOffset per queue."""
    for _ in range(3):
        send("S2")
    ctx.consumer_offsets.commit_offset("x", "g", "S2", 0, 2)
    body = admin.get_consume_stats(req(RequestCode.GET_CONSUME_STATS, consumerGroup="g",
                                       topic="S2"), FakeConn()).body
    q0 = mq_map(body)[("S2", 0)]
    assert (q0["brokerOffset"], q0["consumerOffset"]) == (3, 2)
    assert body.startswith(b'{"consumeTps":0.0,"offsetTable":{{')


def test_consumer_connection_list_describes_the_group(ctx, admin):
    """GET_CONSUMER_CONNECTION_LIST lists connections, consume settings and subscriptions."""
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("c1", "G", "T"), FakeConn(7))
    resp = admin.get_consumer_connection_list(
        req(RequestCode.GET_CONSUMER_CONNECTION_LIST, consumerGroup="G"), FakeConn())
    body = json.loads(resp.body)
    assert body["connectionSet"][0]["clientId"] == "c1"
    assert body["connectionSet"][0]["clientAddr"] == "192.168.1.20:7"
    assert body["messageModel"] == "CLUSTERING" and "T" in body["subscriptionTable"]


def test_consumer_connection_list_of_an_offline_group(ctx, admin):
    """An unknown group answers CONSUMER_NOT_ONLINE."""
    resp = admin.get_consumer_connection_list(
        req(RequestCode.GET_CONSUMER_CONNECTION_LIST, consumerGroup="nobody"), FakeConn())
    assert resp.code == ResponseCode.CONSUMER_NOT_ONLINE


def test_subscription_group_create_then_list(ctx, admin):
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP then GET_ALL_SUBSCRIPTIONGROUP_CONFIG shows it."""
    body = json.dumps({"groupName": "SG", "retryMaxTimes": 3}).encode()
    admin.update_subscription_group(req(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body),
                                    FakeConn())
    listed = json.loads(admin.get_all_subscription_group(
        req(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), FakeConn()).body)
    assert listed["subscriptionGroupTable"]["SG"]["retryMaxTimes"] == 3


def test_topic_consume_by_who_merges_members_and_offsets(ctx, admin):
    """QUERY_TOPIC_CONSUME_BY_WHO lists subscribed groups and groups with offsets."""
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("c1", "G1", "W"), FakeConn())
    ctx.consumer_offsets.commit_offset("x", "G2", "W", 0, 1)
    resp = admin.query_topic_consume_by_who(req(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                                topic="W"), FakeConn())
    assert json.loads(resp.body)["groupList"] == ["G1", "G2"]


def test_system_topic_list_contains_the_builtins(ctx, admin):
    """GET_SYSTEM_TOPIC_LIST_FROM_BROKER lists TBW102 and SCHEDULE_TOPIC_XXXX."""
    resp = admin.get_system_topic_list(req(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER),
                                       FakeConn())
    names = json.loads(resp.body)["topicList"]
    assert "TBW102" in names and "SCHEDULE_TOPIC_XXXX" in names


def test_update_broker_config_changes_the_running_config(ctx, admin):
    """UPDATE_BROKER_CONFIG applies key=value lines; GET_BROKER_CONFIG then shows them."""
    body = b"longPollingEnable=false\nshortPollingTimeMills=300\n"
    resp = admin.update_broker_config(req(RequestCode.UPDATE_BROKER_CONFIG, body), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    assert ctx.config.long_polling_enable is False and ctx.config.short_polling_time_mills == 300
    lines = admin.get_broker_config(req(RequestCode.GET_BROKER_CONFIG), FakeConn()).body
    assert b"shortPollingTimeMills=300\n" in lines


def test_update_broker_config_refuses_a_bad_number(ctx, admin):
    """A value that does not parse is SYSTEM_ERROR naming the key; nothing changes."""
    resp = admin.update_broker_config(
        req(RequestCode.UPDATE_BROKER_CONFIG, b"shortPollingTimeMills=soon\n"), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR and "shortPollingTimeMills" in resp.remark
    assert ctx.config.short_polling_time_mills == 1000
