"""Transactional messages through our client over loopback: commit, rollback, check-back."""

from __future__ import annotations

import pytest
import pytest_twisted
from issue7_support import start_cluster, stop_cluster, wait_for
from twisted.internet import reactor

from rocketmq_emu.broker.message import RMQ_SYS_TRANS_HALF_TOPIC
from rocketmq_emu.client.message import Message
from rocketmq_emu.client.push_consumer import PushConsumer
from rocketmq_emu.client.transaction import LocalTransactionState, TransactionProducer


@pytest.fixture
def cluster(tmp_path):
    # transactionTimeOut 0: every undecided half message is due at the next check pass.
    namesrv, broker = start_cluster(tmp_path, transaction_time_out=1,
                                    transaction_check_interval=3_600_000)
    yield namesrv, broker
    stop_cluster(namesrv, broker)


def _consumer(namesrv, topic, inbox, group="tx-consumer"):
    consumer = PushConsumer(group, namesrv.addr, reactor=reactor,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: inbox.extend(msgs) or True)
    consumer.subscribe(topic, "*")
    return consumer


@pytest_twisted.ensureDeferred
async def test_committed_transaction_is_consumed_and_rollback_is_not(cluster):
    """COMMIT reaches consumers; ROLLBACK never does; the half topic holds both halves."""
    namesrv, broker = cluster
    producer = TransactionProducer("tx-group", namesrv.addr, reactor=reactor)
    await producer.start()
    inbox: list = []
    consumer = _consumer(namesrv, "TxOrders", inbox)
    try:
        ok = await producer.send_message_in_transaction(
            Message("TxOrders", b"commit-me", tags="t"),
            lambda msg, arg: LocalTransactionState.COMMIT_MESSAGE)
        bad = await producer.send_message_in_transaction(
            Message("TxOrders", b"roll-me-back"),
            lambda msg, arg: LocalTransactionState.ROLLBACK_MESSAGE)
        assert ok.local_transaction_state is LocalTransactionState.COMMIT_MESSAGE
        assert bad.local_transaction_state is LocalTransactionState.ROLLBACK_MESSAGE
        await consumer.start()
        await wait_for(lambda: inbox, what="the committed message")
        await wait_for(lambda: len(broker.end_transaction_processor.service.decided_offsets) == 2,
                       what="both outcomes recorded")
        assert [m.body for m in inbox] == [b"commit-me"]
        assert inbox[0].msg_id == ok.msg_id
        assert broker.store.get_max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0) == 2
    finally:
        await consumer.shutdown()
        await producer.shutdown()


@pytest_twisted.ensureDeferred
async def test_unknown_state_is_resolved_by_check_back(cluster):
    """UNKNOW leaves the message invisible until the broker's check asks the producer, whose
    check listener commits it."""
    namesrv, broker = cluster
    checked = []

    def check(msg):
        checked.append(msg)
        return LocalTransactionState.COMMIT_MESSAGE

    producer = TransactionProducer("tx-check", namesrv.addr, reactor=reactor,
                                   check_listener=check)
    await producer.start()
    inbox: list = []
    consumer = _consumer(namesrv, "TxLater", inbox, group="tx-later")
    try:
        sent = await producer.send_message_in_transaction(
            Message("TxLater", b"decide-later"), lambda msg, arg: LocalTransactionState.UNKNOW)
        await consumer.start()
        await producer.instance.send_heartbeat_to_all_brokers()
        assert inbox == []
        await wait_for(lambda: broker.end_transaction_processor.check_service.check_once() > 0
                       or checked, what="a check sent")
        await wait_for(lambda: inbox, what="the checked message")
        assert checked[0].topic == "TxLater"
        assert checked[0].properties["UNIQ_KEY"] == sent.msg_id
        assert [m.body for m in inbox] == [b"decide-later"]
    finally:
        await consumer.shutdown()
        await producer.shutdown()


@pytest_twisted.ensureDeferred
async def test_local_transaction_exception_sends_unknown_with_remark(cluster):
    """An exception in the local transaction ends it as UNKNOW (the broker keeps the half)."""
    namesrv, broker = cluster
    producer = TransactionProducer("tx-err", namesrv.addr, reactor=reactor)
    await producer.start()
    try:
        def boom(msg, arg):
            raise ValueError("db down")

        result = await producer.send_message_in_transaction(Message("TxErr", b"x"), boom)
        assert result.local_transaction_state is LocalTransactionState.UNKNOW
        assert broker.end_transaction_processor.service.decided_offsets == set()
    finally:
        await producer.shutdown()
