"""Pull-style consumers, Twisted API.

* :class:`PullConsumer` (Java ``DefaultMQPullConsumer``): the caller picks queue and offset and
  manages offsets; the subscription travels in each pull (PullSysFlag FLAG_SUBSCRIPTION).
* :class:`LitePullConsumer` (Java ``DefaultLitePullConsumer``): in subscribe mode queues are
  assigned by rebalance exactly like the push consumer; in assign mode (:meth:`assign`) the
  caller names them. Messages are buffered and handed out by :meth:`LitePullConsumer.poll`;
  offsets are committed automatically as messages are buffered. :meth:`seek`,
  :meth:`seek_to_begin` / :meth:`seek_to_end` move a queue, :meth:`committed` reads the stored
  offset, :meth:`commit_sync` stores them now.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer

from rocketmq_emu.client import api
from rocketmq_emu.client.consume import ProcessQueue
from rocketmq_emu.client.instance import ClientInstance
from rocketmq_emu.client.message import MessageExt, MessageQueue, MQClientError
from rocketmq_emu.client.push_consumer import CLUSTERING, ConsumeContext, PushConsumer
from rocketmq_emu.client.rebalance import Subscription
from rocketmq_emu.client.route import subscribe_queues

log = logging.getLogger(__name__)


class PullConsumer:
    """Explicit pulls: ``await consumer.pull(mq, "*", offset, 32)``."""

    def __init__(
        self,
        group: str,
        namesrv_addr: str | list[str],
        *,
        reactor: Any = None,
        instance: ClientInstance | None = None,
        client_ip: str = "127.0.0.1",
        timeout: float = 10.0,
        credentials: Any = None,
        tls: bool = False,
    ) -> None:
        self.group = group
        self.instance = instance or ClientInstance(namesrv_addr, reactor, client_ip,
                                                   credentials=credentials, tls=tls)
        self._own_instance = instance is None
        self.timeout = timeout

    def start(self) -> defer.Deferred:
        """Start the client (route refresh)."""
        self.instance.start()
        return defer.succeed(None)

    def shutdown(self) -> defer.Deferred:
        """Close connections."""
        if self._own_instance:
            return defer.ensureDeferred(self.instance.shutdown())
        return defer.succeed(None)

    def fetch_subscribe_queues(self, topic: str) -> defer.Deferred:
        """The readable queues of ``topic`` (list of :class:`MessageQueue`)."""
        async def run() -> list[MessageQueue]:
            route = await self.instance.update_route(topic)
            if route is None:
                raise MQClientError(f"Can not find Message Queue for this topic, {topic}")
            return subscribe_queues(topic, route)
        return defer.ensureDeferred(run())

    def pull(self, mq: MessageQueue, expression: str = "*", offset: int = 0, max_nums: int = 32,
             *, block: bool = False, suspend_ms: int = 20000) -> defer.Deferred:
        """PULL_MESSAGE; fires with a :class:`rocketmq_emu.client.api.PullResult`. ``block`` long-polls."""
        sub = Subscription.build(mq.topic, expression, 0)
        return defer.ensureDeferred(self._pull(mq, sub, offset, max_nums, block, suspend_ms))

    async def _pull(self, mq: MessageQueue, sub: Subscription, offset: int, max_nums: int,
                    block: bool, suspend_ms: int) -> api.PullResult:
        if self.instance.master_addr(mq.broker_name) is None:
            await self.instance.update_route(mq.topic)
        return await api.pull(
            self.instance, self.group, mq, sub, offset, max_nums,
            suspend_ms=suspend_ms if block else 0,
            timeout=(suspend_ms / 1000.0 + self.timeout) if block else self.timeout,
            send_subscription=True,
        )

    def update_offset(self, mq: MessageQueue, offset: int) -> defer.Deferred:
        """Store ``offset`` for the group on the broker (sync UPDATE_CONSUMER_OFFSET)."""
        return defer.ensureDeferred(
            api.update_consumer_offset(self.instance, self.group, mq, offset, oneway=False))

    def fetch_offset(self, mq: MessageQueue) -> defer.Deferred:
        """The group's stored offset of ``mq`` (-1 if none)."""
        return defer.ensureDeferred(api.query_consumer_offset(self.instance, self.group, mq))

    def max_offset(self, mq: MessageQueue) -> defer.Deferred:
        """GET_MAX_OFFSET."""
        return defer.ensureDeferred(api.max_offset(self.instance, mq))

    def min_offset(self, mq: MessageQueue) -> defer.Deferred:
        """GET_MIN_OFFSET."""
        return defer.ensureDeferred(api.min_offset(self.instance, mq))

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> defer.Deferred:
        """SEARCH_OFFSET_BY_TIMESTAMP."""
        return defer.ensureDeferred(api.search_offset(self.instance, mq, timestamp_ms))


class LitePullConsumer(PushConsumer):
    """Subscribe, start, then ``await consumer.poll(timeout)`` for batches of messages.

    ``buffer_size`` bounds the messages pulled ahead (the pull loops wait while it is full).
    """

    consume_type = "CONSUME_ACTIVELY"

    def __init__(self, group: str, namesrv_addr: str | list[str], *, buffer_size: int = 1000,
                 message_model: str = CLUSTERING, **kw: Any) -> None:
        super().__init__(group, namesrv_addr, self._buffer_messages, message_model=message_model, **kw)
        self.buffer_size = buffer_size
        self._buffer: list[MessageExt] = []
        self._waiters: list[defer.Deferred] = []
        self._space: list[defer.Deferred] = []
        self._assigned: list[MessageQueue] | None = None

    # --- subscribe vs assign (DefaultLitePullConsumerImpl) ------------------------------------
    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        """Subscribe mode: queues come from rebalance. Not after :meth:`assign`."""
        if self._assigned is not None:
            raise MQClientError("Subscribe and assign are mutually exclusive.")
        super().subscribe(topic, expression, expression_type)

    def assign(self, mqs: list[MessageQueue]) -> defer.Deferred:
        """Assign mode: read exactly ``mqs`` (all tags), no rebalance among the group. May be
        called again to change the set; fires once the new set is in place."""
        if self._assigned is None and self.subscriptions:
            raise MQClientError("Subscribe and assign are mutually exclusive.")
        if not mqs:
            raise MQClientError("Message queues can not be null or empty.")
        self._assigned = list(dict.fromkeys(mqs))
        for mq in self._assigned:
            if mq.topic not in self.subscriptions:
                self.subscriptions[mq.topic] = Subscription.build(mq.topic, "*", 0)
        return self.rebalance() if self.running else defer.succeed(None)

    async def _allocate(self, topic: str) -> list[MessageQueue] | None:
        if self._assigned is None:
            return await super()._allocate(topic)
        return [mq for mq in self._assigned if mq.topic == topic]

    # --- seeking and offsets --------------------------------------------------------------------
    def seek(self, mq: MessageQueue, offset: int) -> defer.Deferred:
        """Read ``mq`` from ``offset`` next: buffered messages of that queue are dropped and its
        pulls restart there. The queue must be assigned to this consumer and the offset within
        [min, max] (``DefaultLitePullConsumerImpl.seek``: MQClientException otherwise)."""
        return defer.ensureDeferred(self._seek(mq, offset))

    async def _seek(self, mq: MessageQueue, offset: int) -> None:
        old = self.process_queues.get(mq)
        if old is None:
            where = "" if self._assigned is not None else ", may be rebalancing"
            raise MQClientError(
                f"The message queue is not in assigned list{where}, message queue: {mq}")
        low = await api.min_offset(self.instance, mq)
        high = await api.max_offset(self.instance, mq)
        if not low <= offset <= high:
            raise MQClientError(f"Seek offset illegal: {offset} not in [{low}, {high}]")
        if self.process_queues.get(mq) is not old:
            raise MQClientError(f"The message queue was reassigned while seeking: {mq}")
        old.dropped = True
        self._buffer = [m for m in self._buffer if m.message_queue != mq]
        self._wake_space()
        pq = ProcessQueue(mq, offset, lock_time=self.reactor.seconds())
        self.process_queues[mq] = pq
        self.offsets[mq] = offset
        self._spawn(self._pull_loop(pq))

    def seek_to_begin(self, mq: MessageQueue) -> defer.Deferred:
        """:meth:`seek` to the queue's min offset."""
        async def run() -> None:
            await self._seek(mq, await api.min_offset(self.instance, mq))
        return defer.ensureDeferred(run())

    def seek_to_end(self, mq: MessageQueue) -> defer.Deferred:
        """:meth:`seek` to the queue's max offset (only messages arriving from now on)."""
        async def run() -> None:
            await self._seek(mq, await api.max_offset(self.instance, mq))
        return defer.ensureDeferred(run())

    def committed(self, mq: MessageQueue) -> defer.Deferred:
        """The offset stored for ``mq`` (the broker's, or the local file's when BROADCASTING);
        -1 when none."""
        if not self.clustering:
            return defer.succeed(self.local_offset(mq))
        return defer.ensureDeferred(api.query_consumer_offset(self.instance, self.group, mq))

    def commit_sync(self) -> defer.Deferred:
        """Store the offsets of every assigned queue now (``commitSync``)."""
        return self.persist_offsets()

    def _wake_space(self) -> None:
        if len(self._buffer) < self.buffer_size:
            space, self._space = self._space, []
            for s in space:
                s.callback(None)

    def _buffer_messages(self, msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
        self._buffer.extend(msgs)
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.called:
                w.callback(None)
        if len(self._buffer) >= self.buffer_size:
            d: defer.Deferred = defer.Deferred()
            self._space.append(d)
            return d.addCallback(lambda _: True)
        return True

    def poll(self, timeout: float = 5.0, max_messages: int = 32) -> defer.Deferred:
        """Fire with up to ``max_messages`` buffered messages, waiting up to ``timeout`` seconds
        for the first one (an empty list on timeout)."""
        return defer.ensureDeferred(self._poll(timeout, max_messages))

    async def _poll(self, timeout: float, max_messages: int) -> list[MessageExt]:
        if not self._buffer and timeout > 0:
            d: defer.Deferred = defer.Deferred()
            self._waiters.append(d)
            timer = self.reactor.callLater(timeout, lambda: d.called or d.callback(None))
            await d
            if timer.active():
                timer.cancel()
        out, self._buffer = self._buffer[:max_messages], self._buffer[max_messages:]
        self._wake_space()
        return out
