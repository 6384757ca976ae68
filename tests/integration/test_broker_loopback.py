"""A name server and a broker in-process on loopback, driven by the remoting client."""

from __future__ import annotations

import json

import pytest
import pytest_twisted
from twisted.internet import defer, reactor

from rocketmq_emu.broker.commitlog.record import iter_records
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.processors.batch_codec import BatchMessage, encode_batch
from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RequestDispatcher
from rocketmq_emu.namesrv.server import NameServer


@pytest.fixture
def cluster(tmp_path):
    namesrv = NameServer(reactor, port=0, host="127.0.0.1", kv_config_path=tmp_path / "kv.json")
    pytest_twisted.blockon(namesrv.start())
    cfg = BrokerConfig(listen_port=0, namesrv_addr=namesrv.addr,
                       store_path_root_dir=str(tmp_path / "store"),
                       mapped_file_size_commit_log=1024 * 1024,
                       mapped_file_size_consume_queue=300 * 20)
    broker = BrokerController(cfg, reactor=reactor, host="127.0.0.1", enable_vip_channel=False)
    pytest_twisted.blockon(broker.start())
    yield namesrv, broker
    pytest_twisted.blockon(broker.stop())
    pytest_twisted.blockon(namesrv.stop())


@pytest.fixture
def clients():
    made = []

    def make(dispatcher=None):
        c = RemotingClient(reactor, dispatcher)
        made.append(c)
        return c

    yield make
    for c in made:
        pytest_twisted.blockon(c.close())


def send_v2(topic, body, queue_id=0, props=None, code=RequestCode.SEND_MESSAGE_V2, **extra):
    props = props if props is not None else {"TAGS": "tagA", "WAIT": "true"}
    ext = {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
           "g": "1700000000000", "h": "0", "i": properties_to_string(props), "j": "0",
           "k": "false"}
    ext.update(extra)
    return RemotingCommand.request(code, ext, body)


def pull(topic, queue_id, offset, group="cg", suspend_ms=None, sub="*"):
    sys_flag = 0x4 | (0x2 if suspend_ms is not None else 0)
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": group, "topic": topic, "queueId": str(queue_id),
        "queueOffset": str(offset), "maxMsgNums": "32", "sysFlag": str(sys_flag),
        "commitOffset": "0", "suspendTimeoutMillis": str(suspend_ms or 0),
        "subscription": sub, "subVersion": "0", "expressionType": "TAG"})


def heartbeat(client_id, group, topic):
    body = json.dumps({"clientID": client_id, "producerDataSet": [], "consumerDataSet": [{
        "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
        "subscriptionDataSet": [{"topic": topic, "subString": "*", "tagsSet": [],
                                 "codeSet": [], "subVersion": 1, "classFilterMode": False,
                                 "expressionType": "TAG"}]}]}).encode()
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=body)


def bodies(raw):
    return [rec.body for _, rec in iter_records(raw)]


@pytest_twisted.inlineCallbacks
def test_send_v2_stores_and_answers_offset_msg_id(cluster, clients):
    """SEND_MESSAGE_V2 answers SUCCESS with an offset msgId naming the broker's address."""
    _, broker = cluster
    resp = yield clients().invoke(broker.addr, send_v2("TopicA", b"hello"))
    assert resp.code == ResponseCode.SUCCESS
    assert resp.ext_fields["queueOffset"] == "0"
    assert resp.ext_fields["MSG_REGION"] == "DefaultRegion"
    ip, port = broker.addr.split(":")
    assert resp.ext_fields["msgId"].startswith(
        bytes(map(int, ip.split("."))).hex().upper() + f"{int(port):08X}")


@pytest_twisted.inlineCallbacks
def test_send_v1_code_10_then_pull_returns_the_record(cluster, clients):
    """A code-10 send is returned by a pull of the same queue."""
    _, broker = cluster
    c = clients()
    ext = {"producerGroup": "pg", "topic": "TopicB", "defaultTopic": "TBW102",
           "defaultTopicQueueNums": "4", "queueId": "1", "sysFlag": "0",
           "bornTimestamp": "1", "flag": "0", "properties": "", "batch": "false"}
    resp = yield c.invoke(broker.addr, RemotingCommand.request(RequestCode.SEND_MESSAGE, ext,
                                                               b"v1"))
    assert resp.code == ResponseCode.SUCCESS
    got = yield c.invoke(broker.addr, pull("TopicB", 1, 0))
    assert got.code == ResponseCode.SUCCESS and bodies(got.body) == [b"v1"]


@pytest_twisted.inlineCallbacks
def test_batch_320_stores_each_message_with_consecutive_offsets(cluster, clients):
    """SEND_BATCH_MESSAGE stores one record per block and answers comma-joined msgIds."""
    _, broker = cluster
    c = clients()
    body = encode_batch([BatchMessage(0, b"m%d" % i, f"KEYS\u0001k{i}") for i in range(3)])
    resp = yield c.invoke(broker.addr, send_v2("TopicC", body, code=RequestCode.SEND_BATCH_MESSAGE,
                                               m="true"))
    assert resp.code == ResponseCode.SUCCESS
    assert len(resp.ext_fields["msgId"].split(",")) == 3
    got = yield c.invoke(broker.addr, pull("TopicC", 0, 0))
    assert bodies(got.body) == [b"m0", b"m1", b"m2"]


@pytest_twisted.inlineCallbacks
def test_pull_past_the_end_without_suspend_is_not_found(cluster, clients):
    """A pull at the queue's end without the suspend bit answers PULL_NOT_FOUND at once."""
    _, broker = cluster
    c = clients()
    yield c.invoke(broker.addr, send_v2("TopicD", b"x"))
    got = yield c.invoke(broker.addr, pull("TopicD", 0, 1))
    assert got.code == ResponseCode.PULL_NOT_FOUND
    assert got.ext_fields["maxOffset"] == "1"


@pytest_twisted.inlineCallbacks
def test_long_poll_is_woken_by_a_send(cluster, clients):
    """A held pull is answered with the message sent while it waits."""
    _, broker = cluster
    c = clients()
    yield c.invoke(broker.addr, send_v2("TopicE", b"first"))
    answered = []
    waiting = c.invoke(broker.addr, pull("TopicE", 0, 1, suspend_ms=15000), timeout=20)
    waiting.addCallback(lambda r: answered.append(r) or r)
    yield deferLater(0.1)
    assert answered == []
    yield clients().invoke(broker.addr, send_v2("TopicE", b"second"))
    got = yield waiting
    assert got.code == ResponseCode.SUCCESS and bodies(got.body) == [b"second"]


@pytest_twisted.inlineCallbacks
def test_long_poll_times_out_with_not_found(cluster, clients):
    """A held pull with nothing arriving answers PULL_NOT_FOUND after suspendTimeoutMillis."""
    _, broker = cluster
    c = clients()
    yield c.invoke(broker.addr, send_v2("TopicF", b"only"))
    got = yield c.invoke(broker.addr, pull("TopicF", 0, 1, suspend_ms=200), timeout=5)
    assert got.code == ResponseCode.PULL_NOT_FOUND


@pytest_twisted.inlineCallbacks
def test_heartbeat_of_a_second_member_notifies_the_first(cluster, clients):
    """When a second consumer joins, the first gets NOTIFY_CONSUMER_IDS_CHANGED."""
    _, broker = cluster
    notified = defer.Deferred()
    dispatcher = RequestDispatcher(reactor)

    def on_notify(cmd, conn):
        if not notified.called:
            notified.callback(cmd.ext_fields.get("consumerGroup"))

    dispatcher.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
    first = clients(dispatcher)
    yield first.invoke(broker.addr, heartbeat("c1", "G1", "TopicG"))
    yield deferLater(0.05)
    notified = defer.Deferred()  # the first join notified c1 itself; wait for the next one
    yield clients().invoke(broker.addr, heartbeat("c2", "G1", "TopicG"))
    group = yield notified
    assert group == "G1"


@pytest_twisted.inlineCallbacks
def test_consumer_list_names_every_member(cluster, clients):
    """GET_CONSUMER_LIST_BY_GROUP lists the client ids of the group's connections."""
    _, broker = cluster
    yield clients().invoke(broker.addr, heartbeat("c1", "G2", "TopicH"))
    yield clients().invoke(broker.addr, heartbeat("c2", "G2", "TopicH"))
    resp = yield clients().invoke(broker.addr, RemotingCommand.request(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G2"}))
    assert sorted(json.loads(resp.body)["consumerIdList"]) == ["c1", "c2"]


@pytest_twisted.inlineCallbacks
def test_lock_batch_refuses_a_queue_held_by_another_client(cluster, clients):
    """LOCK_BATCH_MQ gives a queue to the first client and refuses it to the second."""
    _, broker = cluster
    mq = {"topic": "TopicI", "brokerName": "broker-a", "queueId": 0}

    def lock(client_id):
        return RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=json.dumps(
            {"consumerGroup": "G3", "clientId": client_id, "mqSet": [mq]}).encode())

    a = yield clients().invoke(broker.addr, lock("ca"))
    b = yield clients().invoke(broker.addr, lock("cb"))
    assert json.loads(a.body)["lockOKMQSet"] == [mq]
    assert json.loads(b.body)["lockOKMQSet"] == []


@pytest_twisted.inlineCallbacks
def test_updated_consumer_offset_is_returned_by_query(cluster, clients):
    """UPDATE_CONSUMER_OFFSET (oneway) then QUERY_CONSUMER_OFFSET returns the offset."""
    _, broker = cluster
    c = clients()
    key = {"consumerGroup": "G4", "topic": "TopicJ", "queueId": "0"}
    yield c.invoke_oneway(broker.addr, RemotingCommand.request(
        RequestCode.UPDATE_CONSUMER_OFFSET, dict(key, commitOffset="7"), oneway=True))
    yield deferLater(0.05)
    resp = yield c.invoke(broker.addr, RemotingCommand.request(
        RequestCode.QUERY_CONSUMER_OFFSET, key))
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["offset"] == "7"


@pytest_twisted.inlineCallbacks
def test_send_back_requeues_into_the_retry_topic(cluster, clients):
    """CONSUMER_SEND_MSG_BACK with delayLevel -1 ... 1 lands in %RETRY%group via the schedule."""
    _, broker = cluster
    c = clients()
    sent = yield c.invoke(broker.addr, send_v2("TopicK", b"retry me"))
    got = yield c.invoke(broker.addr, pull("TopicK", 0, 0))
    offset = next(iter_records(got.body))[1].physical_offset
    resp = yield c.invoke(broker.addr, RemotingCommand.request(
        RequestCode.CONSUMER_SEND_MSG_BACK,
        {"offset": str(offset), "group": "G5", "delayLevel": "1",
         "originMsgId": sent.ext_fields["msgId"], "maxReconsumeTimes": "16"}))
    assert resp.code == ResponseCode.SUCCESS
    retry = yield c.invoke(broker.addr, pull("%RETRY%G5", 0, 0, suspend_ms=5000), timeout=10)
    assert retry.code == ResponseCode.SUCCESS
    (_, rec), = iter_records(retry.body)
    assert rec.body == b"retry me" and rec.reconsume_times == 1
    assert rec.properties["RETRY_TOPIC"] == "TopicK"


@pytest_twisted.inlineCallbacks
def test_auto_created_topic_is_routed_by_the_name_server(cluster, clients):
    """After the first send to a new topic the name server returns its route."""
    namesrv, broker = cluster
    c = clients()
    yield c.invoke(broker.addr, send_v2("TopicNew", b"x"))
    for _ in range(50):
        resp = yield c.invoke(namesrv.addr, RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicNew"}))
        if resp.code == ResponseCode.SUCCESS:
            break
        yield deferLater(0.02)
    assert resp.code == ResponseCode.SUCCESS
    route = json.loads(resp.body)
    assert route["brokerDatas"][0]["brokerAddrs"]["0"] == broker.addr
    assert route["queueDatas"][0]["writeQueueNums"] == 4


def deferLater(seconds):
    from twisted.internet import task

    return task.deferLater(reactor, seconds, lambda: None)


@pytest_twisted.inlineCallbacks
def test_retry_topic_is_routed_right_after_the_first_heartbeat(cluster, clients):
    """A consumer's heartbeat creates %RETRY%group and the name server routes it at once."""
    namesrv, broker = cluster
    c = clients()
    yield c.invoke(broker.addr, heartbeat("c9", "GR", "TopicR"))
    for _ in range(50):
        resp = yield c.invoke(namesrv.addr, RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "%RETRY%GR"}))
        if resp.code == ResponseCode.SUCCESS:
            break
        yield deferLater(0.02)
    assert resp.code == ResponseCode.SUCCESS
    assert json.loads(resp.body)["queueDatas"][0]["readQueueNums"] == 1


@pytest_twisted.inlineCallbacks
def test_topic_created_by_admin_is_routed(cluster, clients):
    """UPDATE_AND_CREATE_TOPIC on the broker makes the name server route the topic."""
    namesrv, broker = cluster
    c = clients()
    resp = yield c.invoke(broker.addr, RemotingCommand.request(
        RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": "AdminTopic", "defaultTopic": "TBW102", "readQueueNums": "3",
            "writeQueueNums": "3", "perm": "6", "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": "0", "order": "false"}))
    assert resp.code == ResponseCode.SUCCESS
    for _ in range(50):
        route = yield c.invoke(namesrv.addr, RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "AdminTopic"}))
        if route.code == ResponseCode.SUCCESS:
            break
        yield deferLater(0.02)
    assert json.loads(route.body)["queueDatas"][0]["writeQueueNums"] == 3
