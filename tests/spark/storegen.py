"""Write small stores for the Spark tests with the broker's own MessageStore.

Tiny mapped files (a 2 KiB commitlog file, 4-unit consume-queue files) give many files and a
BLANK filler at the end of each commitlog file. A manual clock sets every record's store
timestamp to the value the test wants (``int(clock.seconds() * 1000)``, as the store computes
it), so the report tests can compare against hand counts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord, iter_records
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.pop.extra_info import (
    ExtraInfo,
    build_extra_info,
    parse_start_offset_info,
    start_offset_info_key,
)
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig, PutMessageStatus

#: The fixture store's times (test modules import them from here: ``conftest`` is not one
#: module name in a suite with a conftest.py per folder).
T0 = 1_699_999_200_000  # 2023-11-14T22:00:00Z
S = T0 + 2 * 3_600_000  # schedule/timer/retry block starts two hours later


class BrokerStore:
    """A :class:`MessageStore` in ``root`` plus the records put into it, as stored."""

    def __init__(self, root: str, file_size: int = 2048, cq_units_per_file: int = 4) -> None:
        self.root = root
        self.file_size = file_size
        self.clock = Clock()
        cfg = MessageStoreConfig(
            store_path_root_dir=root,
            mapped_file_size_commitlog=file_size,
            mapped_file_size_consume_queue=cq_units_per_file * 20,
            max_hash_slot_num=100,
            max_index_num=400,
        )
        self.store = MessageStore(cfg, self.clock)
        assert self.store.load()
        self.store.start()
        self.records: list[MessageRecord] = []
        self.blanks: list[int] = []  # commitlog offsets where a BLANK filler was written
        self._end = 0

    def put(self, record: MessageRecord) -> MessageRecord:
        """Put ``record`` with store timestamp ``record.store_timestamp`` (ms); returns it with
        the offsets, CRC and sizes the store assigned."""
        # + 0.5 ms: int(seconds * 1000) must give back exactly the wanted millisecond.
        self.clock.rightNow = (record.store_timestamp + 0.5) / 1000
        result = self.store.put_message(record)
        assert result.status is PutMessageStatus.PUT_OK, result
        if record.physical_offset != self._end:
            self.blanks.append(self._end)
        self._end = record.physical_offset + record.total_size
        self.records.append(record)
        return record

    def commit_offsets(self, table: dict[str, dict[int, int]]) -> None:
        """Commit consumer offsets (``topic@group`` -> {queueId: offset}) as the broker does."""
        for key, offsets in table.items():
            topic, _, group = key.partition("@")
            for qid, offset in offsets.items():
                self.store.consumer_offsets.commit_offset("127.0.0.1", group, topic, qid, offset)

    def close(self) -> None:
        """Flush and persist everything (consumerOffset.json included)."""
        self.store.shutdown()


class _Conn:
    """The connection a request arrives on (what the processors read of a RemotingProtocol)."""

    def __init__(self, host: str = "10.0.0.9", port: int = 50001) -> None:
        self.peer = (host, port)
        self.client_id = None

    @property
    def peer_addr(self) -> str:
        """``ip:port`` of the client."""
        return f"{self.peer[0]}:{self.peer[1]}"

    def add_close_callback(self, fn: Callable[[Any], None]) -> None:
        """Nothing closes this connection."""

    def send_oneway(self, cmd: RemotingCommand) -> None:
        """Nothing listens."""


class PopBroker:
    """A broker's store, context, send processor and POP services in ``root``, driven in-process on
    a manual business clock, as ``BrokerController`` wires them (no sockets).

    Requests go through the real processors (SEND_MESSAGE_V2, POP_MESSAGE, ACK_MESSAGE,
    CONSUMER_SEND_MSG_BACK), so the store holds exactly what a broker serving POP writes: the
    messages, CK/ACK records in ``rmq_sys_REVIVE_LOG_<cluster>``, revived copies in
    ``%RETRY%<group>_<topic>``, dead letters in ``%DLQ%<group>`` and consumerOffset.json."""

    STORE_HOST = ("192.168.0.11", 10911)

    def __init__(self, root: str, start_ms: int = T0) -> None:
        from rocketmq_emu.broker.config import BrokerConfig
        from rocketmq_emu.broker.pop.service import PopServices
        from rocketmq_emu.broker.processors.context import BrokerContext
        from rocketmq_emu.broker.processors.send import SendMessageProcessor

        self.root = root
        self.clock = Clock()
        self.clock.advance(start_ms / 1000)
        cfg = MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commitlog=64 * 1024,
                                 mapped_file_size_consume_queue=100 * 20,
                                 warm_mapped_file_enable=False)
        self.store = MessageStore(cfg, self.clock)
        assert self.store.load()
        self.store.start()
        self.ctx = BrokerContext(BrokerConfig(store_path_root_dir=root), self.store, self.clock,
                                 self.STORE_HOST)
        self.pop = PopServices(self.ctx, rng=random.Random(7))
        self.store.add_arrival_listener(self.pop.on_arrival, topics=self.pop.topics)
        self.pop.start()
        self.sender = SendMessageProcessor(self.ctx)
        self.conn = _Conn()

    def advance(self, ms: int) -> None:
        """Move the business clock ``ms`` forward (due check points are revived)."""
        self.clock.advance(ms / 1000)

    def send(self, topic: str, body: bytes, uniq: str, queue_id: int = 0) -> None:
        """SEND_MESSAGE_V2 of one message with tag ``tagP`` and UNIQ_KEY ``uniq``."""
        props = properties_to_string({"TAGS": "tagP", "WAIT": "true", "UNIQ_KEY": uniq})
        ext = {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
               "g": str(int(self.clock.seconds() * 1000)), "h": "0", "i": props, "j": "0",
               "k": "false"}
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)
        assert self.sender.process_send(cmd, self.conn).code == ResponseCode.SUCCESS

    def pop_messages(self, topic: str, group: str, invisible_ms: int = 1000,
                     max_msgs: int = 32) -> list[MessageRecord]:
        """POP_MESSAGE over every queue of ``topic``; the popped records, each with its POP_CK
        extra info (as the client library fills it in from the response header)."""
        ext = {"consumerGroup": group, "topic": topic, "queueId": "-1",
               "maxMsgNums": str(max_msgs), "invisibleTime": str(invisible_ms), "pollTime": "0",
               "bornTime": str(int(self.clock.seconds() * 1000)), "initMode": "0",
               "order": "false"}
        resp = self.pop.pop_processor.process(
            RemotingCommand.request(RequestCode.POP_MESSAGE, ext), self.conn)
        if resp.code != ResponseCode.SUCCESS:
            return []
        starts = parse_start_offset_info(resp.ext_fields.get("startOffsetInfo")) or {}
        out = []
        for _, rec in iter_records(resp.body):
            if "POP_CK" not in rec.properties:
                key = start_offset_info_key(rec.topic, rec.queue_id)
                rec.properties["POP_CK"] = build_extra_info(
                    starts[key], int(resp.ext_fields["popTime"]),
                    int(resp.ext_fields["invisibleTime"]), int(resp.ext_fields["reviveQid"]),
                    rec.topic, self.ctx.broker_name, rec.queue_id,
                    rec.queue_offset)
            out.append(rec)
        return out

    def ack(self, msg: MessageRecord, group: str) -> None:
        """ACK_MESSAGE of a popped message."""
        info = ExtraInfo.parse(msg.properties["POP_CK"])
        cmd = RemotingCommand.request(RequestCode.ACK_MESSAGE, {
            "consumerGroup": group, "topic": info.real_topic(msg.topic, group),
            "queueId": str(info.queue_id), "extraInfo": msg.properties["POP_CK"],
            "offset": str(info.queue_offset)})
        assert self.pop.ack_processor.process_ack(cmd, self.conn).code == ResponseCode.SUCCESS

    def dead_letter(self, msg: MessageRecord, group: str) -> None:
        """CONSUMER_SEND_MSG_BACK with delayLevel -1 (the proxy's ForwardMessageToDeadLetterQueue)
        of a popped message, then its ACK."""
        info = ExtraInfo.parse(msg.properties["POP_CK"])
        topic = info.real_topic(msg.topic, group)
        units = self.store.get_consume_queue_units(topic, info.queue_id, info.queue_offset, 1)
        cmd = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
            "offset": str(units[0][0]), "group": group, "delayLevel": "-1",
            "originMsgId": msg.properties["UNIQ_KEY"], "originTopic": topic,
            "unitMode": "false", "maxReconsumeTimes": "16"})
        assert self.sender.process_send_back(cmd, self.conn).code == ResponseCode.SUCCESS
        self.ack(msg, group)

    def close(self) -> None:
        """Stop POP and flush the store (consumerOffset.json included)."""
        self.pop.stop()
        self.store.shutdown()


#: The POP store's consumer groups: ``pop_g`` has an underscore, so its v1 retry topic
#: ``%RETRY%pop_g_TopicP`` does not split by its name alone.
POP_GROUP = "pop_g"
POP_GROUP_ACKING = "GQ"
POP_TOPIC = "TopicP"


def build_pop_store(root: str) -> None:
    """A store written by a broker serving RocketMQ 5 POP (through its processors), on the
    business clock from ``S``:

    * TopicP: P0..P3 sent to queue 0; ``pop_g`` pops all four (1 s invisible; 1 ck) and acks P0,
      P1 (2 ack). ``GQ`` pops all four (1 ck) and acks each (4 ack).
    * +1 s: P2, P3 are revived into ``%RETRY%pop_g_TopicP`` (reconsume 1; 1 bAck, the emulator's
      revive mark). ``pop_g`` pops both from the retry topic (1 ck) and acks P2 (1 ack).
    * +2 s: P3 is revived again (reconsume 2; 1 bAck); ``pop_g`` pops it (1 ck) and forwards it
      to ``%DLQ%pop_g`` (RETRY_TOPIC ``%RETRY%pop_g_TopicP``, reconsume 3), then acks it (1 ack).
    * P4, P5 are sent to queue 0 and never popped: each group lags 2 on TopicP queue 0.

    So the revive topic ``rmq_sys_REVIVE_LOG_DefaultCluster`` holds 4 ck, 8 ack and 2 bAck
    records, and consumerOffset.json has TopicP and ``%RETRY%pop_g_TopicP`` offsets for the groups
    and the revive group's offsets on the revive topic.
    """
    broker = PopBroker(root, S)
    try:
        for i in range(4):
            broker.send(POP_TOPIC, b"pop %d" % i, f"P{i:031d}")
        first = broker.pop_messages(POP_TOPIC, POP_GROUP)
        assert len(first) == 4
        broker.ack(first[0], POP_GROUP)
        broker.ack(first[1], POP_GROUP)
        for msg in broker.pop_messages(POP_TOPIC, POP_GROUP_ACKING):
            broker.ack(msg, POP_GROUP_ACKING)
        broker.advance(1000)
        second = broker.pop_messages(POP_TOPIC, POP_GROUP)
        assert [m.reconsume_times for m in second] == [1, 1]
        broker.ack(second[0], POP_GROUP)
        broker.advance(1000)
        third = broker.pop_messages(POP_TOPIC, POP_GROUP)
        assert [m.reconsume_times for m in third] == [2]
        broker.dead_letter(third[0], POP_GROUP)
        broker.advance(60_000)
        for i in (4, 5):
            broker.send(POP_TOPIC, b"pop %d" % i, f"P{i:031d}")
    finally:
        broker.close()
