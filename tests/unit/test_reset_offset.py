"""Offset reset bodies: fastjson ``Map<MessageQueue, Long>`` encoding and the lenient parser,
and the broker-side computation of reset offsets."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_transaction import T0, Broker, FakeConn
from twisted.internet.task import Clock

from rocketmq_emu.broker.client_manager import ClientChannelInfo
from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.processors.reset_offset import ResetOffsetProcessor
from rocketmq_emu.broker.remoting.bodies import (
    decode_offset_table,
    encode_offset_table,
    encode_offset_table_for_c,
)
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


def test_offset_table_is_written_with_object_keys_like_fastjson():
    """``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset}}``."""
    body = encode_offset_table({("T", "broker-a", 1): 5})
    assert body == b'{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:5}}'


def test_lenient_parser_reads_object_keys_unquoted_ints_and_plain_json():
    """Object keys, fastjson's unquoted int keys and standard JSON all parse."""
    doc = loads_lenient('{"a":{{"topic":"T","queueId":0}:[1,2]}, 3:{"x":null}, "s":"v"}')
    assert doc["a"][(("queueId", 0), ("topic", "T"))] == [1, 2]
    assert doc[3] == {"x": None}
    assert doc["s"] == "v"


def test_c_form_is_a_list():
    """``ResetOffsetBodyForC``: a list of {brokerName, offset, queueId, topic}."""
    body = encode_offset_table_for_c({("T", "b", 2): 9})
    assert json.loads(body) == {"offsetTable": [{"brokerName": "b", "offset": 9,
                                                 "queueId": 2, "topic": "T"}]}
    assert decode_offset_table(body) == {("T", "b", 2): 9}


@given(st.dictionaries(
    st.tuples(st.text("abcXYZ%_-|", min_size=1, max_size=8), st.text("ab-c", min_size=1,
              max_size=6), st.integers(0, 64)),
    st.integers(0, 2**62), max_size=8))
def test_offset_table_round_trips(table):
    """decode(encode(t)) == t for any table."""
    assert decode_offset_table(encode_offset_table(table)) == table


@pytest.fixture
def broker(tmp_path):
    clock = Clock()
    clock.advance(T0)
    b = Broker(tmp_path, clock)
    yield b
    b.close()


def _reset(broker, topic, group, ts, force="true", language="JAVA"):
    cmd = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {
        "topic": topic, "group": group, "timestamp": str(ts), "isForce": force})
    cmd.language = language
    return ResetOffsetProcessor(broker.ctx).reset_offset(cmd, FakeConn())


def _fill(broker, clock, topic, n):
    broker.store.topic_config.create_topic_in_send_message_back_method(topic, 1, 6)
    for i in range(n):
        ext = {"a": "p", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
               "g": "0", "h": "0", "i": properties_to_string({"UNIQ_KEY": f"U{i}"})}
        broker.send.process_send(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext,
                                                         b"x"), FakeConn())
        clock.advance(10)


def test_reset_by_time_picks_the_offset_of_the_timestamp(broker):
    """Messages 10 s apart: resetting to the 3rd one's time gives offset 2."""
    _fill(broker, broker.clock, "RT", 5)
    broker.store.consumer_offsets.commit_offset("c", "g", "RT", 0, 5)
    resp = _reset(broker, "RT", "g", int((T0 + 20) * 1000))
    assert resp.code == ResponseCode.CONSUMER_NOT_ONLINE
    assert broker.store.consumer_offsets.query_offset("g", "RT", 0) == 2


def test_not_forced_reset_keeps_an_earlier_consumer_offset(broker):
    """isForce=false: the offset only moves backwards."""
    _fill(broker, broker.clock, "RF", 5)
    broker.store.consumer_offsets.commit_offset("c", "g", "RF", 0, 1)
    _reset(broker, "RF", "g", -1, force="false")
    assert broker.store.consumer_offsets.query_offset("g", "RF", 0) == 1
    _reset(broker, "RF", "g", -1, force="true")
    assert broker.store.consumer_offsets.query_offset("g", "RF", 0) == 5


def test_reset_of_unknown_topic_is_a_system_error(broker):
    """No topic config → SYSTEM_ERROR with RocketMQ's remark."""
    resp = _reset(broker, "Nope", "g", 0)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "[reset-offset] reset offset failed, no topic in this broker. topic=Nope"


@pytest.mark.parametrize(("version", "supported"), [(27, False), (28, True)])
def test_clients_older_than_3_0_7_snapshot_cannot_reset(broker, version, supported):
    """MQVersion.Version.V3_0_7_SNAPSHOT is ordinal 28 (V3_0_6 is 27): an older client online
    makes the reset a SYSTEM_ERROR naming its version (Java ``Broker2Client.resetOffset``)."""
    _fill(broker, broker.clock, "RV", 1)
    broker.store.consumer_offsets.commit_offset("c", "gv", "RV", 0, 1)
    channel = FakeConn()
    channel.send_oneway = lambda request: None
    info = ClientChannelInfo(channel, "c1", version=version)
    broker.ctx.consumer_manager.register_consumer("gv", info, "CONSUME_PASSIVELY", "CLUSTERING",
                                                  "CONSUME_FROM_LAST_OFFSET", [], notify=False)
    resp = _reset(broker, "RV", "gv", -1)
    if supported:
        assert resp.code == ResponseCode.SUCCESS
    else:
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert resp.remark == f"the client does not support this feature. version={version}"
