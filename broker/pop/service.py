"""The broker's POP services in one bundle: revive service, order info, long polling and the six
request processors, with their start/stop and the store arrival listener.

::

    pop = PopServices(ctx)                 # ctx: BrokerContext (clock = business clock)
    for p in pop.processors: controller.register_processor(p)
    store.add_arrival_listener(pop.on_arrival, topics=pop.topics)
    pop.start()   # after the store started: loads consumerOrderInfo.json, replays revive queues
    pop.stop()    # answers parked requests, stops revive timers, persists the order info

Revival and orderly unblocking run on ``ctx.clock`` (business time); parked requests wait on
``ctx.liveness_clock``. ``periodic_tasks`` (used by the controller) persists the order info every
5 s, as Java's broker does with the consumer offsets.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.pop.long_polling import PopLongPollingService
from rocketmq_emu.broker.pop.order_info import ConsumerOrderInfoManager, OrderInfo
from rocketmq_emu.broker.pop.revive import PopReviveService

log = logging.getLogger(__name__)

#: Order info persistence period (s), ``flushConsumerOffsetInterval``.
PERSIST_PERIOD_S = 5.0


class PopServices:
    """Everything POP needs beside the store and the context."""

    def __init__(self, ctx: Any, rng: random.Random | None = None) -> None:
        from rocketmq_emu.broker.processors.pop import PopMessageProcessor
        from rocketmq_emu.broker.processors.pop_ack import AckMessageProcessor
        from rocketmq_emu.broker.processors.pop_peek import PopQueryProcessor

        self.ctx = ctx
        self.revive = PopReviveService(ctx, int(ctx.setting("revive_queue_num",
                                                            names.REVIVE_QUEUE_NUM)))
        self.order_info = ConsumerOrderInfoManager.for_store(
            ctx.store.config.store_path_root_dir, ctx.now_ms)
        self.order_info.on_update = self._order_updated
        self.long_polling = PopLongPollingService(
            ctx.liveness_clock, polling_size=int(ctx.setting("pop_polling_size",
                                                             names.POP_POLLING_SIZE)))
        self.pop_processor = PopMessageProcessor(ctx, self, rng)
        self.ack_processor = AckMessageProcessor(ctx, self)
        self.query_processor = PopQueryProcessor(ctx, self, rng)
        self.processors = [self.pop_processor, self.ack_processor, self.query_processor, self]
        self._unblock: dict[tuple[str, str, int], Any] = {}
        self.started = False

    @property
    def topics(self) -> set[str]:
        """Topics whose arrivals wake parked requests (the arrival listener's gate)."""
        return self.long_polling.topics

    def handlers(self) -> dict[int, Any]:
        """No request codes of its own (it is in :attr:`processors` for its periodic task)."""
        return {}

    def periodic_tasks(self) -> list[tuple[float, Any]]:
        """``(period_s, fn)`` pairs the controller runs on the business clock."""
        return [(PERSIST_PERIOD_S, self.persist)]

    def persist(self) -> None:
        """Write consumerOrderInfo.json."""
        if self.started:
            self.order_info.persist()

    def start(self) -> None:
        """Load the order info, rebuild the revive state from the revive topic."""
        if self.started:
            return
        if not self.order_info.load():
            log.error("%s", self.order_info.load_error)
        for (topic, group), qs in [(k.split("@", 1), v) for k, v in self.order_info.table.items()
                                   if "@" in k]:
            for qid, info in qs.items():
                self._order_updated(topic, group, qid, info)
        self.revive.start()
        self.started = True

    def stop(self) -> None:
        """Answer parked requests, stop timers, persist the order info."""
        self.long_polling.shutdown()
        self.revive.stop()
        for call in self._unblock.values():
            if call.active():
                call.cancel()
        self._unblock.clear()
        if self.started:
            self.order_info.persist()
        self.started = False

    def on_arrival(self, topic: str, queue_id: int, queue_offset: int, tags_code: int,
                   record: Any = None) -> None:
        """The store's arrival listener: wake parked requests of that queue."""
        self.long_polling.notify_message_arriving(topic, queue_id)

    def _order_updated(self, topic: str, group: str, queue_id: int, info: OrderInfo) -> None:
        """``ConsumerOrderInfoLockManager``: wake the group's parked requests of an orderly
        queue when its block ends."""
        key = (topic, group, queue_id)
        old = self._unblock.pop(key, None)
        if old is not None and old.active():
            old.cancel()
        at = self.order_info.visible_at(info)
        if at is None:
            return
        delay = max(0, at - self.ctx.now_ms()) / 1000.0

        def fire() -> None:
            self._unblock.pop(key, None)
            self.long_polling.notify_message_arriving(topic, queue_id, group)

        self._unblock[key] = self.ctx.clock.callLater(delay, fire)
