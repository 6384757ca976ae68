"""``rmq-emu admin updateSubGroup`` / ``getConsumerConfig`` against a running name server and
broker: the group's RocketMQ 5 fields reach the broker, its file and the answers read back."""

from __future__ import annotations

import json
import os
import sys

import pytest_twisted
from twisted.internet import reactor, utils

from rocketmq_emu.broker.configs.subscription import RetryBackoff
from rocketmq_emu.client.admin_cli import build_parser, execute

EXPONENTIAL = ('{"type":"EXPONENTIAL","exponentialRetryPolicy":'
               '{"initial":1000,"max":60000,"multiplier":3}}')


async def admin(namesrv, *argv: str) -> tuple[int, str]:
    """Run one admin command in-process (same reactor as the cluster)."""
    args = build_parser().parse_args([argv[0], "-n", namesrv.addr, *argv[1:]])
    return await execute(args, reactor)


@pytest_twisted.ensureDeferred
async def test_update_sub_group_process_then_read_back(cluster, tmp_path):
    """``rmq-emu admin updateSubGroup -g G -o true -r 3 -p ...`` as a process: mqadmin's lines,
    then the broker's table, subscriptionGroup.json and getConsumerConfig show the group."""
    namesrv, broker = cluster
    out, err, code = await utils.getProcessOutputAndValue(
        sys.executable, ["-m", "rocketmq_emu.broker.cli", "admin", "updateSubGroup",
                         "-n", namesrv.addr, "-b", broker.addr, "-g", "GID_fifo", "-o", "true",
                         "-r", "3", "-p", EXPONENTIAL],
        env=dict(os.environ), path=os.getcwd())
    assert code == 0, err
    lines = out.decode().splitlines()
    assert lines[0] == f"create subscription group to {broker.addr} success."
    assert lines[1].startswith("SubscriptionGroupConfig{groupName=GID_fifo, consumeEnable=true, "
                               "consumeFromMinEnable=false, consumeBroadcastEnable=false, "
                               "consumeMessageOrderly=true, retryQueueNums=1, retryMaxTimes=3, "
                               "groupRetryPolicy=GroupRetryPolicy{type=EXPONENTIAL, ")

    cfg = broker.store.subscription_groups.subscription_group_table["GID_fifo"]
    assert cfg.consume_message_orderly is True
    assert cfg.retry_backoff() == RetryBackoff(4, exponential=(1000, 60000, 3))
    stored = json.loads((tmp_path / "store" / "config" / "subscriptionGroup.json").read_text())
    group = stored["subscriptionGroupTable"]["GID_fifo"]
    assert group["consumeMessageOrderly"] is True and group["retryMaxTimes"] == 3
    assert group["groupRetryPolicy"] == {
        "exponentialRetryPolicy": {"initial": 1000, "max": 60000, "multiplier": 3},
        "type": "EXPONENTIAL"}
    assert group["attributes"] == {} and group["consumeTimeoutMinute"] == 15

    status, text = await admin(namesrv, "getConsumerConfig", "-g", "GID_fifo")
    assert status == 0, text
    lines = text.splitlines()
    assert lines[0].startswith("=============================DefaultCluster:")
    assert f"{'consumeMessageOrderly':<40}=  true" in lines
    assert f"{'retryMaxTimes':<40}=  3" in lines
    assert f"{'subscriptionDataSet':<40}=  " in lines
    status, doc = await admin(namesrv, "getConsumerConfig", "-g", "GID_fifo", "--json")
    [entry] = json.loads(doc)
    assert entry["subscriptionGroupConfig"]["consumeMessageOrderly"] is True


@pytest_twisted.ensureDeferred
async def test_update_sub_group_by_cluster_and_replace(cluster):
    """-c sends to every master; a second update replaces the config (as mqadmin's does)."""
    namesrv, broker = cluster
    status, text = await admin(namesrv, "updateSubGroup", "-c", "DefaultCluster", "-g", "G2",
                               "-r", "5", "-p", '{"customizedRetryPolicy":{"next":[1000,2000]}}')
    assert status == 0, text
    assert f"create subscription group to {broker.addr} success." in text.splitlines()
    cfg = broker.store.subscription_groups.subscription_group_table["G2"]
    assert cfg.retry_backoff() == RetryBackoff(6, customized_next_ms=(1000, 2000))
    status, text = await admin(namesrv, "updateSubGroup", "-b", broker.addr, "-g", "G2", "--json")
    assert status == 0, text
    assert json.loads(text)["brokers"] == [broker.addr]
    cfg = broker.store.subscription_groups.subscription_group_table["G2"]
    assert cfg.retry_max_times == 16 and cfg.consume_message_orderly is False
    assert cfg.group_retry_policy.customized_retry_policy is None


@pytest_twisted.ensureDeferred
async def test_update_sub_group_refusals(cluster):
    """A refused attribute answers the broker's remark (exit 1); no broker option is a usage
    error (exit 2); getConsumerConfig of an unknown group prints nothing."""
    namesrv, broker = cluster
    status, text = await admin(namesrv, "updateSubGroup", "-b", broker.addr, "-g", "G3",
                               "--attributes", "+k=v")
    assert status == 1
    assert "unsupported key: k" in text
    assert "G3" not in broker.store.subscription_groups.subscription_group_table
    status, text = await admin(namesrv, "updateSubGroup", "-g", "G3")
    assert status == 2 and "-b brokerAddr or -c clusterName" in text
    status, text = await admin(namesrv, "getConsumerConfig", "-g", "nobody")
    assert status == 0 and text == ""
