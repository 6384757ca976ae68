"""The transaction check-back loop (RocketMQ ``TransactionalMessageCheckService`` and
``AbstractTransactionalMessageCheckListener.sendCheckMessage``), on an injected clock.

Every ``transactionCheckInterval`` (60 s) one check pass runs; each half message left undecided
past ``transactionTimeOut`` (6 s) is put back on the half queue with ``TRANSACTION_CHECK_TIMES``
incremented and CHECK_TRANSACTION_STATE (39, oneway) goes to a live producer connection of its
group (``PGROUP``), header ``{commitLogOffset, offsetMsgId, msgId, transactionId,
tranStateTableOffset}`` of the copy and body = the copy encoded as a commitlog record with its
real topic and queue. The producer answers with END_TRANSACTION (``fromTransactionCheck=true``).
After ``transactionCheckMax`` (15) checks the message is discarded (logged, moved to
``TRANS_CHECK_MAX_TIME_TOPIC``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet.task import LoopingCall

from rocketmq_emu.broker.commitlog.record import encode_record
from rocketmq_emu.broker.message import (
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    create_offset_msg_id,
)
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.transaction.service import TransactionalMessageService, check_message_view

log = logging.getLogger(__name__)


def check_request(copy: Any) -> RemotingCommand:
    """The CHECK_TRANSACTION_STATE request for a put-back half copy."""
    view = check_message_view(copy)
    uniq = copy.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    ext = {
        "tranStateTableOffset": str(copy.queue_offset),
        "commitLogOffset": str(copy.physical_offset),
        "offsetMsgId": create_offset_msg_id(copy.store_host[0], copy.store_host[1],
                                            copy.physical_offset),
    }
    if uniq:
        ext["msgId"] = uniq
        ext["transactionId"] = uniq
    return RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, ext,
                                   encode_record(view), oneway=True)


class TransactionCheckService:
    """Runs :meth:`TransactionalMessageService.check` periodically and sends the checks.

    ``producer_manager`` provides ``get_available_channel(group)``; ``clock`` is an
    ``IReactorTime``; ``settings`` provides ``transaction_check_interval`` (ms) and
    ``file_reserved_time`` (hours).
    """

    def __init__(self, service: TransactionalMessageService, producer_manager: Any, clock: Any,
                 settings: Any = None) -> None:
        self.service = service
        self.producer_manager = producer_manager
        self.clock = clock
        self.settings = settings
        self._loop: LoopingCall | None = None
        self.sent: int = 0

    @property
    def interval_s(self) -> float:
        """``transactionCheckInterval`` in seconds."""
        return int(getattr(self.settings, "transaction_check_interval", 60_000) or 60_000) / 1000

    def start(self) -> None:
        """Start checking every interval (first pass one interval from now)."""
        if self._loop is not None:
            return
        loop = LoopingCall(self._tick)
        loop.clock = self.clock
        loop.start(self.interval_s, now=False).addErrback(
            lambda f: log.error("transaction check loop died: %s", f.getTraceback()))
        self._loop = loop

    def stop(self) -> None:
        """Stop the loop."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def _tick(self) -> None:
        try:
            self.check_once()
        except Exception:
            log.exception("transaction check pass failed")

    def _born_ms(self) -> Callable[[int], int] | None:
        """How a producer's ``bornTimestamp`` reads on this clock: a controllable clock that
        was advanced is ahead of the producers' (real) clocks, and a transaction begun after
        the advance must not count the advance in its age (``ControllableClock.from_wall``).
        None on the real clock, where the stamps compare as they are."""
        from_wall = getattr(self.clock, "from_wall", None)
        if from_wall is None:
            return None
        return lambda born: int(from_wall(born / 1000) * 1000)

    def check_once(self) -> int:
        """One check pass now; returns how many CHECK_TRANSACTION_STATE requests were sent."""
        now_ms = int(self.clock.seconds() * 1000)
        hours = int(getattr(self.settings, "file_reserved_time", 72) or 72)
        sent = 0
        for copy in self.service.check(now_ms, hours, self._born_ms()):
            group = copy.properties.get(PROPERTY_PRODUCER_GROUP, "")
            channel = self.producer_manager.get_available_channel(group)
            if channel is None:
                log.warning("Check transaction failed, channel is null. groupId=%s", group)
                continue
            try:
                channel.send_oneway(check_request(copy))
                sent += 1
            except Exception as exc:
                log.warning("Check transaction failed, send to %s: %s",
                            getattr(channel, "peer_addr", channel), exc)
        self.sent += sent
        return sent
