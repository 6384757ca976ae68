"""POP state across a restart: the revive topic, consumer offsets and consumerOrderInfo.json are
reloaded from a real store directory."""

from __future__ import annotations

import pytest
from pop_support import GROUP, PopRig, bodies, popped

from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.remoting.codes import ResponseCode


@pytest.fixture
def rig(tmp_path):
    r = PopRig(tmp_path)
    yield r
    r.close()


def test_unacked_message_redelivered_after_restart(rig):
    """An unacknowledged message is revived after a restart once its invisible time passes."""
    rig.send("T", b"x")
    rig.pop_msgs("T", invisible_ms=30_000)
    rig.restart()
    rig.advance(29_000)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT
    rig.advance(1_000)
    assert bodies(rig.pop_msgs("T")) == [b"x"]


def test_acked_message_never_redelivered_after_restart(rig):
    """An acknowledged message stays acknowledged across a restart."""
    rig.send("T", b"x")
    msg = popped(rig.pop_msgs("T", invisible_ms=30_000))[0]
    rig.ack(msg)
    rig.restart()
    rig.advance(3_600_000)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT


def test_overdue_check_point_revived_at_start(rig):
    """A check point whose time passed while the broker was down is revived at start."""
    rig.send("T", b"x")
    rig.pop_msgs("T", invisible_ms=1_000)
    rig.pop.stop()
    rig.advance(5_000)
    rig.restart()
    rig.advance(0)
    assert bodies(rig.pop_msgs("T")) == [b"x"]


def test_revived_message_not_revived_twice_after_restart(rig):
    """A message already revived before a restart is not sent to retry again."""
    rig.send("T", b"x")
    rig.pop_msgs("T", invisible_ms=1_000)
    rig.advance(1_000)
    rig.restart()
    rig.advance(10_000)
    retry = names.pop_retry_topic_v1("T", GROUP)
    assert rig.ctx.store.get_max_offset_in_queue(retry, 0) == 1


def test_one_of_two_acked_before_restart(rig):
    """Of a batch of two with one acked, only the other is redelivered after a restart."""
    rig.send("T", b"a")
    rig.send("T", b"b")
    msgs = popped(rig.pop_msgs("T", queue_id=0, invisible_ms=5_000))
    rig.ack(msgs[1])
    rig.restart()
    rig.advance(5_000)
    assert bodies(rig.pop_msgs("T")) == [b"a"]


def test_changed_invisible_time_survives_restart(rig):
    """A changed invisible time is kept across a restart."""
    rig.send("T", b"x")
    msg = popped(rig.pop_msgs("T", invisible_ms=1_000))[0]
    rig.change_invisible(msg, 60_000)
    rig.restart()
    rig.advance(30_000)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT
    rig.advance(30_000)
    assert bodies(rig.pop_msgs("T")) == [b"x"]


def test_consumed_offset_survives_restart(rig):
    """Messages popped before a restart are not popped again as new ones."""
    rig.send("T", b"a")
    msg = popped(rig.pop_msgs("T"))[0]
    rig.ack(msg)
    rig.send("T", b"b")
    rig.restart()
    assert bodies(rig.pop_msgs("T")) == [b"b"]


def test_orderly_block_and_counts_survive_restart(rig):
    """An orderly batch stays blocked across a restart and its redelivery counts the attempt."""
    rig.send("T", b"a")
    rig.pop_msgs("T", queue_id=0, order=True, invisible_ms=10_000)
    rig.restart()
    assert rig.pop_msgs("T", queue_id=0, order=True).code == ResponseCode.POLLING_TIMEOUT
    rig.advance(10_000)
    resp = rig.pop_msgs("T", queue_id=0, order=True)
    assert bodies(resp) == [b"a"]
    assert "0 qo0%0 1" in resp.ext_fields["orderCountInfo"]


def test_revive_offset_skips_finished_records_after_restart(rig):
    """After a restart nothing committed on the revive queue is read again."""
    rig.send("T", b"x")
    resp = rig.pop_msgs("T", invisible_ms=1_000)
    popped(resp)
    rig.advance(1_000)
    qid = int(resp.ext_fields["reviveQid"])
    rt = names.revive_topic(rig.ctx.cluster_name)
    committed = rig.ctx.consumer_offsets.query_offset(names.REVIVE_GROUP, rt, qid)
    assert committed == rig.ctx.store.get_max_offset_in_queue(rt, qid) - 1
    rig.restart()
    assert not rig.pop.revive.live
