"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320), CONSUMER_SEND_MSG_BACK (36).

Mirrors ``SendMessageProcessor`` / ``AbstractSendMessageProcessor`` of Apache RocketMQ 4.9.8:
checks (topic name, forbidden topics, auto-creation from ``TBW102``, queue id), the stored record
(bornHost = the TCP peer, storeHost = brokerIP1:listenPort, ``CLUSTER`` added, ``WAIT``
stripped), ``%RETRY%`` → ``%DLQ%`` redirection, DELAY → ``SCHEDULE_TOPIC_XXXX`` and timer
messages → ``rmq_sys_wheel_timer`` (via :mod:`rocketmq_emu.broker.schedule`), and the response (offset msgId,
queueId, queueOffset, ``MSG_REGION``, ``TRACE_ON``; a timer message's ``recallHandle``, 5.3's
``attachRecallHandle``, see :mod:`~rocketmq_emu.broker.processors.recall`) once the flush policy
is met.

This is the only path a send takes: :class:`~rocketmq_emu.broker.remoting.protocol.RemotingProtocol`
decodes the frame into a ``RemotingCommand``, the ``RequestDispatcher`` (request log and fault
interceptors first) calls :meth:`SendMessageProcessor.process_send`, which parses the typed
header, checks it, builds the ``MessageRecord`` and calls ``MessageStore.put_message``; the
response goes back the same way. Tests call the same method.

Header booleans are read with Java's ``Boolean.parseBoolean``: a C++ client's ``batch="1"`` (code
10) or ``m="1"`` (code 310) is false, so its batch body is stored as ONE message, exactly as the
real broker stores it. A warning names the value once per client and field.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from rocketmq_emu.broker.commitlog.encoder import props_string
from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.commitlog.results import PutMessageStatus
from rocketmq_emu.broker.delay_levels import delay_level_in
from rocketmq_emu.broker.message import (
    PROPERTY_CLUSTER,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_WAIT_STORE_MSG_OK,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_TRANS_HALF_TOPIC,
    TIMER_TOPIC,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_TYPE_MASK,
    pack_host,
    properties_to_string,
    string_to_properties,
)
from rocketmq_emu.broker.processors.batch_codec import BatchFormatError, decode_batch
from rocketmq_emu.broker.processors.common import (
    FAQ_SUGGESTION,
    NOT_ALLOWED_SEND_TOPICS,
    PERM_READ,
    PERM_WRITE,
    put_status_response,
    status_name,
    topic_config_str,
    validate_topic,
)
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import FLAG_ONEWAY, RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    SendMessageRequestHeader,
)
from rocketmq_emu.broker.schedule.delay_level_service import transform_delay_message
from rocketmq_emu.broker.schedule.enqueue import transform_for_put
from rocketmq_emu.broker.schedule.retry import build_send_back_record, dlq_topic, retry_topic
from rocketmq_emu.broker.schedule.timer_message import (
    DEFAULT_TIMER_MAX_DELAY_SEC,
    TimerMessageError,
)

log = logging.getLogger(__name__)

DLQ_NUMS_PER_GROUP = 1
#: ``MQVersion.Version.V3_4_9.ordinal()``: from here the header's maxReconsumeTimes counts.
V3_4_9 = 121
#: Boolean header fields whose value a Java broker reads with ``Boolean.parseBoolean``.
_BOOL_FIELDS = {
    RequestCode.SEND_MESSAGE: (("batch", "batch"), ("unitMode", "unitMode")),
    RequestCode.SEND_MESSAGE_V2: (("m", "batch"), ("k", "unitMode")),
    RequestCode.SEND_BATCH_MESSAGE: (("m", "batch"), ("k", "unitMode")),
}

#: The wire names of those two fields, by request code: what every send looks at first.
_BOOL_WIRES = {code: (fields[0][0], fields[1][0]) for code, fields in _BOOL_FIELDS.items()}

#: Boolean header values Java reads as the client meant them ("0": the C++ clients' false).
_READ_AS_WRITTEN = frozenset({"false", "true", "0"})
#: Topic names cached as sendable (valid and not forbidden) are dropped past this many.
_SENDABLE_LIMIT = 4096
MULTI_TAG = "MULTI_TAG"
#: ``MessageSysFlag.MULTI_TAGS_FLAG``, set for topics whose filter type is MULTI_TAG.
MULTI_TAGS_FLAG = 0x2
#: Properties that send a message through the schedule services instead.
SCHEDULE_KEYS = frozenset({"DELAY", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_DELIVER_MS"})
#: A module global: an Enum class attribute costs ~70 ns more per read (every send reads it).
_PUT_OK = PutMessageStatus.PUT_OK


def client_key(conn: Any) -> str:
    """How a client is named in once-per-client warnings: its client id, else its address."""
    return getattr(conn, "client_id", None) or getattr(conn, "peer_addr", str(conn))


class SendMessageProcessor:
    """Handlers for 10 / 310 / 320 / 36."""

    def __init__(self, ctx: BrokerContext, rng: random.Random | None = None) -> None:
        self.ctx = ctx
        self.rng = rng or random.Random()
        store_config = getattr(ctx.store, "config", None)
        self.max_message_size = int(
            getattr(store_config, "max_message_size", None)
            or ctx.setting("max_message_size", 4 * 1024 * 1024)
        )
        self.sync_flush = (
            getattr(store_config, "flush_disk_type", ctx.setting("flush_disk_type", ""))
            == "SYNC_FLUSH"
        )
        self.region_id = ctx.setting("region_id", "DefaultRegion")
        self.trace_on = "true" if ctx.setting("trace_on", True) else "false"
        self._prefix_host: tuple[str, int] | None = None
        self._prefix = ""
        #: Topic names that passed ``validate_topic`` and are not forbidden: those checks
        #: depend on the name alone, so each topic pays for them once.
        self._sendable: set[str] = set()

    def handlers(self) -> dict[int, Any]:
        """Request code → handler, for ``RequestDispatcher.register``."""
        return {
            RequestCode.SEND_MESSAGE: self.process_send,
            RequestCode.SEND_MESSAGE_V2: self.process_send,
            RequestCode.SEND_BATCH_MESSAGE: self.process_send,
            RequestCode.CONSUMER_SEND_MSG_BACK: self.process_send_back,
        }

    # --- send ------------------------------------------------------------------------------
    def process_send(self, cmd: RemotingCommand, conn: Any) -> Any:
        """10 / 310 / 320 (``SendMessageProcessor.asyncProcessRequest``): parse the header,
        check it (``msgCheck``), store the message(s), answer once the flush policy is met."""
        ext = cmd.ext_fields
        header = SendMessageRequestHeader.from_request(cmd.code, ext)
        wires = _BOOL_WIRES.get(cmd.code)
        if wires is not None and not (ext.get(wires[0], "false") in _READ_AS_WRITTEN
                                      and ext.get(wires[1], "false") in _READ_AS_WRITTEN):
            self._warn_misread_booleans(cmd, conn)
        ext = {"MSG_REGION": self.region_id, "TRACE_ON": self.trace_on}
        tc = self._msg_check(cmd, conn, header, ext)
        if type(tc) is RemotingCommand:
            return tc
        if header.batch:
            return self._send_batch(cmd, conn, header, tc, ext)
        return self._send_single(cmd, conn, header, tc, ext)

    def _warn_misread_booleans(self, cmd: RemotingCommand, conn: Any) -> None:
        ext = cmd.ext_fields
        for wire, name in _BOOL_FIELDS.get(cmd.code, ()):
            raw = ext.get(wire)
            # "0" (C++ clients' false) reads as false in Java too: nothing is misread.
            if raw is None or raw in _READ_AS_WRITTEN or raw.lower() in _READ_AS_WRITTEN:
                continue
            client = client_key(conn)
            what = "a batch" if name == "batch" else f"{name}={raw!r}"
            self.ctx.warn_once(
                client, f"{cmd.code}:{wire}",
                "client %s (%s %s) sent %s=%r on request code %d: Apache RocketMQ reads it with "
                "Boolean.parseBoolean as false, so %s; the emulator does the same",
                client, cmd.language, cmd.version, wire, raw, cmd.code,
                "the whole batch body is stored as ONE message" if name == "batch"
                else f"{what} is ignored",
            )

    def _msg_check(
        self, cmd: RemotingCommand, conn: Any, header: SendMessageRequestHeader,
        ext: dict[str, str],
    ) -> Any:
        """``AbstractSendMessageProcessor.msgCheck``: the topic's config (created from the
        default topic if allowed) to go on, or the error response."""
        ctx = self.ctx
        topic = header.topic
        if not getattr(ctx.config, "broker_permission", 6) & PERM_WRITE and \
                ctx.topic_config.is_order_topic(topic):
            return cmd.response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{ctx.store_host[0]}] sending message is forbidden", ext)
        if topic not in self._sendable:
            remark = validate_topic(topic)
            if remark is not None:
                return cmd.response(ResponseCode.SYSTEM_ERROR, remark, ext)
            if topic in NOT_ALLOWED_SEND_TOPICS:
                return cmd.response(
                    ResponseCode.NO_PERMISSION,
                    f"Sending message to topic[{topic}] is forbidden.", ext)
            if len(self._sendable) >= _SENDABLE_LIMIT:
                self._sendable.clear()
            self._sendable.add(topic)
        tc = ctx.topic_config.select_topic_config(topic)
        if tc is None:
            topic_sys_flag = 0
            if header.unit_mode:
                topic_sys_flag = 0x2 if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else 0x1
            log.warning("the topic %s not exist, producer: %s", topic, conn.peer_addr)
            tc = ctx.topic_config.create_topic_in_send_message_method(
                topic, header.default_topic, header.default_topic_queue_nums, topic_sys_flag,
                conn.peer_addr)
            if tc is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc = ctx.topic_config.create_topic_in_send_message_back_method(
                    topic, 1, PERM_WRITE | PERM_READ, topic_sys_flag)
            if tc is None:
                return cmd.response(
                    ResponseCode.TOPIC_NOT_EXIST,
                    # AbstractSendMessageProcessor.msgCheck: no space before the tip.
                    f"topic[{topic}] not exist, apply first please!{FAQ_SUGGESTION}", ext)
        queue_id = header.queue_id
        if queue_id >= tc.write_queue_nums and queue_id >= tc.read_queue_nums:
            info = (f"request queueId[{queue_id}] is illegal, {topic_config_str(tc)} "
                    f"Producer: {conn.peer_addr}")
            log.warning(info)
            return cmd.response(ResponseCode.SYSTEM_ERROR, info, ext)
        if len(cmd.body) > self.max_message_size:
            # The store refuses it too (CommitLog: MESSAGE_SIZE_EXCEEDED); answer early.
            code, remark, _ = put_status_response("MESSAGE_ILLEGAL", self.max_message_size)
            return cmd.response(code, remark, ext)
        return tc

    def _queue_id(self, header: SendMessageRequestHeader, tc: Any) -> int:
        qid = header.queue_id
        if qid < 0:
            qid = abs(self.rng.randrange(-(2**31), 2**31) % 99999999) % tc.write_queue_nums
        return qid

    def _sys_flag(self, header: SendMessageRequestHeader, tc: Any) -> int:
        sys_flag = header.sys_flag
        if tc.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        return sys_flag

    def _send_single(
        self, cmd: RemotingCommand, conn: Any, header: SendMessageRequestHeader, tc: Any,
        ext: dict[str, str],
    ) -> Any:
        """``asyncSendMessage``: one record, with retry/DLQ, transaction and schedule
        rewrites."""
        ctx = self.ctx
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = self._queue_id(header, tc)
        topic = header.topic
        record_queue = queue_id
        reconsume_times = header.reconsume_times or 0
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            # SendMessageProcessor.handleRetryAndDLQ
            group = topic[len(RETRY_GROUP_TOPIC_PREFIX):]
            sgc = ctx.subscription_groups.find_subscription_group_config(group)
            if sgc is None:
                return cmd.response(
                    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                    f"subscription group not exist, {group} {FAQ_SUGGESTION}", ext)
            max_times = sgc.retry_max_times
            if cmd.version >= V3_4_9 and header.max_reconsume_times is not None:
                max_times = header.max_reconsume_times
            if reconsume_times >= max_times:
                topic = dlq_topic(group)
                record_queue = self.rng.randrange(99999999) % DLQ_NUMS_PER_GROUP
                # SendMessageProcessor.handleRetryAndDLQ (4.9.8, as 5.x): read-write.
                tc = ctx.topic_config.create_topic_in_send_message_back_method(
                    topic, DLQ_NUMS_PER_GROUP, PERM_WRITE | PERM_READ, 0)
                if tc is None:
                    return cmd.response(ResponseCode.SYSTEM_ERROR, f"topic[{topic}] not exist",
                                        ext)
        props = string_to_properties(header.properties or "")
        props[PROPERTY_CLUSTER] = ctx.cluster_name
        # R49 SendMessageProcessor: "There is no need to store WAIT=true": the properties
        # string is computed without WAIT, then WAIT is put back into the map ("since
        # msgInner.isWaitStoreMsgOK() will be invoked later"). A path that computes the string
        # again from the map stores it after all ("In some cases msgInner.setPropertiesString
        # invoked later and replace it"): the delay-level rewrite to SCHEDULE_TOPIC_XXXX
        # (CommitLog.asyncPutMessage), the half message (TransactionalMessageBridge
        # .parseHalfMessageInner) and 5.x's timer rewrite (HookUtils.transformTimerMessage);
        # what is later made from those records (the due message, the commit) keeps it.
        wait = props.pop(PROPERTY_WAIT_STORE_MSG_OK, None)
        props_str = props_string(props) if wait is not None else None
        if wait is not None:
            props[PROPERTY_WAIT_STORE_MSG_OK] = wait
        # topic, body, queueId, flag, properties, sysFlag, bornTimestamp, bornHost,
        # storeHost, reconsumeTimes (positional: once per message).
        sys_flag = header.sys_flag
        if tc.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        record = MessageRecord(topic, cmd.body, record_queue, header.flag, props, sys_flag,
                               header.born_timestamp, conn.peer, ctx.store_host,
                               reconsume_times)
        record.properties_str = props_str
        tran = props.get(PROPERTY_TRANSACTION_PREPARED)
        if tran is not None and tran.lower() == "true":
            if ctx.setting("reject_transaction_message", False):
                return cmd.response(
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{ctx.store_host[0]}] sending transaction message is forbidden",
                    ext)
            to_half_message(record)
        elif not SCHEDULE_KEYS.isdisjoint(props):
            try:
                self._transform_scheduled(record)
            except TimerMessageError as exc:
                return cmd.response(ResponseCode.MESSAGE_ILLEGAL, str(exc), ext)
            if record.topic == TIMER_TOPIC and cmd.code != RequestCode.SEND_BATCH_MESSAGE:
                # attachRecallHandle: only timer messages pay (recall loads with the first).
                from rocketmq_emu.broker.processors.recall import recall_handle_for

                handle = recall_handle_for(record, ctx.broker_name)
                result = ctx.store.put_message(record)
                if handle is not None and result.status is _PUT_OK:
                    ext["recallHandle"] = handle
                return self._respond(cmd, result, queue_id, ext, record.topic, 1, len(cmd.body),
                                     waits_for_store(props))
        result = ctx.store.put_message(record)
        return self._respond(cmd, result, queue_id, ext, record.topic, 1, len(cmd.body),
                             waits_for_store(props))

    def _transform_scheduled(self, record: MessageRecord) -> None:
        """Timer properties → the timer topic (if the timer service runs); DELAY → schedule
        (called for a record with one of :data:`SCHEDULE_KEYS`)."""
        ctx = self.ctx
        max_delay = int(ctx.setting("timer_max_delay_sec", 0) or 0)  # 0 or less: the default
        transform_for_put(record, ctx.now_ms(), ctx.delay_levels,
                          timer_enabled=ctx.timer_service is not None,
                          timer_max_delay_sec=max_delay if max_delay > 0
                          else DEFAULT_TIMER_MAX_DELAY_SEC)

    def _send_batch(
        self, cmd: RemotingCommand, conn: Any, header: SendMessageRequestHeader, tc: Any,
        ext: dict[str, str],
    ) -> Any:
        """``asyncSendBatchMessage``: one record per block, consecutive queue offsets."""
        ctx = self.ctx
        queue_id = self._queue_id(header, tc)
        topic = header.topic
        if len(topic) > 127:
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL,
                                f"message topic length too long {len(topic)}", ext)
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL,
                                f"batch request does not support retry group {topic}", ext)
        try:
            blocks = decode_batch(cmd.body)
        except BatchFormatError as exc:
            log.warning("batch from %s refused: %s", conn.peer_addr, exc)
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL, str(exc), ext)
        if not blocks:
            return cmd.response(ResponseCode.MESSAGE_ILLEGAL, "the batch body is empty", ext)
        batch_props = string_to_properties(header.properties or "")
        batch_props[PROPERTY_CLUSTER] = ctx.cluster_name
        batch_str = properties_to_string(batch_props)
        sys_flag = self._sys_flag(header, tc)
        if sys_flag & TRANSACTION_TYPE_MASK != TRANSACTION_NOT_TYPE \
                or delay_level_in(batch_props) > 0:
            # CommitLog.asyncPutMessages: a batch is neither a transaction nor delayed.
            code, remark, _ = put_status_response("MESSAGE_ILLEGAL", self.max_message_size)
            return cmd.response(code, remark, ext)
        records = []
        for block in blocks:
            # CommitLog.MessageExtBatchEncoder: block properties, a separator if needed, then
            # the batch-level properties.
            props_str = block.properties
            if batch_str:
                if props_str and not props_str.endswith("\u0002"):
                    props_str += "\u0002"
                props_str += batch_str
            rec = MessageRecord(
                topic=topic,
                body=block.body,
                queue_id=queue_id,
                flag=block.flag,
                properties=string_to_properties(props_str),
                sys_flag=sys_flag,
                born_timestamp=header.born_timestamp,
                born_host=conn.peer,
                store_host=ctx.store_host,
                reconsume_times=header.reconsume_times or 0,
            )
            rec.properties_str = props_str
            records.append(rec)
        result = ctx.store.put_messages(records)
        size = sum(len(b.body) for b in blocks)
        return self._respond(cmd, result, queue_id, ext, topic, len(records), size,
                             waits_for_store(batch_props))

    def _respond(
        self, cmd: RemotingCommand, result: Any, queue_id: int, ext: dict[str, str],
        topic: str, count: int, size: int, wait: bool = True,
    ) -> Any:
        """The answer to a put: at once, or under SYNC_FLUSH once flushed if the message waits
        for the store (``CommitLog.submitFlushRequest`` waits only when isWaitStoreMsgOK)."""
        sync = self.sync_flush and wait
        if result.status is _PUT_OK and not sync:
            # The common case, without the status table.
            self.ctx.stats.on_put(topic, count, size)
            if cmd.flag & FLAG_ONEWAY:
                return None
            append = result.append
            if append.msg_num == 1 and self.ctx.store_host is self._prefix_host:
                ext["msgId"] = f"{self._prefix}{append.wrote_offset:016X}"  # _msg_id's case
            else:
                ext["msgId"] = self._msg_id(append)
            ext["queueId"] = str(queue_id)
            ext["queueOffset"] = str(append.queue_offset)
            return cmd.success_response(ext)  # every value is a str
        if sync and status_name(result.status) == "PUT_OK":
            d = result.flushed
            d.addCallback(
                lambda status: self._response(cmd, result, status, queue_id, ext, topic, count,
                                              size))
            return None if cmd.is_oneway else d
        response = self._response(cmd, result, result.status, queue_id, ext, topic, count, size)
        return None if cmd.is_oneway else response

    def _response(
        self, cmd: RemotingCommand, result: Any, status: Any, queue_id: int,
        ext: dict[str, str], topic: str, count: int, size: int,
    ) -> RemotingCommand:
        code, remark, ok = put_status_response(status, self.max_message_size,
                                               self.ctx.store.disk_util)
        if not ok:
            log.warning("send to %s failed: %s", topic, status_name(status))
            return cmd.response(code, remark, ext)
        self.ctx.stats.on_put(topic, count, size)
        append = result.append
        ext["msgId"] = self._msg_id(append)
        ext["queueId"] = str(queue_id)
        ext["queueOffset"] = str(append.queue_offset)
        return cmd.response(code, None, ext)

    def _msg_id(self, append: Any) -> str:
        """Offset msgId(s) of an append (``MessageDecoder.createMessageId``), with the host
        prefix computed once per store host (ipaddress parsing dominates otherwise)."""
        host = self.ctx.store_host
        if host is not self._prefix_host and host != self._prefix_host:
            self._prefix = pack_host(*host).hex().upper()
            self._prefix_host = host
        prefix = self._prefix
        if append.msg_num == 1:  # Java: createMessageId(storeHost, wroteOffset)
            return f"{prefix}{append.wrote_offset:016X}"
        return ",".join(f"{prefix}{o:016X}" for o in append.offsets)

    # --- send back -------------------------------------------------------------------------
    def process_send_back(self, cmd: RemotingCommand, conn: Any) -> Any:
        """36: ``asyncConsumerSendMsgBack``: re-queue a consumed message into ``%RETRY%group``
        with a delay level (or into ``%DLQ%group`` after ``maxReconsumeTimes``)."""
        ctx = self.ctx
        header = ConsumerSendMsgBackRequestHeader.from_ext_fields(cmd.ext_fields)
        group = header.group
        sgc = ctx.subscription_groups.find_subscription_group_config(group)
        if sgc is None:
            return cmd.response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group} {FAQ_SUGGESTION}")
        if not ctx.setting("broker_permission", 6) & PERM_WRITE:
            return cmd.response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{ctx.store_host[0]}] sending message is forbidden")
        if sgc.retry_queue_nums <= 0:
            return cmd.response(ResponseCode.SUCCESS)
        tc = ctx.topic_config.create_topic_in_send_message_back_method(
            retry_topic(group), sgc.retry_queue_nums, PERM_WRITE | PERM_READ, 0)
        if tc is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"topic[{retry_topic(group)}] not exist")
        if not tc.perm & PERM_WRITE:
            return cmd.response(ResponseCode.NO_PERMISSION,
                                f"the topic[{tc.topic_name}] sending message is forbidden")
        original = ctx.store.look_message_by_offset(header.offset)
        if original is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"look message by offset failed, {header.offset}")
        back = build_send_back_record(
            original, group, delay_level=header.delay_level,
            max_reconsume_times=header.max_reconsume_times, request_version=cmd.version,
            retry_max_times=sgc.retry_max_times, retry_queue_nums=sgc.retry_queue_nums,
            rng=self.rng,
        )
        record = back.record
        if back.to_dlq:
            dlq = ctx.topic_config.create_topic_in_send_message_back_method(
                record.topic, DLQ_NUMS_PER_GROUP, PERM_WRITE | PERM_READ, 0)
            if dlq is None:
                return cmd.response(ResponseCode.SYSTEM_ERROR, f"topic[{record.topic}] not exist")
        # msgExt.setWaitStoreMsgOK(false) puts WAIT=false into the copied properties.
        props = dict(record.properties)
        props[PROPERTY_WAIT_STORE_MSG_OK] = "false"
        record.set_properties(props)
        transform_delay_message(record, ctx.delay_levels)
        result = ctx.store.put_message(record)

        def answer(status: Any) -> RemotingCommand:
            if status_name(status) == "PUT_OK":
                ctx.stats.on_put(back.topic, 1, len(record.body))
                return cmd.response(ResponseCode.SUCCESS)
            return cmd.response(ResponseCode.SYSTEM_ERROR, status_name(status))

        # The retry carries WAIT=false: CommitLog.submitFlushRequest does not wait for the flush
        # (SYNC_FLUSH or not), it answers as soon as the message is stored.
        return answer(result.status)


def waits_for_store(properties: dict[str, str]) -> bool:
    """``Message.isWaitStoreMsgOK``: no WAIT, or WAIT that ``Boolean.parseBoolean`` reads
    true (any case)."""
    value = properties.get(PROPERTY_WAIT_STORE_MSG_OK)
    return value is None or value.lower() == "true"


def to_half_message(record: MessageRecord) -> MessageRecord:
    """``TransactionalMessageBridge.parseHalfMessageInner``: park a prepared message on
    ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with its real topic/queue in properties."""
    props = dict(record.properties)
    props[PROPERTY_REAL_TOPIC] = record.topic
    props[PROPERTY_REAL_QUEUE_ID] = str(record.queue_id)
    record.set_properties(props)
    record.sys_flag = (record.sys_flag & ~TRANSACTION_TYPE_MASK) | TRANSACTION_NOT_TYPE
    record.topic = RMQ_SYS_TRANS_HALF_TOPIC
    record.queue_id = 0
    return record
