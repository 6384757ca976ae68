"""Revive, ACK and CHANGE_MESSAGE_INVISIBLETIME on the business clock (task.Clock)."""

from __future__ import annotations

import pytest
from pop_support import GROUP, PopRig, bodies, popped

from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.extra_info import ExtraInfo
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

RETRY = names.pop_retry_topic_v1("T", GROUP)


@pytest.fixture
def rig(tmp_path):
    r = PopRig(tmp_path)
    yield r
    r.close()


def pop_one(rig, **kw):
    msgs = popped(rig.pop_msgs("T", **kw))
    assert len(msgs) == 1
    return msgs[0]


def test_unacked_message_is_revived_after_invisible_time(rig):
    """After invisibleTime an unacknowledged message is popped again from the retry topic."""
    rig.send("T", b"x")
    pop_one(rig, invisible_ms=10_000)
    rig.advance(9_999)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT
    rig.advance(1)
    assert bodies(rig.pop_msgs("T")) == [b"x"]


def test_revived_copy_counts_the_attempt(rig):
    """The retry copy has RECONSUME_TIME + 1 and 1ST_POP_TIME = the first pop time."""
    rig.send("T", b"x")
    first = rig.pop_msgs("T", invisible_ms=1_000)
    rig.advance(1_000)
    retry = rig.ctx.store.get_message(GROUP, RETRY, 0, 0, 1)
    from rocketmq_emu.broker.commitlog.record import decode_record

    rec = decode_record(retry.messages[0])
    assert rec.reconsume_times == 1
    assert rec.properties[names.PROPERTY_FIRST_POP_TIME] == first.ext_fields["popTime"]
    assert rec.properties["TAGS"] == "tagA"


def test_retry_message_is_returned_under_the_subscribed_topic(rig):
    """A message popped from the retry topic comes back with topic T and a POP_CK marked retry."""
    rig.send("T", b"x")
    pop_one(rig, invisible_ms=1_000)
    rig.advance(1_000)
    msg = pop_one(rig)
    assert msg.topic == "T" and msg.reconsume_times == 1
    info = ExtraInfo.parse(msg.properties["POP_CK"])
    assert info.retry == "1" and info.real_topic("T", GROUP) == RETRY


def test_ack_prevents_redelivery(rig):
    """An acknowledged message is never revived."""
    rig.send("T", b"x")
    msg = pop_one(rig, invisible_ms=1_000)
    assert rig.ack(msg).code == ResponseCode.SUCCESS
    rig.advance(60_000)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT
    assert rig.ctx.topic_config.select_topic_config(RETRY) is None


def test_ack_of_one_message_revives_the_other(rig):
    """In a batch of two, only the unacknowledged message is revived."""
    rig.send("T", b"a")
    rig.send("T", b"b")
    msgs = popped(rig.pop_msgs("T", queue_id=0, invisible_ms=1_000))
    rig.ack(msgs[0])
    rig.advance(1_000)
    assert bodies(rig.pop_msgs("T")) == [b"b"]


def test_ack_of_retry_message_prevents_second_revive(rig):
    """Acknowledging the retry copy (topic = retry topic) ends its redelivery."""
    rig.send("T", b"x")
    pop_one(rig, invisible_ms=1_000)
    rig.advance(1_000)
    retry_msg = pop_one(rig, invisible_ms=1_000)
    assert rig.ack(retry_msg).code == ResponseCode.SUCCESS
    rig.advance(60_000)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT


def test_second_revive_counts_two_attempts(rig):
    """A retry copy left unacknowledged is revived again with RECONSUME_TIME 2."""
    rig.send("T", b"x")
    pop_one(rig, invisible_ms=1_000)
    rig.advance(1_000)
    pop_one(rig, invisible_ms=1_000)
    rig.advance(1_000)
    assert pop_one(rig).reconsume_times == 2


def test_ack_with_offset_outside_queue_is_no_message(rig):
    """An ACK offset past the queue's max: NO_MESSAGE."""
    rig.send("T", b"x")
    msg = pop_one(rig)
    cmd = RemotingCommand.request(RequestCode.ACK_MESSAGE, {
        "consumerGroup": GROUP, "topic": "T", "queueId": "0",
        "extraInfo": msg.properties["POP_CK"], "offset": "5"})
    assert rig.pop.ack_processor.process_ack(cmd, rig.conn).code == ResponseCode.NO_MESSAGE


def test_ack_of_unknown_topic_is_topic_not_exist(rig):
    """An ACK naming an unknown topic: TOPIC_NOT_EXIST."""
    rig.send("T", b"x")
    msg = pop_one(rig)
    assert rig.ack(msg, topic="Nope").code == ResponseCode.TOPIC_NOT_EXIST


def test_change_invisible_time_answers_new_pop_time(rig):
    """CHANGE_MESSAGE_INVISIBLETIME answers popTime = now, the new invisibleTime, reviveQid."""
    rig.send("T", b"x")
    msg = pop_one(rig, invisible_ms=1_000)
    rig.advance(500)
    resp = rig.change_invisible(msg, 5_000)
    assert resp.code == ResponseCode.SUCCESS
    assert resp.ext_fields == {"popTime": str(rig.ctx.now_ms()), "invisibleTime": "5000",
                               "reviveQid": "0"}


def test_change_invisible_time_delays_revive(rig):
    """After a change to 5 s the message is not revived at the old time but 5 s later."""
    rig.send("T", b"x")
    msg = pop_one(rig, invisible_ms=1_000)
    rig.advance(500)
    rig.change_invisible(msg, 5_000)
    rig.advance(1_000)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT
    rig.advance(4_000)
    assert bodies(rig.pop_msgs("T")) == [b"x"]


def new_extra_info(msg, resp):
    """The extra info a remoting client builds after a change (MQClientAPIImpl)."""
    info = ExtraInfo.parse(msg.properties["POP_CK"])
    return ExtraInfo(info.queue_offset, int(resp.ext_fields["popTime"]),
                     int(resp.ext_fields["invisibleTime"]), int(resp.ext_fields["reviveQid"]),
                     info.retry, info.broker_name, info.queue_id, info.queue_offset).encode()


def test_ack_with_new_handle_after_change_prevents_redelivery(rig):
    """An ACK with the extra info built from the change's answer ends the message."""
    rig.send("T", b"a")
    rig.send("T", b"b")
    msg = popped(rig.pop_msgs("T", queue_id=0, invisible_ms=1_000))[1]
    resp = rig.change_invisible(msg, 5_000)
    msg.properties["POP_CK"] = new_extra_info(msg, resp)
    assert rig.ack(msg).code == ResponseCode.SUCCESS
    rig.advance(60_000)
    assert bodies(rig.pop_msgs("T")) == [b"a"]


def test_ack_with_proxy_style_handle_after_change_is_matched(rig):
    """An ACK whose extra info keeps the old check point's start offset (Apache proxy's
    LocalMessageService) still finds the new check point."""
    rig.send("T", b"a")
    rig.send("T", b"b")
    msg = popped(rig.pop_msgs("T", queue_id=0, invisible_ms=1_000))[1]
    resp = rig.change_invisible(msg, 5_000)
    old = ExtraInfo.parse(msg.properties["POP_CK"])
    msg.properties["POP_CK"] = ExtraInfo(old.ck_queue_offset, int(resp.ext_fields["popTime"]),
                                         5_000, old.revive_qid, old.retry, old.broker_name,
                                         old.queue_id, old.queue_offset).encode()
    rig.ack(msg)
    rig.advance(60_000)
    assert bodies(rig.pop_msgs("T")) == [b"a"]


def test_change_invisible_offset_at_max_is_no_message(rig):
    """CHANGE_MESSAGE_INVISIBLETIME with offset >= max offset: NO_MESSAGE."""
    rig.send("T", b"x")
    msg = pop_one(rig)
    info = ExtraInfo.parse(msg.properties["POP_CK"])
    cmd = RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, {
        "consumerGroup": GROUP, "topic": "T", "queueId": "0",
        "extraInfo": info.encode(), "offset": "1", "invisibleTime": "1000"})
    resp = rig.pop.ack_processor.process_change_invisible_time(cmd, rig.conn)
    assert resp.code == ResponseCode.NO_MESSAGE


def test_batch_ack_prevents_redelivery(rig):
    """BATCH_ACK_MESSAGE with a BitSet of both offsets ends both messages."""
    import base64
    import json

    rig.send("T", b"a")
    rig.send("T", b"b")
    resp = rig.pop_msgs("T", queue_id=0, invisible_ms=1_000)
    ext = resp.ext_fields
    body = {"acks": [{"c": GROUP, "t": "T", "r": "0", "so": 0, "q": 0,
                      "rq": int(ext["reviveQid"]), "pt": int(ext["popTime"]), "it": 1000,
                      "b": base64.b64encode(bytes([0b11])).decode()}],
            "brokerName": "broker-a"}
    cmd = RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, {}, json.dumps(body).encode())
    assert rig.pop.ack_processor.process_batch_ack(cmd, rig.conn).code == ResponseCode.SUCCESS
    rig.advance(60_000)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT


def test_batch_ack_without_body_is_no_message(rig):
    """BATCH_ACK_MESSAGE without acks: NO_MESSAGE."""
    cmd = RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, {}, b"")
    assert rig.pop.ack_processor.process_batch_ack(cmd, rig.conn).code == ResponseCode.NO_MESSAGE


def test_revive_offset_committed_after_revive(rig):
    """CID_RMQ_SYS_REVIVE_GROUP's offset moves past a revived check point."""
    rig.send("T", b"x")
    resp = rig.pop_msgs("T", invisible_ms=1_000)
    qid = int(resp.ext_fields["reviveQid"])
    rt = names.revive_topic(rig.ctx.cluster_name)
    offsets = rig.ctx.consumer_offsets
    assert offsets.query_offset(names.REVIVE_GROUP, rt, qid) == -1
    rig.advance(1_000)
    assert offsets.query_offset(names.REVIVE_GROUP, rt, qid) >= 0


def test_dead_letter_by_send_back_of_retry_message(rig):
    """CONSUMER_SEND_MSG_BACK with delayLevel -1 of a popped retry message (what the proxy's
    ForwardMessageToDeadLetterQueue sends) stores it in %DLQ%group."""
    from rocketmq_emu.broker.processors.send import SendMessageProcessor

    rig.send("T", b"x")
    pop_one(rig, invisible_ms=1_000)
    rig.advance(1_000)
    got = rig.ctx.store.get_message(GROUP, RETRY, 0, 0, 1)
    cmd = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
        "offset": str(got.commitlog_offsets[0]), "group": GROUP, "delayLevel": "-1",
        "originMsgId": "X", "originTopic": RETRY, "unitMode": "false",
        "maxReconsumeTimes": "0"})
    resp = SendMessageProcessor(rig.ctx).process_send_back(cmd, rig.conn)
    assert resp.code == ResponseCode.SUCCESS
    dlq = rig.ctx.store.get_message("x", names.dlq_topic(GROUP), 0, 0, 1)
    assert len(dlq.messages) == 1


def test_change_invisible_time_in_pop_millisecond(rig):
    """A change in the millisecond of the pop (same merge key) still delays the revive."""
    rig.send("T", b"x")
    msg = pop_one(rig, invisible_ms=1_000)
    rig.change_invisible(msg, 5_000)
    rig.advance(1_000)
    assert rig.pop_msgs("T").code == ResponseCode.POLLING_TIMEOUT
    rig.advance(4_000)
    assert bodies(rig.pop_msgs("T")) == [b"x"]


def test_retry_topic_read_first_with_probability(tmp_path):
    """When the random draw is under popFromRetryProbability (20), the retry topic is read
    before the normal queues."""
    rig = PopRig(tmp_path, random_value=0)
    try:
        rig.send("T", b"old")
        pop_one(rig, invisible_ms=1_000)
        rig.advance(1_000)
        rig.send("T", b"new")
        assert bodies(rig.pop_msgs("T", max_msgs=1)) == [b"old"]
    finally:
        rig.close()


def test_normal_queue_read_first_otherwise(rig):
    """With a draw of 20 or more the normal queues come first."""
    rig.send("T", b"old")
    pop_one(rig, invisible_ms=1_000)
    rig.advance(1_000)
    rig.send("T", b"new")
    assert bodies(rig.pop_msgs("T", max_msgs=1)) == [b"new"]
