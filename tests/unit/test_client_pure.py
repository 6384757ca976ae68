"""Pure parts of the client: allocation, subscriptions, message model, batch body, send results."""

from __future__ import annotations

import zlib

import pytest

from rocketmq_emu.broker.commitlog.record import MessageRecord, encode_record
from rocketmq_emu.broker.message import java_string_hash
from rocketmq_emu.client.message import (
    Message,
    MessageError,
    MessageExt,
    MessageQueue,
    MQBrokerError,
    SendStatus,
    decode_batch,
    decode_messages,
    encode_batch,
    restore_retry_topic,
    send_result_from_response,
)
from rocketmq_emu.client.rebalance import Subscription, allocate_averagely, rebalance_diff
from rocketmq_emu.client.route import (
    TopicPublishInfo,
    TopicRouteData,
    publish_queues,
    subscribe_queues,
)


def mqs(n: int, topic: str = "T", broker: str = "b") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def test_allocate_averagely_gives_first_consumers_the_extra_queue():
    """8 queues over 3 consumers split 3/3/2, contiguously, in sorted order."""
    q = mqs(8)
    cids = ["c2", "c0", "c1"]
    got = [allocate_averagely(c, q, cids) for c in ("c0", "c1", "c2")]
    assert got == [q[0:3], q[3:6], q[6:8]]


def test_allocate_averagely_more_consumers_than_queues():
    """With 2 queues and 3 consumers the last consumer gets nothing."""
    q = mqs(2)
    assert [allocate_averagely(c, q, ["a", "b", "c"]) for c in "abc"] == [[q[0]], [q[1]], []]


def test_allocate_averagely_unknown_consumer_gets_nothing():
    """A client id missing from the list gets no queue."""
    assert allocate_averagely("x", mqs(4), ["a"]) == []


def test_allocation_covers_every_queue_exactly_once():
    """Every queue is assigned to exactly one consumer for any sizes."""
    for n_mq in range(0, 13):
        for n_c in range(1, 6):
            cids = [f"c{i}" for i in range(n_c)]
            got = [mq for c in cids for mq in allocate_averagely(c, mqs(n_mq), cids)]
            assert sorted(got) == mqs(n_mq)


def test_rebalance_diff():
    """The diff lists the queues to add and to drop."""
    q = mqs(4)
    assert rebalance_diff(q[:2], q[1:3]) == ([q[2]], [q[0]])


def test_subscription_from_tag_expression():
    """'a || b' becomes two tags with their Java hash codes; '*' matches everything."""
    sub = Subscription.build("T", "a || b", 5)
    assert sub.tags == ["a", "b"]
    assert sub.codes == [java_string_hash("a"), java_string_hash("b")]
    assert sub.matches("a") and not sub.matches("c") and not sub.matches(None)
    assert Subscription.build("T", None, 0).matches(None)
    assert sub.to_json()["subString"] == "a || b"


def test_message_wire_properties():
    """Tags, keys, WAIT, delay and UNIQ_KEY travel as RocketMQ properties."""
    m = Message("T", b"x", tags="t", keys=["k1", "k2"], properties={"u": "v"}, delay_level=3)
    props = m.wire_properties("ID")
    assert props == {"u": "v", "TAGS": "t", "KEYS": "k1 k2", "WAIT": "true", "DELAY": "3",
                     "UNIQ_KEY": "ID"}


def test_message_timer_properties():
    """deliver_at becomes TIMER_DELIVER_MS, delay TIMER_DELAY_MS."""
    assert Message("T", b"x", deliver_at=12.5).wire_properties()["TIMER_DELIVER_MS"] == "12500"
    assert Message("T", b"x", delay=1.25).wire_properties()["TIMER_DELAY_MS"] == "1250"


@pytest.mark.parametrize("kw", [
    {"body": b""}, {"topic": ""}, {"delay_level": 2, "delay": 1.0},
    {"properties": {"DELAY": "1"}}, {"topic": "x" * 128},
])
def test_message_validation_rejects(kw):
    """Empty body/topic, two delay kinds or reserved property names are refused."""
    args = {"topic": "T", "body": b"x"} | kw
    with pytest.raises(MessageError):
        Message(**args).validate()


def test_batch_body_round_trip():
    """The batch body holds one block per message: magic 0, crc 0, flag, body, properties."""
    data = encode_batch([(b"one", 1, {"UNIQ_KEY": "A"}), (b"two", 0, {"TAGS": "t"})])
    assert data[4:12] == b"\0" * 8
    assert decode_batch(data) == [(b"one", 1, "UNIQ_KEY\x01A"), (b"two", 0, "TAGS\x01t")]


def test_send_result_mapping():
    """SUCCESS and FLUSH_DISK_TIMEOUT give results; other codes raise MQBrokerError."""
    mq = MessageQueue("T", "b", 0)
    ext = {"msgId": "OFF", "queueId": "3", "queueOffset": "7", "MSG_REGION": "R"}
    r = send_result_from_response(0, ext, mq, "UNIQ")
    assert (r.status, r.msg_id, r.offset_msg_id, r.message_queue.queue_id, r.queue_offset,
            r.region_id) == (SendStatus.SEND_OK, "UNIQ", "OFF", 3, 7, "R")
    assert send_result_from_response(10, ext, mq, "U").status is SendStatus.FLUSH_DISK_TIMEOUT
    with pytest.raises(MQBrokerError) as err:
        send_result_from_response(2, {}, mq, "U", remark="busy")
    assert err.value.code == 2


def _record(**kw) -> bytes:
    rec = MessageRecord(topic="T", body=b"hello", properties={"TAGS": "a", "UNIQ_KEY": "U1"},
                        store_host=("127.0.0.1", 10911), physical_offset=100, queue_offset=4)
    for k, v in kw.items():
        setattr(rec, k, v)
    return encode_record(rec)


def test_decode_pulled_records():
    """Concatenated records decode into MessageExt with the UNIQ_KEY as msg_id."""
    body = _record() + _record(physical_offset=200, queue_offset=5)
    msgs = decode_messages(body, "broker-a")
    assert [m.queue_offset for m in msgs] == [4, 5]
    m = msgs[0]
    assert (m.body, m.tags, m.msg_id, m.broker_name) == (b"hello", "a", "U1", "broker-a")
    assert m.offset_msg_id.endswith("0000000000000064")


def test_decode_inflates_compressed_body():
    """A body with the COMPRESSED flag is inflated with zlib."""
    (m,) = decode_messages(_record(body=zlib.compress(b"big" * 100), sys_flag=0x301))
    assert m.body == b"big" * 100


def test_restore_retry_topic():
    """A message from %RETRY%g shows its original topic."""
    (m,) = decode_messages(_record(topic="%RETRY%g", properties={"RETRY_TOPIC": "T"}))
    restore_retry_topic(m, "g")
    assert isinstance(m, MessageExt) and m.topic == "T"


ROUTE = (b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"b","cluster":"C"},'
         b'{"brokerAddrs":{"1":"127.0.0.1:20911"},"brokerName":"slaveonly","cluster":"C"}],'
         b'"filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":8,'
         b'"topicSynFlag":0,"writeQueueNums":4},{"brokerName":"slaveonly","perm":6,'
         b'"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}')


def test_route_publish_and_subscribe_queues():
    """Writers use masters' write queues, readers every readable queue; fastjson keys tolerated."""
    route = TopicRouteData.decode(ROUTE)
    assert route.master_addrs() == {"b": "127.0.0.1:10911"}
    assert publish_queues("T", route) == mqs(4)
    assert len(subscribe_queues("T", route)) == 10
    assert publish_queues("T", route, max_queues=4) == mqs(4)


def test_publish_info_skips_the_failed_broker():
    """select_one avoids the broker that just failed when another one has queues."""
    info = TopicPublishInfo("T", mqs(2, broker="a") + mqs(2, broker="b"))
    assert all(info.select_one("a").broker_name == "b" for _ in range(5))
    assert {info.select_one().queue_id for _ in range(4)} == {0, 1}


def test_package_exports_are_lazy():
    """Importing the package (as pytest does for the plugin) pulls in no Twisted; names resolve."""
    import subprocess
    import sys

    code = ("import sys, rocketmq_emu.client, rocketmq_emu.client.pytest_plugin; "
            "assert 'twisted.internet.reactor' not in sys.modules; "
            "assert 'rocketmq_emu.client.producer' not in sys.modules; "
            "from rocketmq_emu.client import Producer, EmbeddedCluster, BlockingProducer; "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
