"""A NameServer on loopback: two brokers register, clients look up routes and cluster info."""

from __future__ import annotations

import json
import zlib

import pytest
import pytest_twisted
from twisted.internet import reactor, task

from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import SERIALIZE_ROCKETMQ, RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.namesrv.register_body import encode_register_body
from rocketmq_emu.namesrv.server import NameServer


def _topics(**queues):
    return {
        name: {"order": False, "perm": 6, "readQueueNums": n, "topicFilterType": "SINGLE_TAG",
               "topicName": name, "topicSysFlag": 0, "writeQueueNums": n}
        for name, n in queues.items()
    }


def _register_cmd(name, addr, **queues):
    body = encode_register_body(_topics(**queues), {"counter": 1, "timestamp": 1}, [])
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, {
        "brokerName": name, "brokerAddr": addr, "clusterName": "DefaultCluster",
        "haServerAddr": addr, "brokerId": "0", "compressed": "false",
        "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF)}, body)


@pytest.fixture
def namesrv(tmp_path):
    server = NameServer(reactor, port=0, host="127.0.0.1", kv_config_path=tmp_path / "kv.json")
    pytest_twisted.blockon(server.start())
    yield server
    pytest_twisted.blockon(server.stop())


@pytest.fixture
def clients():
    made = []

    def make():
        c = RemotingClient(reactor)
        made.append(c)
        return c

    yield make
    for c in made:
        pytest_twisted.blockon(c.close())


@pytest_twisted.inlineCallbacks
def test_two_brokers_register_and_clients_see_routes_and_cluster(namesrv, clients):
    """Two brokers (separate connections) register; a client sees both in route and cluster info."""
    broker_a, broker_b, client = clients(), clients(), clients()
    ra = yield broker_a.invoke(namesrv.addr, _register_cmd("broker-a", "127.0.0.1:10911", T=4))
    rb = yield broker_b.invoke(namesrv.addr, _register_cmd("broker-b", "127.0.0.1:20911", T=2, B=1))
    assert ra.code == rb.code == ResponseCode.SUCCESS

    route = yield client.invoke(namesrv.addr, RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}))
    data = json.loads(route.body)
    assert [b["brokerAddrs"]["0"] for b in data["brokerDatas"]] == ["127.0.0.1:10911",
                                                                    "127.0.0.1:20911"]
    info = yield client.invoke(namesrv.addr, RemotingCommand.request(
        RequestCode.GET_BROKER_CLUSTER_INFO))
    assert json.loads(info.body)["clusterAddrTable"] == {"DefaultCluster": ["broker-a", "broker-b"]}

    missing = yield client.invoke(namesrv.addr, RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"}))
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST


@pytest_twisted.inlineCallbacks
def test_broker_disconnect_removes_its_routes(namesrv, clients):
    """When a broker's connection closes, its topics disappear from the name server."""
    broker, client = clients(), clients()
    yield broker.invoke(namesrv.addr, _register_cmd("broker-a", "127.0.0.1:10911", Gone=1))
    yield broker.close()
    yield task.deferLater(reactor, 0.05, lambda: None)
    resp = yield client.invoke(namesrv.addr, RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Gone"}))
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST


@pytest_twisted.inlineCallbacks
def test_binary_header_client_gets_binary_route_answer(namesrv, clients):
    """A ROCKETMQ-serialized route request is answered in ROCKETMQ serialization."""
    broker, client = clients(), clients()
    yield broker.invoke(namesrv.addr, _register_cmd("broker-a", "127.0.0.1:10911", T=4))
    resp = yield client.invoke(namesrv.addr, RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, serialize_type=SERIALIZE_ROCKETMQ))
    assert resp.serialize_type == SERIALIZE_ROCKETMQ and json.loads(resp.body)["queueDatas"]


@pytest_twisted.inlineCallbacks
def test_unknown_code_on_namesrv_is_not_supported(namesrv, clients):
    """A code the name server does not handle answers REQUEST_CODE_NOT_SUPPORTED."""
    resp = yield clients().invoke(namesrv.addr, RemotingCommand.request(RequestCode.PULL_MESSAGE))
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
