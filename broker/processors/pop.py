"""POP_MESSAGE (200050): ``PopMessageProcessor`` of Apache RocketMQ 5 (the path with
``popConsumerKVServiceEnable=false``, ``enablePopBufferMerge=false``, the defaults).

Checks as Java orders them (broker readable, ``maxMsgNums`` <= 32, topic, topic readable, queue
id, subscription group, consume enabled, the expression), then: a POP of the group's POP retry
topic ``%RETRY%<group>_<topic>`` first with ``popFromRetryProbability`` % (20), of the asked
queue (or of every queue from a random one for ``queueId`` < 0), and of the retry topic after
it when the batch is not full (never for an orderly POP). Per queue (``popMsgFromQueue``): the
pop offset is the committed consume offset (initialised by ``initMode`` and committed when
absent: MIN, or a retry topic, gives the queue's min offset; MAX gives 0 while the message at
offset 0 is still there, as ``initPopOffsetByCheckMsgInMem`` does, else max - 1); a non-orderly
POP writes a check point (:mod:`rocketmq_emu.broker.pop.revive`) and commits the consume offset
past what it read (Java: ``PopBufferMergeService`` commits it once the CK is stored); an orderly
POP records the batch in :mod:`rocketmq_emu.broker.pop.order_info` and commits nothing beyond
the batch start, so the queue is re-read after an invisible time.

The answer: SUCCESS with remark FOUND and the records as the body (messages of a retry topic
re-encoded with the subscribed topic and their ``POP_CK`` extra info, as Java does unless
``popResponseReturnActualRetryTopic``), or, with nothing found, the request is parked
(:mod:`rocketmq_emu.broker.pop.long_polling`) for ``pollTime`` ms, or answered POLLING_TIMEOUT
(``pollTime`` <= 0 or the wait ended) or POLLING_FULL, remark NO_MESSAGE_IN_QUEUE. The header
carries ``popTime`` (business clock), ``invisibleTime``, ``reviveQid`` (999 for orderly),
``restNum``, ``startOffsetInfo``, ``msgOffsetInfo`` and, for an orderly POP, ``orderCountInfo``.

Filters: TAG by tags code, SQL92 by :mod:`rocketmq_emu.broker.filter`; a non-TAG expression is
refused with SYSTEM_ERROR unless ``enablePropertyFilter``, the rule PULL applies (Java 5's POP
does not check it; the emulator keeps one rule for both paths). Java's ``isTimeoutTooMuch``
(bornTime far in the past) is not applied: the broker's clock may be a test's business clock.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.client_manager import SUB_ALL, SubscriptionData
from rocketmq_emu.broker.commitlog.record import decode_record, encode_record
from rocketmq_emu.broker.filter.message_filter import pull_filter
from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.extra_info import InfoBuilder, build_extra_info
from rocketmq_emu.broker.pop.long_polling import POLLING_FULL, POLLING_SUC, PopRequest
from rocketmq_emu.broker.pop.revive_bodies import PopCheckPoint
from rocketmq_emu.broker.processors.common import FAQ_SUGGESTION, PERM_READ, status_name
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers.pop import PopMessageRequestHeader

log = logging.getLogger(__name__)

#: ``ConsumeInitMode.MIN``.
INIT_MODE_MIN = 0
MAX_MSG_NUMS = 32
_REFETCH = ("OFFSET_TOO_SMALL", "OFFSET_OVERFLOW_BADLY", "OFFSET_FOUND_NULL")
_SKIP = ("NO_MATCHED_MESSAGE", "OFFSET_FOUND_NULL", "MESSAGE_WAS_REMOVING",
         "NO_MATCHED_LOGIC_QUEUE")


@dataclass
class PopBatch:
    """What one POP_MESSAGE collects over the queues it reads."""

    header: PopMessageRequestHeader
    pop_time: int
    revive_qid: int
    client: str
    tags_filter: Any = None
    record_filter: Any = None
    messages: list[bytes] = field(default_factory=list)
    start_info: InfoBuilder = field(default_factory=InfoBuilder)
    msg_info: InfoBuilder = field(default_factory=InfoBuilder)
    order_info: InfoBuilder = field(default_factory=InfoBuilder)


def check_pop_queue(ctx: Any, cmd: RemotingCommand, topic: str, queue_id: int, group: str,
                    conn: Any) -> tuple[Any, RemotingCommand | None]:
    """The checks POP, PEEK, NOTIFICATION and POLLING_INFO share (topic, topic readable, queue
    id, group, consume enabled): ``(topic_config, None)`` or ``(None, error response)``."""
    tc = ctx.topic_config.select_topic_config(topic)
    if tc is None:
        log.error("The topic %s not exist, consumer: %s", topic, getattr(conn, "peer_addr", ""))
        return None, cmd.response(
            ResponseCode.TOPIC_NOT_EXIST,
            f"topic[{topic}] not exist, apply first please! {FAQ_SUGGESTION}")
    if not tc.perm & PERM_READ:
        return None, cmd.response(ResponseCode.NO_PERMISSION,
                                  f"the topic[{topic}] peeking message is forbidden")
    if queue_id >= tc.read_queue_nums:
        info = (f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{tc.read_queue_nums}] "
                f"consumer:[{getattr(conn, 'peer_addr', '')}]")
        log.warning(info)
        return None, cmd.response(ResponseCode.INVALID_PARAMETER, info)
    sgc = ctx.subscription_groups.find_subscription_group_config(group)
    if sgc is None:
        return None, cmd.response(
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group [{group}] does not exist, {FAQ_SUGGESTION}")
    if not sgc.consume_enable:
        return None, cmd.response(ResponseCode.NO_PERMISSION,
                                  f"subscription group no permission, {group}")
    return tc, None


def init_pop_offset(ctx: Any, topic: str, queue_id: int, init_mode: int | None) -> int:
    """``PopMessageProcessor.getInitOffset`` (without the commit)."""
    store = ctx.store
    if init_mode == INIT_MODE_MIN or topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
        return store.get_min_offset_in_queue(topic, queue_id)
    if ctx.setting("init_pop_offset_by_check_msg_in_mem",
                   names.INIT_POP_OFFSET_BY_CHECK_MSG_IN_MEM) and \
            store.get_min_offset_in_queue(topic, queue_id) <= 0 and \
            store.get_consume_queue_units(topic, queue_id, 0, 1):
        return 0
    return max(store.get_max_offset_in_queue(topic, queue_id) - 1, 0)


def pop_offset(ctx: Any, topic: str, group: str, queue_id: int, init_mode: int | None,
               init: bool) -> int:
    """``getPopOffset``: the committed offset, else the initial one (committed when ``init``)."""
    offset = ctx.consumer_offsets.query_offset(group, topic, queue_id)
    if offset < 0:
        offset = init_pop_offset(ctx, topic, queue_id, init_mode)
        if init:
            ctx.consumer_offsets.commit_offset("getPopOffset", group, topic, queue_id, offset)
    return offset


class PopMessageProcessor:
    """Handler for 200050. ``pop`` is the :class:`~rocketmq_emu.broker.pop.service.PopServices`
    (revive service, order info, long polling)."""

    def __init__(self, ctx: Any, pop: Any, rng: random.Random | None = None) -> None:
        self.ctx = ctx
        self.pop = pop
        self.rng = rng or random.Random()
        self._ck_counter = 0

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {RequestCode.POP_MESSAGE: self.process}

    def process(self, cmd: RemotingCommand, conn: Any) -> Any:
        """First pass: may park the request (returns a Deferred)."""
        return self.execute(cmd, conn, None, first=True)

    def execute(self, cmd: RemotingCommand, conn: Any, parked: PopRequest | None,
                first: bool = False) -> Any:
        """``processRequest``; ``parked`` is the parked request being re-run (it may park
        again), None on the first pass or when it may not (deadline, shutdown)."""
        ctx = self.ctx
        h = PopMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        group, topic = h.consumer_group, h.topic
        if not ctx.setting("broker_permission", 6) & PERM_READ:
            return cmd.response(ResponseCode.NO_PERMISSION,
                                f"the broker[{ctx.store_host[0]}] pop message is forbidden")
        if h.max_msg_nums > MAX_MSG_NUMS:
            return cmd.response(ResponseCode.INVALID_PARAMETER,
                                f"the broker[{ctx.store_host[0]}] pop message's num is greater "
                                "than 32")
        tc, error = check_pop_queue(ctx, cmd, topic, h.queue_id, group, conn)
        if error is not None:
            return error
        batch = PopBatch(h, ctx.now_ms(), 0, getattr(conn, "peer_addr", ""))
        if h.exp:
            sub = SubscriptionData.build(topic, h.exp, h.exp_type)
            batch.record_filter, filter_error = pull_filter(sub, True)
            if filter_error is not None:
                return cmd.response(*filter_error)
            if sub.expression_type != "TAG" and not ctx.setting("enable_property_filter", False):
                return cmd.response(
                    ResponseCode.SYSTEM_ERROR,
                    f"The broker does not support consumer to filter message by "
                    f"{sub.expression_type}")
            if sub.expression_type == "TAG" and sub.sub_string != SUB_ALL:
                batch.tags_filter = sub.matches_tags_code
        if h.order:
            batch.revive_qid = names.POP_ORDER_REVIVE_QUEUE
        else:
            batch.revive_qid = self._ck_counter % ctx.setting("revive_queue_num",
                                                              names.REVIVE_QUEUE_NUM)
            self._ck_counter += 1
        rest = self._pop_all(batch, tc)
        return self._answer(cmd, conn, batch, rest, parked, first)

    def _pop_all(self, batch: PopBatch, tc: Any) -> int:
        h = batch.header
        random_q = self.rng.randrange(100)
        need_retry = random_q < self.ctx.setting("pop_from_retry_probability",
                                                 names.POP_FROM_RETRY_PROBABILITY)
        retry_topic = names.pop_retry_topic(h.topic, h.consumer_group,
                                            self.ctx.setting("enable_retry_topic_v2",
                                                             names.ENABLE_RETRY_TOPIC_V2))
        rest = 0
        if need_retry and not h.order:
            rest = self._pop_topic(batch, retry_topic, True, random_q, rest)
        if h.queue_id < 0:
            rest = self._pop_topic(batch, tc.topic_name, False, random_q, rest)
        else:
            rest = self._pop_queue(batch, tc.topic_name, False, h.queue_id, rest)
        if not need_retry and len(batch.messages) < h.max_msg_nums and not h.order:
            rest = self._pop_topic(batch, retry_topic, True, random_q, rest)
        return rest

    def _pop_topic(self, batch: PopBatch, topic: str, is_retry: bool, random_q: int,
                   rest: int) -> int:
        tc = self.ctx.topic_config.select_topic_config(topic)
        if tc is None:
            return rest
        n = tc.read_queue_nums
        for i in range(n):
            rest = self._pop_queue(batch, topic, is_retry, (random_q + i) % n, rest)
        return rest

    def _pop_queue(self, batch: PopBatch, topic: str, is_retry: bool, queue_id: int,
                   rest: int) -> int:
        """``popMsgFromQueue``: read one queue into the batch; the new rest count."""
        ctx = self.ctx
        h = batch.header
        group = h.consumer_group
        store = ctx.store
        offset = pop_offset(ctx, topic, group, queue_id, h.init_mode, True)
        if h.order:
            if self.pop.order_info.check_block(h.attempt_id, topic, group, queue_id,
                                               h.invisible_time):
                return rest
        if len(batch.messages) >= h.max_msg_nums:
            return store.get_max_offset_in_queue(topic, queue_id) - offset + rest
        want = h.max_msg_nums - len(batch.messages)
        result = store.get_message(group, topic, queue_id, offset, want, batch.tags_filter,
                                   record_filter=batch.record_filter)
        status = status_name(result.status)
        if status in _REFETCH:
            log.warning("Pop initial offset, because store is no correct, %s@%s@%d, %d->%d",
                        topic, group, queue_id, offset, result.next_begin_offset)
            ctx.consumer_offsets.commit_offset(batch.client, group, topic, queue_id,
                                               result.next_begin_offset)
            offset = result.next_begin_offset
            result = store.get_message(group, topic, queue_id, offset, want, batch.tags_filter,
                                       record_filter=batch.record_filter)
            status = status_name(result.status)
        if result.messages:
            ctx.stats.on_get(group, topic, len(result.messages))
            if h.order:
                self.pop.order_info.update(h.attempt_id, topic, group, queue_id,
                                           batch.pop_time, h.invisible_time,
                                           result.queue_offsets, batch.order_info)
                ctx.consumer_offsets.commit_offset(batch.client, group, topic, queue_id, offset)
            else:
                if not self._append_check_point(batch, topic, queue_id, offset, result):
                    return rest + len(result.messages)
                ctx.consumer_offsets.commit_offset(batch.client, group, topic, queue_id,
                                                   result.next_begin_offset)
            batch.start_info.add_start_offset(topic, queue_id, offset)
            batch.msg_info.add_msg_offsets(topic, queue_id, result.queue_offsets)
        elif status in _SKIP and result.next_begin_offset > -1 and \
                result.next_begin_offset != offset:
            # orderly: commitOffset; else PopBufferMergeService.addCkMock, which commits it too.
            ctx.consumer_offsets.commit_offset(batch.client, group, topic, queue_id,
                                               result.next_begin_offset)
        rest = result.max_offset - result.next_begin_offset + rest
        if is_retry and not ctx.setting("pop_response_return_actual_retry_topic", False):
            batch.messages.extend(self._recode(batch, raw, offset) for raw in result.messages)
        else:
            batch.messages.extend(result.messages)
        return rest

    def _append_check_point(self, batch: PopBatch, topic: str, queue_id: int, offset: int,
                            result: Any) -> bool:
        """``appendCheckPoint``: the CK of this queue's part of the batch."""
        h = batch.header
        ck = PopCheckPoint(start_offset=offset, pop_time=batch.pop_time,
                           invisible_time=h.invisible_time, bit_map=0,
                           num=len(result.messages), queue_id=queue_id, topic=topic,
                           cid=h.consumer_group, broker_name=self.ctx.broker_name)
        for queue_offset in result.queue_offsets:
            ck.add_diff(queue_offset - offset)
        return self.pop.revive.append_ck(ck, batch.revive_qid)

    def _recode(self, batch: PopBatch, raw: bytes, offset: int) -> bytes:
        """A retry-topic record as Java returns it: ``POP_CK`` added if absent, the topic set
        to the subscribed one (``MessageDecoder.encode``)."""
        h = batch.header
        record = decode_record(raw)
        props = dict(record.properties)
        props.setdefault(names.PROPERTY_POP_CK, build_extra_info(
            offset, batch.pop_time, h.invisible_time, batch.revive_qid, record.topic,
            self.ctx.broker_name, record.queue_id, record.queue_offset))
        record.set_properties(props)
        record.topic = h.topic
        return encode_record(record)

    def _answer(self, cmd: RemotingCommand, conn: Any, batch: PopBatch, rest: int,
                parked: PopRequest | None, first: bool) -> Any:
        h = batch.header
        polling = self.pop.long_polling
        if batch.messages:
            code, remark = ResponseCode.SUCCESS, "FOUND"
            if rest > 0:
                polling.notify_message_arriving(h.topic, h.queue_id, h.consumer_group)
        else:
            remark = "NO_MESSAGE_IN_QUEUE"
            if first or parked is not None:
                outcome, deferred = polling.polling(cmd, conn, h.topic, h.consumer_group,
                                                    h.queue_id, h.poll_time, self.execute,
                                                    parked)
            else:
                outcome, deferred = "POLLING_TIMEOUT", None
            if outcome == POLLING_SUC:
                return deferred
            code = ResponseCode.POLLING_FULL if outcome == POLLING_FULL else \
                ResponseCode.POLLING_TIMEOUT
        ext = {
            "invisibleTime": str(h.invisible_time),
            "popTime": str(batch.pop_time),
            "reviveQid": str(batch.revive_qid),
            "restNum": str(rest),
            "startOffsetInfo": str(batch.start_info),
            "msgOffsetInfo": str(batch.msg_info),
        }
        if h.order:
            ext["orderCountInfo"] = str(batch.order_info)
        body = b"".join(batch.messages) if code == ResponseCode.SUCCESS else b""
        return cmd.response(code, remark, ext, body)
