"""RECALL_MESSAGE (370) and the send's recallHandle (RocketMQ 5.3 ``RecallMessageProcessor``,
``SendMessageProcessor.attachRecallHandle``) through a BrokerController's dispatcher, on a
MemoryReactorClock: Java's codes and remarks, and the recalled message never delivered."""

from __future__ import annotations

import pytest
from processor_support import FakeConn, send_v1, send_v2
from twisted.internet.testing import MemoryReactorClock

from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.message import TIMER_TOPIC
from rocketmq_emu.broker.recall_handle import build_handle, decode_handle
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

NOW_S = 1_700_000_000


def make_broker(tmp_path, **config):
    config.setdefault("recall_message_enable", True)
    reactor = MemoryReactorClock()
    reactor.advance(NOW_S)
    cfg = BrokerConfig(listen_port=20911, store_path_root_dir=str(tmp_path / "store"),
                       mapped_file_size_commit_log=256 * 1024,
                       mapped_file_size_consume_queue=200 * 20, **config)
    broker = BrokerController(cfg, reactor=reactor, host="127.0.0.1")
    broker.start()
    return broker, reactor


@pytest.fixture
def broker(tmp_path):
    b, reactor = make_broker(tmp_path)
    b.reactor_clock = reactor
    yield b
    b.stop()


def dispatch(broker, cmd):
    return broker.dispatcher.dispatch(cmd, FakeConn())


def now_ms(broker) -> int:
    return broker.ctx.now_ms()


def send_timer(broker, topic="T", key="ID-1", deliver_ms=None, code=RequestCode.SEND_MESSAGE_V2,
               **props):
    deliver_ms = now_ms(broker) + 60_000 if deliver_ms is None else deliver_ms
    all_props = {"UNIQ_KEY": key, "TIMER_DELIVER_MS": str(deliver_ms), **props}
    make = send_v2 if code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE) \
        else send_v1
    cmd = make(topic, b"body", 0, all_props, **({"code": code} if make is send_v2 else {}))
    return dispatch(broker, cmd)


def recall_cmd(topic, handle, group="pg"):
    ext = {"topic": topic, "recallHandle": handle}
    if group is not None:
        ext["producerGroup"] = group
    return RemotingCommand.request(RequestCode.RECALL_MESSAGE, ext)


def delivered(broker, topic="T", queue_id=0):
    store = broker.store
    lo = store.get_min_offset_in_queue(topic, queue_id)
    hi = store.get_max_offset_in_queue(topic, queue_id)
    return [store.look_message_by_offset(off).properties["UNIQ_KEY"]
            for off, _s, _t in store.get_consume_queue_units(topic, queue_id, lo, hi - lo)]


def advance(broker, seconds):
    broker.reactor_clock.advance(seconds)


# --- the send's recallHandle -----------------------------------------------------------------
@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2])
def test_timer_send_answers_a_recall_handle(broker, code):
    """v1 handle: real topic, broker name, TIMER_OUT_MS + 1, UNIQ_KEY."""
    deliver = now_ms(broker) + 60_000
    resp = send_timer(broker, deliver_ms=deliver, code=code)
    assert resp.code == ResponseCode.SUCCESS
    handle = decode_handle(resp.ext_fields["recallHandle"])
    assert (handle.topic, handle.broker_name, handle.timestamp_str, handle.message_id) == \
        ("T", "broker-a", str(deliver + 1), "ID-1")


def test_normal_send_and_due_timer_send_answer_no_handle(broker):
    """Only a message that went to the timer queue gets one."""
    assert "recallHandle" not in dispatch(broker, send_v2("T", props={"UNIQ_KEY": "n"})).ext_fields
    past = send_timer(broker, deliver_ms=now_ms(broker) - 1)
    assert past.code == ResponseCode.SUCCESS and "recallHandle" not in past.ext_fields
    level = dispatch(broker, send_v2("T", props={"UNIQ_KEY": "l", "DELAY": "2"}))
    assert "recallHandle" not in level.ext_fields


# --- RECALL_MESSAGE ----------------------------------------------------------------------------
def test_recall_before_due_time_removes_the_message(broker):
    """SUCCESS with msgId; when the time comes only the other message is delivered and the
    marker never reaches the topic."""
    handle = send_timer(broker, key="gone").ext_fields["recallHandle"]
    send_timer(broker, key="kept")
    resp = dispatch(broker, recall_cmd("T", handle))
    assert (resp.code, resp.remark, resp.ext_fields["msgId"]) == \
        (ResponseCode.SUCCESS, None, "gone")
    advance(broker, 61)
    assert delivered(broker) == ["kept"]
    assert broker.schedule.timer.deleted == 1


def test_recall_after_delivery_is_timestamp_invalid(broker):
    """Once the time has passed: ILLEGAL_OPERATION "recall failed, timestamp invalid"."""
    handle = send_timer(broker, key="late").ext_fields["recallHandle"]
    advance(broker, 61)
    assert delivered(broker) == ["late"]
    resp = dispatch(broker, recall_cmd("T", handle))
    assert (resp.code, resp.remark) == (ResponseCode.ILLEGAL_OPERATION,
                                        "recall failed, timestamp invalid")


def test_recall_survives_a_broker_restart(tmp_path):
    """The marker is in the schedule_log: a restart does not bring the message back."""
    b, reactor = make_broker(tmp_path)
    handle = send_timer(b, key="gone").ext_fields["recallHandle"]
    send_timer(b, key="kept")
    assert dispatch(b, recall_cmd("T", handle)).code == ResponseCode.SUCCESS
    b.stop()
    b2 = BrokerController(b.config, reactor=reactor, host="127.0.0.1")
    b2.start()
    try:
        reactor.advance(61)
        assert delivered(b2) == ["kept"]
    finally:
        b2.stop()


@pytest.mark.parametrize(("topic", "handle", "code", "remark"), [
    ("Nope", None, ResponseCode.TOPIC_NOT_EXIST, "recall failed, the topic[Nope] not exist"),
    ("T", "garbage!", ResponseCode.ILLEGAL_OPERATION, "recall handle is invalid"),
    ("T", build_handle("Other", "broker-a", "1", "x"), ResponseCode.ILLEGAL_OPERATION,
     "recall failed, topic not match"),
    ("T", build_handle("T", "broker-z", "1", "x"), ResponseCode.ILLEGAL_OPERATION,
     "recall failed, broker service not available"),
    ("T", build_handle("T", "broker-a", "soon", "x"), ResponseCode.ILLEGAL_OPERATION,
     "recall failed, timestamp invalid"),
    ("T", build_handle("T", "broker-a", str((NOW_S + 3 * 365 * 86400) * 1000), "x"),
     ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid"),
])
def test_refusals_carry_java_codes_and_remarks(broker, topic, handle, code, remark):
    """Checks in RecallMessageProcessor's order."""
    send_timer(broker)  # creates topic T
    resp = dispatch(broker, recall_cmd(topic, handle or build_handle(topic, "broker-a", "1", "x")))
    assert (resp.code, resp.remark) == (code, remark)


def test_missing_handle_field_is_a_system_error(broker):
    """recallHandle is @CFNotNull: the header does not decode."""
    cmd = RemotingCommand.request(RequestCode.RECALL_MESSAGE, {"topic": "T"})
    assert dispatch(broker, cmd).code == ResponseCode.SYSTEM_ERROR


def test_recall_disabled_is_no_permission(tmp_path):
    """recallMessageEnable=false: NO_PERMISSION "recall failed, operation is forbidden"."""
    b, _ = make_broker(tmp_path, recall_message_enable=False)
    try:
        handle = send_timer(b).ext_fields["recallHandle"]
        resp = dispatch(b, recall_cmd("T", handle))
        assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION,
                                            "recall failed, operation is forbidden")
    finally:
        b.stop()


def test_not_writable_broker_recalls_unless_told_not_to(tmp_path):
    """brokerPermission without write: allowed by default (allowRecallWhenBrokerNotWriteable);
    refused as SERVICE_NOT_AVAILABLE when that is off."""
    b, _ = make_broker(tmp_path, allow_recall_when_broker_not_writeable=False)
    try:
        handle = send_timer(b).ext_fields["recallHandle"]
        b.config.broker_permission = 4
        resp = dispatch(b, recall_cmd("T", handle))
        assert (resp.code, resp.remark) == (ResponseCode.SERVICE_NOT_AVAILABLE,
                                            "recall failed, broker service not available")
        b.config.allow_recall_when_broker_not_writeable = True
        assert dispatch(b, recall_cmd("T", handle)).code == ResponseCode.SUCCESS
    finally:
        b.stop()


def test_marker_is_stored_like_javas(broker):
    """On the timer queue: tag _RECALL_TAG_, body "0", TIMER_DEL_UNIQKEY topic+id, PGROUP."""
    handle = send_timer(broker, key="k").ext_fields["recallHandle"]
    dispatch(broker, recall_cmd("T", handle, group="PG1"))
    store = broker.store
    lo = store.get_min_offset_in_queue(TIMER_TOPIC, 0)
    units = store.get_consume_queue_units(TIMER_TOPIC, 0, lo, 10)
    marker = store.look_message_by_offset(units[-1][0])
    props = marker.properties
    assert marker.body == b"0"
    assert (props["TAGS"], props["TIMER_DEL_UNIQKEY"], props["UNIQ_KEY"], props["PGROUP"],
            props["REAL_TOPIC"]) == ("_RECALL_TAG_", "T+k", "k", "PG1", "T")
    assert props["TIMER_DELIVER_MS"] == decode_handle(handle).timestamp_str


def test_recall_is_forbidden_by_default_as_on_apache(tmp_path):
    """Without recallMessageEnable=true (Apache's default false): NO_PERMISSION."""
    from rocketmq_emu.broker.config import BrokerConfig

    assert BrokerConfig().recall_message_enable is False
