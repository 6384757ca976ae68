"""POP long polling (pollTime) on the liveness clock, NOTIFICATION, POLLING_INFO and PEEK."""

from __future__ import annotations

import pytest
from pop_support import GROUP, PopRig, bodies

from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.processors.pop_peek import PopQueryProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


@pytest.fixture
def rig(tmp_path):
    r = PopRig(tmp_path)
    r.send("T", b"first")
    r.pop_msgs("T")  # the topic exists, the group's offsets are initialised
    yield r
    r.close()


def answers(d):
    got = []
    d.addCallback(got.append)
    return got


def test_parked_pop_woken_by_arrival(rig):
    """A POP with pollTime parks and is answered FOUND when a message arrives."""
    got = answers(rig.pop_msgs("T", poll_ms=10_000))
    assert not got
    rig.send("T", b"new")
    assert bodies(got[0]) == [b"new"]


def test_parked_pop_times_out_with_polling_timeout(rig):
    """Nothing arrives within pollTime: POLLING_TIMEOUT."""
    got = answers(rig.pop_msgs("T", poll_ms=5_000))
    rig.advance(4_999)
    assert not got
    rig.advance(1)
    assert got[0].code == ResponseCode.POLLING_TIMEOUT


def test_parked_pop_of_one_queue_woken_by_that_queue(rig):
    """A POP of queue 1 is not answered by an arrival on queue 2, then is by one on queue 1."""
    got = answers(rig.pop_msgs("T", queue_id=1, poll_ms=10_000))
    rig.send("T", b"q2", queue_id=2)
    assert not got
    rig.send("T", b"q1", queue_id=1)
    assert bodies(got[0]) == [b"q1"]


def test_parked_pop_woken_by_revive(rig):
    """A parked POP is answered when an unacknowledged message is revived to the retry topic."""
    rig.send("T", b"x")
    rig.pop_msgs("T", invisible_ms=2_000)
    got = answers(rig.pop_msgs("T", poll_ms=10_000))
    rig.advance(2_000)
    assert bodies(got[0]) == [b"x"]


def test_polling_full_when_queue_of_waiters_full(tmp_path):
    """More than popPollingSize waiters under one key: POLLING_FULL."""
    rig = PopRig(tmp_path)
    rig.pop.long_polling.polling_size = 1
    try:
        rig.send("T")
        rig.pop_msgs("T")
        rig.pop_msgs("T", poll_ms=10_000)
        rig.pop_msgs("T", poll_ms=10_000)
        assert rig.pop_msgs("T", poll_ms=10_000).code == ResponseCode.POLLING_FULL
    finally:
        rig.close()


def test_parked_pop_dropped_when_connection_closes(rig):
    """A parked POP whose connection closes fires with None and leaves no waiter."""
    from processor_support import FakeConn

    conn = FakeConn(port=1)
    got = answers(rig.pop_msgs("T", conn=conn, poll_ms=10_000))
    conn.close()
    assert got == [None]
    assert rig.pop.long_polling.total == 0


def test_stop_answers_parked_pops(rig):
    """Stopping the POP services answers parked requests with POLLING_TIMEOUT."""
    got = answers(rig.pop_msgs("T", poll_ms=10_000))
    rig.pop.stop()
    assert got[0].code == ResponseCode.POLLING_TIMEOUT


def polling_info(rig, queue_id=-1):
    return rig.pop.query_processor.process_polling_info(RemotingCommand.request(
        RequestCode.POLLING_INFO, {"consumerGroup": GROUP, "topic": "T",
                                   "queueId": str(queue_id)}), rig.conn)


def test_polling_info_counts_parked_requests(rig):
    """POLLING_INFO answers pollingNum of the key."""
    assert polling_info(rig).ext_fields["pollingNum"] == "0"
    rig.pop_msgs("T", poll_ms=10_000)
    assert polling_info(rig).ext_fields["pollingNum"] == "1"


def notification(rig, poll_ms=0):
    return rig.pop.query_processor.process_notification(RemotingCommand.request(
        RequestCode.NOTIFICATION, {"consumerGroup": GROUP, "topic": "T", "queueId": "-1",
                                   "pollTime": str(poll_ms), "bornTime": "0"}), rig.conn)


def test_notification_has_msg(rig):
    """NOTIFICATION: hasMsg true when a message is past the group's offset."""
    assert notification(rig).ext_fields["hasMsg"] == "false"
    rig.send("T", b"x")
    assert notification(rig).ext_fields == {"hasMsg": "true", "pollingFull": "false"}


def test_parked_notification_woken_by_arrival(rig):
    """A NOTIFICATION with pollTime parks and answers hasMsg true on arrival."""
    got = answers(notification(rig, poll_ms=10_000))
    rig.send("T", b"x", queue_id=3)
    assert got[0].ext_fields["hasMsg"] == "true"


def peek(rig, processor=None):
    proc = processor or rig.pop.query_processor
    return proc.process_peek(RemotingCommand.request(RequestCode.PEEK_MESSAGE, {
        "consumerGroup": GROUP, "topic": "T", "queueId": "-1", "maxMsgNums": "32"}), rig.conn)


def test_peek_returns_without_consuming(rig):
    """PEEK returns messages past the offset and changes nothing: POP still gets them."""
    rig.send("T", b"x")
    resp = peek(rig)
    assert resp.code == ResponseCode.SUCCESS and bodies(resp) == [b"x"]
    assert bodies(rig.pop_msgs("T")) == [b"x"]


def test_peek_nothing_is_pull_not_found(rig):
    """PEEK with nothing to return: PULL_NOT_FOUND."""
    assert peek(rig).code == ResponseCode.PULL_NOT_FOUND


def test_peek_reads_retry_topic(rig):
    """PEEK also reads the group's POP retry topic."""
    rig.send("T", b"x")
    rig.pop_msgs("T", invisible_ms=1_000)
    rig.advance(1_000)
    proc = PopQueryProcessor(rig.ctx, rig.pop, rig.random)
    got = peek(rig, proc)
    assert bodies(got) == [b"x"]
    assert rig.ctx.topic_config.select_topic_config(names.pop_retry_topic_v1("T", GROUP))
