"""Golden frames: exactly what the Java 4.9.8 client sends for transactions, batches and SQL92
subscriptions, replayed into the broker's processors; our client must send the same fields.

The transaction frames are real captures (``/work/shared/fixtures/captures/java-4.9.8.txt``:
the half message's SEND_MESSAGE_V2 and the END_TRANSACTION that followed; the capture's
stand-in broker answered ``transactionId:""``, which Java copied into END_TRANSACTION). The
commit variant, the 320 batch body and the SQL92 heartbeat / CHECK_CLIENT_CONFIG bodies are
derived from protocol.md §3.1, §3.5, §3.8 and §4.9 with the captured headers.
"""

from __future__ import annotations

import json
import struct

import pytest
from test_transaction import T0, Broker, FakeConn
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import decode_record, iter_records
from rocketmq_emu.broker.message import (
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_TYPE_MASK,
    decode_offset_msg_id,
    properties_to_string,
)
from rocketmq_emu.broker.processors.pull import PullMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand, decode
from rocketmq_emu.client.message import MessageQueue, SendResult, SendStatus
from rocketmq_emu.client.producer import Producer
from rocketmq_emu.client.rebalance import Subscription
from rocketmq_emu.client.sql_filter import check_client_config_body
from rocketmq_emu.client.transaction import LocalTransactionState, end_transaction_header

#: java-4.9.8.txt, connection 127.0.0.1:38992->broker, frame #1: the half message (310).
JAVA_HALF_SEND = bytes.fromhex(
    "000001bc000001b67b22636f6465223a3331302c226578744669656c6473223a7b2261223a225049445f5458"
    "222c2262223a22546f70696354657374222c2263223a22544257313032222c2264223a2234222c2265223a22"
    "33222c2266223a2234222c2267223a2231373935323938363833383131222c2268223a2230222c2269223a22"
    "4b4559535c75303030316b6579315c75303030325452414e5f4d53475c7530303031747275655c7530303032"
    "554e49515f4b45595c7530303031464430303030303030303030303030303030303030303030303030303030"
    "30323636453133303934364530393642424330334133303030385c7530303032574149545c75303030317472"
    "75655c75303030325047524f55505c75303030315049445f54585c7530303032544147535c75303030315461"
    "6741222c226a223a2230222c226b223a2266616c7365222c226d223a2266616c7365222c226e223a2262726f"
    "6b65722d61227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f7061717565223a"
    "32362c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c2276657273696f6e"
    "223a3430397d7478"
)
#: frame #2: END_TRANSACTION (37), oneway (flag 2), UNKNOW after a local exception.
JAVA_END_TRANSACTION = bytes.fromhex(
    "000001f3000001ef7b22636f6465223a33372c226578744669656c6473223a7b2270726f647563657247726f"
    "7570223a225049445f5458222c22626e616d65223a2262726f6b65722d61222c22636f6d6d69744c6f674f66"
    "66736574223a2237222c226d73674964223a2246443030303030303030303030303030303030303030303030"
    "30303030303032363645313330393436453039364242433033413330303038222c227472616e537461746554"
    "61626c654f6666736574223a2237222c22636f6d6d69744f72526f6c6c6261636b223a2230222c227472616e"
    "73616374696f6e4964223a22222c2266726f6d5472616e73616374696f6e436865636b223a2266616c736522"
    "7d2c22666c6167223a322c226c616e6775616765223a224a415641222c226f7061717565223a33312c227265"
    "6d61726b223a22657865637574654c6f63616c5472616e73616374696f6e4272616e63682065786365707469"
    "6f6e3a206a6176612e6c616e672e496c6c6567616c417267756d656e74457863657074696f6e3a2054686520"
    "6e616d65206f722076616c7565206f662070726f70657274792063616e206e6f74206265206e756c6c206f72"
    "20626c616e6b20737472696e6721222c2273657269616c697a655479706543757272656e74525043223a224a"
    "534f4e222c2276657273696f6e223a3430397d"
)
JAVA_END_TRANSACTION_KEYS = {"bname", "commitLogOffset", "commitOrRollback",
                             "fromTransactionCheck", "msgId", "producerGroup",
                             "tranStateTableOffset", "transactionId"}


@pytest.fixture
def broker(tmp_path):
    clock = Clock()
    clock.advance(T0)
    b = Broker(tmp_path, clock, enable_property_filter=True)
    yield b
    b.close()


def _replay_half(broker, conn):
    cmd = decode(JAVA_HALF_SEND)
    resp = broker.send.process_send(cmd, conn)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return cmd, resp


def test_captured_half_message_is_stored_as_half(broker):
    """The Java 310 with f=4 / TRAN_MSG / PGROUP lands on the half topic with REAL_TOPIC/QID."""
    conn = FakeConn()
    cmd, resp = _replay_half(broker, conn)
    assert cmd.code == RequestCode.SEND_MESSAGE_V2 and cmd.ext_fields["f"] == "4"
    assert broker.pull_all("TopicTest", 3) == []
    [half] = broker.pull_all(RMQ_SYS_TRANS_HALF_TOPIC, 0)
    assert (half.properties["REAL_TOPIC"], half.properties["REAL_QID"]) == ("TopicTest", "3")
    assert half.properties["PGROUP"] == "PID_TX"
    assert half.body == b"tx"
    assert resp.ext_fields["queueOffset"] == "0"


def test_captured_oneway_unknown_end_transaction_is_accepted_silently(broker):
    """The captured 37 (oneway flag 2, commitOrRollback 0, remark) gets no response and
    decides nothing."""
    conn = FakeConn()
    _replay_half(broker, conn)
    end = decode(JAVA_END_TRANSACTION)
    assert end.code == RequestCode.END_TRANSACTION and end.is_oneway
    assert set(end.ext_fields) == JAVA_END_TRANSACTION_KEYS
    assert end.remark.startswith("executeLocalTransactionBranch exception")
    assert broker.tx.process(end, conn) is None
    assert broker.pull_all(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) == []


def test_java_commit_frame_commits(broker):
    """The captured 37 with commitOrRollback 8 and this broker's offsets commits the message."""
    conn = FakeConn()
    _, resp = _replay_half(broker, conn)
    end = decode(JAVA_END_TRANSACTION)
    ext = dict(end.ext_fields)
    ext.update(commitOrRollback="8", tranStateTableOffset=resp.ext_fields["queueOffset"],
               commitLogOffset=str(decode_offset_msg_id(resp.ext_fields["msgId"])[2]))
    frame = RemotingCommand.request(RequestCode.END_TRANSACTION, ext, oneway=True)
    frame.remark = None
    replayed = decode(frame.encode())
    assert broker.tx.process(replayed, conn) is None
    [msg] = broker.pull_all("TopicTest", 3)
    assert msg.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE
    assert msg.properties["UNIQ_KEY"] == ext["msgId"]


def test_our_end_transaction_has_the_java_fields():
    """TransactionProducer's END_TRANSACTION carries the same keys as Java's (transactionId
    only when the send response had one, as Java copies it from there)."""
    result = SendResult(SendStatus.SEND_OK, "UNIQ", "7F00000100002A9F0000000000000007",
                        MessageQueue("TopicTest", "broker-a", 3), 7, transaction_id="")
    ext = end_transaction_header("PID_TX", result, LocalTransactionState.COMMIT_MESSAGE)
    assert set(ext) == JAVA_END_TRANSACTION_KEYS
    assert ext["commitLogOffset"] == "7" and ext["commitOrRollback"] == "8"
    assert ext["fromTransactionCheck"] == "false" and ext["msgId"] == "UNIQ"
    result.transaction_id = None
    assert set(end_transaction_header("PID_TX", result, LocalTransactionState.UNKNOW)) == \
        JAVA_END_TRANSACTION_KEYS - {"transactionId"}


# --- 320 batch (protocol.md §4.9, header as captured at java-4.9.8.txt:334) ------------------
JAVA_BATCH_HEADER = {"a": "PID_TEST", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "0",
                     "f": "0", "g": "1795298681734", "h": "0", "i": "WAIT\u0001true", "j": "0",
                     "k": "false", "m": "true", "n": "broker-a"}


def _batch_block(body: bytes, props: str) -> bytes:
    p = props.encode()
    size = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(p)
    return struct.pack(">iiiii", size, 0, 0, 0, len(body)) + body + struct.pack(">h", len(p)) + p


def test_java_batch_frame_stores_consecutive_messages(broker):
    """A Java 320: one record per block, consecutive queue offsets, block properties followed
    by the batch's (WAIT) and CLUSTER; msgId lists the offset ids."""
    blocks = [
        _batch_block(b"b1", "KEYS\u0001key1\u0002UNIQ_KEY\u0001U1\u0002WAIT\u0001true"
                            "\u0002TAGS\u0001TagA"),
        _batch_block(b"b2", "KEYS\u0001key1\u0002UNIQ_KEY\u0001U2\u0002WAIT\u0001true"
                            "\u0002TAGS\u0001TagA"),
    ]
    cmd = decode(RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, JAVA_BATCH_HEADER,
                                         b"".join(blocks)).encode())
    broker.store.topic_config.create_topic_in_send_message_back_method("TopicTest", 4, 6)
    resp = broker.send.process_send(cmd, FakeConn())
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert len(resp.ext_fields["msgId"].split(",")) == 2
    msgs = broker.pull_all("TopicTest", 0)
    assert [m.body for m in msgs] == [b"b1", b"b2"]
    assert [m.queue_offset for m in msgs] == [0, 1]
    assert msgs[1].properties["UNIQ_KEY"] == "U2"
    assert msgs[1].properties["CLUSTER"] == "DefaultCluster"


def test_our_batch_header_has_the_java_keys():
    """Producer._header for a batch uses the same abbreviated keys a..n as the Java 320."""
    p = Producer("PID_TEST", "127.0.0.1:9876")
    header = p._header(MessageQueue("TopicTest", "broker-a", 0), 0, 0,
                       properties_to_string({"WAIT": "true"}), batch=True)
    assert set(header) == set(JAVA_BATCH_HEADER)
    assert header["m"] == "true" and header["i"] == "WAIT\u0001true"


# --- SQL92 subscription (protocol.md §3.8 HeartbeatData, FilterAPI.build for SQL92) ----------
SQL = "a between 0 and 3"
JAVA_SQL92_HEARTBEAT = (
    '{"clientID":"192.0.2.2@26337#1","consumerDataSet":[{"consumeFromWhere":'
    '"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"GID_SQL",'
    '"messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],'
    '"expressionType":"SQL92","subString":"a between 0 and 3","subVersion":1795298684157,'
    '"tagsSet":[],"topic":"TopicTest"}],"unitMode":false}],"producerDataSet":[{"groupName":'
    '"CLIENT_INNER_PRODUCER"}]}')


def _pull(offset=0, sys_flag=0x2):
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "GID_SQL", "topic": "TopicTest", "queueId": "0",
        "queueOffset": str(offset), "maxMsgNums": "32", "sysFlag": str(sys_flag),
        "commitOffset": "0", "suspendTimeoutMillis": "15000", "subVersion": "1795298684157",
        "expressionType": "SQL92", "bname": "broker-a"})


def _send_plain(broker, body, props):
    ext = {"a": "p", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "0", "f": "0",
           "g": "0", "h": "0", "i": properties_to_string(props)}
    resp = broker.send.process_send(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext,
                                                            body), FakeConn())
    assert resp.code == ResponseCode.SUCCESS


def test_java_sql92_heartbeat_registers_and_pull_filters(broker):
    """The heartbeat's SQL92 subscription is used by a pull without the subscription flag:
    only messages whose property ``a`` is in [0, 3] come back."""
    conn = FakeConn("192.0.2.2@26337#1")
    hb = RemotingCommand.request(RequestCode.HEART_BEAT, body=JAVA_SQL92_HEARTBEAT.encode())
    assert broker.client.heart_beat(hb, conn).code == ResponseCode.SUCCESS
    broker.store.topic_config.create_topic_in_send_message_back_method("TopicTest", 4, 6)
    for i in range(6):
        _send_plain(broker, f"m{i}".encode(), {"a": str(i)})
    resp = PullMessageProcessor(broker.ctx).process_request(_pull(), conn, allow_suspend=False)
    assert resp.code == ResponseCode.SUCCESS
    assert [rec.body for _, rec in iter_records(resp.body)] == [b"m0", b"m1", b"m2", b"m3"]
    assert resp.ext_fields["nextBeginOffset"] == "6"


def test_our_sql92_heartbeat_subscription_matches_java_shape():
    """Our client's SQL92 SubscriptionData has Java's keys and values (empty tags/codes)."""
    java = json.loads(JAVA_SQL92_HEARTBEAT)["consumerDataSet"][0]["subscriptionDataSet"][0]
    ours = Subscription.build_sql92("TopicTest", SQL, 1795298684157).to_json()
    assert ours == java


def test_check_client_config_body_and_answer(broker):
    """CHECK_CLIENT_CONFIG (46) body {clientId, group, subscriptionData}: SUCCESS for a good
    expression, 23 with a ParseException remark for a bad one."""
    sub = Subscription.build_sql92("TopicTest", SQL, 1)
    body = check_client_config_body("192.0.2.2@1", "GID_SQL", sub)
    assert list(json.loads(body)) == ["clientId", "group", "subscriptionData"]
    ok = broker.client.check_client_config(
        RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=body), FakeConn())
    assert ok.code == ResponseCode.SUCCESS
    bad = Subscription.build_sql92("TopicTest", "a between", 1)
    resp = broker.client.check_client_config(RemotingCommand.request(
        RequestCode.CHECK_CLIENT_CONFIG,
        body=check_client_config_body("192.0.2.2@1", "GID_SQL", bad)), FakeConn())
    assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "ParseException" in resp.remark


def test_record_decode_of_golden_half(broker):
    """The stored half record decodes with the captured UNIQ_KEY and born timestamp."""
    _replay_half(broker, FakeConn())
    raw = broker.store.get_message("g", RMQ_SYS_TRANS_HALF_TOPIC, 0, 0, 1).messages[0]
    rec = decode_record(raw)
    assert rec.properties["UNIQ_KEY"] == "FD00000000000000000000000000000266E130946E096BBC03A30008"
    assert rec.born_timestamp == 1795298683811
