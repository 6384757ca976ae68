"""PEEK_MESSAGE (200052), NOTIFICATION (200054) and POLLING_INFO (200055): ``PeekMessageProcessor``,
``NotificationProcessor`` and ``PollingInfoProcessor`` of Apache RocketMQ 5.

PEEK reads from the group's consume offsets (retry topic first with 20 % chance, else after the
normal queue(s) when the batch is not full) without writing anything: SUCCESS/FOUND with the
records, or PULL_NOT_FOUND/NO_MESSAGE_IN_QUEUE; the header holds only ``restNum``. NOTIFICATION
answers SUCCESS with ``hasMsg`` (a message past the group's offset on the queue(s) or the retry
topic; an orderly request sees none while its queue is blocked), parking the request for
``pollTime`` when there is none (``pollingFull=true`` when the wait list is full). POLLING_INFO
answers ``pollingNum``, the requests parked under ``topic@group@queueId``.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.long_polling import POLLING_FULL, POLLING_SUC, PopRequest
from rocketmq_emu.broker.processors.common import PERM_READ
from rocketmq_emu.broker.processors.pop import check_pop_queue
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers.pop import (
    NotificationRequestHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
)

log = logging.getLogger(__name__)


class PopQueryProcessor:
    """Handlers for 200052, 200054 and 200055; ``pop`` is the POP services bundle."""

    def __init__(self, ctx: Any, pop: Any, rng: random.Random | None = None) -> None:
        self.ctx = ctx
        self.pop = pop
        self.rng = rng or random.Random()

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.PEEK_MESSAGE: self.process_peek,
            RequestCode.NOTIFICATION: self.process_notification,
            RequestCode.POLLING_INFO: self.process_polling_info,
        }

    def _forbidden(self, cmd: RemotingCommand) -> RemotingCommand | None:
        if not self.ctx.setting("broker_permission", 6) & PERM_READ:
            return cmd.response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.ctx.store_host[0]}] peeking message is forbidden")
        return None

    def _retry_topic(self, topic: str, group: str) -> str:
        return names.pop_retry_topic(topic, group, self.ctx.setting(
            "enable_retry_topic_v2", names.ENABLE_RETRY_TOPIC_V2))

    def _offset(self, topic: str, group: str, queue_id: int) -> int:
        offset = self.ctx.consumer_offsets.query_offset(group, topic, queue_id)
        return offset if offset >= 0 else self.ctx.store.get_min_offset_in_queue(topic, queue_id)

    # --- PEEK ------------------------------------------------------------------------------
    def process_peek(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """``PeekMessageProcessor.processRequest``."""
        error = self._forbidden(cmd)
        if error is not None:
            return error
        h = PeekMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        tc, error = check_pop_queue(self.ctx, cmd, h.topic, h.queue_id, h.consumer_group, conn)
        if error is not None:
            return error
        random_q = self.rng.randrange(100)
        need_retry = random_q % 5 == 0
        messages: list[bytes] = []
        rest = 0
        retry_tc = self.ctx.topic_config.select_topic_config(
            self._retry_topic(h.topic, h.consumer_group))
        if need_retry and retry_tc is not None:
            rest = self._peek_topic(retry_tc, h, random_q, messages, rest)
        if h.queue_id < 0:
            rest = self._peek_topic(tc, h, random_q, messages, rest)
        else:
            rest = self._peek_queue(h.topic, h.queue_id, h, messages, rest)
        if not need_retry and len(messages) < h.max_msg_nums and retry_tc is not None:
            rest = self._peek_topic(retry_tc, h, random_q, messages, rest)
        ext = {"restNum": str(rest)}
        if messages:
            self.ctx.stats.on_get(h.consumer_group, h.topic, len(messages))
            return cmd.response(ResponseCode.SUCCESS, "FOUND", ext, b"".join(messages))
        return cmd.response(ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", ext)

    def _peek_topic(self, tc: Any, h: Any, random_q: int, messages: list[bytes],
                    rest: int) -> int:
        n = tc.read_queue_nums
        for i in range(n):
            rest = self._peek_queue(tc.topic_name, (random_q + i) % n, h, messages, rest)
        return rest

    def _peek_queue(self, topic: str, queue_id: int, h: Any, messages: list[bytes],
                    rest: int) -> int:
        """``peekMsgFromQueue``."""
        store = self.ctx.store
        offset = self._offset(topic, h.consumer_group, queue_id)
        if len(messages) >= h.max_msg_nums:
            return store.get_max_offset_in_queue(topic, queue_id) - offset + rest
        result = store.get_message(h.consumer_group, topic, queue_id, offset,
                                   h.max_msg_nums - len(messages))
        rest = result.max_offset - result.next_begin_offset + rest
        messages.extend(result.messages)
        return rest

    # --- NOTIFICATION ----------------------------------------------------------------------
    def process_notification(self, cmd: RemotingCommand, conn: Any) -> Any:
        """``NotificationProcessor.processRequest`` (first pass)."""
        return self.execute_notification(cmd, conn, None, first=True)

    def execute_notification(self, cmd: RemotingCommand, conn: Any, parked: PopRequest | None,
                             first: bool = False) -> Any:
        """Run (or re-run, for a parked request) a NOTIFICATION."""
        error = self._forbidden(cmd)
        if error is not None:
            return error
        h = NotificationRequestHeader.from_ext_fields(cmd.ext_fields)
        tc, error = check_pop_queue(self.ctx, cmd, h.topic, h.queue_id, h.consumer_group, conn)
        if error is not None:
            return error
        random_q = self.rng.randrange(100)
        need_retry = random_q % 5 == 0
        retry = self._retry_topic(h.topic, h.consumer_group)
        has_msg = need_retry and self._has_in_topic(retry, random_q, h)
        if not has_msg:
            if h.queue_id < 0:
                has_msg = self._has_in_topic(tc.topic_name, random_q, h)
            else:
                has_msg = self._has_in_queue(tc.topic_name, h, h.queue_id)
            if not need_retry and not has_msg:
                has_msg = self._has_in_topic(retry, random_q, h)
        polling_full = False
        if not has_msg and (first or parked is not None):
            outcome, deferred = self.pop.long_polling.polling(
                cmd, conn, h.topic, h.consumer_group, h.queue_id, h.poll_time,
                self.execute_notification, parked)
            if outcome == POLLING_SUC:
                return deferred
            polling_full = outcome == POLLING_FULL
        return cmd.response(ResponseCode.SUCCESS, None, {
            "hasMsg": "true" if has_msg else "false",
            "pollingFull": "true" if polling_full else "false"})

    def _has_in_topic(self, topic: str, random_q: int, h: Any) -> bool:
        tc = self.ctx.topic_config.select_topic_config(topic)
        if tc is None:
            return False
        n = tc.read_queue_nums
        return any(self._has_in_queue(topic, h, (random_q + i) % n) for i in range(n))

    def _has_in_queue(self, topic: str, h: Any, queue_id: int) -> bool:
        """``hasMsgFromQueue``."""
        if h.order and self.pop.order_info.check_block(h.attempt_id, h.topic, h.consumer_group,
                                                       queue_id, 0):
            return False
        offset = self._offset(topic, h.consumer_group, queue_id)
        return self.ctx.store.get_max_offset_in_queue(topic, queue_id) - offset > 0

    # --- POLLING_INFO ----------------------------------------------------------------------
    def process_polling_info(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """``PollingInfoProcessor.processRequest``."""
        error = self._forbidden(cmd)
        if error is not None:
            return error
        h = PollingInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        _tc, error = check_pop_queue(self.ctx, cmd, h.topic, h.queue_id, h.consumer_group, conn)
        if error is not None:
            return error
        return cmd.response(ResponseCode.SUCCESS, None, {"pollingNum": str(
            self.pop.long_polling.polling_num(h.topic, h.consumer_group, h.queue_id))})
