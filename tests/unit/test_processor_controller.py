"""BrokerController wiring on a MemoryReactorClock: ports, timers, registration, stop."""

from __future__ import annotations

import json
import os
import zlib

import pytest
from processor_support import FakeConn, heartbeat_cmd, send_v2
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock

from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode


class FakeRemotingClient:
    """Records what the broker sends to name servers and answers SUCCESS."""

    def __init__(self) -> None:
        self.calls = []

    def invoke(self, addr, cmd, timeout=3.0):
        self.calls.append((addr, cmd))
        return defer.succeed(cmd.response(ResponseCode.SUCCESS))

    def close(self):
        return defer.succeed(None)

    def codes(self):
        return [cmd.code for _, cmd in self.calls]


@pytest.fixture
def reactor():
    r = MemoryReactorClock()
    r.advance(1_700_000_000)
    return r


@pytest.fixture
def broker(tmp_path, reactor):
    cfg = BrokerConfig(listen_port=20911, namesrv_addr="10.1.1.1:9876;10.1.1.2:9876",
                       store_path_root_dir=str(tmp_path / "store"), broker_ip1="10.0.0.9",
                       mapped_file_size_commit_log=256 * 1024,
                       mapped_file_size_consume_queue=200 * 20)
    b = BrokerController(cfg, reactor=reactor, host="0.0.0.0")
    b.remoting_client = FakeRemotingClient()
    yield b
    if b.running:
        b.stop()


@pytest.fixture
def business():
    c = Clock()
    c.advance(1_800_000_000)  # another day than the reactor's
    return c


@pytest.fixture
def split_broker(tmp_path, reactor, business):
    cfg = BrokerConfig(listen_port=20911, store_path_root_dir=str(tmp_path / "store"),
                       mapped_file_size_commit_log=256 * 1024,
                       mapped_file_size_consume_queue=200 * 20)
    b = BrokerController(cfg, reactor=reactor, host="0.0.0.0", business_clock=business)
    b.remoting_client = FakeRemotingClient()
    yield b
    if b.running:
        b.stop()


def started(broker):
    d = broker.start()
    assert d.called
    return broker


def test_listens_on_listen_port_and_vip_port(broker, reactor):
    """start() listens on listenPort and listenPort - 2."""
    started(broker)
    assert sorted(p[0] for p in reactor.tcpServers) == [20909, 20911]
    assert broker.addr == "10.0.0.9:20911"


def test_start_registers_with_every_name_server(broker):
    """REGISTER_BROKER goes to each name server in namesrvAddr at start."""
    started(broker)
    assert [a for a, c in broker.remoting_client.calls if c.code == RequestCode.REGISTER_BROKER] \
        == ["10.1.1.1:9876", "10.1.1.2:9876"]


def test_register_request_describes_the_broker_and_its_topics(broker):
    """The register header names the broker; the body holds the topic config wrapper."""
    started(broker)
    _, cmd = broker.remoting_client.calls[0]
    ext = cmd.ext_fields
    assert (ext["brokerName"], ext["brokerAddr"], ext["clusterName"], ext["brokerId"]) == (
        "broker-a", "10.0.0.9:20911", "DefaultCluster", "0")
    assert ext["bodyCrc32"] == str(zlib.crc32(cmd.body) & 0x7FFFFFFF)
    body = json.loads(cmd.body)
    assert body["filterServerList"] == []
    assert "TBW102" in body["topicConfigSerializeWrapper"]["topicConfigTable"]


def test_registration_repeats_every_30_seconds(broker, reactor):
    """The broker re-registers every registerNameServerPeriod (30 s)."""
    started(broker)
    before = broker.remoting_client.codes().count(RequestCode.REGISTER_BROKER)
    reactor.advance(30)
    after = broker.remoting_client.codes().count(RequestCode.REGISTER_BROKER)
    assert after - before == 2


def test_auto_created_topic_registers_at_once(broker, reactor):
    """A topic created by a send is registered on the next reactor turn."""
    started(broker)
    broker.remoting_client.calls.clear()
    broker.send_processor.process_send(send_v2("Created"), FakeConn())
    reactor.advance(0)
    (_, cmd), _ = broker.remoting_client.calls
    assert "Created" in json.loads(cmd.body)["topicConfigSerializeWrapper"]["topicConfigTable"]


def test_silent_consumer_is_dropped_by_the_channel_scan(broker, reactor):
    """The 10 s housekeeping scan drops a consumer silent for over 120 s and closes it."""
    started(broker)
    conn = FakeConn()
    broker.dispatcher.handler_for(RequestCode.HEART_BEAT)(heartbeat_cmd("c1", "G", "T"), conn)
    reactor.advance(120)
    assert broker.ctx.consumer_manager.get_consumer_group_info("G") is not None
    reactor.advance(10)
    assert broker.ctx.consumer_manager.get_consumer_group_info("G") is None
    assert conn.closed


def test_consumer_offsets_are_persisted_every_5_seconds(broker, reactor, tmp_path):
    """consumerOffset.json is written by the 5 s flush timer."""
    started(broker)
    broker.store.consumer_offsets.commit_offset("x", "g", "T", 0, 9)
    reactor.advance(5)
    path = tmp_path / "store" / "config" / "consumerOffset.json"
    assert json.loads(path.read_text())["offsetTable"]["T@g"] == {"0": 9}


def test_stop_unregisters_and_shuts_the_store_down(broker, tmp_path):
    """stop() sends UNREGISTER_BROKER to each name server and removes the abort file."""
    started(broker)
    d = broker.stop()
    assert d.called
    assert broker.remoting_client.codes().count(RequestCode.UNREGISTER_BROKER) == 2
    assert not os.path.exists(tmp_path / "store" / "abort")
    assert broker.store.shutdown_done


def test_order_topics_from_the_name_server_are_applied(broker):
    """The register answer's ORDER_TOPIC_CONFIG table marks those topics orderly."""
    broker.send_processor.process_send(send_v2("Ordered"), FakeConn())

    def invoke(addr, cmd, timeout=3.0):
        broker.remoting_client.calls.append((addr, cmd))
        return defer.succeed(cmd.response(ResponseCode.SUCCESS, body=json.dumps(
            {"table": {"Ordered": "broker-a:4"}}).encode()))

    broker.remoting_client.invoke = invoke
    started(broker)
    assert broker.store.topic_config.select_topic_config("Ordered").order is True


def test_business_clock_stamps_stored_messages(split_broker):
    """With business_clock, a stored message's storeTimestamp is business time."""
    started(split_broker)
    split_broker.send_processor.process_send(send_v2("T"), FakeConn())
    stored = split_broker.store.look_message_by_offset(0)
    assert stored.store_timestamp == 1_800_000_000_000


def test_business_clock_leaves_client_expiry_on_clock(split_broker, business):
    """Hours of business time pass without expiring a consumer's channel (liveness clock)."""
    started(split_broker)
    conn = FakeConn()
    split_broker.dispatcher.handler_for(RequestCode.HEART_BEAT)(
        heartbeat_cmd("c1", "G", "T"), conn)
    business.advance(3600)
    assert split_broker.ctx.consumer_manager.get_consumer_group_info("G") is not None
    assert not conn.closed
