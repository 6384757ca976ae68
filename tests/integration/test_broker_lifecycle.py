"""BrokerController lifecycle on loopback: VIP channel, registration, clean stop."""

from __future__ import annotations

import os

import pytest
import pytest_twisted
from twisted.internet import reactor

from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.testing import free_broker_port
from rocketmq_emu.namesrv.server import NameServer


@pytest.fixture
def namesrv(tmp_path):
    server = NameServer(reactor, port=0, host="127.0.0.1", kv_config_path=tmp_path / "kv.json")
    pytest_twisted.blockon(server.start())
    yield server
    pytest_twisted.blockon(server.stop())


@pytest.fixture
def client():
    c = RemotingClient(reactor)
    yield c
    pytest_twisted.blockon(c.close())


def make_broker(tmp_path, namesrv, port=0, **kw):
    cfg = BrokerConfig(listen_port=port, namesrv_addr=namesrv.addr,
                       store_path_root_dir=str(tmp_path / "store"),
                       mapped_file_size_commit_log=1024 * 1024,
                       mapped_file_size_consume_queue=300 * 20)
    return BrokerController(cfg, reactor=reactor, host="127.0.0.1", **kw)


def send(topic):
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {
        "a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1",
        "h": "0", "i": properties_to_string({"TAGS": "t"})}, b"vip")


def route(topic):
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


@pytest_twisted.inlineCallbacks
def test_vip_channel_on_listen_port_minus_two_accepts_sends(tmp_path, namesrv, client):
    """The broker also serves sends on listenPort - 2 (old Java producers' VIP channel)."""
    port = free_broker_port("127.0.0.1")
    broker = make_broker(tmp_path, namesrv, port)
    yield broker.start()
    try:
        assert broker.vip_port == port - 2
        resp = yield client.invoke(f"127.0.0.1:{port - 2}", send("VipTopic"))
        assert resp.code == ResponseCode.SUCCESS
        assert resp.ext_fields["msgId"][8:16] == f"{port:08X}"
    finally:
        yield broker.stop()


@pytest_twisted.inlineCallbacks
def test_start_registers_the_broker_with_the_name_server(tmp_path, namesrv, client):
    """After start the name server routes TBW102 to the broker's address."""
    broker = make_broker(tmp_path, namesrv, enable_vip_channel=False)
    yield broker.start()
    try:
        resp = yield client.invoke(namesrv.addr, route("TBW102"))
        assert resp.code == ResponseCode.SUCCESS
        assert broker.addr in resp.body.decode()
    finally:
        yield broker.stop()


@pytest_twisted.inlineCallbacks
def test_stop_unregisters_and_removes_the_abort_file(tmp_path, namesrv, client):
    """stop() unregisters from the name server and leaves no abort marker."""
    broker = make_broker(tmp_path, namesrv, enable_vip_channel=False)
    yield broker.start()
    abort = os.path.join(str(tmp_path / "store"), "abort")
    assert os.path.exists(abort)
    yield broker.stop()
    assert not os.path.exists(abort)
    resp = yield client.invoke(namesrv.addr, route("TBW102"))
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST


@pytest_twisted.inlineCallbacks
def test_restart_keeps_messages_and_offsets(tmp_path, namesrv, client):
    """A stopped broker restarted on the same store still has its messages and offsets."""
    broker = make_broker(tmp_path, namesrv, enable_vip_channel=False)
    yield broker.start()
    yield client.invoke(broker.addr, send("Kept"))
    yield client.invoke(broker.addr, RemotingCommand.request(
        RequestCode.UPDATE_CONSUMER_OFFSET,
        {"consumerGroup": "g", "topic": "Kept", "queueId": "0", "commitOffset": "1"}))
    yield broker.stop()
    again = make_broker(tmp_path, namesrv, enable_vip_channel=False)
    yield again.start()
    try:
        mx = yield client.invoke(again.addr, RemotingCommand.request(
            RequestCode.GET_MAX_OFFSET, {"topic": "Kept", "queueId": "0"}))
        off = yield client.invoke(again.addr, RemotingCommand.request(
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": "g", "topic": "Kept", "queueId": "0"}))
        assert mx.ext_fields["offset"] == "1" and off.ext_fields["offset"] == "1"
    finally:
        yield again.stop()


@pytest_twisted.inlineCallbacks
def test_pull_is_not_served_on_the_vip_channel(tmp_path, namesrv, client):
    """As in RocketMQ 4.9, PULL_MESSAGE is not registered on the VIP channel."""
    port = free_broker_port("127.0.0.1")
    broker = make_broker(tmp_path, namesrv, port)
    yield broker.start()
    try:
        resp = yield client.invoke(f"127.0.0.1:{port - 2}", RemotingCommand.request(
            RequestCode.PULL_MESSAGE, {"consumerGroup": "g", "topic": "T", "queueId": "0",
                                       "queueOffset": "0", "maxMsgNums": "1", "sysFlag": "4",
                                       "commitOffset": "0", "suspendTimeoutMillis": "0",
                                       "subVersion": "0"}))
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        yield broker.stop()
