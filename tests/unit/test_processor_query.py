"""QUERY_MESSAGE (by key and by UNIQ_KEY) and VIEW_MESSAGE_BY_ID."""

from __future__ import annotations

import pytest
from processor_support import FakeConn, send_v2

from rocketmq_emu.broker.commitlog.record import iter_records
from rocketmq_emu.broker.processors.query import QueryMessageProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


@pytest.fixture
def proc(ctx):
    return QueryMessageProcessor(ctx)


@pytest.fixture
def send(ctx):
    p = SendMessageProcessor(ctx)
    return lambda topic, props, body=b"b": p.process_send(send_v2(topic, body, props=props),
                                                          FakeConn())


def query(key, topic="Q", unique=False, max_num=10):
    ext = {"topic": topic, "key": key, "maxNum": str(max_num), "beginTimestamp": "0",
           "endTimestamp": str(2**62)}
    if unique:
        ext["_UNIQUE_KEY_QUERY"] = "true"
    return RemotingCommand.request(RequestCode.QUERY_MESSAGE, ext)


def test_query_by_key_returns_the_records_with_that_key(ctx, proc, send):
    """QUERY_MESSAGE finds messages by a KEYS token."""
    send("Q", {"KEYS": "order-1 other"}, b"one")
    send("Q", {"KEYS": "order-2"}, b"two")
    resp = proc.query_message(query("order-1"), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    assert [r.body for _, r in iter_records(resp.body)] == [b"one"]
    assert "indexLastUpdateTimestamp" in resp.ext_fields


def test_query_by_uniq_key(ctx, proc, send):
    """With _UNIQUE_KEY_QUERY=true the key is a UNIQ_KEY."""
    send("Q", {"UNIQ_KEY": "AC11000100002A9F0000000000000001"}, b"u")
    resp = proc.query_message(query("AC11000100002A9F0000000000000001", unique=True), FakeConn())
    assert [r.body for _, r in iter_records(resp.body)] == [b"u"]


def test_query_without_match_is_query_not_found(ctx, proc, send):
    """No message under the key answers QUERY_NOT_FOUND."""
    send("Q", {"KEYS": "a"})
    resp = proc.query_message(query("zzz"), FakeConn())
    assert resp.code == ResponseCode.QUERY_NOT_FOUND


def test_view_by_offset_returns_the_stored_record(ctx, proc, send):
    """VIEW_MESSAGE_BY_ID returns the raw record at the commitlog offset."""
    send("Q", {"TAGS": "x"}, b"view me")
    resp = proc.view_message_by_id(
        RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": "0"}), FakeConn())
    assert resp.code == ResponseCode.SUCCESS and resp.body == ctx.store.read_raw(0)


def test_view_by_a_bad_offset_is_system_error(ctx, proc, send):
    """VIEW_MESSAGE_BY_ID at an offset holding no record answers SYSTEM_ERROR."""
    send("Q", {"TAGS": "x"})
    resp = proc.view_message_by_id(
        RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": "3"}), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "can not find message by the offset, 3"
