"""Client-management requests with an empty or absent group (C++ producers send
``consumerGroup=""`` in UNREGISTER_CLIENT) never create a subscription group, a retry topic or a
consumer offset, so the store always opens again."""

from __future__ import annotations

import json

import pytest
from processor_support import FakeConn

from rocketmq_emu.broker.config_files import SubscriptionGroupManager, open_config_managers
from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.consumer_manage import ConsumerManageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


@pytest.fixture
def cm(ctx):
    return ClientManageProcessor(ctx)


def unregister(cm, **fields):
    cmd = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {"clientID": "c1", **fields})
    return cm.unregister_client(cmd, FakeConn())


def blank_groups(ctx) -> list[str]:
    return [g for g in ctx.subscription_groups.subscription_group_table if not g.strip()]


def test_producer_unregister_with_empty_consumer_group_creates_no_group(ctx, cm):
    """UNREGISTER_CLIENT producerGroup=PID consumerGroup="" (the C++ producer's shutdown)
    succeeds and leaves no "" group in memory or in subscriptionGroup.json."""
    assert unregister(cm, producerGroup="PID_a", consumerGroup="").code == ResponseCode.SUCCESS
    assert blank_groups(ctx) == []
    path = ctx.subscription_groups.path
    try:
        with open(path) as f:
            table = json.load(f)["subscriptionGroupTable"]
    except FileNotFoundError:
        table = {}
    assert "" not in table


def test_unregister_without_consumer_group_creates_no_group(ctx, cm):
    """UNREGISTER_CLIENT with only producerGroup succeeds and creates nothing."""
    before = set(ctx.subscription_groups.subscription_group_table)
    assert unregister(cm, producerGroup="PID_a").code == ResponseCode.SUCCESS
    assert set(ctx.subscription_groups.subscription_group_table) == before


def test_heartbeat_with_a_blank_consumer_group_creates_no_group_or_retry_topic(ctx, cm):
    """A consumer entry with groupName "" in HEART_BEAT is ignored: no group, no %RETRY% topic."""
    body = {"clientID": "c1", "producerDataSet": [{"groupName": ""}], "consumerDataSet": [
        {"groupName": "", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
         "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": []}]}
    cmd = RemotingCommand.request(RequestCode.HEART_BEAT, body=json.dumps(body).encode())
    assert cm.heart_beat(cmd, FakeConn()).code == ResponseCode.SUCCESS
    assert blank_groups(ctx) == []
    assert ctx.topic_config.select_topic_config("%RETRY%") is None


def test_check_client_config_with_empty_fields_succeeds_and_creates_nothing(ctx, cm):
    """CHECK_CLIENT_CONFIG with an empty group and no subscription answers SUCCESS."""
    body = json.dumps({"clientId": "", "group": ""}).encode()
    resp = cm.check_client_config(
        RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=body), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    assert blank_groups(ctx) == []


def test_offset_commit_with_a_blank_group_is_not_stored(ctx):
    """UPDATE_CONSUMER_OFFSET consumerGroup="" answers SUCCESS but stores nothing."""
    cmd = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": "", "topic": "T", "queueId": "0", "commitOffset": "3"})
    assert ConsumerManageProcessor(ctx).update_consumer_offset(cmd, FakeConn()).code == \
        ResponseCode.SUCCESS
    assert ctx.consumer_offsets.offset_table == {}


@pytest.mark.parametrize("group", ["", "   ", None])
def test_find_never_creates_a_blank_group(tmp_path, group):
    """find_subscription_group_config of a blank or missing name answers None, writes nothing."""
    m = SubscriptionGroupManager(str(tmp_path / "subscriptionGroup.json"))
    assert m.find_subscription_group_config(group) is None
    assert not (tmp_path / "subscriptionGroup.json").exists()


def test_find_still_auto_creates_a_named_group(tmp_path):
    """A non-blank unknown group is created and persisted as in 4.9.8."""
    m = SubscriptionGroupManager(str(tmp_path / "subscriptionGroup.json"))
    assert m.find_subscription_group_config("GID_x").group_name == "GID_x"
    assert "GID_x" in json.loads((tmp_path / "subscriptionGroup.json").read_text())[
        "subscriptionGroupTable"]


def test_store_reopens_after_a_producer_unregistered(tmp_path, ctx, cm):
    """The issue-12 sequence at unit level: unregister with consumerGroup="", shut the store
    down, open its config files again."""
    unregister(cm, producerGroup="PID_a", consumerGroup="")
    ctx.subscription_groups.find_subscription_group_config("GID_real")
    ctx.store.shutdown()
    managers = open_config_managers(str(tmp_path / "store"), broker_name="b")
    assert "GID_real" in managers["subscription_groups"].subscription_group_table
    assert all(m.skipped == [] for m in managers.values())
