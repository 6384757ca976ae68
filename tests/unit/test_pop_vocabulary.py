"""RocketMQ 5 POP wire vocabulary: request/response codes and the POP headers (Apache RocketMQ
5.3.3 ``RequestCode``, ``ResponseCode`` and ``protocol.header.*``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode, request_name
from rocketmq_emu.broker.remoting.headers import BOOL, INT, LONG, HeaderError, pop

ROOT = Path(__file__).resolve().parents[2]
HEADERS = [getattr(pop, name) for name in pop.__all__]
#: The optional fields every POP request header inherits (RpcRequestHeader, TopicRequestHeader).
RPC = {("lo", BOOL), ("ns", "String"), ("nsd", BOOL), ("bname", "String"), ("oway", BOOL)}


def test_pop_request_codes_have_java_numbers():
    """RequestCode.java (5.x): the POP family's numbers."""
    assert {c.name: c.value for c in RequestCode if c.value >= 200050} == {
        "POP_MESSAGE": 200050, "ACK_MESSAGE": 200051, "PEEK_MESSAGE": 200052,
        "CHANGE_MESSAGE_INVISIBLETIME": 200053, "NOTIFICATION": 200054, "POLLING_INFO": 200055,
        "POP_ROLLBACK": 200056, "BATCH_ACK_MESSAGE": 200151}


def test_pop_response_codes_have_java_numbers():
    """ResponseCode.java (5.x): NO_MESSAGE, POLLING_FULL, POLLING_TIMEOUT."""
    assert (ResponseCode.NO_MESSAGE, ResponseCode.POLLING_FULL, ResponseCode.POLLING_TIMEOUT) == (
        208, 209, 210)


def test_pop_codes_are_named_in_logs():
    """request_name knows the POP codes."""
    assert request_name(200050) == "POP_MESSAGE" and request_name(200151) == "BATCH_ACK_MESSAGE"


def test_pop_message_request_as_a_java_client_sends_it():
    """A 5.x client's POP_MESSAGE extFields (makeCustomHeaderToNet writes every non-null field)."""
    ext = {"consumerGroup": "G", "topic": "T", "queueId": "-1", "maxMsgNums": "32",
           "invisibleTime": "60000", "pollTime": "15000", "bornTime": "1700000000000",
           "initMode": "0", "expType": "TAG", "exp": "*", "order": "false", "bname": "broker-a"}
    h = pop.PopMessageRequestHeader.from_ext_fields(ext)
    assert (h.consumer_group, h.topic, h.queue_id, h.max_msg_nums, h.invisible_time, h.poll_time,
            h.born_time, h.init_mode, h.exp_type, h.exp, h.order, h.attempt_id, h.bname) == (
        "G", "T", -1, 32, 60000, 15000, 1700000000000, 0, "TAG", "*", False, None, "broker-a")


def test_pop_message_order_defaults_to_false():
    """Java's ``Boolean order = FALSE`` when the field is absent."""
    ext = {"consumerGroup": "G", "topic": "T", "queueId": "0", "maxMsgNums": "1",
           "invisibleTime": "1", "pollTime": "0", "bornTime": "0", "initMode": "1"}
    assert pop.PopMessageRequestHeader.from_ext_fields(ext).order is False


def test_ack_request_as_a_java_client_sends_it():
    """ACK_MESSAGE extFields with the message's POP_CK as extraInfo."""
    ext = {"consumerGroup": "G", "topic": "T", "queueId": "2", "offset": "105",
           "extraInfo": "100 1700000000000 60000 3 0 broker-a 2 105", "bname": "broker-a"}
    h = pop.AckMessageRequestHeader.from_ext_fields(ext)
    assert (h.queue_id, h.offset, h.extra_info) == (2, 105, ext["extraInfo"])


def test_change_invisible_time_needs_invisible_time():
    """A missing @CFNotNull field raises the HeaderError every header raises."""
    ext = {"consumerGroup": "G", "topic": "T", "queueId": "2", "offset": "105", "extraInfo": "x"}
    with pytest.raises(HeaderError, match="invisibleTime"):
        pop.ChangeInvisibleTimeRequestHeader.from_ext_fields(ext)


@pytest.mark.parametrize("cls", HEADERS, ids=lambda c: c.__name__)
def test_every_required_field_is_required(cls):
    """Each @CFNotNull field, left out of otherwise complete extFields, raises HeaderError."""
    full = {wire: ("1" if kind in (INT, LONG) else "true" if kind == BOOL else "x")
            for _a, wire, kind, _r in cls.SPEC}
    for _attr, wire, _kind, required in cls.SPEC:
        ext = {k: v for k, v in full.items() if k != wire}
        if required:
            with pytest.raises(HeaderError, match=wire):
                cls.from_ext_fields(ext)
        else:
            cls.from_ext_fields(ext)


def test_required_fields_match_java():
    """Wire name, kind and @CFNotNull of each header, as the 5.x Java classes declare them."""
    def req(cls):
        return {(w, k) for _a, w, k, r in cls.SPEC if r}

    def opt(cls):
        return {(w, k) for _a, w, k, r in cls.SPEC if not r}

    group_topic = {("consumerGroup", "String"), ("topic", "String"), ("queueId", INT)}
    assert req(pop.PopMessageRequestHeader) == group_topic | {
        ("maxMsgNums", INT), ("invisibleTime", LONG), ("pollTime", LONG), ("bornTime", LONG),
        ("initMode", INT)}
    assert opt(pop.PopMessageRequestHeader) == RPC | {
        ("expType", "String"), ("exp", "String"), ("order", BOOL), ("attemptId", "String")}
    assert req(pop.PopMessageResponseHeader) == {
        ("popTime", LONG), ("invisibleTime", LONG), ("reviveQid", INT), ("restNum", LONG)}
    assert opt(pop.PopMessageResponseHeader) == {
        ("startOffsetInfo", "String"), ("msgOffsetInfo", "String"), ("orderCountInfo", "String")}
    assert req(pop.AckMessageRequestHeader) == group_topic | {
        ("extraInfo", "String"), ("offset", LONG)}
    assert req(pop.ChangeInvisibleTimeRequestHeader) == group_topic | {
        ("extraInfo", "String"), ("offset", LONG), ("invisibleTime", LONG)}
    assert req(pop.ChangeInvisibleTimeResponseHeader) == {
        ("popTime", LONG), ("invisibleTime", LONG), ("reviveQid", INT)}
    assert req(pop.PeekMessageRequestHeader) == group_topic | {("maxMsgNums", INT)}
    assert req(pop.NotificationRequestHeader) == group_topic | {
        ("pollTime", LONG), ("bornTime", LONG)}
    assert opt(pop.NotificationRequestHeader) == RPC | {("order", BOOL), ("attemptId", "String")}
    assert (req(pop.NotificationResponseHeader), opt(pop.NotificationResponseHeader)) == (
        {("hasMsg", BOOL)}, {("pollingFull", BOOL)})
    assert req(pop.PollingInfoRequestHeader) == group_topic
    assert req(pop.PollingInfoResponseHeader) == {("pollingNum", INT)}
    for cls in (pop.AckMessageRequestHeader, pop.ChangeInvisibleTimeRequestHeader,
                pop.PeekMessageRequestHeader, pop.PollingInfoRequestHeader):
        assert opt(cls) == RPC, cls.__name__


_VALUES = {
    INT: st.integers(-(2**31), 2**31 - 1),
    LONG: st.integers(-(2**63), 2**63 - 1),
    BOOL: st.booleans(),
    "String": st.text(st.characters(codec="utf-8"), max_size=20),
}


@st.composite
def _header(draw):
    cls = draw(st.sampled_from(HEADERS))
    values = {}
    for attr, _wire, kind, required in cls.SPEC:
        value = _VALUES[kind]
        values[attr] = draw(value if required else st.none() | value)
    if "order" in values and values["order"] is None:
        values["order"] = False
    if "polling_full" in values and values["polling_full"] is None:
        values["polling_full"] = False
    return cls(**values)


@given(_header())
def test_headers_round_trip_through_ext_fields(h):
    """to_ext_fields then from_ext_fields gives the same header, for every POP header."""
    assert type(h).from_ext_fields(h.to_ext_fields()) == h


def test_pop_headers_load_lazily():
    """Importing the headers package (as `rmq-emu up` does) leaves the POP module unloaded,
    while ``from ...headers import PopMessageRequestHeader`` still works."""
    code = ("import sys\nimport rocketmq_emu.broker.remoting.headers as h\n"
            "print('rocketmq_emu.broker.remoting.headers.pop' in sys.modules)\n"
            "from rocketmq_emu.broker.remoting.headers import PopMessageRequestHeader\n"
            "print(PopMessageRequestHeader.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["False", "rocketmq_emu.broker.remoting.headers.pop"], out.stderr
