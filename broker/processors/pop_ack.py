"""ACK_MESSAGE (200051), BATCH_ACK_MESSAGE (200151) and CHANGE_MESSAGE_INVISIBLETIME (200053):
``AckMessageProcessor`` and ``ChangeInvisibleTimeProcessor`` of Apache RocketMQ 5 (the paths
with ``popConsumerKVServiceEnable=false``).

ACK: the header's ``extraInfo`` is the message's ``POP_CK`` (or a gRPC receipt handle, whose
ninth field is ignored), ``topic`` the topic popped from (a POP retry topic for a retried
message), ``offset`` the message's queue offset. A non-orderly ack writes an ``AckMsg`` to the
revive queue named in the extra info (due at ``popTime + invisibleTime``); an orderly one (revive
queue 999) marks the offset in the order info and commits the consume offset it gives
(``ackOrderly``). The answer is SUCCESS without header; TOPIC_NOT_EXIST, MESSAGE_ILLEGAL for a
bad queue id, NO_MESSAGE for an offset outside the queue.

BATCH_ACK: body ``BatchAckMessageRequestBody`` ``{"acks":[{"c","t","r","so","q","rq","pt","it",
"b"}],"brokerName"}`` where ``b`` is a ``java.util.BitSet`` written as base64 of its
``toByteArray`` (``BitSetSerializerDeserializer``), bit ``i`` meaning offset ``so + i``; one
``bAck`` record per entry. An empty body answers NO_MESSAGE.

CHANGE_MESSAGE_INVISIBLETIME: non-orderly, a new one-message check point (start offset = the
message's offset, pop time = now, the new invisible time, same revive queue) is written, then
the old one is acknowledged; the answer's header is the new ``popTime``, ``invisibleTime`` and
``reviveQid``, from which the client builds the new extra info
(``MQClientAPIImpl.changeInvisibleTimeAsync``: ``offset popTime invisibleTime reviveQid mark
brokerName queueId offset``). Orderly: the offset's next visible time is moved to now + the new
invisible time, and the answer keeps the old ``popTime`` with ``invisibleTime`` = the new visible
time - that pop time.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.extra_info import ExtraInfo, extra_info_fields, real_topic
from rocketmq_emu.broker.pop.revive_bodies import AckMsg, BatchAckMsg, PopCheckPoint
from rocketmq_emu.broker.processors.common import FAQ_SUGGESTION
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
)

log = logging.getLogger(__name__)


def bitset_offsets(encoded: Any) -> list[int]:
    """The set bit indexes of a fastjson-written ``BitSet`` (base64 of ``toByteArray``, little
    endian; a JSON array of byte values is accepted too)."""
    if encoded is None:
        return []
    data = bytes(b & 0xFF for b in encoded) if isinstance(encoded, list) else \
        base64.b64decode(encoded)
    return [i * 8 + bit for i, byte in enumerate(data) for bit in range(8) if byte >> bit & 1]


class AckMessageProcessor:
    """Handlers for 200051, 200151 and 200053; ``pop`` is the POP services bundle."""

    def __init__(self, ctx: Any, pop: Any) -> None:
        self.ctx = ctx
        self.pop = pop

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.ACK_MESSAGE: self.process_ack,
            RequestCode.BATCH_ACK_MESSAGE: self.process_batch_ack,
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME: self.process_change_invisible_time,
        }

    def _check(self, cmd: RemotingCommand, conn: Any, topic: str, queue_id: int, offset: int,
               upper_inclusive: bool) -> RemotingCommand | None:
        ctx = self.ctx
        tc = ctx.topic_config.select_topic_config(topic)
        if tc is None:
            log.error("The topic %s not exist, consumer: %s", topic,
                      getattr(conn, "peer_addr", ""))
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST,
                                f"topic[{topic}] not exist, apply first please! "
                                f"{FAQ_SUGGESTION}")
        if queue_id >= tc.read_queue_nums or queue_id < 0:
            info = (f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                    f"topicConfig.readQueueNums:[{tc.read_queue_nums}] "
                    f"consumer:[{getattr(conn, 'peer_addr', '')}]")
            log.warning(info)
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL, info)
        lo = ctx.store.get_min_offset_in_queue(topic, queue_id)
        hi = ctx.store.get_max_offset_in_queue(topic, queue_id)
        if offset < lo or offset > hi or (not upper_inclusive and offset == hi):
            if upper_inclusive:  # AckMessageProcessor
                return cmd.response(ResponseCode.NO_MESSAGE,
                                    f"offset is illegal, key:{topic}@{queue_id}, "
                                    f"commit:{offset}, store:{lo}~{hi}")
            return cmd.response(ResponseCode.NO_MESSAGE)  # ChangeInvisibleTimeProcessor
        return None

    # --- ACK -------------------------------------------------------------------------------
    def process_ack(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """``AckMessageProcessor.processRequest`` for ACK_MESSAGE."""
        h = AckMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        topic, queue_id, offset = h.topic, h.queue_id, h.offset
        error = self._check(cmd, conn, topic, queue_id, offset, True)
        if error is not None:
            return error
        ck_offset, pop_time, invisible_time, revive_qid, _mark, broker_name, _qid, _qoff = \
            extra_info_fields(h.extra_info)
        response = cmd.response(ResponseCode.SUCCESS)
        if revive_qid == names.POP_ORDER_REVIVE_QUEUE:
            return self.ack_orderly(topic, h.consumer_group, queue_id, offset, pop_time,
                                    invisible_time, conn, response)
        ack = AckMsg(offset, ck_offset, h.consumer_group, topic, queue_id, pop_time, broker_name)
        self.pop.revive.append_ack(ack, revive_qid, pop_time + invisible_time)
        return response

    def process_batch_ack(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """``AckMessageProcessor.processRequest`` for BATCH_ACK_MESSAGE."""
        response = cmd.response(ResponseCode.SUCCESS)
        try:
            body = jsonutil.loads(cmd.body) if cmd.body else None
        except ValueError:
            body = None
        acks = (body or {}).get("acks") if isinstance(body, dict) else None
        if not acks:
            return cmd.response(ResponseCode.NO_MESSAGE)
        broker_name = body.get("brokerName")
        for one in acks:
            self._batch_ack(one, broker_name, conn, response)
        return response

    def _batch_ack(self, one: dict[str, Any], broker_name: str | None, conn: Any,
                   response: RemotingCommand) -> None:
        ctx = self.ctx
        group = one.get("c", one.get("consumerGroup"))
        topic = real_topic(one.get("t", one.get("topic")), group,
                           str(one.get("r", one.get("retry", "0"))))
        queue_id = int(one.get("q", one.get("queueId", 0)))
        revive_qid = int(one.get("rq", one.get("reviveQueueId", 0)))
        start = int(one.get("so", one.get("startOffset", 0)))
        pop_time = int(one.get("pt", one.get("popTime", 0)))
        invisible = int(one.get("it", one.get("invisibleTime", 0)))
        lo = ctx.store.get_min_offset_in_queue(topic, queue_id)
        hi = ctx.store.get_max_offset_in_queue(topic, queue_id)
        offsets = [start + i for i in bitset_offsets(one.get("b", one.get("bitSet")))]
        offsets = [o for o in offsets if lo <= o <= hi]
        if revive_qid == names.POP_ORDER_REVIVE_QUEUE:
            for offset in offsets:
                self.ack_orderly(topic, group, queue_id, offset, pop_time, invisible, conn,
                                 response)
            return
        if not offsets:
            return
        ack = BatchAckMsg(start_offset=start, consumer_group=group, topic=topic,
                          queue_id=queue_id, pop_time=pop_time, ack_offset_list=offsets)
        ack.ack_offset = -1
        ack.broker_name = broker_name
        self.pop.revive.append_ack(ack, revive_qid, pop_time + invisible)

    def ack_orderly(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int,
                    invisible_time: int, conn: Any, response: RemotingCommand,
                    ) -> RemotingCommand:
        """``AckMessageProcessor.ackOrderly``."""
        ctx = self.ctx
        old = ctx.consumer_offsets.query_offset(group, topic, queue_id)
        if offset < old:
            return response
        order_info = self.pop.order_info
        next_offset = order_info.commit_and_next(topic, group, queue_id, offset, pop_time)
        if next_offset > -1:
            ctx.consumer_offsets.commit_offset(getattr(conn, "peer_addr", ""), group, topic,
                                               queue_id, next_offset)
            if not order_info.check_block(None, topic, group, queue_id, invisible_time):
                self.pop.long_polling.notify_message_arriving(topic, queue_id, group)
        elif next_offset == -1:
            info = (f"offset is illegal, key:{topic}@{group}@{queue_id}, old:{old}, "
                    f"commit:{offset}, next:{next_offset}, {getattr(conn, 'peer_addr', '')}")
            log.warning(info)
            response.code = ResponseCode.MESSAGE_ILLEGAL
            response.remark = info
        return response

    # --- CHANGE_MESSAGE_INVISIBLETIME -------------------------------------------------------
    def process_change_invisible_time(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """``ChangeInvisibleTimeProcessor.processRequestAsync``."""
        h = ChangeInvisibleTimeRequestHeader.from_ext_fields(cmd.ext_fields)
        error = self._check(cmd, conn, h.topic, h.queue_id, h.offset, False)
        if error is not None:
            return error
        info = ExtraInfo.parse(h.extra_info)
        if info.is_order:
            return self._change_orderly(cmd, h, info)
        now = self.ctx.now_ms()
        ck = PopCheckPoint.single(topic=h.topic, cid=h.consumer_group, queue_id=h.queue_id,
                                  offset=h.offset, pop_time=now, invisible_time=h.invisible_time,
                                  broker_name=info.broker_name)
        revive = self.pop.revive
        if not revive.append_ck(ck, info.revive_qid):
            log.error("change invisible, put new ck error")
            return cmd.response(ResponseCode.SYSTEM_ERROR)
        # ackOrigin
        ack = AckMsg(ack_offset=h.offset, start_offset=info.ck_queue_offset,
                     consumer_group=h.consumer_group, topic=h.topic, queue_id=h.queue_id,
                     pop_time=info.pop_time, broker_name=info.broker_name)
        revive.append_ack(ack, info.revive_qid, info.pop_time + info.invisible_time)
        return cmd.response(ResponseCode.SUCCESS, None, {
            "popTime": str(now), "invisibleTime": str(h.invisible_time),
            "reviveQid": str(info.revive_qid)})

    def _change_orderly(self, cmd: RemotingCommand, h: ChangeInvisibleTimeRequestHeader,
                        info: ExtraInfo) -> RemotingCommand:
        """``processChangeInvisibleTimeForOrder``."""
        ctx = self.ctx
        response = cmd.response(ResponseCode.SUCCESS)
        old = ctx.consumer_offsets.query_offset(h.consumer_group, h.topic, h.queue_id)
        if h.offset < old:
            return response
        next_visible = ctx.now_ms() + h.invisible_time
        self.pop.order_info.update_next_visible_time(h.topic, h.consumer_group, h.queue_id,
                                                     h.offset, info.pop_time, next_visible)
        response.ext_fields.update({"popTime": str(info.pop_time),
                                    "invisibleTime": str(next_visible - info.pop_time),
                                    "reviveQid": str(info.revive_qid)})
        return response
