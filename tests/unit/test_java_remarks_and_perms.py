"""Answers as Apache RocketMQ 4.9.8 words them (issue 28's review of the emulator's
normalizations): remarks with ``FAQUrl.suggestTodo``'s tip (``"\\nSee <url> for further
details."``), where each Java processor puts it; the pull's illegal-queue remark names the
consumer as ``InetSocketAddress.toString()`` does (``/ip:port``); the dead-letter topic is made
read-write (``SendMessageProcessor``: ``PERM_WRITE | PERM_READ``), so its messages can be pulled."""

from __future__ import annotations

import random

import pytest
from processor_support import FakeConn, pull_cmd, send_v2
from test_processor_send import send_back_cmd

from rocketmq_emu.broker.processors.pull import PullMessageProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import ResponseCode

TIP = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


@pytest.fixture
def send(ctx):
    return SendMessageProcessor(ctx, random.Random(7))


def test_send_to_a_missing_topic_has_the_tip_right_after_the_sentence(ctx, send):
    del ctx.topic_config.topic_config_table["TBW102"]  # autoCreateTopicEnable=false
    resp = send.process_send(send_v2("Missing1"), FakeConn())
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == f"topic[Missing1] not exist, apply first please!{TIP}"


def test_send_back_for_a_missing_group_has_the_tip_after_a_space(ctx, send):
    send.process_send(send_v2("T1"), FakeConn())
    ctx.subscription_groups.auto_create_subscription_group = False
    resp = send.process_send_back(send_back_cmd(0, "NoSuchGroup"), FakeConn())
    assert resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    assert resp.remark == f"subscription group not exist, NoSuchGroup {TIP}"


def test_pull_of_a_missing_topic_has_the_tip_after_a_space(ctx):
    resp = PullMessageProcessor(ctx).process(pull_cmd("Missing2", 0, 0), FakeConn())
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == f"topic[Missing2] not exist, apply first please! {TIP}"


def test_pull_of_an_illegal_queue_names_the_consumer_with_a_slash(ctx, send):
    send.process_send(send_v2("T2"), FakeConn())
    conn = FakeConn(5151)
    resp = PullMessageProcessor(ctx).process(pull_cmd("T2", 99, 0), conn)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark.endswith(f"consumer:[/{conn.peer_addr}]")


def test_the_dead_letter_topic_is_read_write(ctx, send):
    send.process_send(send_v2("T3"), FakeConn())
    assert send.process_send_back(send_back_cmd(0, "cgD", max_times=0), FakeConn()).code == 0
    dlq = ctx.topic_config.select_topic_config("%DLQ%cgD")
    assert dlq.perm == 6 and dlq.read_queue_nums == dlq.write_queue_nums == 1
