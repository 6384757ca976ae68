"""The gRPC MessagingService of a cluster (``ClusterSpec.grpc_port``) over loopback, with grpcio's
client and this project's message classes: the statuses and answers the 5.x SDKs rely on."""

from __future__ import annotations

import hashlib
import socket
import time

import grpc
import pytest
import pytest_twisted
from twisted.internet import reactor, threads

from rocketmq_emu.broker.cluster import Cluster, ClusterSpec
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.configs.topics import TopicConfig
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.status import Code
from rocketmq_emu.client.testing import TEST_BROKER_SETTINGS, free_broker_port

SERVICE = "/apache.rocketmq.v2.MessagingService/"
META = (("x-mq-client-id", "test-client@1"), ("x-mq-language", "PYTHON"),
        ("x-mq-client-version", "5.1.2"))


def cls(name):
    """A message class of the private pool."""
    return messages.message_class(name)


def enum(name, value):
    """A number of an apache.rocketmq.v2 enum."""
    return messages.protocol().enum_descriptor(name).values_by_name[value].number


class Client:
    """Blocking grpcio calls to the cluster's endpoint (run in a thread: the reactor serves)."""

    def __init__(self, endpoint: str) -> None:
        self.channel = grpc.insecure_channel(endpoint)

    def unary(self, rpc, request, response, metadata=META, timeout=10):
        call = self.channel.unary_unary(SERVICE + rpc, request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=cls(response).FromString)
        return call(request, metadata=metadata, timeout=timeout)

    def stream(self, rpc, request, response, timeout=15):
        call = self.channel.unary_stream(SERVICE + rpc, request_serializer=lambda m: m.SerializeToString(),
                                         response_deserializer=cls(response).FromString)
        return list(call(request, metadata=META, timeout=timeout))

    def close(self):
        self.channel.close()


def in_thread(fn, *args, **kwargs):
    """Run a blocking client call off the reactor thread."""
    return threads.deferToThread(fn, *args, **kwargs)


@pytest.fixture
def served(tmp_path):
    """A started cluster with a gRPC endpoint and topics T (NORMAL) and F (FIFO); its client."""
    cfg = BrokerConfig(broker_name="broker-a", listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(tmp_path / "a"), **TEST_BROKER_SETTINGS)
    cluster = Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0, grpc_port=0), reactor)
    pytest_twisted.blockon(cluster.start())
    topics = cluster.broker.ctx.topic_config
    topics.update_topic_config(TopicConfig("T", 4, 4))
    topics.update_topic_config(TopicConfig("F", 4, 4), {"+message.type": "FIFO"})
    client = Client(cluster.grpc_endpoint)
    yield cluster, client
    client.close()
    pytest_twisted.blockon(cluster.stop())


def message(topic="T", body=b"hello", tag="TagA", group=None, message_id="01ABC"):
    """A gRPC Message as the SDKs send it."""
    m = cls("Message")()
    m.topic.name = topic
    m.body = body
    sp = m.system_properties
    sp.tag = tag
    sp.message_id = message_id
    sp.body_encoding = enum("Encoding", "IDENTITY")
    sp.message_type = enum("MessageType", "FIFO" if group else "NORMAL")
    if group:
        sp.message_group = group
    sp.born_timestamp.seconds = int(time.time())
    return m


def send_request(*msgs):
    """A SendMessageRequest."""
    req = cls("SendMessageRequest")()
    req.messages.extend(msgs)
    return req


def receive_request(topic="T", group="G", invisible_s=30):
    """A ReceiveMessageRequest with a 5 s long polling."""
    req = cls("ReceiveMessageRequest")()
    req.group.name = group
    req.message_queue.topic.name = topic
    req.message_queue.id = -1
    req.message_queue.broker.name = "broker-a"
    req.filter_expression.type = enum("FilterType", "TAG")
    req.filter_expression.expression = "*"
    req.batch_size = 32
    req.invisible_duration.seconds = invisible_s
    req.long_polling_timeout.seconds = 5
    return req


@pytest_twisted.inlineCallbacks
def test_route_of_an_unknown_topic_is_topic_not_found(served):
    """QueryRoute for a topic no broker has answers TOPIC_NOT_FOUND (no auto-create over gRPC)."""
    _cluster, client = served
    req = cls("QueryRouteRequest")()
    req.topic.name = "Nope"
    resp = yield in_thread(client.unary, "QueryRoute", req, "QueryRouteResponse")
    assert resp.status.code == Code.TOPIC_NOT_FOUND


@pytest_twisted.inlineCallbacks
def test_route_names_the_grpc_endpoint_and_the_topic_type(served):
    """QueryRoute lists each queue with this endpoint and the types the topic accepts."""
    cluster, client = served
    req = cls("QueryRouteRequest")()
    req.topic.name = "F"
    address = req.endpoints.addresses.add()
    address.host, address.port = "127.0.0.1", 1
    resp = yield in_thread(client.unary, "QueryRoute", req, "QueryRouteResponse")
    assert resp.status.code == Code.OK
    assert [q.id for q in resp.message_queues] == [0, 1, 2, 3]
    queue = resp.message_queues[0]
    assert queue.broker.endpoints.addresses[0].port == cluster.grpc.port
    assert list(queue.accept_message_types) == [enum("MessageType", "FIFO")]


@pytest_twisted.inlineCallbacks
def test_sent_message_is_received_with_an_md5_digest_and_acked(served):
    """SendMessage stores the message; ReceiveMessage returns it (MD5 digest, attempt 1); Ack OK."""
    _cluster, client = served
    sent = yield in_thread(client.unary, "SendMessage", send_request(message(body=b"abc")),
                           "SendMessageResponse")
    assert sent.status.code == Code.OK
    assert sent.entries[0].message_id == "01ABC"
    stream = yield in_thread(client.stream, "ReceiveMessage", receive_request(),
                             "ReceiveMessageResponse")
    kinds = [r.WhichOneof("content") for r in stream]
    assert kinds == ["status", "message", "delivery_timestamp"]
    got = stream[1].message
    assert got.body == b"abc"
    assert got.system_properties.body_digest.checksum == hashlib.md5(b"abc").hexdigest().upper()
    assert got.system_properties.delivery_attempt == 1
    ack = cls("AckMessageRequest")()
    ack.group.name, ack.topic.name = "G", "T"
    entry = ack.entries.add()
    entry.message_id = got.system_properties.message_id
    entry.receipt_handle = got.system_properties.receipt_handle
    acked = yield in_thread(client.unary, "AckMessage", ack, "AckMessageResponse")
    assert acked.status.code == Code.OK


@pytest_twisted.inlineCallbacks
def test_fifo_message_to_a_normal_topic_is_refused_with_40014(served):
    """A message of a type the topic does not accept: MESSAGE_PROPERTY_CONFLICT_WITH_TYPE."""
    _cluster, client = served
    resp = yield in_thread(client.unary, "SendMessage", send_request(message(group="g1")),
                           "SendMessageResponse")
    assert resp.status.code == Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert "expected type is NORMAL, but actual type is FIFO" in resp.status.message


@pytest_twisted.inlineCallbacks
def test_call_without_client_id_is_refused(served):
    """Every RPC needs x-mq-client-id: CLIENT_ID_REQUIRED otherwise."""
    _cluster, client = served
    resp = yield in_thread(client.unary, "SendMessage", send_request(message()),
                           "SendMessageResponse", metadata=())
    assert resp.status.code == Code.CLIENT_ID_REQUIRED


@pytest_twisted.inlineCallbacks
def test_pull_message_is_unimplemented_as_on_the_proxy(served):
    """PullMessage (not served by the 5.x proxy either) fails with gRPC UNIMPLEMENTED."""
    _cluster, client = served

    def call():
        try:
            client.stream("PullMessage", cls("PullMessageRequest")(), "PullMessageResponse")
        except grpc.RpcError as exc:
            return exc.code()
        return None

    code = yield in_thread(call)
    assert code == grpc.StatusCode.UNIMPLEMENTED


@pytest_twisted.inlineCallbacks
def test_empty_body_is_refused_as_message_body_empty(served):
    """The proxy's body check: an empty body is MESSAGE_BODY_EMPTY."""
    _cluster, client = served
    resp = yield in_thread(client.unary, "SendMessage", send_request(message(body=b"")),
                           "SendMessageResponse")
    assert resp.status.code == Code.MESSAGE_BODY_EMPTY


@pytest_twisted.inlineCallbacks
def test_invisible_time_under_ten_seconds_is_refused(served):
    """ReceiveMessage with an invisible duration below 10 s: ILLEGAL_INVISIBLE_TIME."""
    _cluster, client = served
    stream = yield in_thread(client.stream, "ReceiveMessage", receive_request(invisible_s=2),
                             "ReceiveMessageResponse")
    assert stream[0].status.code == Code.ILLEGAL_INVISIBLE_TIME


@pytest_twisted.inlineCallbacks
def test_http2_preface_on_the_remoting_port_closes_only_that_connection(served, caplog):
    """An HTTP/2 client on the remoting port is closed with a log line; the broker goes on."""
    cluster, client = served
    port = cluster.slots[0].port

    def poke():
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            return s.recv(100)

    assert (yield in_thread(poke)) == b""
    assert "malformed frame" in caplog.text
    resp = yield in_thread(client.unary, "SendMessage", send_request(message()),
                           "SendMessageResponse")
    assert resp.status.code == Code.OK


@pytest_twisted.inlineCallbacks
def test_ack_of_a_good_and_a_bad_handle_is_multiple_results(served):
    """Each entry gets its own status; mixed outcomes make the overall MULTIPLE_RESULTS."""
    _cluster, client = served
    yield in_thread(client.unary, "SendMessage", send_request(message()), "SendMessageResponse")
    stream = yield in_thread(client.stream, "ReceiveMessage", receive_request(),
                             "ReceiveMessageResponse")
    got = stream[1].message
    ack = cls("AckMessageRequest")()
    ack.group.name, ack.topic.name = "G", "T"
    good = ack.entries.add()
    good.message_id = got.system_properties.message_id
    good.receipt_handle = got.system_properties.receipt_handle
    bad = ack.entries.add()
    bad.message_id, bad.receipt_handle = "x", "not a handle"
    acked = yield in_thread(client.unary, "AckMessage", ack, "AckMessageResponse")
    assert [e.status.code for e in acked.entries] == [Code.OK, Code.INVALID_RECEIPT_HANDLE]
    assert acked.status.code == Code.MULTIPLE_RESULTS


@pytest_twisted.inlineCallbacks
def test_waiting_receive_is_woken_by_a_message_sent_meanwhile(served):
    """A ReceiveMessage parked on long polling answers with a message sent while it waits."""
    _cluster, client = served
    waiting = in_thread(client.stream, "ReceiveMessage", receive_request(group="GW"),
                        "ReceiveMessageResponse")
    yield in_thread(time.sleep, 1.0)
    yield in_thread(client.unary, "SendMessage", send_request(message(body=b"late")),
                    "SendMessageResponse")
    stream = yield waiting
    assert stream[0].status.code == Code.OK
    assert stream[1].message.body == b"late"


def _telemetry(client, *commands):
    """Telemetry with ``commands`` sent then half-closed: (responses, gRPC status code)."""
    call = client.channel.stream_stream(
        SERVICE + "Telemetry", request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=cls("TelemetryCommand").FromString)
    responses = call(iter(commands), metadata=META, timeout=10)
    got = []
    try:
        for r in responses:
            got.append(r)
    except grpc.RpcError as exc:
        return got, exc.code()
    return got, grpc.StatusCode.OK


@pytest_twisted.inlineCallbacks
def test_producer_settings_are_answered_with_the_proxys_limits(served):
    """A producer's Settings on Telemetry: answered OK with a 4 MiB body limit."""
    _cluster, client = served
    cmd = cls("TelemetryCommand")()
    cmd.settings.client_type = enum("ClientType", "PRODUCER")
    cmd.settings.publishing.topics.add().name = "T"
    got, code = yield in_thread(_telemetry, client, cmd)
    assert code == grpc.StatusCode.OK
    assert got[0].status.code == Code.OK
    assert got[0].settings.publishing.max_body_size == 4 * 1024 * 1024


@pytest_twisted.inlineCallbacks
def test_settings_without_publishing_or_subscription_end_the_stream_invalid(served):
    """Settings naming neither topics nor a group: INVALID_ARGUMENT, as the proxy answers."""
    _cluster, client = served
    cmd = cls("TelemetryCommand")()
    cmd.settings.client_type = enum("ClientType", "PRODUCER")
    _got, code = yield in_thread(_telemetry, client, cmd)
    assert code == grpc.StatusCode.INVALID_ARGUMENT


@pytest_twisted.inlineCallbacks
def test_settings_with_an_illegal_topic_end_the_stream_invalid(served):
    """A client error in Settings (an illegal topic name) ends Telemetry INVALID_ARGUMENT."""
    _cluster, client = served
    cmd = cls("TelemetryCommand")()
    cmd.settings.client_type = enum("ClientType", "PRODUCER")
    cmd.settings.publishing.topics.add().name = "bad topic!"
    _got, code = yield in_thread(_telemetry, client, cmd)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
