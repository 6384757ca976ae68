"""Consumption for the push consumer: the listener contract, concurrent and orderly consumption,
send-back of failures (``ConsumeMessageConcurrentlyService`` / ``ConsumeMessageOrderlyService``).

:class:`ConsumeMixin` is mixed into :class:`rocketmq_emu.client.push_consumer.PushConsumer`, which provides
``instance``, ``group``, ``listener``, ``orderly``, ``clustering``, ``running``, ``reactor``,
``consume_batch_size``, ``max_reconsume_times`` and ``orderly_suspend``.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task

from rocketmq_emu.client import api
from rocketmq_emu.client.message import MessageExt, MessageQueue

log = logging.getLogger(__name__)


class ConsumeStatus(enum.Enum):
    """``ConsumeConcurrentlyStatus`` / ``ConsumeOrderlyStatus`` in one enum."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass(slots=True)
class ConsumeContext:
    """Passed to the listener; ``delay_level_when_next_consume`` 0 lets the broker choose
    (3 + reconsume times), -1 sends failures straight to the DLQ."""

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    suspend_seconds: float | None = None


@dataclass(slots=True)
class ProcessQueue:
    """Per-queue pull state (``ProcessQueue``)."""

    mq: MessageQueue
    next_offset: int
    dropped: bool = False
    locked: bool = False
    lock_time: float = 0.0
    consumed: int = 0


def consume_succeeded(result: Any) -> bool:
    """A listener's return value read as ``ConsumeConcurrentlyStatus``: None, True and
    CONSUME_SUCCESS are success, anything else asks for a retry."""
    if result is None or result is True:
        return True
    return result is ConsumeStatus.CONSUME_SUCCESS


def deferred_sleep(reactor: Any, seconds: float) -> defer.Deferred:
    """A Deferred that fires after ``seconds`` on ``reactor`` (its clock: nothing blocks)."""
    return task.deferLater(reactor, seconds, lambda: None)


class ConsumeMixin:
    """The consuming half of the push consumer."""

    instance: Any
    group: str
    listener: Any
    orderly: bool
    running: bool
    reactor: Any
    consume_batch_size: int
    max_reconsume_times: int
    orderly_suspend: float
    clustering: bool  # a property of the push consumer

    async def _consume(self, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        chunks = [msgs[i : i + self.consume_batch_size] for i in range(0, len(msgs), self.consume_batch_size)]
        if self.orderly:
            for chunk in chunks:
                await self._consume_orderly(pq, chunk)
                if pq.dropped:
                    return
        else:
            await defer.DeferredList(
                [defer.ensureDeferred(self._consume_concurrently(pq, c)) for c in chunks],
                consumeErrors=True,
            )
        pq.consumed += len(msgs)

    async def _call_listener(self, msgs: list[MessageExt], ctx: ConsumeContext) -> bool:
        try:
            result = await defer.maybeDeferred(self.listener, msgs, ctx)
        except Exception:
            log.exception("listener of %s failed on %d message(s)", self.group, len(msgs))
            return False
        return consume_succeeded(result)

    async def _consume_concurrently(self, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        ctx = ConsumeContext(pq.mq)
        while True:
            if await self._call_listener(msgs, ctx):
                return
            if not self.clustering:
                log.warning("BROADCASTING consumer %s drops %d failed message(s)", self.group, len(msgs))
                return
            failed = []
            for m in msgs:
                try:
                    await api.send_back(self.instance, self.group, m, ctx.delay_level_when_next_consume,
                                        self.max_reconsume_times)
                except Exception as exc:
                    log.info("send back of %s failed (%s); consuming it again in 5 s", m.msg_id, exc)
                    m.reconsume_times += 1
                    failed.append(m)
            if not failed or not self.running or pq.dropped:
                return
            msgs = failed
            await deferred_sleep(self.reactor, 5.0)

    async def _consume_orderly(self, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        ctx = ConsumeContext(pq.mq)
        while self.running and not pq.dropped:
            if await self._call_listener(msgs, ctx):
                return
            if self.clustering and all(m.reconsume_times >= self.max_reconsume_times for m in msgs):
                for m in msgs:
                    try:
                        await api.send_back(self.instance, self.group, m, -1, self.max_reconsume_times)
                    except Exception as exc:
                        log.warning("could not move %s to the DLQ: %s", m.msg_id, exc)
                return
            for m in msgs:
                m.reconsume_times += 1
            await deferred_sleep(self.reactor, ctx.suspend_seconds or self.orderly_suspend)
