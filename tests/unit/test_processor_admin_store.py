"""AdminStoreProcessor (306, 316, 329) and the store cleaning it falls back on."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from processor_support import FakeConn, make_context, send_v2

from rocketmq_emu.broker.consumequeue.store import ConsumeQueueStore
from rocketmq_emu.broker.processors.admin_store import (
    AdminStoreProcessor,
    clean_expired_consume_queues,
)
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


def call(proc, code):
    return proc.handlers()[code](RemotingCommand.request(code), FakeConn())


@pytest.fixture
def fake_store(tmp_path):
    """A store with real consume queues and a commitlog whose min offset is 1000."""
    queues = ConsumeQueueStore(str(tmp_path / "cq"), 20 * 10)
    queues.put("Old", 0, 0, 0, 100, 0)
    queues.put("New", 0, 0, 2000, 100, 0)
    queues.put("SCHEDULE_TOPIC_XXXX", 2, 0, 0, 100, 0)
    commitlog = SimpleNamespace(min_offset=1000, topic_queue_table={("Old", 0): 1})
    yield SimpleNamespace(consume_queues=queues, commitlog=commitlog)
    queues.shutdown()


def test_clean_expired_cq_destroys_queues_below_the_commitlog_min(fake_store):
    """cleanExpiredConsumerQueue: a queue whose last unit is below the min offset goes."""
    assert clean_expired_consume_queues(fake_store) == 1
    assert fake_store.consume_queues.find("Old", 0) is None
    assert fake_store.commitlog.topic_queue_table == {}


def test_clean_expired_cq_keeps_live_and_schedule_queues(fake_store):
    """cleanExpiredConsumerQueue keeps a live queue and never touches SCHEDULE_TOPIC_XXXX."""
    clean_expired_consume_queues(fake_store)
    assert fake_store.consume_queues.find("New", 0) is not None
    assert fake_store.consume_queues.find("SCHEDULE_TOPIC_XXXX", 2) is not None


def test_clean_expired_cq_request_answers_success(fake_store):
    """306 answers SUCCESS without a body after cleaning."""
    proc = AdminStoreProcessor(SimpleNamespace(store=fake_store))
    resp = call(proc, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
    assert (resp.code, resp.body) == (ResponseCode.SUCCESS, b"")
    assert fake_store.consume_queues.find("Old", 0) is None


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


def test_delete_expired_commitlog_runs_the_store_retention():
    """329 runs the store's clean of expired commitlog files and answers SUCCESS."""
    runs = []
    store = SimpleNamespace(clean_expired_files=lambda: runs.append(1) or 0)
    resp = call(AdminStoreProcessor(SimpleNamespace(store=store)),
                RequestCode.DELETE_EXPIRED_COMMITLOG)
    assert resp.code == ResponseCode.SUCCESS and runs == [1]


def test_delete_expired_commitlog_prefers_the_store_method():
    """329 calls the store's own delete_expired_commitlog() when it has one."""
    runs = []
    store = SimpleNamespace(delete_expired_commitlog=lambda: runs.append("own"),
                            clean_expired_files=lambda: runs.append("fallback"))
    call(AdminStoreProcessor(SimpleNamespace(store=store)), RequestCode.DELETE_EXPIRED_COMMITLOG)
    assert runs == ["own"]
