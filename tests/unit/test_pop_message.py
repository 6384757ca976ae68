"""POP_MESSAGE against a real store on a task.Clock: answers, header fields, offsets, filters."""

from __future__ import annotations

import pytest
from pop_support import GROUP, PopRig, bodies, popped

from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.extra_info import ExtraInfo
from rocketmq_emu.broker.remoting.codes import ResponseCode


@pytest.fixture
def rig(tmp_path):
    r = PopRig(tmp_path)
    yield r
    r.close()


def test_pop_returns_stored_records_with_header(rig):
    """FOUND: SUCCESS, the records as body, popTime/invisibleTime/reviveQid/restNum headers."""
    rig.send("T", b"one")
    rig.send("T", b"two")
    resp = rig.pop_msgs("T", queue_id=0, invisible_ms=60_000)
    assert resp.code == ResponseCode.SUCCESS and resp.remark == "FOUND"
    assert bodies(resp) == [b"one", b"two"]
    ext = resp.ext_fields
    assert ext["popTime"] == str(rig.ctx.now_ms())
    assert ext["invisibleTime"] == "60000"
    assert ext["reviveQid"] == "0"
    assert ext["restNum"] == "0"
    assert ext["startOffsetInfo"] == "0 0 0"
    assert ext["msgOffsetInfo"] == "0 0 0,1"
    assert "orderCountInfo" not in ext


def test_pop_commits_consume_offset_past_batch(rig):
    """A non-orderly POP advances the group's consume offset to after what it read."""
    for i in range(3):
        rig.send("T", b"%d" % i)
    rig.pop_msgs("T", queue_id=0, max_msgs=2)
    assert rig.ctx.consumer_offsets.query_offset(GROUP, "T", 0) == 2
    assert bodies(rig.pop_msgs("T", queue_id=0)) == [b"2"]


def test_popped_message_is_invisible_to_next_pop(rig):
    """A message popped once is not returned by a second POP of the same group."""
    rig.send("T", b"x")
    assert rig.pop_msgs("T").code == ResponseCode.SUCCESS
    resp = rig.pop_msgs("T")
    assert resp.code == ResponseCode.POLLING_TIMEOUT
    assert resp.remark == "NO_MESSAGE_IN_QUEUE"


def test_empty_queue_without_poll_time_answers_polling_timeout(rig):
    """Nothing to pop and pollTime 0: POLLING_TIMEOUT with the header fields."""
    rig.send("T", b"x")
    rig.pop_msgs("T")
    resp = rig.pop_msgs("T", queue_id=0)
    assert resp.code == ResponseCode.POLLING_TIMEOUT
    assert resp.ext_fields["restNum"] == "0" and resp.body == b""


def test_all_queues_pop_reads_every_queue(rig):
    """queueId -1 reads each queue of the topic."""
    for q in range(4):
        rig.send("T", b"q%d" % q, queue_id=q)
    resp = rig.pop_msgs("T", queue_id=-1)
    assert sorted(bodies(resp)) == [b"q0", b"q1", b"q2", b"q3"]


def test_rest_num_counts_messages_left(rig):
    """restNum is what remains after the batch."""
    for i in range(5):
        rig.send("T", b"%d" % i)
    assert rig.pop_msgs("T", queue_id=0, max_msgs=2).ext_fields["restNum"] == "3"


def test_max_msg_nums_over_32_is_invalid(rig):
    """maxMsgNums > 32: INVALID_PARAMETER."""
    rig.send("T")
    assert rig.pop_msgs("T", max_msgs=33).code == ResponseCode.INVALID_PARAMETER


def test_unknown_topic_is_topic_not_exist(rig):
    """An unknown topic: TOPIC_NOT_EXIST."""
    assert rig.pop_msgs("Nope").code == ResponseCode.TOPIC_NOT_EXIST


def test_bad_queue_id_is_invalid_parameter(rig):
    """A queue id past readQueueNums: INVALID_PARAMETER."""
    rig.send("T")
    assert rig.pop_msgs("T", queue_id=99).code == ResponseCode.INVALID_PARAMETER


def test_tag_expression_filters(rig):
    """A TAG expression returns only matching messages and skips the rest."""
    rig.send("T", b"a", tags="A")
    rig.send("T", b"b", tags="B")
    rig.send("T", b"a2", tags="A")
    assert bodies(rig.pop_msgs("T", queue_id=0, exp="A")) == [b"a", b"a2"]


def test_sql92_refused_without_property_filter(rig):
    """SQL92 without enablePropertyFilter: SYSTEM_ERROR, as PULL."""
    rig.send("T")
    resp = rig.pop_msgs("T", exp="a > 1", exp_type="SQL92")
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "SQL92" in resp.remark


def test_sql92_filters_with_property_filter(tmp_path):
    """SQL92 with enablePropertyFilter selects by message properties."""
    rig = PopRig(tmp_path, enable_property_filter=True)
    try:
        rig.send("T", b"lo", props={"TAGS": "t", "n": "1"})
        rig.send("T", b"hi", props={"TAGS": "t", "n": "5"})
        assert bodies(rig.pop_msgs("T", queue_id=0, exp="n > 2", exp_type="SQL92")) == [b"hi"]
    finally:
        rig.close()


def test_bad_sql92_is_parse_failed(tmp_path):
    """An SQL92 expression that does not compile: SUBSCRIPTION_PARSE_FAILED."""
    rig = PopRig(tmp_path, enable_property_filter=True)
    try:
        rig.send("T")
        resp = rig.pop_msgs("T", exp="a >>> (", exp_type="SQL92")
        assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    finally:
        rig.close()


def test_check_point_written_to_revive_topic(rig):
    """A POP writes one CK record (tag ck) to the revive queue named by reviveQid."""
    rig.send("T", b"x")
    resp = rig.pop_msgs("T", queue_id=0)
    rt = names.revive_topic(rig.ctx.cluster_name)
    qid = int(resp.ext_fields["reviveQid"])
    got = rig.ctx.store.get_message("x", rt, qid, 0, 32)
    assert len(got.messages) == 1
    assert b'"t":"T"' in got.messages[0] and b'"c":"g"' in got.messages[0]


def test_revive_queue_rotates(rig):
    """Successive POPs use successive revive queues (ckMessageNumber % reviveQueueNum)."""
    for i in range(3):
        rig.send("T", b"%d" % i)
    qids = [rig.pop_msgs("T", queue_id=0, max_msgs=1).ext_fields["reviveQid"] for _ in range(3)]
    assert qids == ["0", "1", "2"]


def test_pop_ck_of_client_round_trips(rig):
    """The extra info a client builds from the answer names the message's queue offset."""
    rig.send("T", b"x")
    rig.send("T", b"y")
    msgs = popped(rig.pop_msgs("T", queue_id=0))
    info = ExtraInfo.parse(msgs[1].properties["POP_CK"])
    assert (info.ck_queue_offset, info.queue_offset, info.queue_id) == (0, 1, 0)


def test_init_mode_max_starts_at_zero_when_first_message_present(rig):
    """initMode MAX on a fresh group starts at 0 while offset 0 is stored
    (initPopOffsetByCheckMsgInMem)."""
    rig.send("T", b"old")
    assert bodies(rig.pop_msgs("T", queue_id=0, init_mode=1)) == [b"old"]
