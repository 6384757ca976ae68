"""PullMessageProcessor and long polling against a real store on a task.Clock."""

from __future__ import annotations

import pytest
from processor_support import (
    FakeConn,
    attach_long_polling,
    heartbeat_cmd,
    make_context,
    pull_cmd,
    send_v2,
)

from rocketmq_emu.broker.commitlog.record import iter_records
from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.pull import PullMessageProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import ResponseCode


@pytest.fixture
def pull(ctx):
    return PullMessageProcessor(ctx)


@pytest.fixture
def send(ctx):
    proc = SendMessageProcessor(ctx)
    return lambda topic, tags="tagA", queue_id=0, body=b"b": proc.process_send(
        send_v2(topic, body, queue_id, props={"TAGS": tags}), FakeConn())


def bodies(resp):
    return [rec.body for _, rec in iter_records(resp.body)]


def test_found_returns_raw_records_and_next_offset(ctx, pull, send):
    """FOUND: SUCCESS, body = concatenated records, nextBeginOffset after them."""
    send("P1", body=b"one")
    send("P1", body=b"two")
    resp = pull.process(pull_cmd("P1", 0, 0), FakeConn())
    assert resp.code == ResponseCode.SUCCESS and resp.remark == "FOUND"
    assert bodies(resp) == [b"one", b"two"]
    assert resp.ext_fields["nextBeginOffset"] == "2"
    assert (resp.ext_fields["minOffset"], resp.ext_fields["maxOffset"]) == ("0", "2")
    assert resp.ext_fields["suggestWhichBrokerId"] == "0"


def test_body_is_the_stored_bytes(ctx, pull, send):
    """The pull body is byte-identical to what the commitlog holds."""
    send("P1")
    resp = pull.process(pull_cmd("P1", 0, 0), FakeConn())
    assert resp.body == ctx.store.read_raw(0)


def test_queue_never_written_at_offset_0_is_not_found(ctx, pull, send):
    """A queue with no consume queue yet answers PULL_NOT_FOUND for offset 0."""
    send("P2", queue_id=0)
    resp = pull.process(pull_cmd("P2", 1, 0), FakeConn())
    assert resp.code == ResponseCode.PULL_NOT_FOUND


def test_queue_never_written_at_nonzero_offset_is_offset_moved(ctx, pull, send):
    """A queue with no consume queue answers PULL_OFFSET_MOVED for offset != 0."""
    send("P2", queue_id=0)
    resp = pull.process(pull_cmd("P2", 1, 5), FakeConn())
    assert resp.code == ResponseCode.PULL_OFFSET_MOVED
    assert resp.ext_fields["nextBeginOffset"] == "0"


def test_offset_beyond_max_is_offset_moved_to_max(ctx, pull, send):
    """OFFSET_OVERFLOW_BADLY: PULL_OFFSET_MOVED with nextBeginOffset = maxOffset."""
    send("P3")
    resp = pull.process(pull_cmd("P3", 0, 9), FakeConn())
    assert resp.code == ResponseCode.PULL_OFFSET_MOVED
    assert resp.ext_fields["nextBeginOffset"] == "1"


def test_tag_filter_skips_other_tags(ctx, pull, send):
    """Only records whose tags code is in the subscription's codeSet are returned."""
    send("P4", tags="a", body=b"A")
    send("P4", tags="b", body=b"B")
    send("P4", tags="c", body=b"C")
    resp = pull.process(pull_cmd("P4", 0, 0, sub="a || c"), FakeConn())
    assert bodies(resp) == [b"A", b"C"]
    assert resp.ext_fields["nextBeginOffset"] == "3"


def test_all_filtered_out_is_retry_immediately(ctx, pull, send):
    """NO_MATCHED_MESSAGE: PULL_RETRY_IMMEDIATELY with nextBeginOffset past the scan."""
    send("P4", tags="a")
    resp = pull.process(pull_cmd("P4", 0, 0, sub="zzz"), FakeConn())
    assert resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert resp.ext_fields["nextBeginOffset"] == "1"


def test_unknown_topic_is_topic_not_exist(ctx, pull):
    """A pull of a topic the broker does not have answers TOPIC_NOT_EXIST."""
    resp = pull.process(pull_cmd("Missing", 0, 0), FakeConn())
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST


def test_queue_id_beyond_read_queues_is_system_error(ctx, pull, send):
    """queueId >= readQueueNums is SYSTEM_ERROR naming the queue."""
    send("P5")
    resp = pull.process(pull_cmd("P5", 7, 0), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark.startswith("queueId[7]")


def test_without_heartbeat_the_subscription_does_not_exist(ctx, pull, send):
    """Without the subscription bit the group must have heartbeaten: else code 24."""
    send("P6")
    resp = pull.process(pull_cmd("P6", 0, 0, with_subscription=False), FakeConn())
    assert resp.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert resp.remark.startswith("the consumer's group info not exist")


def test_heartbeat_subscription_filters_the_pull(ctx, pull, send):
    """The heartbeat's subscription (tags) is used when the pull carries none."""
    conn = FakeConn()
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("c1", "cg", "P6", sub="b"), conn)
    send("P6", tags="a", body=b"A")
    send("P6", tags="b", body=b"B")
    resp = pull.process(pull_cmd("P6", 0, 0, with_subscription=False), conn)
    assert bodies(resp) == [b"B"]


def test_heartbeat_without_the_topic_is_subscription_not_exist(ctx, pull, send):
    """A group that heartbeat for another topic gets 'subscription not exist'."""
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("c1", "cg", "Other"), FakeConn())
    send("P6")
    resp = pull.process(pull_cmd("P6", 0, 0, with_subscription=False), FakeConn())
    assert resp.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert resp.remark.startswith("the consumer's subscription not exist")


def test_older_registered_sub_version_is_not_latest(ctx, pull, send):
    """A pull with a newer subVersion than the heartbeat's answers SUBSCRIPTION_NOT_LATEST."""
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("c1", "cg", "P6", sub_version=5),
                                          FakeConn())
    send("P6")
    resp = pull.process(pull_cmd("P6", 0, 0, with_subscription=False, sub_version=9),
                        FakeConn())
    assert resp.code == ResponseCode.SUBSCRIPTION_NOT_LATEST


def test_commit_offset_flag_stores_the_offset(ctx, pull, send):
    """sysFlag bit 0x1 stores commitOffset for (group, topic, queue)."""
    send("P7")
    pull.process(pull_cmd("P7", 0, 0, commit_offset=1), FakeConn())
    assert ctx.consumer_offsets.query_offset("cg", "P7", 0) == 1


def test_empty_pull_with_suspend_is_held(ctx, pull, send):
    """Nothing new + suspend bit: no answer yet (a Deferred), one request parked."""
    hold = attach_long_polling(ctx, pull)
    send("P8")
    d = pull.process(pull_cmd("P8", 0, 1, suspend_ms=15000), FakeConn())
    got = []
    d.addCallback(got.append)
    assert got == [] and len(hold) == 1


def test_held_pull_is_woken_by_a_matching_message(ctx, pull, send):
    """A held pull answers FOUND as soon as a message arrives on its queue."""
    attach_long_polling(ctx, pull)
    send("P8")
    got = []
    pull.process(pull_cmd("P8", 0, 1, suspend_ms=15000), FakeConn()).addCallback(got.append)
    send("P8", body=b"late")
    assert got[0].code == ResponseCode.SUCCESS and bodies(got[0]) == [b"late"]


def test_held_pull_ignores_messages_of_other_tags(ctx, pull, send):
    """A message whose tag the subscription excludes does not wake the pull."""
    hold = attach_long_polling(ctx, pull)
    send("P8", tags="a")
    got = []
    pull.process(pull_cmd("P8", 0, 1, sub="a", suspend_ms=15000), FakeConn()).addCallback(
        got.append)
    send("P8", tags="b")
    assert got == [] and len(hold) == 1


def test_held_pull_ignores_other_queues(ctx, pull, send):
    """A message on another queue of the topic does not wake the pull."""
    attach_long_polling(ctx, pull)
    send("P8", queue_id=0)
    got = []
    pull.process(pull_cmd("P8", 0, 1, suspend_ms=15000), FakeConn()).addCallback(got.append)
    send("P8", queue_id=1)
    assert got == []


def test_held_pull_times_out_with_not_found(ctx, pull, send):
    """After suspendTimeoutMillis the held pull answers PULL_NOT_FOUND, not before."""
    hold = attach_long_polling(ctx, pull)
    send("P9")
    got = []
    pull.process(pull_cmd("P9", 0, 1, suspend_ms=15000), FakeConn()).addCallback(got.append)
    ctx.clock.advance(14.9)
    assert got == []
    ctx.clock.advance(0.2)
    assert got[0].code == ResponseCode.PULL_NOT_FOUND and len(hold) == 0


def test_held_pull_of_a_closed_connection_is_dropped(ctx, pull, send):
    """When the connection closes the held pull is forgotten without an answer."""
    hold = attach_long_polling(ctx, pull)
    send("P9")
    conn = FakeConn()
    got = []
    pull.process(pull_cmd("P9", 0, 1, suspend_ms=15000), conn).addCallback(got.append)
    conn.close()
    assert got == [None] and len(hold) == 0
    send("P9")
    assert got == [None]


def test_commit_offset_is_not_applied_again_on_wakeup(ctx, pull, send):
    """The re-executed pull does not store its commitOffset a second time."""
    attach_long_polling(ctx, pull)
    send("P10")
    pull.process(pull_cmd("P10", 0, 1, suspend_ms=15000, commit_offset=1), FakeConn())
    ctx.consumer_offsets.commit_offset("x", "cg", "P10", 0, 0)
    send("P10")
    assert ctx.consumer_offsets.query_offset("cg", "P10", 0) == 0


def test_short_polling_waits_its_timeout_even_if_a_message_arrives(tmp_path):
    """longPollingEnable=false: held for shortPollingTimeMills, not woken by arrivals."""
    ctx = make_context(tmp_path, long_polling_enable=False, short_polling_time_mills=1000)
    pull = PullMessageProcessor(ctx)
    attach_long_polling(ctx, pull)
    send = SendMessageProcessor(ctx)
    send.process_send(send_v2("S"), FakeConn())
    got = []
    pull.process(pull_cmd("S", 0, 1, suspend_ms=15000), FakeConn()).addCallback(got.append)
    send.process_send(send_v2("S"), FakeConn())
    assert got == []
    ctx.clock.advance(1.0)
    assert got[0].code == ResponseCode.SUCCESS
    ctx.store.shutdown()


def test_offset_moved_records_an_offset_moved_event(ctx, pull, send):
    """PULL_OFFSET_MOVED stores an OffsetMovedEvent on OFFSET_MOVED_EVENT (tags = group)."""
    import json

    send("P11")
    pull.process(pull_cmd("P11", 0, 9, group="gm"), FakeConn())
    res = ctx.store.get_message("x", "OFFSET_MOVED_EVENT", 0, 0, 1)
    (_, rec), = iter_records(res.messages[0])
    event = json.loads(rec.body)
    assert (event["consumerGroup"], event["offsetRequest"], event["offsetNew"]) == ("gm", 9, 1)
    assert event["messageQueue"]["topic"] == "P11" and rec.properties["TAGS"] == "gm"
