"""Where ``WAIT`` is stored, path by path, as Apache RocketMQ 4.9.8 stores it (issue 28 item 1).

``SendMessageProcessor.sendMessage`` computes the stored properties string without ``WAIT``,
then puts ``WAIT`` back into the message's map ("since msgInner.isWaitStoreMsgOK() will be
invoked later"). Every path that computes the string again from that map stores ``WAIT`` after
all ("In some cases msgInner.setPropertiesString invoked later and replace it"):

* a plain send (sync, async, oneway, orderly): the first string, no ``WAIT``;
* a delay level: ``CommitLog.asyncPutMessage`` re-serializes the map for SCHEDULE_TOPIC_XXXX,
  and ``ScheduleMessageService.messageTimeup`` copies that record's string: both keep ``WAIT``;
* a transaction: ``TransactionalMessageBridge.parseHalfMessageInner`` re-serializes the map for
  the half message; ``EndTransactionProcessor.endMessageTransaction`` copies the half's string
  (its own ``setWaitStoreMsgOK(false)`` comes before the map is replaced): both keep ``WAIT``;
* a timer message (5.x ``HookUtils.transformTimerMessage``): the timer record and the due
  message keep ``WAIT``;
* a retry (``asyncConsumerSendMsgBack``): ``msgExt.setWaitStoreMsgOK(false)`` goes into the
  map the string is then made from: ``WAIT=false``.

Properties are compared as maps (the emulator keeps insertion order where Java iterates a
HashMap; docs/protocol-and-store.md); the first string is compared whole.
"""

from __future__ import annotations

import os

import pytest
from processor_support import FakeConn, make_context, send_v2
from test_processor_send import send_back_cmd, stored
from test_transaction import Broker
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import decode_record
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.message import (
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    properties_to_string,
)
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.schedule import ScheduleConfig, ScheduleServices
from rocketmq_emu.broker.schedule.timer_message import TIMER_TOPIC
from rocketmq_emu.broker.schedule.timer_service import TimerConfig
from rocketmq_emu.broker.store import MessageStore
from rocketmq_emu.broker.store_config import MessageStoreConfig

T0_MS = 1_700_000_000_000
#: What the Java client's producer sends: every ``Message`` carries WAIT=true.
CLIENT_PROPS = {"KEYS": "k1", "UNIQ_KEY": "AC1100010001", "WAIT": "true", "TAGS": "tagA"}


class Broker5:
    """A store, the schedule services (delay levels and the timer) and the send processor."""

    def __init__(self, tmp_path) -> None:
        self.clock = Clock()
        self.clock.advance(T0_MS / 1000)
        root = str(tmp_path)
        self.store = MessageStore(MessageStoreConfig(
            store_path_root_dir=os.path.join(root, "store"), mapped_file_size_commitlog=256 * 1024,
            mapped_file_size_consume_queue=20 * 2048, warm_mapped_file_enable=False,
            message_index_enable=False), self.clock)
        assert self.store.load()
        self.store.start()
        self.services = ScheduleServices(self.store, self.clock, ScheduleConfig(
            store_path_root_dir=root, timer=TimerConfig()))
        self.services.load()
        self.services.start()
        self.ctx = BrokerContext(BrokerConfig(store_path_root_dir=root), self.store, self.clock,
                                 ("127.0.0.1", 10911))
        self.ctx.delay_levels = self.services.levels
        self.ctx.timer_service = self.services.timer
        self.proc = SendMessageProcessor(self.ctx)

    def send(self, topic: str = "T", **extra_props: str) -> None:
        resp = self.proc.process_send(send_v2(topic, props={**CLIENT_PROPS, **extra_props}),
                                      FakeConn())
        assert resp.code == ResponseCode.SUCCESS, resp.remark

    def stored(self, topic: str, queue_id: int | None = None) -> list:
        queues = [queue_id] if queue_id is not None else range(32)
        out = []
        for q in queues:
            res = self.store.get_message("g", topic, q, 0, 64)
            out.extend(decode_record(m) for m in res.messages)
        return out

    def run_for(self, ms: int) -> None:
        for _ in range(ms // 100 + 2):
            self.clock.advance(0.1)

    def close(self) -> None:
        self.services.shutdown()
        self.store.shutdown()


@pytest.fixture
def broker(tmp_path):
    b = Broker5(tmp_path)
    yield b
    b.close()


def test_a_plain_send_stores_the_first_string_without_wait(broker):
    broker.send()
    (rec,) = broker.stored("T", 0)
    expected = {k: v for k, v in CLIENT_PROPS.items() if k != "WAIT"} | {"CLUSTER": "DefaultCluster"}
    assert rec.properties_str == properties_to_string(expected)


def test_a_delay_level_keeps_wait_on_the_schedule_topic_and_on_delivery(broker):
    broker.send(DELAY="1")
    (parked,) = broker.stored(RMQ_SYS_SCHEDULE_TOPIC, 0)
    assert parked.properties["WAIT"] == "true"
    assert parked.properties["REAL_TOPIC"] == "T" and parked.properties["DELAY"] == "1"
    broker.run_for(1500)
    (due,) = broker.stored("T", 0)
    assert due.properties["WAIT"] == "true"
    assert due.properties_str == parked.properties_str  # messageTimeup copies the string


def test_a_timer_message_keeps_wait_on_the_timer_topic_and_on_delivery(broker):
    deliver = T0_MS + 3000
    broker.send(TIMER_DELIVER_MS=str(deliver))
    (parked,) = broker.stored(TIMER_TOPIC, 0)
    assert parked.properties["WAIT"] == "true" and parked.properties["REAL_TOPIC"] == "T"
    broker.run_for(5000)
    (due,) = broker.stored("T", 0)
    assert due.properties["WAIT"] == "true"


def test_a_transaction_keeps_wait_on_the_half_message_and_on_commit(tmp_path):
    clock = Clock()
    clock.advance(T0_MS / 1000)
    tx = Broker(tmp_path, clock, transaction_time_out=6000, transaction_check_interval=60_000)
    try:
        conn = FakeConn()
        resp = tx.send_half(conn)
        (half,) = tx.pull_all(RMQ_SYS_TRANS_HALF_TOPIC, 0)
        assert half.properties["WAIT"] == "true" and half.properties["REAL_TOPIC"] == "Orders"
        assert tx.end(conn, resp, 8).code == ResponseCode.SUCCESS  # COMMIT
        (committed,) = tx.pull_all("Orders", 1)
        assert committed.properties["WAIT"] == "true"
        assert "REAL_TOPIC" in committed.properties  # the half's string, copied whole
    finally:
        tx.close()


def test_a_retry_and_a_dead_letter_store_wait_false(tmp_path):
    """asyncConsumerSendMsgBack: msgExt.setWaitStoreMsgOK(false), then the string from that map,
    for the retry (parked on SCHEDULE_TOPIC_XXXX) and for the DLQ alike."""
    ctx = make_context(tmp_path)
    proc = SendMessageProcessor(ctx)
    assert proc.process_send(send_v2("T", props=dict(CLIENT_PROPS)), FakeConn()).code == 0
    assert proc.process_send_back(send_back_cmd(0, "cgA"), FakeConn()).code == 0
    (retry,) = stored(ctx, RMQ_SYS_SCHEDULE_TOPIC, 2)
    assert retry.properties["WAIT"] == "false" and retry.properties["REAL_TOPIC"] == "%RETRY%cgA"
    assert proc.process_send_back(send_back_cmd(0, "cgB", max_times=0), FakeConn()).code == 0
    (dead,) = stored(ctx, "%DLQ%cgB")
    assert dead.properties["WAIT"] == "false"
