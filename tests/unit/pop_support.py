"""Shared setup of the POP unit tests: a real store in tmp_path on a task.Clock, the POP services,
request builders and readers. Not a test module (no ``test_`` prefix)."""

from __future__ import annotations

import json

from processor_support import STORE_HOST, FakeConn, make_context, send_v2

from rocketmq_emu.broker.commitlog.record import MessageRecord, iter_records
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.pop.extra_info import ExtraInfo
from rocketmq_emu.broker.pop.service import PopServices
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.store import MessageStore

GROUP = "g"


class FixedRandom:
    """``randrange`` always answers ``value`` (50: no retry topic first, 0: retry first)."""

    def __init__(self, value: int = 50) -> None:
        self.value = value

    def randrange(self, n: int) -> int:
        return self.value % n


class PopRig:
    """A store, a BrokerContext and PopServices wired as the controller wires them."""

    def __init__(self, tmp_path, random_value: int = 50, **config) -> None:
        self.tmp_path = tmp_path
        self.random = FixedRandom(random_value)
        self.ctx = make_context(tmp_path, **config)
        self.config = config
        self.conn = FakeConn()
        self._wire()

    def _wire(self) -> None:
        self.pop = PopServices(self.ctx, rng=self.random)
        self.ctx.store.add_arrival_listener(self.pop.on_arrival, topics=self.pop.topics)
        self.pop.start()
        self.sender = SendMessageProcessor(self.ctx)

    @property
    def clock(self):
        return self.ctx.clock

    def advance(self, ms: int) -> None:
        """Move the (business and liveness) clock ``ms`` forward."""
        self.clock.advance(ms / 1000.0)

    def close(self) -> None:
        self.pop.stop()
        self.ctx.store.shutdown()

    def restart(self) -> None:
        """Stop everything, reopen the store from disk on the same clock, start POP again."""
        clock = self.ctx.clock
        self.close()
        store = MessageStore(self.ctx.store.config, clock, None)
        assert store.load()
        store.start()
        cfg = BrokerConfig(store_path_root_dir=store.config.store_path_root_dir, **self.config)
        self.ctx = BrokerContext(cfg, store, clock, STORE_HOST)
        self._wire()

    # --- requests -------------------------------------------------------------------------
    def send(self, topic: str, body: bytes = b"b", tags: str = "tagA", queue_id: int = 0,
             props: dict[str, str] | None = None) -> RemotingCommand:
        p = {"TAGS": tags, "WAIT": "true"} if props is None else props
        return self.sender.process_send(send_v2(topic, body, queue_id, props=p), FakeConn())

    def pop_cmd(self, topic: str, *, group: str = GROUP, queue_id: int = -1, max_msgs: int = 32,
                invisible_ms: int = 30_000, poll_ms: int = 0, order: bool = False,
                exp: str | None = None, exp_type: str | None = None, init_mode: int = 0,
                attempt_id: str | None = None) -> RemotingCommand:
        ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id),
               "maxMsgNums": str(max_msgs), "invisibleTime": str(invisible_ms),
               "pollTime": str(poll_ms), "bornTime": str(int(self.clock.seconds() * 1000)),
               "initMode": str(init_mode), "order": "true" if order else "false"}
        if exp is not None:
            ext["exp"] = exp
            ext["expType"] = exp_type or "TAG"
        if attempt_id is not None:
            ext["attemptId"] = attempt_id
        return RemotingCommand.request(RequestCode.POP_MESSAGE, ext)

    def pop_msgs(self, topic: str, conn=None, **kw):
        """POP_MESSAGE; the response (or Deferred when parked)."""
        return self.pop.pop_processor.process(self.pop_cmd(topic, **kw), conn or self.conn)

    def ack(self, msg: MessageRecord, topic: str | None = None, group: str = GROUP):
        """ACK_MESSAGE for a popped message (its POP_CK as extraInfo)."""
        info = ExtraInfo.parse(msg.properties["POP_CK"])
        return self.pop.ack_processor.process_ack(RemotingCommand.request(
            RequestCode.ACK_MESSAGE, {
                "consumerGroup": group, "topic": topic or ck_topic(msg, group),
                "queueId": str(info.queue_id), "extraInfo": msg.properties["POP_CK"],
                "offset": str(info.queue_offset)}), self.conn)

    def change_invisible(self, msg: MessageRecord, invisible_ms: int, group: str = GROUP,
                         extra_info: str | None = None):
        """CHANGE_MESSAGE_INVISIBLETIME for a popped message."""
        extra = extra_info or msg.properties["POP_CK"]
        info = ExtraInfo.parse(extra)
        return self.pop.ack_processor.process_change_invisible_time(RemotingCommand.request(
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME, {
                "consumerGroup": group, "topic": ck_topic(msg, group),
                "queueId": str(info.queue_id), "extraInfo": extra,
                "offset": str(info.queue_offset), "invisibleTime": str(invisible_ms)}),
            self.conn)


def ck_topic(msg: MessageRecord, group: str = GROUP) -> str:
    """The topic a popped message's ACK names (``ExtraInfoUtil.getRealTopic``)."""
    return ExtraInfo.parse(msg.properties["POP_CK"]).real_topic(msg.topic, group)


def popped(resp: RemotingCommand, group: str = GROUP) -> list[MessageRecord]:
    """The records of a POP answer, each given its POP_CK as ``processPopResponse`` does when the
    broker did not set one."""
    from rocketmq_emu.broker.pop.extra_info import (
        build_extra_info,
        parse_msg_offset_info,
        parse_start_offset_info,
        start_offset_info_key,
    )

    recs = [rec for _, rec in iter_records(resp.body)]
    ext = resp.ext_fields
    starts = parse_start_offset_info(ext.get("startOffsetInfo")) or {}
    offsets = parse_msg_offset_info(ext.get("msgOffsetInfo")) or {}
    for rec in recs:
        if "POP_CK" in rec.properties:
            continue
        key = start_offset_info_key(rec.topic, rec.queue_id)
        assert rec.queue_offset in offsets[key]
        rec.properties["POP_CK"] = build_extra_info(
            starts[key], int(ext["popTime"]), int(ext["invisibleTime"]),
            int(ext["reviveQid"]), rec.topic, "broker-a", rec.queue_id, rec.queue_offset)
    return recs


def bodies(resp: RemotingCommand) -> list[bytes]:
    return [rec.body for _, rec in iter_records(resp.body)]


def dumps(doc) -> bytes:
    return json.dumps(doc).encode()
