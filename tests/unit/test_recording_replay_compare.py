"""Comparing a replayed answer with the recorded one (broker/recording/compare.py): volatile
parts masked, structure and stable values compared."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.commitlog.record import MessageRecord, encode_record
from rocketmq_emu.broker.recording.compare import compare, json_shape, mask_text
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

SEND = RequestCode.SEND_MESSAGE_V2
PULL = RequestCode.PULL_MESSAGE


def answer(code: int = 0, remark: str | None = None, ext: dict | None = None,
           body: bytes = b"") -> RemotingCommand:
    """A response."""
    return RemotingCommand(code, flag=1, remark=remark, ext_fields=ext or {}, body=body)


def test_send_result_ids_and_offsets_are_masked():
    """msgId, offsetMsgId, queueOffset and transactionId may differ; queueId may not."""
    a = answer(ext={"msgId": "AC11000100002A9F0000000000000000", "queueId": "1",
                    "queueOffset": "0", "transactionId": "x", "MSG_REGION": "DefaultRegion"})
    b = answer(ext={"msgId": "7F00000100002A9F00000000000000C8", "queueId": "1",
                    "queueOffset": "12", "transactionId": "y", "MSG_REGION": "DefaultRegion"})
    assert compare(a, b, SEND) == []
    c = answer(ext={**b.ext_fields, "queueId": "2"})
    assert [d.path for d in compare(a, c, SEND)] == ["extFields.queueId"]


def test_code_difference_is_named():
    """A different response code is one difference, printed with its name."""
    (d,) = compare(answer(0), answer(17), SEND)
    assert d.path == "code" and "17 TOPIC_NOT_EXIST" in str(d)


def test_missing_ext_field_is_a_difference():
    """A key present on one side only differs, even when its value would be masked."""
    (d,) = compare(answer(ext={"msgId": "a"}), answer(), SEND)
    assert d.path == "extFields.msgId" and d.replayed == "(absent)"


def test_remark_addresses_and_times_are_masked():
    """A remark naming an address or a time compares equal across runs."""
    a = answer(1, remark="broker 10.0.0.1:10911 busy since 1700000000000")
    b = answer(1, remark="broker 127.0.0.1:30911 busy since 1712345678901")
    assert compare(a, b, SEND) == []
    assert mask_text("at [::1]:9876") == "at <addr>"


def test_json_body_compared_by_structure_with_volatile_leaves_masked():
    """A route body: addresses masked, list order ignored, queue counts compared."""
    def route(addr: str, order: list[str], read: int) -> bytes:
        return jsonutil.dumps({"brokerDatas": [{"brokerName": n, "brokerAddrs": {0: addr}}
                                               for n in order],
                               "queueDatas": [{"brokerName": "a", "readQueueNums": read}]})
    a = answer(body=route("1.2.3.4:10911", ["a", "b"], 4))
    b = answer(body=route("127.0.0.1:5", ["b", "a"], 4))
    assert compare(a, b, RequestCode.GET_ROUTEINFO_BY_TOPIC) == []
    c = answer(body=route("127.0.0.1:5", ["a", "b"], 8))
    (d,) = compare(a, c, RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert d.path == "body.json.queueDatas[0].readQueueNums"


def test_fastjson_bare_integer_keys_are_read():
    """An offset table with fastjson's unquoted integer keys is a JSON body, not bytes."""
    a = answer(body=b'{"offsetTable":{0:12,1:3}}')
    b = answer(body=b'{"offsetTable":{"0":40,"1":7}}')
    assert compare(a, b, RequestCode.QUERY_CONSUMER_OFFSET) == []


@given(st.integers(10**12, 10**13 - 1), st.integers(10**12, 10**13 - 1))
def test_millisecond_times_are_masked_anywhere(t1, t2):
    """A number in the millisecond-time range is masked under any key."""
    assert json_shape({"x": t1}) == json_shape({"x": t2})


def message(body: bytes, offset: int, **props: str) -> bytes:
    """A stored record as a pull answer carries it."""
    rec = MessageRecord(topic="T", body=body, queue_id=1, properties=props,
                        born_timestamp=offset, store_timestamp=offset, queue_offset=offset,
                        physical_offset=offset * 100, store_host=("10.0.0.1", offset))
    return encode_record(rec)


def test_pulled_messages_compared_without_offsets_hosts_and_times():
    """Two pulls of the same message stored elsewhere at another time match."""
    a = answer(body=message(b"hello", 1, UNIQ_KEY="U1", MIN_OFFSET="0"))
    b = answer(body=message(b"hello", 99, UNIQ_KEY="U1", MIN_OFFSET="5"))
    assert compare(a, b, PULL) == []


def test_pulled_message_body_and_properties_are_compared():
    """Another body or another stable property is a difference."""
    a = answer(body=message(b"hello", 1, TAGS="A"))
    b = answer(body=message(b"bye", 1, TAGS="B"))
    assert {d.path for d in compare(a, b, PULL)} == {"body.messages[0].body",
                                                     "body.messages[0].properties.TAGS"}


def test_message_count_difference_is_one_line():
    """One message recorded, two replayed: the lists' lengths are the difference."""
    a = answer(body=message(b"x", 1))
    b = answer(body=message(b"x", 1) + message(b"y", 2))
    (d,) = compare(a, b, PULL)
    assert d.path == "body.messages" and "<1 items>" in str(d)


def test_other_binary_body_counts_by_length():
    """A body that is neither JSON nor messages compares by its length."""
    assert compare(answer(body=b"\x01\x02"), answer(body=b"\x03\x04"), 999) == []
    assert compare(answer(body=b"\x01\x02"), answer(body=b"\x03"), 999)[0].path == "body.bytes"


def test_table_keyed_by_broker_name_keeps_its_stable_leaves():
    """Under ``brokerAddrTable`` the broker and cluster names are compared, the addresses
    (a flat map under ``brokerAddrs``) masked."""
    def info(name: str, addr: str) -> bytes:
        return jsonutil.dumps({"brokerAddrTable": {"a": {"brokerName": name, "cluster": "C",
                                                         "brokerAddrs": {0: addr}}}})
    code = RequestCode.GET_BROKER_CLUSTER_INFO
    assert compare(answer(body=info("a", "h1:1")), answer(body=info("a", "h2:2")), code) == []
    (d,) = compare(answer(body=info("a", "h1:1")), answer(body=info("z", "h1:1")), code)
    assert d.path == "body.json.brokerAddrTable.a.brokerName"
