"""SendMessageProcessor: 10 / 310 / 320 / 36 against a real store on a task.Clock."""

from __future__ import annotations

import logging
import random

import pytest
from processor_support import STORE_HOST, FakeConn, make_context, send_v1, send_v2

from rocketmq_emu.broker.commitlog.record import iter_records
from rocketmq_emu.broker.message import create_offset_msg_id
from rocketmq_emu.broker.processors.batch_codec import BatchMessage, encode_batch
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


@pytest.fixture
def proc(ctx):
    return SendMessageProcessor(ctx, random.Random(7))


def stored(ctx, topic, queue_id=0):
    res = ctx.store.get_message("g", topic, queue_id, 0, 64)
    return [rec for raw in res.messages for _, rec in iter_records(raw)]


def test_stored_record_has_peer_born_host_broker_store_host_and_cluster(ctx, proc):
    """The record carries the TCP peer as bornHost, brokerIP1:listenPort as storeHost, CLUSTER."""
    resp = proc.process_send(send_v2("T1"), FakeConn(4242))
    assert resp.code == ResponseCode.SUCCESS
    (rec,) = stored(ctx, "T1")
    assert rec.born_host == ("192.168.1.20", 4242)
    assert rec.store_host == STORE_HOST
    assert rec.properties["CLUSTER"] == "DefaultCluster"


def test_wait_property_is_stripped(ctx, proc):
    """WAIT is not stored (R49 SendMessageProcessor saves those bytes)."""
    proc.process_send(send_v2("T1", props={"TAGS": "a", "WAIT": "true", "KEYS": "k"}), FakeConn())
    (rec,) = stored(ctx, "T1")
    assert "WAIT" not in rec.properties and rec.properties["KEYS"] == "k"


def test_response_carries_offset_msg_id_queue_and_region(ctx, proc):
    """msgId is the offset id of storeHost + commitlog offset; MSG_REGION and TRACE_ON are set."""
    proc.process_send(send_v2("T1", queue_id=1), FakeConn())
    resp = proc.process_send(send_v2("T1", queue_id=1), FakeConn())
    (_, rec) = stored(ctx, "T1", 1)
    assert resp.ext_fields["msgId"] == create_offset_msg_id(*STORE_HOST, rec.physical_offset)
    assert resp.ext_fields["queueId"] == "1" and resp.ext_fields["queueOffset"] == "1"
    assert resp.ext_fields["MSG_REGION"] == "DefaultRegion"
    assert resp.ext_fields["TRACE_ON"] == "true"


def test_negative_queue_id_picks_a_writable_queue(ctx, proc):
    """queueId < 0 lets the broker choose a queue among writeQueueNums."""
    resp = proc.process_send(send_v2("T1", queue_id=-1), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    assert 0 <= int(resp.ext_fields["queueId"]) < 4


def test_new_topic_is_created_from_tbw102_with_client_queue_count(ctx, proc):
    """A send to an unknown topic creates it with min(defaultTopicQueueNums, TBW102) queues."""
    created = []
    ctx.topic_config.add_change_listener(created.append)
    proc.process_send(send_v2("Fresh", d="3"), FakeConn())
    tc = ctx.topic_config.select_topic_config("Fresh")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (3, 3, 6)
    assert [t.topic_name for t in created] == ["Fresh"]


def test_unknown_topic_without_auto_create_is_topic_not_exist(ctx, proc):
    """Without TBW102 (autoCreateTopicEnable=false) an unknown topic is TOPIC_NOT_EXIST."""
    del ctx.topic_config.topic_config_table["TBW102"]
    resp = proc.process_send(send_v2("Nope"), FakeConn())
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark.startswith("topic[Nope] not exist, apply first please!")


def test_topic_with_illegal_characters_is_refused(ctx, proc):
    """TopicValidator: characters outside ^[%|a-zA-Z0-9_-]+$ are SYSTEM_ERROR."""
    resp = proc.process_send(send_v2("bad topic!"), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "illegal characters" in resp.remark


def test_topic_longer_than_127_is_refused(ctx, proc):
    """TopicValidator: a topic over 127 characters is refused before anything is stored."""
    resp = proc.process_send(send_v2("t" * 128), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "The specified topic is longer than topic max length."


def test_schedule_topic_is_not_writable_by_clients(ctx, proc):
    """Sending to SCHEDULE_TOPIC_XXXX is NO_PERMISSION."""
    resp = proc.process_send(send_v2("SCHEDULE_TOPIC_XXXX"), FakeConn())
    assert resp.code == ResponseCode.NO_PERMISSION
    assert resp.remark == "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."


def test_queue_id_beyond_the_topic_is_system_error(ctx, proc):
    """queueId >= max(read, write) queue nums is refused."""
    proc.process_send(send_v2("T1"), FakeConn())
    resp = proc.process_send(send_v2("T1", queue_id=9), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark.startswith("request queueId[9] is illegal")


def test_body_over_max_message_size_is_message_illegal(ctx, proc):
    """A body larger than maxMessageSize is MESSAGE_ILLEGAL with RocketMQ's remark."""
    resp = proc.process_send(send_v2("T1", body=b"x" * (64 * 1024 + 1)), FakeConn())
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL
    assert "msg body length limit 65536B" in resp.remark


def test_code_10_batch_flag_1_is_stored_as_one_message(ctx, proc, caplog):
    """batch="1" (rocketmq 0.4.4) is false for Boolean.parseBoolean: one message, one warning."""
    body = encode_batch([BatchMessage(0, b"a", ""), BatchMessage(0, b"b", "")])
    with caplog.at_level(logging.WARNING):
        proc.process_send(send_v1("T2", body=body, batch="1"), FakeConn())
        proc.process_send(send_v1("T2", body=body, batch="1"), FakeConn())
    recs = stored(ctx, "T2")
    assert [r.body for r in recs] == [body, body]
    warnings = [r for r in caplog.records if "Boolean.parseBoolean" in r.getMessage()]
    assert len(warnings) == 1 and "batch='1'" in warnings[0].getMessage()


def test_code_310_m_flag_1_is_stored_as_one_message(ctx, proc):
    """m="1" (C++ 2.x) on SEND_MESSAGE_V2 is not a batch either."""
    body = encode_batch([BatchMessage(0, b"a", ""), BatchMessage(0, b"b", "")])
    resp = proc.process_send(send_v2("T2", body=body, m="1"), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    assert [r.body for r in stored(ctx, "T2")] == [body]


def test_batch_320_splits_blocks_with_consecutive_offsets(ctx, proc):
    """320 stores each block; msgIds are comma-joined, queueOffset is the first offset."""
    body = encode_batch([BatchMessage(i, b"m%d" % i, f"KEYS\u0001k{i}") for i in range(3)])
    resp = proc.process_send(send_v2("T3", body=body, code=RequestCode.SEND_BATCH_MESSAGE,
                                     m="true", props={"WAIT": "true"}), FakeConn())
    recs = stored(ctx, "T3")
    assert [r.body for r in recs] == [b"m0", b"m1", b"m2"]
    assert [r.queue_offset for r in recs] == [0, 1, 2]
    assert [r.flag for r in recs] == [0, 1, 2]
    ids = resp.ext_fields["msgId"].split(",")
    assert ids == [create_offset_msg_id(*STORE_HOST, r.physical_offset) for r in recs]
    assert resp.ext_fields["queueOffset"] == "0"


@pytest.mark.parametrize("extra", [{"f": "4"}, {"props": {"WAIT": "true", "DELAY": "2"}}],
                         ids=["transaction prepared", "delay level"])
def test_a_transactional_or_delayed_batch_is_message_illegal(ctx, proc, extra):
    """CommitLog.asyncPutMessages refuses a batch whose sysFlag has transaction bits or whose
    properties have a delay level, storing nothing."""
    body = encode_batch([BatchMessage(0, b"m0", "KEYS\u0001k0")])
    resp = proc.process_send(send_v2("T4", body=body, code=RequestCode.SEND_BATCH_MESSAGE,
                                     m="true", **extra), FakeConn())
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL
    assert stored(ctx, "T4") == []


def test_batch_record_properties_are_block_then_batch_properties(ctx, proc):
    """Each batch record's properties = its block's + separator + the batch's (+CLUSTER)."""
    body = encode_batch([BatchMessage(0, b"m", "KEYS\u0001k0")])
    proc.process_send(send_v2("T3", body=body, code=RequestCode.SEND_BATCH_MESSAGE, m="true",
                              props={"WAIT": "true"}), FakeConn())
    (rec,) = stored(ctx, "T3")
    assert rec.properties_str == "KEYS\u0001k0\u0002WAIT\u0001true\u0002CLUSTER\u0001DefaultCluster"


def test_malformed_batch_body_is_message_illegal(ctx, proc):
    """A batch body whose lengths do not add up is refused, naming the block."""
    resp = proc.process_send(send_v2("T3", body=b"\x00\x00\x00\x30garbage",
                                     code=RequestCode.SEND_BATCH_MESSAGE, m="true"), FakeConn())
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "batch block 0" in resp.remark


def test_oneway_send_stores_without_answering(ctx, proc):
    """A oneway send returns no response but the message is stored."""
    assert proc.process_send(send_v2("T4", oneway=True), FakeConn()) is None
    assert len(stored(ctx, "T4")) == 1


def test_retry_topic_at_max_reconsume_times_goes_to_dlq(ctx, proc):
    """%RETRY%g with reconsumeTimes >= maxReconsumeTimes is redirected to %DLQ%g."""
    cmd = send_v2("%RETRY%g1", j="3", l="3")
    cmd.version = 409
    resp = proc.process_send(cmd, FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    (rec,) = stored(ctx, "%DLQ%g1")
    assert rec.reconsume_times == 3


def test_delay_level_is_parked_on_the_schedule_topic(ctx, proc):
    """DELAY=3 stores on SCHEDULE_TOPIC_XXXX queue 2 with REAL_TOPIC / REAL_QID."""
    proc.process_send(send_v2("T5", queue_id=1, props={"DELAY": "3"}), FakeConn())
    (rec,) = stored(ctx, "SCHEDULE_TOPIC_XXXX", 2)
    assert rec.properties["REAL_TOPIC"] == "T5" and rec.properties["REAL_QID"] == "1"
    assert stored(ctx, "T5", 1) == []


def test_prepared_transaction_message_is_parked_on_the_half_topic(ctx, proc):
    """TRAN_MSG=true goes to RMQ_SYS_TRANS_HALF_TOPIC queue 0 (not to consumers)."""
    proc.process_send(send_v2("T6", props={"TRAN_MSG": "true"}, f="4"), FakeConn())
    rec = ctx.store.look_message_by_offset(0)
    assert rec.topic == "RMQ_SYS_TRANS_HALF_TOPIC" and rec.properties["REAL_TOPIC"] == "T6"
    assert rec.sys_flag & 0xC == 0


def test_timer_message_beyond_the_horizon_is_message_illegal(ctx, proc):
    """With the timer service on, a TIMER_DELAY_SEC beyond timerMaxDelaySec is MESSAGE_ILLEGAL."""
    ctx.timer_service = object()
    ctx.config.timer_max_delay_sec = 60
    resp = proc.process_send(send_v2("T7", props={"TIMER_DELAY_SEC": "3600"}), FakeConn())
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL
    assert "timerMaxDelaySec=60" in resp.remark


def test_sync_flush_answers_only_after_the_flush(tmp_path):
    """Under SYNC_FLUSH the response waits for the group commit."""
    ctx = make_context(tmp_path, sync_flush=True, reactor_clock=True)
    proc = SendMessageProcessor(ctx)
    got = []
    d = proc.process_send(send_v2("T8"), FakeConn())
    d.addCallback(got.append)
    assert got == []
    ctx.clock.advance(0)
    assert got[0].code == ResponseCode.SUCCESS and "msgId" in got[0].ext_fields
    ctx.store.shutdown()


def test_sync_flush_answers_a_message_with_wait_false_at_once(tmp_path):
    """CommitLog.submitFlushRequest waits for the flush only when isWaitStoreMsgOK: WAIT=false
    (any case) is answered as soon as it is stored, SYNC_FLUSH or not; so is a retry."""
    ctx = make_context(tmp_path, sync_flush=True, reactor_clock=True)
    proc = SendMessageProcessor(ctx)
    resp = proc.process_send(send_v2("T8", props={"TAGS": "a", "WAIT": "FALSE"}), FakeConn())
    assert resp.code == ResponseCode.SUCCESS and "msgId" in resp.ext_fields
    back = proc.process_send_back(send_back_cmd(0, "cgW"), FakeConn())
    assert back.code == ResponseCode.SUCCESS
    ctx.clock.advance(0)
    ctx.store.shutdown()


def test_missing_required_header_raises_naming_the_field(ctx, proc):
    """A send without topic fails like Java's decodeCommandCustomHeader (field named)."""
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "pg"}, b"x")
    with pytest.raises(Exception, match="<b>"):
        proc.process_send(cmd, FakeConn())


def send_back_cmd(offset, group="cg", delay_level=0, max_times=None, version=409):
    ext = {"offset": str(offset), "group": group, "delayLevel": str(delay_level)}
    if max_times is not None:
        ext["maxReconsumeTimes"] = str(max_times)
    cmd = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, ext)
    cmd.version = version
    return cmd


def test_send_back_delays_into_the_retry_topic(ctx, proc):
    """36 with delayLevel 0 re-queues via SCHEDULE_TOPIC_XXXX level 3 to %RETRY%group."""
    proc.process_send(send_v2("T9", props={"TAGS": "x"}), FakeConn())
    resp = proc.process_send_back(send_back_cmd(0, "cgA"), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    (rec,) = stored(ctx, "SCHEDULE_TOPIC_XXXX", 2)
    assert rec.properties["REAL_TOPIC"] == "%RETRY%cgA"
    assert rec.properties["RETRY_TOPIC"] == "T9" and rec.reconsume_times == 1
    assert rec.properties["ORIGIN_MESSAGE_ID"] == create_offset_msg_id(*STORE_HOST, 0)
    assert ctx.topic_config.select_topic_config("%RETRY%cgA") is not None


def test_send_back_after_max_reconsume_times_goes_to_dlq(ctx, proc):
    """36 for a message already retried maxReconsumeTimes times lands in %DLQ%group."""
    cmd = send_v2("T9", j="2")
    proc.process_send(cmd, FakeConn())
    resp = proc.process_send_back(send_back_cmd(0, "cgB", max_times=2), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    (rec,) = stored(ctx, "%DLQ%cgB")
    assert rec.reconsume_times == 3


def test_send_back_of_an_unknown_offset_is_system_error(ctx, proc):
    """36 with a commitlog offset holding no message answers SYSTEM_ERROR."""
    resp = proc.process_send_back(send_back_cmd(123456), FakeConn())
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "look message by offset failed, 123456"



def test_boolean_zero_is_not_reported_as_misread(ctx, proc, caplog):
    """batch="0"/unitMode="0" mean false to Java as to the C++ client: no misread warning."""
    with caplog.at_level(logging.WARNING):
        resp = proc.process_send(
            send_v1("TopicZero", body=b"zero", batch="0", unitMode="0"), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    assert not [r for r in caplog.records if "Boolean.parseBoolean" in r.getMessage()]
