"""Name-server request handlers, driven through a RequestDispatcher without sockets."""

from __future__ import annotations

import json
import zlib

import pytest
from twisted.internet.task import Clock

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RequestDispatcher
from rocketmq_emu.namesrv.kvconfig import KVConfigManager
from rocketmq_emu.namesrv.processor import NamesrvProcessor
from rocketmq_emu.namesrv.register_body import decode_register_body, encode_register_body
from rocketmq_emu.namesrv.route_info import RouteInfoManager

TOPICS = {
    "TopicTest": {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
                  "topicName": "TopicTest", "topicSysFlag": 0, "writeQueueNums": 4},
    "TBW102": {"order": False, "perm": 7, "readQueueNums": 8, "topicFilterType": "SINGLE_TAG",
               "topicName": "TBW102", "topicSysFlag": 0, "writeQueueNums": 8},
}


class FakeConn:
    peer_addr = "127.0.0.1:5555"

    def __init__(self):
        self.callbacks = []

    def add_close_callback(self, fn):
        self.callbacks.append(fn)

    def close(self):
        for fn in self.callbacks:
            fn(self)


@pytest.fixture
def ns(tmp_path):
    clock = Clock()
    dispatcher = RequestDispatcher(clock)
    proc = NamesrvProcessor(RouteInfoManager(clock), KVConfigManager(tmp_path / "kvConfig.json"))
    proc.register(dispatcher)
    return dispatcher, proc


def _call(dispatcher, code, ext=None, body=b"", conn=None):
    return dispatcher.dispatch(RemotingCommand.request(code, ext or {}, body), conn or FakeConn())


def _register(dispatcher, name="broker-a", addr="127.0.0.1:10911", bid="0", compressed=False,
              conn=None, topics=TOPICS, crc=None):
    body = encode_register_body(topics, {"counter": 1, "timestamp": 5}, [], compressed)
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": "DefaultCluster",
           "haServerAddr": addr.replace("10911", "10912"), "brokerId": bid,
           "compressed": str(compressed).lower(),
           "bodyCrc32": str(crc if crc is not None else zlib.crc32(body) & 0x7FFFFFFF)}
    return _call(dispatcher, RequestCode.REGISTER_BROKER, ext, body, conn)


def test_register_then_route_lookup(ns):
    """After REGISTER_BROKER, GET_ROUTEINFO_BY_TOPIC answers the TopicRouteData JSON."""
    d, _ = ns
    reg = _register(d)
    assert reg.code == ResponseCode.SUCCESS and json.loads(reg.body) == {"table": {}}
    resp = _call(d, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"})
    assert resp.code == 0
    assert resp.body.startswith(b'{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"}')
    route = json.loads(resp.body)
    assert route["filterServerTable"] == {} and route["queueDatas"][0]["topicSysFlag"] == 0


def test_unknown_topic_is_topic_not_exist_with_java_remark(ns):
    """An unknown topic answers 17 with "No topic route info in name server for the topic: X"."""
    d, _ = ns
    _register(d)
    resp = _call(d, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Missing"})
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark.startswith("No topic route info in name server for the topic: Missing")


def test_compressed_registration_is_understood(ns):
    """A compressed RegisterBrokerBody registers the same topics (sysFlag/order default)."""
    d, _ = ns
    assert _register(d, compressed=True).code == 0
    route = json.loads(_call(d, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}).body)
    assert route["queueDatas"][0]["perm"] == 7 and route["queueDatas"][0]["writeQueueNums"] == 8


def test_crc_mismatch_is_rejected(ns):
    """A body whose bodyCrc32 does not match is refused with SYSTEM_ERROR "crc32 not match"."""
    d, _ = ns
    resp = _register(d, crc=12345)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")


def test_undecodable_register_body_is_system_error(ns):
    """A corrupt register body is answered with SYSTEM_ERROR, nothing registered."""
    d, proc = ns
    ext = {"brokerName": "b", "brokerAddr": "1.2.3.4:1", "clusterName": "c", "haServerAddr": "x",
           "brokerId": "0", "compressed": "true"}
    resp = _call(d, RequestCode.REGISTER_BROKER, ext, b"not zlib")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "RegisterBrokerBody" in resp.remark
    assert proc.route_info.broker_addr_table == {}


def test_missing_header_field_becomes_system_error(ns):
    """A REGISTER_BROKER without brokerId is answered SYSTEM_ERROR naming the field."""
    d, _ = ns
    resp = _call(d, RequestCode.REGISTER_BROKER, {"brokerName": "b"})
    assert resp.code == ResponseCode.SYSTEM_ERROR and "<brokerAddr>" in resp.remark


def test_slave_registration_answers_master_addresses(ns):
    """A slave's REGISTER_BROKER response carries masterAddr and haServerAddr headers."""
    d, _ = ns
    _register(d)
    resp = _register(d, addr="127.0.0.2:10911", bid="1")
    assert resp.ext_fields == {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"}


def test_broker_connection_close_drops_its_routes(ns):
    """When the registering connection closes the broker's routes disappear."""
    d, _ = ns
    conn = FakeConn()
    _register(d, conn=conn)
    conn.close()
    assert _call(d, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}).code == 17


def test_unregister_broker(ns):
    """UNREGISTER_BROKER removes the broker's routes."""
    d, _ = ns
    _register(d)
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
           "clusterName": "DefaultCluster", "brokerId": "0"}
    assert _call(d, RequestCode.UNREGISTER_BROKER, ext).code == 0
    assert _call(d, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}).code == 17


def test_cluster_info_and_topic_lists(ns):
    """106, 206, 224 and 304 answer ClusterInfo / TopicList bodies."""
    d, _ = ns
    _register(d)
    _register(d, name="broker-b", addr="127.0.0.2:10911")
    info = json.loads(_call(d, RequestCode.GET_BROKER_CLUSTER_INFO).body)
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a", "broker-b"]}
    assert info["brokerAddrTable"]["broker-b"]["brokerAddrs"] == {"0": "127.0.0.2:10911"}
    assert json.loads(_call(d, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body) == {
        "topicList": ["TBW102", "TopicTest"]}
    by_cluster = _call(d, RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"})
    assert json.loads(by_cluster.body)["topicList"] == ["TBW102", "TopicTest"]
    system = json.loads(_call(d, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS).body)
    assert "DefaultCluster" in system["topicList"] and system["brokerAddr"]


def test_delete_topic_in_namesrv(ns):
    """DELETE_TOPIC_IN_NAMESRV removes the route."""
    d, _ = ns
    _register(d)
    assert _call(d, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "TopicTest"}).code == 0
    assert _call(d, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}).code == 17


def test_wipe_and_add_write_perm_answer_counts(ns):
    """205 / 327 answer wipeTopicCount / addTopicCount."""
    d, _ = ns
    _register(d)
    wipe = _call(d, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert wipe.ext_fields == {"wipeTopicCount": "2"}
    route = json.loads(_call(d, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}).body)
    assert route["queueDatas"][0]["perm"] == 4
    add = _call(d, RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert add.ext_fields == {"addTopicCount": "2"}


def test_kv_config_put_get_list_delete(ns, tmp_path):
    """100/101/219/102 manage namespaced KV config, persisted to kvConfig.json."""
    d, _ = ns
    kv = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"}
    assert _call(d, RequestCode.PUT_KV_CONFIG, kv).code == 0
    got = _call(d, RequestCode.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T"})
    assert got.ext_fields == {"value": "broker-a:4"}
    listing = _call(d, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ORDER_TOPIC_CONFIG"})
    assert json.loads(listing.body) == {"table": {"T": "broker-a:4"}}
    assert json.loads(_register(d).body) == {"table": {"T": "broker-a:4"}}
    saved = json.loads((tmp_path / "kvConfig.json").read_text())
    assert saved == {"configTable": {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}}}
    assert _call(d, RequestCode.DELETE_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG",
                                                   "key": "T"}).code == 0
    missing = _call(d, RequestCode.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T"})
    assert missing.code == ResponseCode.QUERY_NOT_FOUND
    assert missing.remark == "No config item, Namespace: ORDER_TOPIC_CONFIG Key: T"
    nons = _call(d, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "nope"})
    assert (nons.code, nons.remark) == (22, "No config item, Namespace: nope")


def test_kv_config_survives_restart(tmp_path):
    """A new KVConfigManager loads what the previous one persisted."""
    first = KVConfigManager(tmp_path / "kv.json")
    first.put("ns", "k", "v")
    second = KVConfigManager(tmp_path / "kv.json")
    second.load()
    assert second.get("ns", "k") == "v"


def test_query_data_version_reports_change_and_refreshes_liveness(ns):
    """322 answers changed=false for the registered DataVersion and refreshes the timestamp."""
    d, proc = ns
    _register(d)
    proc.route_info.clock.advance(100)
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
           "clusterName": "DefaultCluster", "brokerId": "0"}
    same = _call(d, RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":1,"timestamp":5}')
    assert same.ext_fields == {"changed": "false"}
    assert proc.route_info.broker_live_table["127.0.0.1:10911"].last_update_seconds == 100
    newer = _call(d, RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":2,"timestamp":5}')
    assert newer.ext_fields == {"changed": "true"}


def test_register_topic_in_namesrv(ns):
    """217 registers a topic route for a known broker (e.g. %RETRY%group)."""
    d, _ = ns
    _register(d)
    route = {"queueDatas": [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 1,
                             "topicSysFlag": 0, "writeQueueNums": 1}]}
    assert _call(d, RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "%RETRY%g"},
                 json.dumps(route).encode()).code == 0
    assert _call(d, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "%RETRY%g"}).code == 0


def test_namesrv_config_update_and_get(ns):
    """318 stores properties; 319 returns them as properties text."""
    d, _ = ns
    assert _call(d, RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n").code == 0
    body = _call(d, RequestCode.GET_NAMESRV_CONFIG).body.decode()
    assert "orderMessageEnable=true" in body.splitlines()


def test_register_body_without_body_uses_zero_data_version():
    """An empty register body decodes to an empty wrapper with DataVersion 0/0, like Java."""
    wrapper = decode_register_body(b"", False)["topicConfigSerializeWrapper"]
    assert wrapper == {"dataVersion": {"counter": 0, "timestamp": 0}, "topicConfigTable": {}}


def test_register_body_reads_fastjson_unquoted_keys():
    """A fastjson-written body with unquoted int keys in dataVersion maps still decodes."""
    body = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
            b'{"counter":3,"timestamp":9},"topicConfigTable":{"T":{"topicName":"T",'
            b'"readQueueNums":1,"writeQueueNums":1,"perm":6,"attributes":{1:"x"}}}}}')
    wrapper = decode_register_body(body, False)["topicConfigSerializeWrapper"]
    assert wrapper["topicConfigTable"]["T"]["attributes"] == {"1": "x"}
