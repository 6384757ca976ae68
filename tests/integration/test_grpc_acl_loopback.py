"""ACL 1.0 on the gRPC endpoint over loopback with grpcio: signed calls as the 5.x SDKs sign
them pass, a wrong secret or a topic without PUB is PERMISSION_DENIED, a call without
credentials INTERNAL (the proxy's AuthenticationInterceptor), and the endpoint stays up."""

from __future__ import annotations

import hmac
from binascii import hexlify
from datetime import datetime
from hashlib import sha1

import grpc
import pytest
import pytest_twisted
from test_cli import rpc
from twisted.internet import reactor, threads

from rocketmq_emu.broker.acl.config import merge, parse_acl_text
from rocketmq_emu.broker.acl.signer import sign_request
from rocketmq_emu.broker.cluster import Cluster, ClusterSpec
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.configs.topics import TopicConfig
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.auth_guard import install
from rocketmq_emu.broker.grpc.status import Code
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.client.testing import TEST_BROKER_SETTINGS, free_broker_port

SERVICE = "/apache.rocketmq.v2.MessagingService/"
ACL = merge([parse_acl_text("""\
accounts:
  - accessKey: RocketMQ
    secretKey: '12345678'
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [T=PUB|SUB, R=SUB]
""", "plain_acl.yml")])


def metadata(ak="RocketMQ", sk="12345678"):
    """rocketmq-python-client 5.1.2's Signature.metadata."""
    date = datetime.now().strftime("%Y%m%dT%H%M%SZ")
    sig = hexlify(hmac.new(sk.encode(), date.encode(), sha1).digest()).decode()
    return (("x-mq-client-id", "acl-client@1"), ("x-mq-language", "PYTHON"),
            ("x-mq-date-time", date),
            ("authorization", f"MQv2-HMAC-SHA1 Credential={ak}, SignedHeaders=x-mq-date-time, "
                              f"Signature={sig}"))


def cls(name):
    return messages.message_class(name)


@pytest.fixture
def served(tmp_path):
    cfg = BrokerConfig(broker_name="broker-a", listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(tmp_path / "a"), **TEST_BROKER_SETTINGS)
    cluster = Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0, grpc_port=0), reactor)
    pytest_twisted.blockon(cluster.start())
    for topic in ("T", "R"):
        cluster.broker.ctx.topic_config.update_topic_config(TopicConfig(topic, 4, 4))
    install(cluster.grpc.factory, lambda: ACL)
    channel = grpc.insecure_channel(cluster.grpc_endpoint)
    yield channel
    channel.close()
    pytest_twisted.blockon(cluster.stop())


def call(channel, rpc, request, response, meta):
    fn = channel.unary_unary(SERVICE + rpc, request_serializer=lambda m: m.SerializeToString(),
                             response_deserializer=cls(response).FromString)
    return fn(request, metadata=meta, timeout=10)


def send_request(topic):
    req = cls("SendMessageRequest")()
    m = req.messages.add()
    m.topic.name = topic
    m.body = b"hi"
    m.system_properties.message_id = "01ACL"
    m.system_properties.born_timestamp.seconds = 1
    return req


def outcome(channel, rpc, request, response, meta):
    try:
        return call(channel, rpc, request, response, meta).status.code
    except grpc.RpcError as exc:
        return exc.code()


@pytest_twisted.inlineCallbacks
def test_signed_calls_pass_and_refusals_have_the_proxys_codes(served):
    run = lambda *a: threads.deferToThread(outcome, served, *a)  # noqa: E731
    ok = yield run("SendMessage", send_request("T"), "SendMessageResponse", metadata())
    assert ok == Code.OK
    wrong = yield run("SendMessage", send_request("T"), "SendMessageResponse",
                      metadata(sk="not-the-secret"))
    assert wrong == grpc.StatusCode.PERMISSION_DENIED
    no_pub = yield run("SendMessage", send_request("R"), "SendMessageResponse", metadata())
    assert no_pub == grpc.StatusCode.PERMISSION_DENIED
    bare = (("x-mq-client-id", "acl-client@1"),)
    unsigned = yield run("SendMessage", send_request("T"), "SendMessageResponse", bare)
    assert unsigned == grpc.StatusCode.INTERNAL
    route = cls("QueryRouteRequest")()
    route.topic.name = "R"
    again = yield run("QueryRoute", route, "QueryRouteResponse", metadata())
    assert again == Code.OK  # the endpoint and the connection still serve


@pytest_twisted.inlineCallbacks
def test_telemetry_settings_without_permission_end_the_stream(served):
    def telemetry(meta, topic):
        fn = served.stream_stream(SERVICE + "Telemetry",
                                  request_serializer=lambda m: m.SerializeToString(),
                                  response_deserializer=cls("TelemetryCommand").FromString)
        cmd = cls("TelemetryCommand")()
        cmd.settings.client_type = 1
        cmd.settings.publishing.topics.add().name = topic
        stream = fn(iter([cmd]), metadata=meta, timeout=5)
        try:
            first = next(stream)
            stream.cancel()
            return first.status.code if first.HasField("status") else "settings"
        except grpc.RpcError as exc:
            return exc.code()

    ok = yield threads.deferToThread(telemetry, metadata(), "T")
    assert ok != grpc.StatusCode.PERMISSION_DENIED
    denied = yield threads.deferToThread(telemetry, metadata(), "R")
    assert denied == grpc.StatusCode.PERMISSION_DENIED


def acl_cluster(tmp_path, plain_acl: str) -> tuple[BrokerConfig, Cluster]:
    """A one-broker cluster (not started) with ``aclEnable=true`` and ``plain_acl`` as its
    ``$home/conf/plain_acl.yml``."""
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(plain_acl)
    cfg = BrokerConfig(broker_name="broker-a", listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(tmp_path / "a"), acl_enable=True,
                       rocketmq_home=str(home), **TEST_BROKER_SETTINGS)
    return cfg, Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0, grpc_port=0), reactor)


@pytest_twisted.inlineCallbacks
def test_signed_grpc_send_and_receive_work_on_a_broker_with_acl_on(tmp_path):
    """aclEnable=true on the broker: a signed gRPC send and receive pass both checks (the proxy
    dispatches past the broker's remoting ACL hook, as Local mode calls the processors)."""
    cfg, cluster = acl_cluster(tmp_path, (
        "accounts:\n  - accessKey: RocketMQ\n    secretKey: '12345678'\n"
        "    defaultTopicPerm: DENY\n    defaultGroupPerm: SUB\n    topicPerms: [T=PUB|SUB]\n"))
    yield cluster.start()
    channel = grpc.insecure_channel(cluster.grpc_endpoint)
    try:
        cluster.broker.ctx.topic_config.update_topic_config(TopicConfig("T", 4, 4))
        req = cls("SendMessageRequest")()
        m = req.messages.add()
        m.topic.name, m.body = "T", b"signed"
        m.system_properties.message_id = "01ACL"
        m.system_properties.body_encoding = 1
        m.system_properties.message_type = 1
        send = channel.unary_unary(SERVICE + "SendMessage",
                                   request_serializer=lambda x: x.SerializeToString(),
                                   response_deserializer=cls("SendMessageResponse").FromString)
        sent = yield threads.deferToThread(send, req, metadata=metadata(), timeout=10)
        assert sent.status.code == Code.OK
        rreq = cls("ReceiveMessageRequest")()
        rreq.group.name, rreq.message_queue.topic.name = "G", "T"
        rreq.message_queue.id = -1
        rreq.filter_expression.expression = "*"
        rreq.batch_size = 4
        rreq.invisible_duration.seconds = 30
        rreq.long_polling_timeout.seconds = 5
        receive = channel.unary_stream(
            SERVICE + "ReceiveMessage", request_serializer=lambda x: x.SerializeToString(),
            response_deserializer=cls("ReceiveMessageResponse").FromString)
        got = yield threads.deferToThread(
            lambda: list(receive(rreq, metadata=metadata(), timeout=15)))
        assert [r.message.body for r in got if r.WhichOneof("content") == "message"] == \
            [b"signed"]
    finally:
        channel.close()
        yield cluster.stop()


@pytest_twisted.inlineCallbacks
def test_an_account_made_over_remoting_signs_grpc_calls_at_once(tmp_path):
    """One ACL watcher for both protocols: UPDATE_AND_CREATE_ACL_CONFIG (code 50) on the
    broker's remoting port reloads the broker's accounts, and the gRPC endpoint, which reads the
    same AclService, accepts the new account's signature on the next call, with no file watch
    run in between."""
    cfg, cluster = acl_cluster(
        tmp_path, "accounts:\n  - accessKey: adminKey1\n    secretKey: adminSecret1\n    admin: true\n")
    yield cluster.start()
    channel = grpc.insecure_channel(cluster.grpc_endpoint)
    try:
        cluster.broker.ctx.topic_config.update_topic_config(TopicConfig("T", 4, 4))
        newcomer = metadata("newcomer1", "newSecret1")
        before = yield threads.deferToThread(outcome, channel, "SendMessage", send_request("T"),
                                             "SendMessageResponse", newcomer)
        assert before == grpc.StatusCode.PERMISSION_DENIED
        ext = {"accessKey": "newcomer1", "secretKey": "newSecret1", "defaultTopicPerm": "DENY",
               "topicPerms": "T=PUB", "admin": "false"}
        ext = sign_request(ext, None, "adminKey1", "adminSecret1")
        resp = yield threads.deferToThread(
            rpc, f"127.0.0.1:{cfg.listen_port}", RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, ext,
            timeout=10)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        after = yield threads.deferToThread(outcome, channel, "SendMessage", send_request("T"),
                                            "SendMessageResponse", newcomer)
        assert after == Code.OK
    finally:
        channel.close()
        yield cluster.stop()
