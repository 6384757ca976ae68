"""Request areas an idle broker never uses (POP, recall, the ACL admin codes) are loaded at the
first request of one of their codes, and answered then exactly as by a broker that loaded them at
construction; a store holding POP state loads POP at the start, so its revive service resumes."""

from __future__ import annotations

import pytest
from pop_support import popped
from processor_support import FakeConn, send_v2
from twisted.internet.testing import MemoryReactorClock

from rocketmq_emu.broker import controller as controller_module
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.service import PopServices
from rocketmq_emu.broker.processors.acl_admin import AclAdminProcessor
from rocketmq_emu.broker.processors.pop import PopMessageProcessor
from rocketmq_emu.broker.processors.recall import RecallMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

GROUP = "GID_POP"


@pytest.fixture
def reactor():
    r = MemoryReactorClock()
    r.advance(1_700_000_000)
    return r


def make_broker(root, reactor) -> BrokerController:
    cfg = BrokerConfig(listen_port=20911, store_path_root_dir=str(root),
                       mapped_file_size_commit_log=256 * 1024,
                       mapped_file_size_consume_queue=200 * 20)
    broker = BrokerController(cfg, reactor=reactor, host="0.0.0.0")
    assert broker.start().called
    return broker


@pytest.fixture
def broker(tmp_path, reactor):
    b = make_broker(tmp_path / "store", reactor)
    yield b
    if b.running:
        b.stop()


def pop_request(topic: str, reactor, invisible_ms: int = 30_000) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.POP_MESSAGE, {
        "consumerGroup": GROUP, "topic": topic, "queueId": "-1", "maxMsgNums": "32",
        "invisibleTime": str(invisible_ms), "pollTime": "0",
        "bornTime": str(int(reactor.seconds() * 1000)), "initMode": "0", "order": "false"})


def send(broker, topic: str, body: bytes) -> None:
    cmd = send_v2(topic, body, props={"TAGS": "a", "WAIT": "true"})
    assert broker.dispatcher.dispatch(cmd, FakeConn()).code == ResponseCode.SUCCESS


def owner(handler):
    return getattr(handler, "__self__", None)


def test_each_deferred_code_list_is_its_processors_codes(broker):
    """The codes registered for first use are exactly those the loaded processors handle."""
    pop = PopServices(broker.ctx)
    assert sorted(controller_module.POP_CODES) == sorted(
        code for p in pop.processors for code in p.handlers())
    assert sorted(controller_module.RECALL_CODES) == sorted(
        RecallMessageProcessor(broker.ctx).handlers())
    assert sorted(controller_module.ACL_ADMIN_CODES) == sorted(
        AclAdminProcessor(broker.ctx, lambda: None).handlers())


def test_an_idle_broker_has_the_revive_topic_but_no_pop_processor(broker):
    """Started on an empty store: the revive topic exists (TopicConfigManager), POP is not loaded."""
    revive = names.revive_topic("DefaultCluster")
    assert broker.store.topic_config.select_topic_config(revive) is not None
    assert revive in broker.store.topic_config.system_topics
    for code in controller_module.POP_CODES:
        assert owner(broker.dispatcher.handler_for(code)) is None


def test_the_first_pop_request_loads_pop_and_is_answered_by_its_processor(broker, reactor):
    """The first POP_MESSAGE is answered with the message by the POP processor, which then
    handles the code on both channels."""
    send(broker, "TopicP", b"hello")
    resp = broker.dispatcher.dispatch(pop_request("TopicP", reactor), FakeConn())
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in popped(resp, GROUP)] == [b"hello"]
    for dispatcher in (broker.dispatcher, broker.vip_dispatcher):
        assert isinstance(owner(dispatcher.handler_for(RequestCode.POP_MESSAGE)),
                          PopMessageProcessor)
    assert owner(broker.dispatcher.handler_for(RequestCode.ACK_MESSAGE)) is broker.pop.ack_processor


def test_pop_loaded_late_revives_an_unacknowledged_message(broker, reactor):
    """POP loaded at its first request is started: the message comes back after invisibleTime."""
    send(broker, "TopicP", b"hello")
    broker.dispatcher.dispatch(pop_request("TopicP", reactor, invisible_ms=10_000), FakeConn())
    retry = names.pop_retry_topic("TopicP", GROUP)
    reactor.advance(20)
    assert broker.store.get_max_offset_in_queue(retry, 0) == 1


def test_a_restart_on_a_store_with_pop_state_revives_without_a_pop_request(tmp_path, reactor):
    """PopReviveService runs from the start when the revive queues hold check points."""
    first = make_broker(tmp_path / "store", reactor)
    send(first, "TopicP", b"hello")
    first.dispatcher.dispatch(pop_request("TopicP", reactor, invisible_ms=10_000), FakeConn())
    first.stop()
    second = make_broker(tmp_path / "store", reactor)
    try:
        assert isinstance(owner(second.dispatcher.handler_for(RequestCode.POP_MESSAGE)),
                          PopMessageProcessor)
        reactor.advance(20)
        assert second.store.get_max_offset_in_queue(names.pop_retry_topic("TopicP", GROUP), 0) == 1
    finally:
        second.stop()


def test_the_first_recall_request_is_answered_by_the_recall_processor(broker):
    """RECALL_MESSAGE with recall disabled: NO_PERMISSION, as RecallMessageProcessor answers."""
    cmd = RemotingCommand.request(RequestCode.RECALL_MESSAGE, {
        "topic": "T", "producerGroup": "PG", "recallHandle": "x"})
    assert owner(broker.dispatcher.handler_for(RequestCode.RECALL_MESSAGE)) is None
    resp = broker.dispatcher.dispatch(cmd, FakeConn())
    assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION,
                                        "recall failed, operation is forbidden")
    assert isinstance(owner(broker.dispatcher.handler_for(RequestCode.RECALL_MESSAGE)),
                      RecallMessageProcessor)
