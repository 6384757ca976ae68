"""Offsets: QUERY/UPDATE_CONSUMER_OFFSET, GET_MIN/MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP,
GET_EARLIEST_MSG_STORETIME, QUERY_BROKER_OFFSET."""

from __future__ import annotations

import pytest
from processor_support import T0, FakeConn, send_v2

from rocketmq_emu.broker.processors.consumer_manage import ConsumerManageProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


@pytest.fixture
def proc(ctx):
    return ConsumerManageProcessor(ctx)


@pytest.fixture
def send(ctx):
    p = SendMessageProcessor(ctx)
    return lambda topic, queue_id=0: p.process_send(send_v2(topic, queue_id=queue_id), FakeConn())


def req(code, **ext):
    return RemotingCommand.request(code, {k: str(v) for k, v in ext.items()})


def test_new_group_on_a_young_queue_starts_at_zero(ctx, proc, send):
    """QUERY_CONSUMER_OFFSET without a stored offset answers 0 while the queue starts at 0."""
    send("O1")
    resp = proc.query_consumer_offset(req(RequestCode.QUERY_CONSUMER_OFFSET,
                                          consumerGroup="g", topic="O1", queueId=0), FakeConn())
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["offset"] == "0"


def test_new_group_on_a_trimmed_queue_is_not_found(ctx, proc, send, monkeypatch):
    """When the queue's min offset is past 0 a new group gets QUERY_NOT_FOUND (code 22)."""
    send("O1")
    monkeypatch.setattr(ctx.store, "get_min_offset_in_queue", lambda t, q: 5)
    resp = proc.query_consumer_offset(req(RequestCode.QUERY_CONSUMER_OFFSET,
                                          consumerGroup="g", topic="O1", queueId=0), FakeConn())
    assert resp.code == ResponseCode.QUERY_NOT_FOUND
    assert resp.remark == "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"


def test_updated_offset_is_returned_by_query(ctx, proc):
    """UPDATE_CONSUMER_OFFSET stores the offset QUERY_CONSUMER_OFFSET returns."""
    proc.update_consumer_offset(req(RequestCode.UPDATE_CONSUMER_OFFSET, consumerGroup="g",
                                    topic="O2", queueId=1, commitOffset=42), FakeConn())
    resp = proc.query_consumer_offset(req(RequestCode.QUERY_CONSUMER_OFFSET,
                                          consumerGroup="g", topic="O2", queueId=1), FakeConn())
    assert resp.ext_fields["offset"] == "42"


def test_max_and_min_offsets_of_a_queue(ctx, proc, send):
    """GET_MAX_OFFSET is exclusive (entries written); GET_MIN_OFFSET the first kept."""
    for _ in range(3):
        send("O3")
    mx = proc.get_max_offset(req(RequestCode.GET_MAX_OFFSET, topic="O3", queueId=0), FakeConn())
    mn = proc.get_min_offset(req(RequestCode.GET_MIN_OFFSET, topic="O3", queueId=0), FakeConn())
    assert (mx.ext_fields["offset"], mn.ext_fields["offset"]) == ("3", "0")


def test_search_offset_by_timestamp_finds_the_message_stored_then(ctx, proc, send):
    """SEARCH_OFFSET_BY_TIMESTAMP returns the offset of the message stored at that time."""
    send("O4")
    ctx.clock.advance(10)
    send("O4")
    ts = int((T0 + 10) * 1000)
    resp = proc.search_offset_by_timestamp(
        req(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, topic="O4", queueId=0, timestamp=ts),
        FakeConn())
    assert resp.ext_fields["offset"] == "1"


def test_earliest_message_store_time(ctx, proc, send):
    """GET_EARLIEST_MSG_STORETIME is the store time of the queue's first message."""
    send("O5")
    ctx.clock.advance(3)
    send("O5")
    resp = proc.get_earliest_msg_storetime(
        req(RequestCode.GET_EARLIEST_MSG_STORETIME, topic="O5", queueId=0), FakeConn())
    assert resp.ext_fields["timestamp"] == str(int(T0 * 1000))


def test_query_broker_offset_is_the_commitlog_end(ctx, proc, send):
    """QUERY_BROKER_OFFSET answers the commitlog's max physical offset."""
    send("O6")
    resp = proc.query_broker_offset(req(RequestCode.QUERY_BROKER_OFFSET), FakeConn())
    assert int(resp.ext_fields["offset"]) == ctx.store.max_physical_offset > 0
