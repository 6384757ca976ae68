"""The pure parts of the gRPC MessagingService: the proxy's queue hash, message conversion both
ways, merged client settings and the reading of a POP answer."""

from __future__ import annotations

import hashlib

import pytest

from rocketmq_emu.broker.commitlog.record import MessageRecord, encode_record
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.convert import send_properties, send_sys_flag, to_grpc_message
from rocketmq_emu.broker.grpc.pop_result import FOUND, POLLING_NOT_FOUND, read_pop_response
from rocketmq_emu.broker.grpc.routes import consistent_hash
from rocketmq_emu.broker.grpc.settings import merge_producer, merge_subscription
from rocketmq_emu.broker.grpc.status import Code, ProxyError
from rocketmq_emu.broker.message import java_string_hash
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

#: Guava 33.6 ``Hashing.consistentHash(key.hashCode(), buckets)``, printed by the jar PySpark
#: ships (golden values).
GUAVA = [
    ("g0", 1000, 733), ("g1", 16, 9), ("g1", 7, 6), ("g1", 1000, 290), ("order-42", 16, 10),
    ("order-42", 7, 3), ("order-42", 1000, 753), ("消息组", 16, 7), ("消息组", 7, 2),
    ("消息组", 1000, 494), ("", 1000, 0),
    ("a-very-long-message-group-name-0123456789", 16, 11),
    ("a-very-long-message-group-name-0123456789", 1000, 717),
]


def enum(name: str, value: str) -> int:
    """A number of an apache.rocketmq.v2 enum."""
    return messages.protocol().enum_descriptor(name).values_by_name[value].number


def grpc_message(**system) -> object:
    """A gRPC Message to topic T with a body, a message id and the given system properties."""
    m = messages.message_class("Message")()
    m.topic.name = "T"
    m.body = b"body"
    m.system_properties.message_id = "01AA"
    for key, value in system.items():
        setattr(m.system_properties, key, value)
    return m


@pytest.mark.parametrize(("key", "buckets", "expected"), GUAVA)
def test_message_group_queue_is_guavas_consistent_hash(key, buckets, expected):
    """A message group's queue is Guava's consistentHash of its Java hashCode."""
    assert consistent_hash(java_string_hash(key), buckets) == expected


def test_send_properties_carry_the_system_properties_as_the_proxy_sets_them():
    """Tag, keys, message id, group, producer group and attempt become broker properties."""
    m = grpc_message(tag="TagA", message_group="g1", delivery_attempt=0)
    m.system_properties.keys.extend(["k1", "k2"])
    m.user_properties["color"] = "red"
    props = send_properties(m, "T", "10.0.0.1:5000", 1_000)
    assert props["TAGS"] == "TagA"
    assert props["KEYS"] == "k1 k2"
    assert props["UNIQ_KEY"] == "01AA"
    assert props["__SHARDINGKEY"] == "g1"
    assert props["PGROUP"] == "T"
    assert props["RECONSUME_TIME"] == "0"
    assert props["__BORNHOST"] == "10.0.0.1:5000"
    assert props["color"] == "red"


def test_delivery_timestamp_becomes_timer_deliver_ms():
    """A delivery timestamp is TIMER_DELIVER_MS in ms (the arbitrary-time store delivers it)."""
    m = grpc_message()
    m.system_properties.delivery_timestamp.seconds = 2
    m.system_properties.delivery_timestamp.nanos = 500_000_000
    assert send_properties(m, "T", "h:1", 1_000)["TIMER_DELIVER_MS"] == "2500"


def test_transaction_message_is_prepared():
    """A TRANSACTION message gets TRAN_MSG=true and the prepared sysFlag."""
    m = grpc_message(message_type=enum("MessageType", "TRANSACTION"))
    assert send_properties(m, "T", "h:1", 0)["TRAN_MSG"] == "true"
    assert send_sys_flag(m) == 0x4


def test_user_property_with_a_system_name_is_refused():
    """A user property named like a system one: ILLEGAL_MESSAGE_PROPERTY_KEY."""
    m = grpc_message()
    m.user_properties["UNIQ_KEY"] = "x"
    with pytest.raises(ProxyError) as err:
        send_properties(m, "T", "h:1", 0)
    assert err.value.code == Code.ILLEGAL_MESSAGE_PROPERTY_KEY


def test_tag_with_a_bar_is_refused():
    """A tag containing '|': ILLEGAL_MESSAGE_TAG."""
    with pytest.raises(ProxyError) as err:
        send_properties(grpc_message(tag="a|b"), "T", "h:1", 0)
    assert err.value.code == Code.ILLEGAL_MESSAGE_TAG


def test_blank_message_id_is_refused():
    """Every message needs an id: ILLEGAL_MESSAGE_ID."""
    with pytest.raises(ProxyError) as err:
        send_properties(grpc_message(message_id=" "), "T", "h:1", 0)
    assert err.value.code == Code.ILLEGAL_MESSAGE_ID


def record(**props) -> MessageRecord:
    """A stored record of topic T with the given properties."""
    rec = MessageRecord(topic="T", body=b"payload", properties=dict(props), born_timestamp=1_000,
                        born_host=("10.0.0.1", 5000), store_host=("10.0.0.5", 10911),
                        reconsume_times=2)
    rec.store_timestamp = 2_000
    return rec


def test_received_message_has_md5_digest_identity_encoding_and_attempt():
    """GrpcConverter: upper-case MD5, IDENTITY encoding, delivery attempt = reconsumeTimes + 1."""
    sp = to_grpc_message(record(UNIQ_KEY="01BB", TAGS="t")).system_properties
    assert sp.body_digest.checksum == hashlib.md5(b"payload").hexdigest().upper()
    assert sp.body_encoding == enum("Encoding", "IDENTITY")
    assert sp.delivery_attempt == 3
    assert sp.message_id == "01BB"


@pytest.mark.parametrize(("props", "kind"), [
    ({"TRAN_MSG": "true"}, "TRANSACTION"),
    ({"TIMER_DELIVER_MS": "5"}, "DELAY"),
    ({"DELAY": "3"}, "DELAY"),
    ({"__SHARDINGKEY": "g"}, "FIFO"),
    ({}, "NORMAL"),
])
def test_received_message_type_follows_its_properties(props, kind):
    """The message type is read from the properties as GrpcConverter does."""
    assert to_grpc_message(record(**props)).system_properties.message_type == \
        enum("MessageType", kind)


def test_system_properties_are_not_user_properties():
    """Only names outside MessageConst.STRING_HASH_SET come back as user properties."""
    out = to_grpc_message(record(UNIQ_KEY="1", TAGS="t", color="red", PGROUP="T"))
    assert dict(out.user_properties) == {"color": "red"}


def test_producer_settings_get_the_proxys_limits():
    """A producer's settings: 4 MiB bodies, exponential back-off, type validation on."""
    settings = messages.message_class("Settings")()
    merge_producer(settings)
    assert settings.publishing.max_body_size == 4 * 1024 * 1024
    assert settings.publishing.validate_message_type
    assert settings.backoff_policy.max_attempts == 3
    assert settings.backoff_policy.HasField("exponential_backoff")


def test_consumer_settings_of_a_default_group():
    """A consumer without group config: 17 attempts, customized back-off, batch 32, 20 s polls."""
    settings = messages.message_class("Settings")()
    merge_subscription(settings, None)
    assert settings.backoff_policy.max_attempts == 17
    assert settings.backoff_policy.customized_backoff.next[0].seconds == 1
    assert settings.subscription.receive_batch_size == 32
    assert settings.subscription.long_polling_timeout.seconds == 20
    assert not settings.subscription.fifo


def pop_answer(*records: MessageRecord, **ext: str) -> RemotingCommand:
    """A POP_MESSAGE answer carrying the records."""
    request = RemotingCommand.request(RequestCode.POP_MESSAGE, {})
    return request.response(ResponseCode.SUCCESS, None, ext,
                            b"".join(encode_record(r) for r in records))


def test_pop_answer_gives_each_message_its_pop_ck():
    """Each popped message gets the extraInfo built from the answer's header, per queue."""
    rec = record()
    rec.queue_id, rec.queue_offset = 1, 7
    answer = pop_answer(rec, popTime="1000", invisibleTime="30000", reviveQid="3",
                        startOffsetInfo="0 1 7", msgOffsetInfo="0 1 7", restNum="0")
    result = read_pop_response(answer, "T", "broker-a", order=False)
    assert result.status == FOUND
    assert result.messages[0].properties["POP_CK"] == "7 1000 30000 3 0 broker-a 1 7"


def test_pop_timeout_is_polling_not_found():
    """POLLING_TIMEOUT and PULL_NOT_FOUND both mean nothing new."""
    request = RemotingCommand.request(RequestCode.POP_MESSAGE, {})
    answer = request.response(ResponseCode.POLLING_TIMEOUT, "timeout")
    assert read_pop_response(answer, "T", "b", False).status == POLLING_NOT_FOUND


class _Broker:
    """A broker as Routes sees it: its topic configs."""

    def __init__(self, **topics) -> None:
        from types import SimpleNamespace

        self.ctx = SimpleNamespace(topic_config=SimpleNamespace(
            select_topic_config=topics.get))


def _routes():
    from rocketmq_emu.broker.configs.topics import TopicConfig
    from rocketmq_emu.broker.grpc.routes import Routes

    brokers = {"a": _Broker(T=TopicConfig("T", 4, 4)), "b": _Broker(T=TopicConfig("T", 2, 2))}
    return Routes(lambda: brokers, lambda: 8081)


def test_sends_without_group_go_round_robin_over_every_writable_queue():
    """Six sends visit the 4 + 2 write queues of both brokers once each."""
    routes = _routes()
    picked = [routes.select_for_send("T", None) for _ in range(6)]
    assert sorted((q.broker_name, q.queue_id) for q in picked) == \
        [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("b", 0), ("b", 1)]


def test_message_group_is_pinned_to_its_hashed_queue():
    """A group's queue is the consistent hash over all 6 write queues (a's first, then b's)."""
    routes = _routes()
    index = consistent_hash(java_string_hash("order-42"), 6)
    expected = ("a", index) if index < 4 else ("b", index - 4)
    picked = routes.select_for_send("T", "order-42")
    assert (picked.broker_name, picked.queue_id) == expected


def test_unknown_topic_is_topic_not_found():
    """No broker has the topic: TOPIC_NOT_FOUND."""
    with pytest.raises(ProxyError) as err:
        _routes().select_for_send("Nope", None)
    assert err.value.code == Code.TOPIC_NOT_FOUND


@pytest.mark.parametrize("value", ["a\x00b", "tab\there", "del\x7f", "c1\x9f"])
def test_user_property_value_with_a_control_character_is_refused(value):
    """Guava's javaIsoControl range (C0, DEL, C1) is refused in property values."""
    m = grpc_message()
    m.user_properties["k"] = value
    with pytest.raises(ProxyError) as err:
        send_properties(m, "T", "h:1", 0)
    assert err.value.code == Code.ILLEGAL_MESSAGE_PROPERTY_KEY


def test_user_property_with_non_ascii_text_is_kept():
    """Letters outside ASCII (not control characters) pass."""
    m = grpc_message()
    m.user_properties["k"] = "é中\xa0"
    assert send_properties(m, "T", "h:1", 0)["k"] == "é中\xa0"
