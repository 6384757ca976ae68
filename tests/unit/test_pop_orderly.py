"""Orderly POP (order=true): queue locks, attempt counts, offsets committed on ACK."""

from __future__ import annotations

import pytest
from pop_support import GROUP, PopRig, bodies, popped

from rocketmq_emu.broker.pop.extra_info import ExtraInfo, parse_order_count_info
from rocketmq_emu.broker.remoting.codes import ResponseCode


@pytest.fixture
def rig(tmp_path):
    r = PopRig(tmp_path)
    for i in range(3):
        r.send("T", b"%d" % i)
    yield r
    r.close()


def pop_order(rig, **kw):
    kw.setdefault("queue_id", 0)
    kw.setdefault("max_msgs", 2)
    kw.setdefault("invisible_ms", 10_000)
    return rig.pop_msgs("T", order=True, **kw)


def test_orderly_answer_has_revive_qid_999_and_order_count(rig):
    """An orderly POP answers reviveQid 999 and orderCountInfo with the queue's count 0."""
    resp = pop_order(rig)
    assert resp.ext_fields["reviveQid"] == "999"
    assert resp.ext_fields["orderCountInfo"] == "0 0 0"
    assert bodies(resp) == [b"0", b"1"]


def test_orderly_queue_blocked_until_ack(rig):
    """While the batch is unacknowledged and invisible, the queue gives nothing."""
    pop_order(rig)
    assert pop_order(rig).code == ResponseCode.POLLING_TIMEOUT


def test_orderly_consume_offset_not_committed_at_pop(rig):
    """An orderly POP leaves the consume offset at the batch start."""
    pop_order(rig)
    assert rig.ctx.consumer_offsets.query_offset(GROUP, "T", 0) == 0


def test_orderly_ack_commits_and_unblocks(rig):
    """Acking the whole batch commits past it; the next POP gets the next message."""
    msgs = popped(pop_order(rig))
    for m in msgs:
        assert rig.ack(m).code == ResponseCode.SUCCESS
    assert rig.ctx.consumer_offsets.query_offset(GROUP, "T", 0) == 2
    assert bodies(pop_order(rig)) == [b"2"]


def test_orderly_partial_ack_keeps_block(rig):
    """Acking the first of two keeps the queue blocked and commits only that one."""
    msgs = popped(pop_order(rig))
    rig.ack(msgs[0])
    assert rig.ctx.consumer_offsets.query_offset(GROUP, "T", 0) == 1
    assert pop_order(rig).code == ResponseCode.POLLING_TIMEOUT


def test_orderly_redelivery_after_invisible_time_counts_attempts(rig):
    """After the invisible time the same offsets come back with count 1 per offset."""
    pop_order(rig)
    rig.advance(10_000)
    resp = pop_order(rig)
    assert bodies(resp) == [b"0", b"1"]
    counts = parse_order_count_info(resp.ext_fields["orderCountInfo"])
    assert counts == {"0@qo0%0": 1, "0@qo0%1": 1, "0@0": 1}


def test_orderly_third_delivery_counts_two(rig):
    """A third delivery of the same offset counts 2."""
    pop_order(rig, max_msgs=1)
    rig.advance(10_000)
    pop_order(rig, max_msgs=1)
    rig.advance(10_000)
    counts = parse_order_count_info(pop_order(rig, max_msgs=1).ext_fields["orderCountInfo"])
    assert counts["0@qo0%0"] == 2


def test_orderly_same_attempt_id_is_not_blocked(rig):
    """A retry of the same attemptId gets the batch again (needBlock)."""
    pop_order(rig, attempt_id="a1")
    assert bodies(pop_order(rig, attempt_id="a1")) == [b"0", b"1"]


def test_orderly_change_invisible_time_extends_block(rig):
    """CHANGE_MESSAGE_INVISIBLETIME of an orderly message moves its visible time and keeps
    popTime; invisibleTime is counted from it."""
    msgs = popped(pop_order(rig, max_msgs=1, invisible_ms=1_000))
    pop_time = ExtraInfo.parse(msgs[0].properties["POP_CK"]).pop_time
    rig.advance(500)
    resp = rig.change_invisible(msgs[0], 5_000)
    assert resp.ext_fields["popTime"] == str(pop_time)
    assert resp.ext_fields["invisibleTime"] == "5500"
    rig.advance(1_000)
    assert pop_order(rig).code == ResponseCode.POLLING_TIMEOUT
    rig.advance(4_000)
    assert bodies(pop_order(rig, max_msgs=1)) == [b"0"]


def test_orderly_parked_pop_woken_by_ack(rig):
    """A parked orderly POP of a blocked queue is answered when the batch is acked."""
    msgs = popped(pop_order(rig, max_msgs=1))
    parked = pop_order(rig, max_msgs=1, poll_ms=20_000)
    got = []
    parked.addCallback(got.append)
    assert not got
    rig.ack(msgs[0])
    assert bodies(got[0]) == [b"1"]


def test_orderly_parked_pop_woken_when_block_ends(rig):
    """A parked orderly POP is answered when the batch becomes visible again."""
    pop_order(rig, max_msgs=1, invisible_ms=3_000)
    parked = pop_order(rig, max_msgs=1, poll_ms=20_000)
    got = []
    parked.addCallback(got.append)
    rig.advance(3_000)
    assert bodies(got[0]) == [b"0"]
