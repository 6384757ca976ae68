"""RocketMQ 5 POP over a real loopback broker with the project's remoting client: POP_MESSAGE,
ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, long polling, and redelivery driven by a business
clock (task.Clock), across a restart."""

from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task

from rocketmq_emu.broker.commitlog.record import iter_records
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.pop.extra_info import (
    ExtraInfo,
    build_extra_info,
    parse_msg_offset_info,
    parse_start_offset_info,
    start_offset_info_key,
)
from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

T0 = 1_700_000_000.0
GROUP = "pop-g"


class Rig:
    """A broker on loopback whose business clock is a task.Clock."""

    def __init__(self, tmp_path) -> None:
        self.store_dir = str(tmp_path / "store")
        self.clock = task.Clock()
        self.clock.advance(T0)
        self.client = RemotingClient(reactor)
        self.broker: BrokerController | None = None

    def start(self):
        """Start a broker on the store directory; a Deferred."""
        cfg = BrokerConfig(listen_port=0, store_path_root_dir=self.store_dir,
                           mapped_file_size_commit_log=1024 * 1024,
                           mapped_file_size_consume_queue=300 * 20)
        self.broker = BrokerController(cfg, reactor=reactor, host="127.0.0.1",
                                       business_clock=self.clock, enable_vip_channel=False)
        return self.broker.start()

    def call(self, cmd: RemotingCommand, timeout: float = 10.0):
        """Invoke on the broker; a Deferred of the response."""
        return self.client.invoke(self.broker.addr, cmd, timeout)

    @defer.inlineCallbacks
    def send(self, topic: str, body: bytes, queue_id: int = 0):
        props = {"TAGS": "tagA", "WAIT": "true"}
        resp = yield self.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {
            "a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
            "g": "1700000000000", "h": "0", "i": properties_to_string(props), "j": "0",
            "k": "false"}, body))
        assert resp.code == ResponseCode.SUCCESS

    def pop(self, topic: str, *, invisible_ms: int = 30_000, poll_ms: int = 0,
            timeout: float = 10.0):
        return self.call(RemotingCommand.request(RequestCode.POP_MESSAGE, {
            "consumerGroup": GROUP, "topic": topic, "queueId": "-1", "maxMsgNums": "32",
            "invisibleTime": str(invisible_ms), "pollTime": str(poll_ms),
            "bornTime": str(int(self.clock.seconds() * 1000)), "initMode": "0",
            "order": "false"}), timeout)

    def ack(self, topic: str, extra_info: str):
        info = ExtraInfo.parse(extra_info)
        return self.call(RemotingCommand.request(RequestCode.ACK_MESSAGE, {
            "consumerGroup": GROUP, "topic": info.real_topic(topic, GROUP),
            "queueId": str(info.queue_id), "extraInfo": extra_info,
            "offset": str(info.queue_offset)}))


def handles(resp: RemotingCommand) -> list[tuple[bytes, str]]:
    """(body, POP_CK) of each popped message, as ``MQClientAPIImpl.processPopResponse``
    builds POP_CK when the broker did not put one."""
    ext = resp.ext_fields
    starts = parse_start_offset_info(ext["startOffsetInfo"])
    offsets = parse_msg_offset_info(ext["msgOffsetInfo"])
    out = []
    for _, rec in iter_records(resp.body):
        ck = rec.properties.get("POP_CK")
        if ck is None:
            key = start_offset_info_key(rec.topic, rec.queue_id)
            assert rec.queue_offset in offsets[key]
            ck = build_extra_info(starts[key], int(ext["popTime"]), int(ext["invisibleTime"]),
                                  int(ext["reviveQid"]), rec.topic, "broker-a", rec.queue_id,
                                  rec.queue_offset)
        out.append((rec.body, ck))
    return out


@pytest.fixture
def rig(tmp_path):
    r = Rig(tmp_path)
    pytest_twisted.blockon(r.start())
    yield r
    if r.broker is not None and r.broker.running:
        pytest_twisted.blockon(r.broker.stop())
    pytest_twisted.blockon(r.client.close())


@pytest_twisted.inlineCallbacks
def test_pop_ack_over_the_wire(rig):
    """POP then ACK over loopback: the message is never redelivered."""
    yield rig.send("PT", b"hello")
    resp = yield rig.pop("PT", invisible_ms=10_000)
    assert resp.code == ResponseCode.SUCCESS
    [(body, ck)] = handles(resp)
    assert body == b"hello"
    acked = yield rig.ack("PT", ck)
    assert acked.code == ResponseCode.SUCCESS
    rig.clock.advance(60)
    again = yield rig.pop("PT")
    assert again.code == ResponseCode.POLLING_TIMEOUT


@pytest_twisted.inlineCallbacks
def test_unacked_redelivered_after_invisible_time(rig):
    """An unacknowledged message comes back once the business clock passes its invisible time."""
    yield rig.send("PT", b"again")
    yield rig.pop("PT", invisible_ms=30 * 60_000)
    rig.clock.advance(30 * 60)
    resp = yield rig.pop("PT")
    [(body, ck)] = handles(resp)
    assert body == b"again" and ExtraInfo.parse(ck).retry == "1"


@pytest_twisted.inlineCallbacks
def test_change_invisible_time_over_the_wire(rig):
    """CHANGE_MESSAGE_INVISIBLETIME answers the new invisibleTime and delays redelivery."""
    yield rig.send("PT", b"x")
    [(_, ck)] = handles((yield rig.pop("PT", invisible_ms=10_000)))
    info = ExtraInfo.parse(ck)
    resp = yield rig.call(RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, {
        "consumerGroup": GROUP, "topic": "PT", "queueId": str(info.queue_id),
        "extraInfo": ck, "offset": str(info.queue_offset), "invisibleTime": "60000"}))
    assert resp.code == ResponseCode.SUCCESS
    assert resp.ext_fields["invisibleTime"] == "60000"
    rig.clock.advance(10)
    assert (yield rig.pop("PT")).code == ResponseCode.POLLING_TIMEOUT
    rig.clock.advance(50)
    assert [b for b, _ in handles((yield rig.pop("PT")))] == [b"x"]


@pytest_twisted.inlineCallbacks
def test_long_polling_pop_answered_on_arrival(rig):
    """A POP with pollTime waits on the reactor and is answered when a message is sent."""
    yield rig.send("PT", b"warm")
    yield rig.pop("PT")
    parked = rig.pop("PT", poll_ms=5_000)
    got = []
    parked.addCallback(lambda r: got.append(r) or r)
    yield task.deferLater(reactor, 0.1, lambda: None)
    assert not got
    yield rig.send("PT", b"late")
    resp = yield parked
    assert [b for b, _ in handles(resp)] == [b"late"]


@pytest_twisted.inlineCallbacks
def test_long_polling_times_out(rig):
    """A POP with a short pollTime and nothing to pop answers POLLING_TIMEOUT."""
    yield rig.send("PT", b"warm")
    yield rig.pop("PT")
    resp = yield rig.pop("PT", poll_ms=200)
    assert resp.code == ResponseCode.POLLING_TIMEOUT


@pytest_twisted.inlineCallbacks
def test_unacked_redelivered_after_restart(rig):
    """Stop the broker with a message unacked, start it on the same store: redelivered."""
    yield rig.send("PT", b"durable")
    yield rig.pop("PT", invisible_ms=60_000)
    yield rig.broker.stop()
    yield rig.start()
    assert (yield rig.pop("PT")).code == ResponseCode.POLLING_TIMEOUT
    rig.clock.advance(60)
    assert [b for b, _ in handles((yield rig.pop("PT")))] == [b"durable"]
