"""RouteInfoManager: registration, routes, cluster info and 120 s expiry on a manual clock."""

from __future__ import annotations

from twisted.internet.task import Clock

from rocketmq_emu.namesrv.route_info import PERM_READ, PERM_WRITE, QueueData, RouteInfoManager


def _wrapper(counter=1, **topics):
    table = {
        name: {"order": False, "perm": 6, "readQueueNums": n, "topicFilterType": "SINGLE_TAG",
               "topicName": name, "topicSysFlag": 0, "writeQueueNums": n}
        for name, n in topics.items()
    }
    return {"dataVersion": {"counter": counter, "timestamp": 1000}, "topicConfigTable": table}


def _register(rim, name="broker-a", addr="10.0.0.5:10911", bid=0, cluster="DefaultCluster",
              counter=1, conn=None, **topics):
    return rim.register_broker(cluster, addr, name, bid, addr.replace("10911", "10912"),
                               _wrapper(counter, **topics), [], conn)


def test_route_of_registered_topic_has_quoted_broker_ids_and_queue_data():
    """A master's topics become routes with brokerAddrs {"0": addr} and its queue numbers."""
    rim = RouteInfoManager(Clock())
    _register(rim, TopicTest=4)
    assert rim.pickup_topic_route_data("TopicTest") == {
        "brokerDatas": [{"brokerAddrs": {"0": "10.0.0.5:10911"}, "brokerName": "broker-a",
                         "cluster": "DefaultCluster"}],
        "filterServerTable": {},
        "queueDatas": [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 4,
                        "topicSysFlag": 0, "writeQueueNums": 4}],
    }


def test_unknown_topic_has_no_route():
    """An unknown topic yields None (the processor answers TOPIC_NOT_EXIST)."""
    rim = RouteInfoManager(Clock())
    _register(rim, TopicTest=4)
    assert rim.pickup_topic_route_data("Nope") is None


def test_two_brokers_share_a_topic_and_a_cluster():
    """Two broker names serving one topic both appear in its route and in the cluster."""
    rim = RouteInfoManager(Clock())
    _register(rim, "broker-a", "10.0.0.5:10911", T=4)
    _register(rim, "broker-b", "10.0.0.6:10911", T=2)
    route = rim.pickup_topic_route_data("T")
    assert [b["brokerName"] for b in route["brokerDatas"]] == ["broker-a", "broker-b"]
    assert [q["writeQueueNums"] for q in route["queueDatas"]] == [4, 2]
    assert rim.cluster_info()["clusterAddrTable"] == {"DefaultCluster": ["broker-a", "broker-b"]}


def test_slave_gets_master_and_ha_address_and_does_not_change_queues():
    """A slave registration answers the master's addresses; slave topic configs are ignored."""
    rim = RouteInfoManager(Clock())
    _register(rim, T=4)
    result = rim.register_broker("DefaultCluster", "10.0.0.7:10911", "broker-a", 1,
                                 "10.0.0.7:10912", _wrapper(5, T=8, Other=1), [], None)
    assert (result.master_addr, result.ha_server_addr) == ("10.0.0.5:10911", "10.0.0.5:10912")
    assert rim.pickup_topic_route_data("T")["queueDatas"][0]["writeQueueNums"] == 4
    assert rim.pickup_topic_route_data("Other") is None
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.5:10911",
                                                               1: "10.0.0.7:10911"}


def test_same_data_version_does_not_reapply_topic_configs():
    """Re-registering with an unchanged DataVersion keeps queue data untouched."""
    rim = RouteInfoManager(Clock())
    _register(rim, counter=1, T=4)
    rim.topic_queue_table["T"]["broker-a"].perm = 4
    _register(rim, counter=1, T=4)
    assert rim.topic_queue_table["T"]["broker-a"].perm == 4
    _register(rim, counter=2, T=4)
    assert rim.topic_queue_table["T"]["broker-a"].perm == 6


def test_broker_expires_after_120_seconds_without_registration():
    """The scan drops a broker silent for more than 120 s (scan at 5 s, then every 10 s)."""
    clock = Clock()
    rim = RouteInfoManager(clock)
    rim.start_scanning()
    _register(rim, T=4)
    clock.pump([5] + [10] * 11)  # t = 115
    assert rim.pickup_topic_route_data("T") is not None
    clock.advance(10)  # t = 125 > 120
    assert rim.pickup_topic_route_data("T") is None
    assert rim.broker_live_table == {} and rim.cluster_info()["brokerAddrTable"] == {}
    rim.stop_scanning()
    assert not clock.getDelayedCalls()


def test_reregistration_keeps_broker_alive():
    """A broker registering every 30 s never expires."""
    clock = Clock()
    rim = RouteInfoManager(clock)
    rim.start_scanning()
    for _ in range(20):
        _register(rim, T=4)
        clock.advance(30)
    assert rim.pickup_topic_route_data("T") is not None
    rim.stop_scanning()


def test_expiry_closes_the_broker_connection():
    """An expired broker's connection is closed."""
    class Conn:
        closed = False

        def close(self):
            self.closed = True

    clock, conn = Clock(), Conn()
    rim = RouteInfoManager(clock)
    _register(rim, conn=conn, T=1)
    clock.advance(121)
    assert rim.scan_not_active_broker() == ["10.0.0.5:10911"] and conn.closed


def test_unregister_last_address_removes_broker_cluster_and_topics():
    """Unregistering the only address of a broker removes its name, cluster entry and topics."""
    rim = RouteInfoManager(Clock())
    _register(rim, "broker-a", "10.0.0.5:10911", T=4, OnlyA=1)
    _register(rim, "broker-b", "10.0.0.6:10911", T=4)
    rim.unregister_broker("DefaultCluster", "10.0.0.5:10911", "broker-a", 0)
    assert rim.pickup_topic_route_data("OnlyA") is None
    assert [b["brokerName"] for b in rim.pickup_topic_route_data("T")["brokerDatas"]] == ["broker-b"]
    assert rim.cluster_info()["clusterAddrTable"] == {"DefaultCluster": ["broker-b"]}


def test_channel_destroy_removes_broker_registered_on_that_connection():
    """When a broker's connection closes its registration is dropped at once."""
    rim = RouteInfoManager(Clock())
    conn = object()
    _register(rim, conn=conn, T=4)
    rim.on_channel_destroy(object())
    assert rim.pickup_topic_route_data("T") is not None
    rim.on_channel_destroy(conn)
    assert rim.pickup_topic_route_data("T") is None


def test_wipe_and_add_write_perm():
    """Wiping write perm clears PERM_WRITE on the broker's topics; adding restores it."""
    rim = RouteInfoManager(Clock())
    _register(rim, T=4, U=2)
    assert rim.operate_write_perm_of_broker("broker-a", add=False) == 2
    assert rim.topic_queue_table["T"]["broker-a"].perm == PERM_READ
    assert rim.operate_write_perm_of_broker("broker-a", add=True) == 2
    assert rim.topic_queue_table["U"]["broker-a"].perm == PERM_READ | PERM_WRITE


def test_topic_lists():
    """All topics, topics by cluster, system topics and delete_topic."""
    rim = RouteInfoManager(Clock())
    _register(rim, "broker-a", "10.0.0.5:10911", cluster="c1", T=1, A=1)
    _register(rim, "broker-b", "10.0.0.6:10911", cluster="c2", B=1)
    assert rim.all_topics() == ["A", "B", "T"]
    assert rim.topics_by_cluster("c1") == ["A", "T"] and rim.topics_by_cluster("zz") == []
    system = rim.system_topic_list()
    assert system["topicList"] == ["broker-a", "broker-b", "c1", "c2"]
    assert system["brokerAddr"] == "10.0.0.5:10911"
    rim.delete_topic("A")
    assert rim.all_topics() == ["B", "T"]


def test_register_topic_only_for_known_brokers():
    """REGISTER_TOPIC adds queue data only for brokers the name server knows."""
    rim = RouteInfoManager(Clock())
    _register(rim, T=1)
    rim.register_topic("%RETRY%g", [QueueData("broker-a", 1, 1, 6), QueueData("ghost", 1, 1, 6)])
    assert [q["brokerName"] for q in rim.pickup_topic_route_data("%RETRY%g")["queueDatas"]] == [
        "broker-a"]


def test_unit_topics_filter_on_sys_flag():
    """Unit topic lists select topics by the FLAG_UNIT / FLAG_UNIT_SUB bits."""
    rim = RouteInfoManager(Clock())
    _register(rim, Plain=1, Unit=1, Sub=1)
    rim.topic_queue_table["Unit"]["broker-a"].topic_sys_flag = 1
    rim.topic_queue_table["Sub"]["broker-a"].topic_sys_flag = 2
    assert rim.unit_topics(True, None) == ["Unit"]
    assert rim.unit_topics(None, True) == ["Sub"]
    assert rim.unit_topics(False, True) == ["Sub"]


def test_queue_data_reads_legacy_topic_syn_flag():
    """QueueData JSON from brokers up to 4.8 spells the flag topicSynFlag."""
    qd = QueueData.from_json({"brokerName": "b", "perm": 6, "readQueueNums": 1,
                              "topicSynFlag": 3, "writeQueueNums": 1})
    assert qd.topic_sys_flag == 3
