"""RecallMessage over gRPC (grpcio client, loopback): a DELAY message's SendMessage answers a
recall handle; RecallMessage with it removes the message before its delivery time, refuses
once that time has passed, and answers the 5.3 proxy's statuses for wrong requests."""

from __future__ import annotations

import time

import pytest
import pytest_twisted
from test_grpc_service_loopback import Client, cls, enum, in_thread, message, send_request
from twisted.internet import reactor, task

from rocketmq_emu.broker.cluster import Cluster, ClusterSpec
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.configs.topics import TopicConfig
from rocketmq_emu.broker.grpc.status import Code
from rocketmq_emu.broker.recall_handle import build_handle, decode_handle
from rocketmq_emu.client.testing import TEST_BROKER_SETTINGS, free_broker_port


@pytest.fixture
def served(tmp_path):
    """A started cluster with a gRPC endpoint, topics D (DELAY) and T (NORMAL); its client."""
    cfg = BrokerConfig(broker_name="broker-a", listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(tmp_path / "a"), recall_message_enable=True,
                       **TEST_BROKER_SETTINGS)
    cluster = Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0, grpc_port=0), reactor)
    pytest_twisted.blockon(cluster.start())
    topics = cluster.broker.ctx.topic_config
    topics.update_topic_config(TopicConfig("D", 4, 4), {"+message.type": "DELAY"})
    topics.update_topic_config(TopicConfig("T", 4, 4))
    client = Client(cluster.grpc_endpoint)
    yield cluster, client
    client.close()
    pytest_twisted.blockon(cluster.stop())


def delay_message(message_id: str, deliver_at_ms: int):
    """A DELAY message as the SDKs send it."""
    m = message(topic="D", body=message_id.encode(), message_id=message_id)
    m.system_properties.message_type = enum("MessageType", "DELAY")
    ts = m.system_properties.delivery_timestamp
    ts.seconds, ts.nanos = divmod(deliver_at_ms, 1000)
    ts.nanos *= 1_000_000
    return m


def recall_request(handle: str, topic: str = "D"):
    req = cls("RecallMessageRequest")()
    req.topic.name = topic
    req.recall_handle = handle
    return req


def receive_request(topic="D", group="G"):
    req = cls("ReceiveMessageRequest")()
    req.group.name = group
    req.message_queue.topic.name = topic
    req.message_queue.id = -1
    req.message_queue.broker.name = "broker-a"
    req.filter_expression.type = enum("FilterType", "TAG")
    req.filter_expression.expression = "*"
    req.batch_size = 32
    req.invisible_duration.seconds = 30
    req.long_polling_timeout.seconds = 10
    return req


@pytest_twisted.inlineCallbacks
def test_recalled_delay_message_is_not_delivered_and_late_recall_is_refused(served):
    """Two DELAY messages due together; the recalled one never arrives, the other does; a
    recall of the delivered one is INTERNAL_SERVER_ERROR "recall failed, timestamp invalid"."""
    cluster, client = served
    deliver = int(time.time() * 1000) + 1500
    handles = {}
    for key in ("01GONE", "01KEPT"):
        sent = yield in_thread(client.unary, "SendMessage",
                               send_request(delay_message(key, deliver)), "SendMessageResponse")
        assert sent.status.code == Code.OK, sent
        handles[key] = sent.entries[0].recall_handle
        handle = decode_handle(handles[key])
        assert (handle.topic, handle.broker_name, handle.message_id) == ("D", "broker-a", key)
        assert int(handle.timestamp_str) == deliver + 1
    recalled = yield in_thread(client.unary, "RecallMessage", recall_request(handles["01GONE"]),
                               "RecallMessageResponse")
    assert (recalled.status.code, recalled.status.message, recalled.message_id) == \
        (Code.OK, "OK", "01GONE")
    timer = cluster.broker.schedule.timer
    for _ in range(100):  # the due time comes (receive then finds it without long polling)
        if timer.delivered + timer.deleted >= 2:
            break
        yield task.deferLater(reactor, 0.05, lambda: None)
    stream = yield in_thread(client.stream, "ReceiveMessage", receive_request(),
                             "ReceiveMessageResponse")
    bodies = [r.message.body for r in stream if r.WhichOneof("content") == "message"]
    assert bodies == [b"01KEPT"]
    assert (timer.deleted, timer.delivered) == (1, 1)
    late = yield in_thread(client.unary, "RecallMessage", recall_request(handles["01KEPT"]),
                           "RecallMessageResponse")
    assert (late.status.code, late.status.message) == \
        (Code.INTERNAL_SERVER_ERROR, "recall failed, timestamp invalid")


@pytest_twisted.inlineCallbacks
def test_normal_send_has_no_recall_handle(served):
    """SendResultEntry.recall_handle stays empty for a message that is not delayed."""
    _cluster, client = served
    sent = yield in_thread(client.unary, "SendMessage", send_request(message()),
                           "SendMessageResponse")
    assert sent.status.code == Code.OK and sent.entries[0].recall_handle == ""


@pytest_twisted.inlineCallbacks
def test_recall_refusals_are_the_proxys_statuses(served):
    """A NORMAL topic: MESSAGE_PROPERTY_CONFLICT_WITH_TYPE; an undecodable handle or a
    broker's refusal: INTERNAL_SERVER_ERROR with the remark; a system topic: ILLEGAL_TOPIC."""
    _cluster, client = served
    future = str(int(time.time() * 1000) + 60_000)
    cases = [
        (recall_request(build_handle("T", "broker-a", future, "x"), topic="T"),
         Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "TopicMessageType validate failed"),
        (recall_request("not a handle"), Code.INTERNAL_SERVER_ERROR, "recall handle is invalid"),
        (recall_request(build_handle("Other", "broker-a", future, "x")),
         Code.INTERNAL_SERVER_ERROR, "recall failed, topic not match"),
        (recall_request(build_handle("D", "broker-z", future, "x")),
         Code.INTERNAL_SERVER_ERROR, "recall failed, broker service not available"),
        (recall_request("x", topic="rmq_sys_wheel_timer"), Code.ILLEGAL_TOPIC, ""),
    ]
    for req, code, text in cases:
        resp = yield in_thread(client.unary, "RecallMessage", req, "RecallMessageResponse")
        assert resp.status.code == code, (req, resp)
        assert text in resp.status.message
