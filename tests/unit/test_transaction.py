"""Transactional messages on a real store and a fake clock: half messages, END_TRANSACTION,
check-back, discard after transactionCheckMax, restart."""

from __future__ import annotations

import json

import pytest
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import decode_record, iter_records
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.message import (
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_TYPE_MASK,
    create_offset_msg_id,
    properties_to_string,
)
from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.processors.end_transaction import EndTransactionProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.store import MessageStore
from rocketmq_emu.broker.store_config import MessageStoreConfig
from rocketmq_emu.broker.transaction.bridge import CID_RMQ_SYS_TRANS, TRANS_CHECK_MAX_TIME_TOPIC
from rocketmq_emu.client.clock import ControllableClock

T0 = 1_700_000_000.0


class FakeConn:
    """A client connection: records oneway requests the broker sends to it."""

    def __init__(self, client_id="127.0.0.1@tx") -> None:
        self.peer = ("127.0.0.1", 50000)
        self.peer_addr = "127.0.0.1:50000"
        self.client_id = client_id
        self.closed = False
        self.oneway: list[RemotingCommand] = []

    def send_oneway(self, cmd):
        self.oneway.append(cmd)


class Broker:
    """Send / end-transaction / heartbeat processors around one store (a broker without
    sockets)."""

    def __init__(self, path, clock, **cfg) -> None:
        self.path, self.clock = path, clock
        self.config = BrokerConfig(store_path_root_dir=str(path), **cfg)
        store_cfg = MessageStoreConfig(
            store_path_root_dir=str(path), mapped_file_size_commitlog=1024 * 1024,
            mapped_file_size_consume_queue=20 * 1000, max_hash_slot_num=100, max_index_num=400)
        self.store = MessageStore(store_cfg, clock)
        assert self.store.load()
        self.store.start()
        self.ctx = BrokerContext(self.config, self.store, clock, ("127.0.0.1", 10911))
        self.send = SendMessageProcessor(self.ctx)
        self.tx = EndTransactionProcessor(self.ctx)
        self.client = ClientManageProcessor(self.ctx)
        self.tx.start()

    def close(self) -> None:
        self.tx.stop()
        self.store.consumer_offsets.persist()
        self.store.shutdown()

    def heartbeat_producer(self, conn, group="txg") -> None:
        body = json.dumps({"clientID": conn.client_id, "consumerDataSet": [],
                           "producerDataSet": [{"groupName": group}]}).encode()
        resp = self.client.heart_beat(RemotingCommand.request(RequestCode.HEART_BEAT, body=body),
                                     conn)
        assert resp.code == ResponseCode.SUCCESS

    def send_half(self, conn, topic="Orders", body=b"order-1", uniq="UNIQ0001", group="txg",
                  queue_id=1, flag=0, born_s: float | None = None) -> RemotingCommand:
        props = {"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": uniq, "TAGS": "t",
                 "WAIT": "true"}
        ext = {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "4",
               "g": str(int((self.clock.seconds() if born_s is None else born_s) * 1000)),
               "h": str(flag),
               "i": properties_to_string(props), "j": "0", "k": "false", "m": "false"}
        resp = self.send.process_send(
            RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body), conn)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        return resp

    def end(self, conn, send_resp, kind, group="txg", oneway=False, from_check=False,
            commit_log_offset=None, table_offset=None):
        from rocketmq_emu.broker.message import decode_offset_msg_id

        offset = decode_offset_msg_id(send_resp.ext_fields["msgId"])[2]
        ext = {"producerGroup": group,
               "tranStateTableOffset": str(table_offset if table_offset is not None
                                           else send_resp.ext_fields["queueOffset"]),
               "commitLogOffset": str(commit_log_offset if commit_log_offset is not None
                                      else offset),
               "commitOrRollback": str(kind), "fromTransactionCheck":
                   "true" if from_check else "false",
               "msgId": "UNIQ0001", "transactionId": "UNIQ0001", "bname": "broker-a"}
        cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, ext, oneway=oneway)
        return self.tx.process(cmd, conn)

    def pull_all(self, topic, queue_id):
        res = self.store.get_message("g", topic, queue_id, 0, 32)
        return [decode_record(m) for m in res.messages]


@pytest.fixture
def clock():
    c = Clock()
    c.advance(T0)
    return c


@pytest.fixture
def broker(tmp_path, clock):
    b = Broker(tmp_path, clock, transaction_time_out=6000, transaction_check_interval=60_000,
               transaction_check_max=3)
    yield b
    b.close()


def test_half_message_is_parked_on_the_half_topic_and_invisible(broker):
    """A prepared message lands on RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC/REAL_QID."""
    conn = FakeConn()
    broker.send_half(conn)
    assert broker.pull_all("Orders", 1) == []
    half = broker.pull_all(RMQ_SYS_TRANS_HALF_TOPIC, 0)
    assert len(half) == 1
    assert half[0].properties["REAL_TOPIC"] == "Orders"
    assert half[0].properties["REAL_QID"] == "1"
    assert half[0].sys_flag & TRANSACTION_TYPE_MASK == 0


def test_commit_puts_the_message_on_its_real_topic_and_records_op(broker):
    """COMMIT (8): real topic/queue, sysFlag COMMIT, preparedTransactionOffset = half offset,
    and an op record tagged d whose body is the half queue offset."""
    conn = FakeConn()
    resp = broker.send_half(conn)
    out = broker.end(conn, resp, 8)
    assert out.code == ResponseCode.SUCCESS
    [msg] = broker.pull_all("Orders", 1)
    assert msg.body == b"order-1"
    assert msg.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE
    half = broker.pull_all(RMQ_SYS_TRANS_HALF_TOPIC, 0)[0]
    assert msg.prepared_transaction_offset == half.physical_offset
    [op] = broker.pull_all(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0)
    assert op.properties["TAGS"] == "d"
    assert op.body == b"0"


def test_rollback_records_the_outcome_only(broker):
    """ROLLBACK (12): nothing on the real topic, one op record."""
    conn = FakeConn()
    resp = broker.send_half(conn)
    assert broker.end(conn, resp, 12).code == ResponseCode.SUCCESS
    assert broker.pull_all("Orders", 1) == []
    assert len(broker.pull_all(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0)) == 1


def test_oneway_end_transaction_gets_no_response_but_commits(broker):
    """The Java producer's oneway 37 is applied without a response."""
    conn = FakeConn()
    resp = broker.send_half(conn)
    assert broker.end(conn, resp, 8, oneway=True) is None
    assert len(broker.pull_all("Orders", 1)) == 1


def test_end_transaction_is_idempotent(broker):
    """A repeated commit neither duplicates the message nor adds op records."""
    conn = FakeConn()
    resp = broker.send_half(conn)
    broker.end(conn, resp, 8)
    again = broker.end(conn, resp, 8)
    assert again.code == ResponseCode.SUCCESS
    broker.end(conn, resp, 12)
    assert len(broker.pull_all("Orders", 1)) == 1
    assert len(broker.pull_all(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0)) == 1


def test_unknown_state_does_nothing(broker):
    """commitOrRollback 0 (UNKNOW) leaves the half message undecided and answers nothing."""
    conn = FakeConn()
    resp = broker.send_half(conn)
    assert broker.end(conn, resp, 0) is None
    assert broker.pull_all(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) == []


@pytest.mark.parametrize("kw, remark", [
    ({"group": "other"}, "The producer group wrong"),
    ({"table_offset": 7}, "The transaction state table offset wrong"),
    ({"commit_log_offset": 123456}, "Find prepared transaction message failed"),
])
def test_end_transaction_validates_the_half_message(broker, kw, remark):
    """checkPrepareMessage: producer group, queue offset and commitlog offset must match."""
    conn = FakeConn()
    resp = broker.send_half(conn)
    out = broker.end(conn, resp, 8, **kw)
    assert (out.code, out.remark) == (ResponseCode.SYSTEM_ERROR, remark)
    assert broker.pull_all("Orders", 1) == []


def test_no_check_before_transaction_timeout(broker, clock):
    """A half message younger than transactionTimeOut is not checked."""
    conn = FakeConn()
    broker.heartbeat_producer(conn)
    broker.send_half(conn)
    clock.advance(5)
    assert broker.tx.check_service.check_once() == 0
    assert conn.oneway == []


def test_check_back_asks_the_producer_after_timeout(broker, clock):
    """An undecided half message past 6 s gets CHECK_TRANSACTION_STATE (39, oneway) with the
    put-back copy's offsets and the real topic in the encoded body."""
    conn = FakeConn()
    broker.heartbeat_producer(conn)
    broker.send_half(conn)
    clock.advance(60)  # the first interval of the check loop
    assert len(conn.oneway) == 1
    check = conn.oneway[0]
    assert check.code == RequestCode.CHECK_TRANSACTION_STATE and check.is_oneway
    assert check.ext_fields["tranStateTableOffset"] == "1"
    assert check.ext_fields["msgId"] == check.ext_fields["transactionId"] == "UNIQ0001"
    [(_, rec)] = list(iter_records(check.body))
    assert (rec.topic, rec.queue_id, rec.body) == ("Orders", 1, b"order-1")
    assert rec.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert str(rec.physical_offset) == check.ext_fields["commitLogOffset"]


def test_answer_to_a_check_commits_the_copy(broker, clock):
    """END_TRANSACTION(fromTransactionCheck) with the check's offsets commits once, and later
    passes check nothing."""
    conn = FakeConn()
    broker.heartbeat_producer(conn)
    resp = broker.send_half(conn)
    clock.advance(60)
    check = conn.oneway[0]
    out = broker.end(conn, resp, 8, from_check=True,
                     commit_log_offset=int(check.ext_fields["commitLogOffset"]),
                     table_offset=int(check.ext_fields["tranStateTableOffset"]))
    assert out.code == ResponseCode.SUCCESS
    clock.advance(60)
    clock.advance(60)
    assert len(conn.oneway) == 1
    assert len(broker.pull_all("Orders", 1)) == 1


def test_late_commit_of_the_original_is_not_duplicated_by_a_check(broker, clock):
    """A commit of the original offset after a check: the copy's check answer adds no second
    message (idempotent by UNIQ_KEY)."""
    conn = FakeConn()
    broker.heartbeat_producer(conn)
    resp = broker.send_half(conn)
    clock.advance(60)
    check = conn.oneway[0]
    broker.end(conn, resp, 8)
    broker.end(conn, resp, 8, from_check=True,
               commit_log_offset=int(check.ext_fields["commitLogOffset"]),
               table_offset=int(check.ext_fields["tranStateTableOffset"]))
    assert len(broker.pull_all("Orders", 1)) == 1
    clock.advance(60)
    assert len(conn.oneway) == 1


def test_checks_repeat_each_interval_then_discard_after_check_max(broker, clock):
    """Undecided: one check per interval, transactionCheckMax (3 here) times, then the half
    message is moved to TRANS_CHECK_MAX_TIME_TOPIC and never checked again."""
    conn = FakeConn()
    broker.heartbeat_producer(conn)
    broker.send_half(conn)
    for _ in range(6):
        clock.advance(60)
    assert [c.ext_fields["tranStateTableOffset"] for c in conn.oneway] == ["1", "2", "3"]
    checks = [list(iter_records(c.body))[0][1].properties["TRANSACTION_CHECK_TIMES"]
              for c in conn.oneway]
    assert checks == ["1", "2", "3"]
    [discarded] = broker.pull_all(TRANS_CHECK_MAX_TIME_TOPIC, 0)
    assert discarded.body == b"order-1"


def test_a_transaction_begun_after_the_clock_was_advanced_is_not_checked_early(tmp_path):
    """On a controllable clock advanced by 120 s, a producer's bornTimestamp (its real clock)
    is read on the broker's time line: a half message born after the advance waits the full
    transactionTimeOut, one born before it has aged by the advance and is checked."""
    real = Clock()
    real.advance(T0)
    clock = ControllableClock("follow", reactor=real)
    b = Broker(tmp_path, clock, transaction_time_out=3000, transaction_check_interval=1000)
    b.tx.check_service.stop()  # passes run below, by hand
    try:
        conn = FakeConn()
        b.heartbeat_producer(conn)
        b.send_half(conn, uniq="BEFORE", born_s=real.seconds())
        clock.advance(120)
        real.advance(0.5)
        b.send_half(conn, uniq="AFTER", born_s=real.seconds())
        real.advance(1)
        assert b.tx.check_service.check_once() == 1
        assert [c.ext_fields["msgId"] for c in conn.oneway] == ["BEFORE"]
        real.advance(3)
        assert b.tx.check_service.check_once() == 2
        assert [c.ext_fields["msgId"] for c in conn.oneway][1:] == ["AFTER", "BEFORE"]
    finally:
        b.close()


def _resume(broker, msg_id: str):
    cmd = RemotingCommand.request(RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": msg_id})
    return broker.tx.resume_check_half_message(cmd, FakeConn())


def test_resume_check_half_message_puts_a_discarded_message_back_with_checks_reset(
        broker, clock):
    """RESUME_CHECK_HALF_MESSAGE (323) with the offset msgId of a message discarded after
    transactionCheckMax: it is back on the half queue with TRANSACTION_CHECK_TIMES 0 and its
    producer is asked again."""
    conn = FakeConn()
    broker.heartbeat_producer(conn)
    broker.send_half(conn)
    for _ in range(5):
        clock.advance(60)
    assert len(conn.oneway) == 3
    [discarded] = broker.pull_all(TRANS_CHECK_MAX_TIME_TOPIC, 0)
    msg_id = create_offset_msg_id(*discarded.store_host, discarded.physical_offset)
    resp = _resume(broker, msg_id)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    resumed = broker.pull_all(RMQ_SYS_TRANS_HALF_TOPIC, 0)[-1]
    assert resumed.body == b"order-1"
    assert resumed.properties["TRANSACTION_CHECK_TIMES"] == "0"
    assert resumed.properties["REAL_TOPIC"] == "Orders"
    clock.advance(60)
    assert len(conn.oneway) == 4
    [(_, rechecked)] = list(iter_records(conn.oneway[-1].body))
    assert rechecked.properties["TRANSACTION_CHECK_TIMES"] == "1"


def test_resume_check_half_message_with_a_bad_msg_id_is_a_system_error(broker):
    """An undecodable msgId or one past the end: SYSTEM_ERROR with RocketMQ's remark."""
    for msg_id in ("nothex", create_offset_msg_id("127.0.0.1", 10911, 10**9)):
        resp = _resume(broker, msg_id)
        assert resp.code == ResponseCode.SYSTEM_ERROR
        assert resp.remark == ("Exception was thrown when putting message back to "
                               "RMQ_SYS_TRANS_HALF_TOPIC.")


def test_no_live_producer_means_no_check_sent(broker, clock):
    """Without a producer connection of the group the check is logged and skipped."""
    conn = FakeConn()
    broker.send_half(conn)
    clock.advance(60)
    assert conn.oneway == []


def test_restart_keeps_undecided_half_messages_and_resumes_checking(tmp_path, clock):
    """After a restart the undecided half message is checked; decided ones are not."""
    first = Broker(tmp_path, clock)
    conn = FakeConn()
    undecided = first.send_half(conn, uniq="UNDECIDED", body=b"u")
    decided = first.send_half(conn, uniq="DECIDED", body=b"d")
    first.end(conn, decided, 8)
    assert undecided.ext_fields["queueOffset"] == "0"
    first.close()

    second = Broker(tmp_path, clock)
    try:
        conn2 = FakeConn("127.0.0.1@tx2")
        second.heartbeat_producer(conn2)
        clock.advance(60)
        assert [c.ext_fields["transactionId"] for c in conn2.oneway] == ["UNDECIDED"]
        # the decided one stays decided (idempotent across the restart)
        assert second.end(conn2, decided, 8).code == ResponseCode.SUCCESS
        assert len(second.pull_all("Orders", 1)) == 1
        assert second.store.consumer_offsets.query_offset(
            CID_RMQ_SYS_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, 0) == 2
    finally:
        second.close()


def test_reject_transaction_message_refuses_half_messages(tmp_path, clock):
    """``rejectTransactionMessage=true``: a prepared message is refused with NO_PERMISSION."""
    b = Broker(tmp_path, clock, reject_transaction_message=True)
    try:
        props = {"TRAN_MSG": "true", "PGROUP": "txg", "UNIQ_KEY": "U"}
        ext = {"a": "txg", "b": "Orders", "c": "TBW102", "d": "4", "e": "0", "f": "4",
               "g": "0", "h": "0", "i": properties_to_string(props)}
        resp = b.send.process_send(
            RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"x"), FakeConn())
        assert resp.code == ResponseCode.NO_PERMISSION
        assert b.pull_all(RMQ_SYS_TRANS_HALF_TOPIC, 0) == []
    finally:
        b.close()


def test_check_pass_stops_when_the_half_copy_cannot_be_written(broker, clock, monkeypatch):
    """A store refusing the put-back ends the pass (no endless loop); the message is checked
    at a later pass once writes succeed."""
    conn = FakeConn()
    broker.heartbeat_producer(conn)
    broker.send_half(conn)
    clock.advance(10)
    bridge = broker.tx.bridge
    real = bridge.put_back_half_message
    monkeypatch.setattr(bridge, "put_back_half_message", lambda half: None)
    assert broker.tx.check_service.check_once() == 0
    assert bridge.fetch_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC) == 0
    monkeypatch.setattr(bridge, "put_back_half_message", real)
    assert broker.tx.check_service.check_once() == 1


def test_the_op_record_stores_tags_and_wait_only(broker):
    """makeOpMessageInner stores the string of ``new Message(opTopic, "d", body)``: TAGS=d and
    WAIT=true; the UNIQ_KEY setUniqID adds to the map afterwards is not stored."""
    conn = FakeConn()
    assert broker.end(conn, broker.send_half(conn), 8).code == ResponseCode.SUCCESS
    (op,) = broker.pull_all(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0)
    assert op.properties_str == properties_to_string({"TAGS": "d", "WAIT": "true"})


def test_a_put_back_copy_and_what_commits_from_it_have_flag_0(broker, clock):
    """renewHalfMessageInner never sets the flag: the check-back copy has 0, and so has the
    message END_TRANSACTION then commits from it; the original half keeps the client's."""
    conn = FakeConn()
    broker.heartbeat_producer(conn)
    broker.send_half(conn, flag=5)
    clock.advance(60)
    original, copy = broker.pull_all(RMQ_SYS_TRANS_HALF_TOPIC, 0)
    assert (original.flag, copy.flag) == (5, 0)
    check = conn.oneway[0]
    ext = {"producerGroup": "txg", "tranStateTableOffset": check.ext_fields["tranStateTableOffset"],
           "commitLogOffset": check.ext_fields["commitLogOffset"], "commitOrRollback": "8",
           "fromTransactionCheck": "true", "msgId": "UNIQ0001", "transactionId": "UNIQ0001"}
    resp = broker.tx.process(RemotingCommand.request(RequestCode.END_TRANSACTION, ext), conn)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    (committed,) = broker.pull_all("Orders", 1)
    assert committed.flag == 0
