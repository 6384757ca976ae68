"""RocketMQ 5 topic message types: parsing, a topic's type, the proxy's send check, route types,
and UPDATE_AND_CREATE_TOPIC's ``attributes`` header."""

from __future__ import annotations

import pytest
from processor_support import FakeConn

from rocketmq_emu.broker.configs.topics import TopicConfig
from rocketmq_emu.broker.processors.admin import AdminBrokerProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.topic_message_type import (
    CODE_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
    MessageType,
    TopicMessageType,
    accept_message_types,
    check_message_type,
    parse_from_message_property,
    route_accept_message_types,
    topic_message_type,
    validate,
)

T = TopicMessageType


def typed(kind: str | None) -> TopicConfig:
    return TopicConfig("T", attributes={} if kind is None else {"message.type": kind})


# --- parseFromMessageProperty ----------------------------------------------------------------------
@pytest.mark.parametrize("props, expected", [
    ({}, T.NORMAL),
    ({"TAGS": "a", "KEYS": "k"}, T.NORMAL),
    ({"TRAN_MSG": "true"}, T.TRANSACTION),
    ({"TRAN_MSG": "false"}, T.NORMAL),
    ({"TRAN_MSG": "TRUE"}, T.NORMAL),                   # Java compares "true" exactly
    ({"TRAN_MSG": "true", "DELAY": "3", "__SHARDINGKEY": "g"}, T.TRANSACTION),
    ({"DELAY": "3"}, T.DELAY),
    ({"TIMER_DELIVER_MS": "1700000000000"}, T.DELAY),
    ({"TIMER_DELAY_SEC": "10"}, T.DELAY),
    ({"TIMER_DELAY_MS": "10"}, T.DELAY),
    ({"DELAY": "", "__SHARDINGKEY": "g"}, T.DELAY),    # presence, not value
    ({"__SHARDINGKEY": "g"}, T.FIFO),
])
def test_parse_from_message_property(props, expected):
    """TRANSACTION before DELAY before FIFO, else NORMAL."""
    assert parse_from_message_property(props) is expected


# --- the topic's type ---------------------------------------------------------------------------
def test_topic_type_from_config():
    """Unknown topic UNSPECIFIED; no attribute (auto-created) NORMAL; else the attribute."""
    assert topic_message_type(None) is T.UNSPECIFIED
    assert topic_message_type(typed(None)) is T.NORMAL
    for kind in T:
        assert topic_message_type(typed(kind.value)) is kind
    with pytest.raises(ValueError, match="No enum constant"):
        topic_message_type(typed("fifo"))


# --- DefaultTopicMessageTypeValidator / ProducerProcessor ----------------------------------------
def test_validate_matrix():
    """Equal types pass; MIXED takes all four; UNSPECIFIED topics take nothing."""
    sendable = (T.NORMAL, T.FIFO, T.DELAY, T.TRANSACTION)
    for topic_type in T:
        for msg_type in sendable:
            ok = topic_type is msg_type or topic_type is T.MIXED
            assert (validate(topic_type, msg_type) is None) == ok, (topic_type, msg_type)
    assert validate(T.MIXED, T.UNSPECIFIED) is not None


def test_conflict_texts_and_codes():
    """The ProxyException text; gRPC status 40014 with the exception's toString()."""
    conflict = check_message_type("T", typed("FIFO"), {})
    assert conflict.code == CODE_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE == 40014
    assert conflict.remoting_code == ResponseCode.MESSAGE_ILLEGAL
    assert conflict.message == ("TopicMessageType validate failed, the expected type is FIFO, "
                                "but actual type is NORMAL")
    assert conflict.grpc_message == ("org.apache.rocketmq.proxy.common.ProxyException: "
                                     + conflict.message)


def test_check_skips_as_the_proxy_does():
    """Not checked: disabled, TRANSFER_FLAG, %RETRY% and %DLQ% topics; an unknown topic fails."""
    fifo = {"__SHARDINGKEY": "g"}
    assert check_message_type("T", typed("FIFO"), fifo) is None
    assert check_message_type("T", typed(None), fifo) is not None
    assert check_message_type("T", typed(None), fifo, enabled=False) is None
    assert check_message_type("T", typed(None), {**fifo, "TRANSFER_FLAG": "true"}) is None
    assert check_message_type("%RETRY%g", None, fifo) is None
    assert check_message_type("%DLQ%g", None, fifo) is None
    missing = check_message_type("Nope", None, {})
    assert (missing.expected, missing.actual) == (T.UNSPECIFIED, T.NORMAL)


# --- RouteActivity.parseTopicMessageType --------------------------------------------------------
def test_accept_message_types():
    """One type per typed topic, all four for MIXED, MESSAGE_TYPE_UNSPECIFIED otherwise."""
    M = MessageType
    assert accept_message_types(T.NORMAL) == (M.NORMAL,)
    assert accept_message_types(T.FIFO) == (M.FIFO,)
    assert accept_message_types(T.DELAY) == (M.DELAY,)
    assert accept_message_types(T.TRANSACTION) == (M.TRANSACTION,)
    assert accept_message_types(T.MIXED) == (M.NORMAL, M.FIFO, M.DELAY, M.TRANSACTION)
    assert accept_message_types(T.UNSPECIFIED) == (M.MESSAGE_TYPE_UNSPECIFIED,)
    assert route_accept_message_types(typed(None)) == (M.NORMAL,)
    assert route_accept_message_types(None) == (M.MESSAGE_TYPE_UNSPECIFIED,)
    assert [int(m) for m in M] == [0, 1, 2, 3, 4]


# --- UPDATE_AND_CREATE_TOPIC with the attributes header -------------------------------------------
def create(topic: str, attributes: str | None = None, queues: int = 4) -> RemotingCommand:
    ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues),
           "writeQueueNums": str(queues), "perm": "6", "topicFilterType": "SINGLE_TAG",
           "topicSysFlag": "0", "order": "false"}
    if attributes is not None:
        ext["attributes"] = attributes
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)


@pytest.fixture
def admin(ctx):
    return AdminBrokerProcessor(ctx)


def test_create_typed_topic_then_update_and_delete_the_attribute(ctx, admin):
    """'+message.type=FIFO' types the topic; an update without it keeps it; '-' removes it."""
    assert admin.update_and_create_topic(create("F", "+message.type=FIFO"), FakeConn()).code == 0
    assert ctx.topic_config.select_topic_config("F").attributes == {"message.type": "FIFO"}
    assert admin.update_and_create_topic(create("F", "", queues=8), FakeConn()).code == 0
    tc = ctx.topic_config.select_topic_config("F")
    assert (tc.write_queue_nums, topic_message_type(tc)) == (8, T.FIFO)
    assert admin.update_and_create_topic(create("F", "-message.type"), FakeConn()).code == 0
    assert topic_message_type(ctx.topic_config.select_topic_config("F")) is T.NORMAL


@pytest.mark.parametrize("attributes, code, remark", [
    ("+message.type=MIXED", ResponseCode.INVALID_PARAMETER,
     "MIXED message type is not supported."),
    ("+message.type=ORDERLY", ResponseCode.SYSTEM_ERROR,
     "value is not in set: [UNSPECIFIED, MIXED, TRANSACTION, FIFO, DELAY, NORMAL]"),
    ("+colour=red", ResponseCode.SYSTEM_ERROR, "unsupported key: colour"),
    ("message.type=FIFO", ResponseCode.SYSTEM_ERROR,
     "add/alter attribute format is wrong: message.type"),
    ("-message.type", ResponseCode.SYSTEM_ERROR,
     "only add attribute is supported while creating topic. key: message.type"),
])
def test_create_refusals(ctx, admin, attributes, code, remark):
    """Refusals answer AdminBrokerProcessor's code and remark and create nothing."""
    resp = admin.update_and_create_topic(create("R", attributes), FakeConn())
    assert (resp.code, resp.remark) == (code, remark)
    assert ctx.topic_config.select_topic_config("R") is None


def test_mixed_allowed_with_enable_mixed_message_type(ctx, admin):
    """enableMixedMessageType=true lets a topic be MIXED."""
    ctx.config.enable_mixed_message_type = True
    assert admin.update_and_create_topic(create("M", "+message.type=MIXED"), FakeConn()).code == 0
    assert topic_message_type(ctx.topic_config.select_topic_config("M")) is T.MIXED


def test_refused_update_leaves_the_topic(ctx, admin):
    """A refused update changes neither queues nor attributes."""
    admin.update_and_create_topic(create("U", "+message.type=DELAY"), FakeConn())
    resp = admin.update_and_create_topic(create("U", "+queue.type=BatchCQ", 16), FakeConn())
    assert (resp.code, resp.remark) == (
        ResponseCode.SYSTEM_ERROR, "attempt to update an unchangeable attribute. key: queue.type")
    tc = ctx.topic_config.select_topic_config("U")
    assert (tc.write_queue_nums, tc.attributes) == (4, {"message.type": "DELAY"})


def test_all_topic_config_carries_attributes(ctx, admin):
    """GET_ALL_TOPIC_CONFIG's topics have the attributes map, as 5.x answers it."""
    import json

    admin.update_and_create_topic(create("A", "+message.type=TRANSACTION"), FakeConn())
    body = json.loads(admin.get_all_topic_config(
        RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG), FakeConn()).body)
    assert body["topicConfigTable"]["A"]["attributes"] == {"message.type": "TRANSACTION"}
    assert body["topicConfigTable"]["TBW102"]["attributes"] == {}
