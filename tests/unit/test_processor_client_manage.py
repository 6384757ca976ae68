"""Heartbeats, group membership notifications, channel expiry and orderly-consumer locks."""

from __future__ import annotations

import json

import pytest
from processor_support import FakeConn, heartbeat_cmd

from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.consumer_manage import ConsumerManageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


@pytest.fixture
def cm(ctx):
    return ClientManageProcessor(ctx)


def consumer_list(ctx, group):
    cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                  {"consumerGroup": group})
    return ConsumerManageProcessor(ctx).get_consumer_list_by_group(cmd, FakeConn())


def test_heartbeat_registers_the_group_and_its_subscription(ctx, cm):
    """HEART_BEAT registers group → client id, consume settings and subscriptions."""
    resp = cm.heart_beat(heartbeat_cmd("c1", "G", "T", sub="a || b"), FakeConn())
    assert resp.code == ResponseCode.SUCCESS and resp.version >= 409
    info = ctx.consumer_manager.get_consumer_group_info("G")
    assert info.all_client_ids() == ["c1"]
    assert (info.consume_type, info.message_model) == ("CONSUME_PASSIVELY", "CLUSTERING")
    assert info.subscription_table["T"].tags_set == ["a", "b"]


def test_heartbeat_with_integer_enums_reads_them_as_ordinals(ctx, cm):
    """C++ clients send consumeType 1 / messageModel 1 / consumeFromWhere 0 as numbers."""
    cm.heart_beat(heartbeat_cmd("c1", "G", "T", enums_as_ints=True), FakeConn())
    info = ctx.consumer_manager.get_consumer_group_info("G")
    assert (info.consume_type, info.message_model, info.consume_from_where) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")


def test_heartbeat_creates_the_retry_topic(ctx, cm):
    """A consumer group's heartbeat creates %RETRY%group with one read/write queue."""
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), FakeConn())
    tc = ctx.topic_config.select_topic_config("%RETRY%G")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)


def test_heartbeat_registers_producers(ctx, cm):
    """A producer group in the heartbeat is registered on the connection."""
    conn = FakeConn()
    cm.heart_beat(heartbeat_cmd("p1", "", "T", producer="PG"), conn)
    assert ctx.producer_manager.get_available_channel("PG") is conn


def test_empty_heartbeat_body_is_system_error(ctx, cm):
    """A heartbeat without a body answers SYSTEM_ERROR instead of failing."""
    resp = cm.heart_beat(RemotingCommand.request(RequestCode.HEART_BEAT), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR


def test_a_joining_member_triggers_notify_to_every_member(ctx, cm):
    """When a second client joins, both connections get NOTIFY_CONSUMER_IDS_CHANGED."""
    a, b = FakeConn(1), FakeConn(2)
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), a)
    a.sent.clear()
    cm.heart_beat(heartbeat_cmd("c2", "G", "T"), b)
    assert a.notified() == ["G"] and b.notified() == ["G"]
    assert a.sent[0].is_oneway


def test_a_repeated_heartbeat_does_not_notify(ctx, cm):
    """An unchanged heartbeat (same connection, same topics) notifies nobody."""
    a = FakeConn()
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), a)
    a.sent.clear()
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), a)
    assert a.notified() == []


def test_unregister_client_notifies_the_remaining_members(ctx, cm):
    """UNREGISTER_CLIENT removes the client; the others are notified."""
    a, b = FakeConn(1), FakeConn(2)
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), a)
    cm.heart_beat(heartbeat_cmd("c2", "G", "T"), b)
    a.sent.clear()
    cm.unregister_client(RemotingCommand.request(
        RequestCode.UNREGISTER_CLIENT, {"clientID": "c2", "consumerGroup": "G"}), b)
    assert ctx.consumer_manager.get_consumer_group_info("G").all_client_ids() == ["c1"]
    assert a.notified() == ["G"]


def test_connection_close_notifies_the_remaining_members(ctx, cm):
    """A closed connection leaves its groups; the remaining members are notified."""
    a, b = FakeConn(1), FakeConn(2)
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), a)
    cm.heart_beat(heartbeat_cmd("c2", "G", "T"), b)
    a.sent.clear()
    ctx.consumer_manager.do_channel_close_event(b)
    assert a.notified() == ["G"]
    assert ctx.consumer_manager.get_consumer_group_info("G").all_client_ids() == ["c1"]


def test_last_member_leaving_removes_the_group(ctx, cm):
    """GET_CONSUMER_LIST_BY_GROUP answers 'no consumer' once the last member left."""
    a = FakeConn()
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), a)
    ctx.consumer_manager.do_channel_close_event(a)
    resp = consumer_list(ctx, "G")
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "no consumer for this group, G"


def test_silent_channel_expires_after_120_seconds(ctx, cm):
    """A member without heartbeat for more than 120 s is dropped and the rest notified."""
    a, b = FakeConn(1), FakeConn(2)
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), a)
    cm.heart_beat(heartbeat_cmd("c2", "G", "T"), b)
    ctx.clock.advance(100)
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), a)
    a.sent.clear()
    ctx.clock.advance(21)
    expired = ctx.consumer_manager.scan_not_active_channel()
    assert [i.client_id for i in expired] == ["c2"]
    assert a.notified() == ["G"]
    assert ctx.consumer_manager.get_consumer_group_info("G").all_client_ids() == ["c1"]


def test_channel_within_120_seconds_is_kept(ctx, cm):
    """A member heard from 120 s ago exactly is not yet expired."""
    cm.heart_beat(heartbeat_cmd("c1", "G", "T"), FakeConn())
    ctx.clock.advance(120)
    assert ctx.consumer_manager.scan_not_active_channel() == []


def lock_cmd(client_id, queue_ids, group="G", code=RequestCode.LOCK_BATCH_MQ):
    mqs = [{"brokerName": "b", "queueId": q, "topic": "T"} for q in queue_ids]
    return RemotingCommand.request(code, body=json.dumps(
        {"consumerGroup": group, "clientId": client_id, "mqSet": mqs}).encode())


def locked(resp):
    return [mq["queueId"] for mq in json.loads(resp.body)["lockOKMQSet"]]


def test_lock_is_exclusive_per_queue(ctx, cm):
    """A queue locked by one client is refused to another; free queues are granted."""
    assert locked(cm.lock_batch_mq(lock_cmd("a", [0, 1]), FakeConn())) == [0, 1]
    assert locked(cm.lock_batch_mq(lock_cmd("b", [1, 2]), FakeConn())) == [2]


def test_lock_expires_after_60_seconds(ctx, cm):
    """An unrenewed lock can be taken by another client after 60 s."""
    cm.lock_batch_mq(lock_cmd("a", [0]), FakeConn())
    ctx.clock.advance(59)
    assert locked(cm.lock_batch_mq(lock_cmd("b", [0]), FakeConn())) == []
    ctx.clock.advance(2)
    assert locked(cm.lock_batch_mq(lock_cmd("b", [0]), FakeConn())) == [0]


def test_unlock_releases_only_the_owners_queues(ctx, cm):
    """UNLOCK_BATCH_MQ frees the owner's queues; another client's unlock changes nothing."""
    cm.lock_batch_mq(lock_cmd("a", [0, 1]), FakeConn())
    cm.unlock_batch_mq(lock_cmd("b", [0], code=RequestCode.UNLOCK_BATCH_MQ), FakeConn())
    cm.unlock_batch_mq(lock_cmd("a", [1], code=RequestCode.UNLOCK_BATCH_MQ), FakeConn())
    assert locked(cm.lock_batch_mq(lock_cmd("b", [0, 1]), FakeConn())) == [1]


def test_check_client_config_refuses_sql92_without_property_filter(ctx, cm):
    """CHECK_CLIENT_CONFIG: SQL92 needs enablePropertyFilter; TAG passes."""
    def check(kind):
        body = json.dumps({"clientId": "c", "group": "G", "subscriptionData": {
            "topic": "T", "subString": "a > 1", "expressionType": kind}}).encode()
        return cm.check_client_config(
            RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=body), FakeConn())

    assert check("TAG").code == ResponseCode.SUCCESS
    assert check("SQL92").code == ResponseCode.SYSTEM_ERROR
