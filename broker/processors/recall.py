"""RECALL_MESSAGE (370), Apache RocketMQ 5.3 ``RecallMessageProcessor``, and the send's
``recallHandle`` (``SendMessageProcessor.attachRecallHandle``).

A send whose message became a timer message (it carries ``TIMER_OUT_MS`` and ``REAL_TOPIC`` after
the schedule rewrite) answers ``recallHandle`` =
:func:`~rocketmq_emu.broker.recall_handle.build_handle` (real topic, broker name,
``TIMER_OUT_MS`` + 1, ``UNIQ_KEY``); not for a batch, a send-back or a ``%RETRY%`` topic.

RECALL_MESSAGE checks, in Java's order, answering with Java's codes and remarks:

* ``recallMessageEnable`` off: NO_PERMISSION ``recall failed, operation is forbidden``;
* a SLAVE broker: SLAVE_NOT_AVAILABLE; not writable (``brokerPermission``) while
  ``allowRecallWhenBrokerNotWriteable`` is off: SERVICE_NOT_AVAILABLE (both
  ``recall failed, broker service not available``);
* an unknown topic: TOPIC_NOT_EXIST ``recall failed, the topic[<t>] not exist``;
* an undecodable handle: ILLEGAL_OPERATION ``recall handle is invalid``; another topic:
  ILLEGAL_OPERATION ``recall failed, topic not match``; another broker:
  ILLEGAL_OPERATION ``recall failed, broker service not available``;
* a timestamp that has passed (the message is due or delivered) or lies beyond
  ``timerMaxDelaySec``: ILLEGAL_OPERATION ``recall failed, timestamp invalid``.

Then it stores a delete marker on the handle's topic, queue 0: body ``0``, tag
``_RECALL_TAG_``, ``TIMER_DEL_UNIQKEY`` = ``<topic>+<messageId>`` (``TimerMessageStore
.buildDeleteKey``), ``UNIQ_KEY`` = the message id and ``TIMER_DELIVER_MS`` = the handle's
timestamp, so the timer rewrite sends it to the timer queue and the timer service removes the
message when it falls due (:mod:`rocketmq_emu.broker.schedule.timer_service`). SUCCESS carries
``msgId`` (the message id); a failed put (timer service off, marker already due, store error)
is SYSTEM_ERROR ``recall failed, execute error``.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import (
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    RETRY_GROUP_TOPIC_PREFIX,
)
from rocketmq_emu.broker.processors.common import PERM_WRITE, status_name
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.recall_handle import RecallHandleError, build_handle, decode_handle
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import RecallMessageRequestHeader, parse_java_int
from rocketmq_emu.broker.schedule.enqueue import transform_for_put
from rocketmq_emu.broker.schedule.timer_message import (
    DEFAULT_TIMER_MAX_DELAY_SEC,
    TimerMessageError,
    delete_key,
)

log = logging.getLogger(__name__)

RECALL_MESSAGE_TAG = "_RECALL_TAG_"
PROPERTY_TRACE_CONTEXT = "TRACE_CONTEXT"
PROPERTY_BORN_TIMESTAMP = "BORN_TIMESTAMP"
#: ``handlePutMessageResult``: the statuses answered SUCCESS.
_RECALLED = frozenset({"PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT",
                       "SLAVE_NOT_AVAILABLE"})
_NOT_AVAILABLE = "recall failed, broker service not available"
_EXECUTE_ERROR = "recall failed, execute error"


def recall_handle_for(record: MessageRecord, broker_name: str) -> str | None:
    """``SendMessageProcessor.attachRecallHandle`` for a single send's stored record: the
    handle, or None when the record is not a timer message of a non-retry topic."""
    props = record.properties
    out_ms = props.get(PROPERTY_TIMER_OUT_MS)
    real_topic = props.get(PROPERTY_REAL_TOPIC)
    if out_ms is None or real_topic is None or real_topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return None
    # "consider of floor": the handle's time is one ms past the slot the message waits in.
    return build_handle(real_topic, broker_name, str(int(out_ms) + 1),
                        props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))


class RecallMessageProcessor:
    """Handler for 370 (``RecallMessageProcessor``)."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        store_config = getattr(ctx.store, "config", None)
        self.sync_flush = getattr(store_config, "flush_disk_type", "") == "SYNC_FLUSH"

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {RequestCode.RECALL_MESSAGE: self.process}

    def process(self, cmd: RemotingCommand, conn: Any) -> Any:
        """370: check the handle, store the delete marker; the response (a Deferred of it
        under SYNC_FLUSH)."""
        ctx = self.ctx
        ext = {"MSG_REGION": ctx.setting("region_id", "DefaultRegion")}
        header = RecallMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        if not ctx.setting("recall_message_enable", False):
            return cmd.response(ResponseCode.NO_PERMISSION,
                                "recall failed, operation is forbidden", ext)
        if ctx.setting("broker_role", "ASYNC_MASTER") == "SLAVE":
            return cmd.response(ResponseCode.SLAVE_NOT_AVAILABLE, _NOT_AVAILABLE, ext)
        # startAcceptSendRequestTimeStamp (0 here: always accepting) needs no check.
        if (not ctx.setting("broker_permission", 6) & PERM_WRITE
                and not ctx.setting("allow_recall_when_broker_not_writeable", True)):
            return cmd.response(ResponseCode.SERVICE_NOT_AVAILABLE, _NOT_AVAILABLE, ext)
        topic = header.topic
        if ctx.topic_config.select_topic_config(topic) is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST,
                                f"recall failed, the topic[{topic}] not exist", ext)
        try:
            handle = decode_handle(header.recall_handle)
        except RecallHandleError as exc:
            return cmd.response(ResponseCode.ILLEGAL_OPERATION, str(exc), ext)
        if topic != handle.topic:
            return cmd.response(ResponseCode.ILLEGAL_OPERATION,
                                "recall failed, topic not match", ext)
        if ctx.broker_name != handle.broker_name:
            return cmd.response(ResponseCode.ILLEGAL_OPERATION, _NOT_AVAILABLE, ext)
        try:
            timestamp = parse_java_int(handle.timestamp_str, "Long")  # NumberUtils.toLong
        except ValueError:
            timestamp = -1
        time_left = timestamp - ctx.now_ms()
        if time_left <= 0 or time_left >= self._max_delay_sec() * 1000:
            return cmd.response(ResponseCode.ILLEGAL_OPERATION,
                                "recall failed, timestamp invalid", ext)
        marker = self.build_message(header.producer_group, handle.topic, handle.message_id,
                                    handle.timestamp_str, conn)
        if ctx.timer_service is None:  # R5: WHEEL_TIMER_NOT_ENABLE
            return cmd.response(ResponseCode.SYSTEM_ERROR, _EXECUTE_ERROR, ext)
        try:
            transform_for_put(marker, ctx.now_ms(), ctx.delay_levels,
                              timer_max_delay_sec=self._max_delay_sec())
        except TimerMessageError as exc:  # R5: WHEEL_TIMER_MSG_ILLEGAL
            log.warning("recall of %s refused: %s", handle.message_id, exc)
            return cmd.response(ResponseCode.SYSTEM_ERROR, _EXECUTE_ERROR, ext)
        result = ctx.store.put_message(marker)
        if self.sync_flush and status_name(result.status) == "PUT_OK":
            return result.flushed.addCallback(
                lambda status: self._answer(cmd, status, marker, ext))
        return self._answer(cmd, result.status, marker, ext)

    def _max_delay_sec(self) -> int:
        value = int(self.ctx.setting("timer_max_delay_sec", 0) or 0)
        return value if value > 0 else DEFAULT_TIMER_MAX_DELAY_SEC

    def build_message(self, producer_group: str | None, topic: str, message_id: str,
                      timestamp_str: str, conn: Any) -> MessageRecord:
        """``RecallMessageProcessor.buildMessage``: the delete marker, before the timer
        rewrite."""
        now = self.ctx.now_ms()
        props = {
            PROPERTY_TAGS: RECALL_MESSAGE_TAG,
            PROPERTY_TIMER_DEL_UNIQKEY: delete_key(topic, message_id),
            PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: message_id,
            PROPERTY_TIMER_DELIVER_MS: timestamp_str,
            PROPERTY_BORN_TIMESTAMP: str(now),
            PROPERTY_TRACE_CONTEXT: "",
        }
        if producer_group is not None:  # a null property is not written
            props[PROPERTY_PRODUCER_GROUP] = producer_group
        peer = getattr(conn, "peer", None) or ("127.0.0.1", 0)
        return MessageRecord(topic, b"0", 0, 0, props, 0, now, peer, self.ctx.store_host, 0)

    def _answer(self, cmd: RemotingCommand, status: Any, marker: MessageRecord,
                ext: dict[str, str]) -> RemotingCommand:
        """``handlePutMessageResult``."""
        if status_name(status) in _RECALLED:
            self.ctx.stats.on_put(marker.topic, 1, len(marker.body))
            ext["msgId"] = marker.properties[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
            return cmd.response(ResponseCode.SUCCESS, None, ext)
        log.warning("recall put failed: %s", status_name(status))
        return cmd.response(ResponseCode.SYSTEM_ERROR, _EXECUTE_ERROR, ext)
