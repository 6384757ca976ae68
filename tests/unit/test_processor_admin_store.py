"""AdminStoreProcessor (306, 316, 329): the store's retention cleans on an operator's request."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from processor_support import FakeConn, make_context, send_v2
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.configs.topics import TopicConfigManager
from rocketmq_emu.broker.message import TIMER_TOPIC
from rocketmq_emu.broker.processors.admin_store import AdminStoreProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig

EXPIRED = 73 * 3600  # past the default fileReservedTime of 72 h


def call(proc, code):
    return proc.handlers()[code](RemotingCommand.request(code), FakeConn())


@pytest.fixture
def store(tmp_path):
    """A store on a task.Clock whose 2 KiB commitlog files each hold one 1.9 KiB message."""
    clock = Clock()
    clock.advance(1_700_000_000)
    cfg = MessageStoreConfig(store_path_root_dir=str(tmp_path), mapped_file_size_commitlog=2048,
                             mapped_file_size_consume_queue=20 * 4, max_hash_slot_num=100,
                             max_index_num=400, warm_mapped_file_enable=False)
    s = MessageStore(cfg, clock, clock, disk_usage=lambda path: 0.5)
    assert s.load()
    s.start()
    s.test_clock = clock
    yield s
    s.shutdown()


def put(store, topic: str, n: int) -> None:
    for _ in range(n):
        assert store.put_message(MessageRecord(topic=topic, queue_id=0, body=b"x" * 1900,
                                               properties={})).ok


def aged_store(store):
    """Three messages on Old, 73 h later one on New, then the expired files deleted."""
    put(store, "Old", 3)
    store.test_clock.advance(EXPIRED)
    put(store, "New", 1)
    return store


def processor(store):
    topics = TopicConfigManager(store.config.store_path_root_dir + "/topics.json",
                                broker_name="broker-a")
    return AdminStoreProcessor(SimpleNamespace(store=store, topic_config=topics))


def test_delete_expired_commitlog_deletes_expired_files_now(store):
    """329 deletes the commitlog files older than fileReservedTime whatever the hour."""
    aged_store(store)
    before = len(store.commitlog.queue.files)
    resp = call(processor(store), RequestCode.DELETE_EXPIRED_COMMITLOG)
    assert (resp.code, resp.body) == (ResponseCode.SUCCESS, b"")
    assert len(store.commitlog.queue.files) == 1 < before


def test_clean_expired_cq_destroys_queues_below_the_commitlog_min(store):
    """306: a queue whose last unit lies below the commitlog's min offset is destroyed."""
    aged_store(store).clean_expired_files()
    assert store.consume_queues.find("Old", 0) is not None
    resp = call(processor(store), RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
    assert (resp.code, resp.body) == (ResponseCode.SUCCESS, b"")
    assert store.consume_queues.find("Old", 0) is None
    assert ("Old", 0) not in store.commitlog.topic_queue_table


def test_clean_expired_cq_keeps_live_queues(store):
    """306 keeps a queue whose messages are still in the commitlog."""
    aged_store(store).clean_expired_files()
    call(processor(store), RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
    assert store.consume_queues.find("New", 0) is not None


@pytest.mark.parametrize("topic", ["SCHEDULE_TOPIC_XXXX", TIMER_TOPIC])
def test_clean_expired_cq_never_touches_system_topics(store, topic):
    """306 leaves the schedule and timer topics' queues alone: their services follow the
    queue offsets, which a destroyed queue would restart from 0."""
    put(store, topic, 1)
    aged_store(store).clean_expired_files()
    call(processor(store), RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
    assert store.consume_queues.find(topic, 0) is not None


def test_clean_unused_topic_keeps_the_timer_topic(store):
    """316 keeps rmq_sys_wheel_timer (a system topic without a topic config) and its offsets."""
    put(store, TIMER_TOPIC, 3)
    put(store, "Unconfigured", 1)
    call(processor(store), RequestCode.CLEAN_UNUSED_TOPIC)
    assert store.consume_queues.find("Unconfigured", 0) is None
    assert store.consume_queues.find(TIMER_TOPIC, 0) is not None
    assert store.commitlog.topic_queue_table[(TIMER_TOPIC, 0)] == 3


def test_clean_unused_topic_drops_queues_of_unconfigured_topics(tmp_path):
    """316: a topic with consume queues but no topic config loses them; a configured one not."""
    ctx = make_context(tmp_path)
    try:
        send = SendMessageProcessor(ctx).process_send
        send(send_v2("Gone"), FakeConn())
        send(send_v2("Kept"), FakeConn())
        ctx.topic_config.delete_topic_config("Gone")
        resp = call(AdminStoreProcessor(ctx), RequestCode.CLEAN_UNUSED_TOPIC)
        assert resp.code == ResponseCode.SUCCESS
        assert "Gone" not in ctx.store.consume_queues.topics()
        assert "Kept" in ctx.store.consume_queues.topics()
    finally:
        ctx.store.shutdown()
