"""The push consumer (Java ``DefaultMQPushConsumer``), Twisted API.

* CLUSTERING (queues split among the group with :func:`rocketmq_emu.client.rebalance.allocate_averagely`,
  offsets stored on the broker) or BROADCASTING (every member reads every queue, offsets kept
  in a local file as the Java client's ``LocalFileOffsetStore``: :mod:`rocketmq_emu.client.local_offsets`).
* Concurrent or orderly consumption. Orderly clustering consumers lock their queues with
  LOCK_BATCH_MQ (41) before pulling and re-lock every 20 s; a queue is consumed one batch at a
  time, a failed batch is retried after ``orderly_suspend`` seconds.
* Rebalance on start, every ``rebalance_interval`` and at once on NOTIFY_CONSUMER_IDS_CHANGED (40).
* Long-polling pulls (11) with the committed offset piggy-backed; offsets also persisted with
  UPDATE_CONSUMER_OFFSET (15) every ``persist_interval`` and at shutdown.
* A failed message (listener returned RECONSUME_LATER / False or raised) goes back to the broker
  with CONSUMER_SEND_MSG_BACK (36) and returns through ``%RETRY%{group}``, which a clustering
  consumer subscribes to automatically; past ``max_reconsume_times`` the broker moves it to the DLQ.

The listener is ``listener(msgs: list[MessageExt], context: ConsumeContext)`` returning a
:class:`ConsumeStatus` (or True / None for success, False for failure), or a Deferred of one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from twisted.internet import defer, task
from twisted.python.failure import Failure

from rocketmq_emu.broker.message import RETRY_GROUP_TOPIC_PREFIX
from rocketmq_emu.client import api
from rocketmq_emu.client.consume import (  # noqa: F401 (ConsumeStatus is part of this module's API)
    ConsumeContext,
    ConsumeMixin,
    ConsumeStatus,
    ProcessQueue,
    consume_succeeded,
    deferred_sleep,
)
from rocketmq_emu.client.instance import ClientInstance
from rocketmq_emu.client.local_offsets import LocalFileOffsetStore
from rocketmq_emu.client.message import MessageExt, MessageQueue, MQBrokerError, restore_retry_topic
from rocketmq_emu.client.rebalance import Subscription, allocate_averagely, rebalance_diff
from rocketmq_emu.client.route import subscribe_queues
from rocketmq_emu.client.route_watch import MissingRouteWatch

log = logging.getLogger(__name__)

#: Pull answers meaning the broker does not know this consumer (SUBSCRIPTION_NOT_EXIST,
#: SUBSCRIPTION_NOT_LATEST, SUBSCRIPTION_GROUP_NOT_EXIST).
_NOT_REGISTERED = frozenset({24, 25, 26})

CLUSTERING = "CLUSTERING"
BROADCASTING = "BROADCASTING"
CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class PushConsumer(ConsumeMixin):
    """A push consumer of ``group``; :meth:`subscribe`, then :meth:`start` (a Deferred)."""

    consume_type = "CONSUME_PASSIVELY"

    def __init__(
        self,
        group: str,
        namesrv_addr: str | list[str],
        listener: Callable[..., Any] | None = None,
        *,
        message_model: str = CLUSTERING,
        orderly: bool = False,
        consume_from_where: str = CONSUME_FROM_LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        pull_batch_size: int = 32,
        consume_batch_size: int = 1,
        max_reconsume_times: int = 16,
        suspend_ms: int = 15000,
        pull_timeout: float = 30.0,
        rebalance_interval: float = 20.0,
        persist_interval: float = 5.0,
        orderly_suspend: float = 1.0,
        reactor: Any = None,
        instance: ClientInstance | None = None,
        client_ip: str = "127.0.0.1",
        heartbeat_interval: float = 30.0,
        poll_interval: float = 30.0,
        local_offset_store_dir: str | None = None,
        credentials: Any = None,
        tls: bool = False,
    ) -> None:
        if message_model not in (CLUSTERING, BROADCASTING):
            raise ValueError(f"message_model must be {CLUSTERING} or {BROADCASTING}")
        self.group = group
        self.listener = listener
        self.message_model = message_model
        self.orderly = orderly
        self.consume_from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.pull_batch_size = pull_batch_size
        self.consume_batch_size = max(1, consume_batch_size)
        self.max_reconsume_times = max_reconsume_times
        self.suspend_ms = suspend_ms
        self.pull_timeout = pull_timeout
        self.rebalance_interval = rebalance_interval
        self.persist_interval = persist_interval
        self.orderly_suspend = orderly_suspend
        self.instance = instance or ClientInstance(
            namesrv_addr, reactor, client_ip, heartbeat_interval=heartbeat_interval,
            poll_interval=poll_interval, credentials=credentials, tls=tls,
        )
        self._own_instance = instance is None
        self.reactor = self.instance.reactor
        self.subscriptions: dict[str, Subscription] = {}
        self.process_queues: dict[MessageQueue, ProcessQueue] = {}
        self.offsets: dict[MessageQueue, int] = {}
        # BROADCASTING: offsets in {dir}/{clientId}/{group}/offsets.json (LocalFileOffsetStore).
        self.local_offsets = (
            None if message_model == CLUSTERING
            else LocalFileOffsetStore(self.instance.client_id, group, local_offset_store_dir))
        self._stored_offsets: dict[MessageQueue, int] = {}
        self.running = False
        self.start_timestamp = 0
        self._rebalance_lock = defer.DeferredLock()
        self._rebalance_pending = False
        self._loops: list[task.LoopingCall] = []
        self._tasks: set[defer.Deferred] = set()
        # A topic subscribed before it exists: look for its route again within milliseconds,
        # not at the next rebalance (client.route_watch).
        self._route_watch = MissingRouteWatch(self.reactor, self._look_up_route,
                                              self._route_appeared, rebalance_interval)

    @property
    def client_id(self) -> str:
        """This consumer's client id."""
        return self.instance.client_id

    # --- configuration ------------------------------------------------------------------------
    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        """Consume ``topic`` messages whose tag matches ``expression`` (``"*"``, ``"a || b"``),
        or, with ``expression_type="SQL92"``, whose properties satisfy the SQL92 expression
        (``MessageSelector.bySql``; the broker needs ``enablePropertyFilter=true``)."""
        version = int(time.time() * 1000)
        if expression_type != "TAG":
            self.subscriptions[topic] = Subscription.build_sql92(topic, expression, version)
            return
        self.subscriptions[topic] = Subscription.build(topic, expression, version)

    def register_listener(self, listener: Callable[..., Any]) -> None:
        """Set the message listener."""
        self.listener = listener

    @property
    def clustering(self) -> bool:
        return self.message_model == CLUSTERING

    def consumer_data(self) -> dict:
        """This group's ``ConsumerData`` for heartbeats."""
        return {
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "groupName": self.group,
            "messageModel": self.message_model,
            "subscriptionDataSet": [s.to_json() for s in self.subscriptions.values()],
            "unitMode": False,
        }

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> defer.Deferred:
        """Look up routes, heartbeat, rebalance and start pulling; fires when the first
        rebalance is done."""
        return defer.ensureDeferred(self._start())

    async def _start(self) -> None:
        if self.listener is None and self.consume_type == "CONSUME_PASSIVELY":
            raise ValueError("register a listener before start()")
        if self.clustering:
            # copySubscription: clustering consumers also read their retry topic.
            retry = RETRY_GROUP_TOPIC_PREFIX + self.group
            self.subscriptions.setdefault(retry, Subscription.build(retry, "*", int(time.time() * 1000)))
        if self.instance.consumers.get(self.group) not in (None, self):
            raise ValueError(f"the consumer group {self.group} is already registered in this client")
        self.instance.consumers[self.group] = self
        self.instance.start()
        if self.local_offsets is not None:
            self._stored_offsets = self.local_offsets.load()
        self.running = True
        self.start_timestamp = int(time.time() * 1000)
        for topic in self.subscriptions:
            try:
                await self.instance.update_route(topic)
            except Exception as exc:
                log.debug("route of %s: %s", topic, exc)
        # checkClientInBroker (CHECK_CLIENT_CONFIG for SQL92) and the 220/221 handlers.
        from rocketmq_emu.client import offset_reset, sql_filter

        offset_reset.install(self.instance)
        try:
            await sql_filter.check_client_in_broker(self)
        except Exception:
            self.running = False
            self.instance.consumers.pop(self.group, None)
            raise
        await self.instance.send_heartbeat_to_all_brokers()
        for interval, fn in (
            (self.rebalance_interval, self.rebalance),
            (self.persist_interval, self.persist_offsets),
        ):
            loop = task.LoopingCall(fn)
            loop.clock = self.reactor
            loop.start(interval, now=False).addErrback(lambda f: log.error("%s", f.getTraceback()))
            self._loops.append(loop)
        if self.orderly and self.clustering:
            loop = task.LoopingCall(self.lock_all)
            loop.clock = self.reactor
            loop.start(20.0, now=False).addErrback(lambda f: log.error("%s", f.getTraceback()))
            self._loops.append(loop)
        await self.rebalance()

    def shutdown(self) -> defer.Deferred:
        """Stop pulling, persist offsets, unlock queues and unregister."""
        return defer.ensureDeferred(self._shutdown())

    async def _shutdown(self) -> None:
        if not self.running:
            return
        self.running = False
        self._route_watch.stop()
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops.clear()
        for pq in self.process_queues.values():
            pq.dropped = True
        await self.persist_offsets()
        if self.orderly and self.clustering:
            await self._unlock(list(self.process_queues))
        self.instance.consumers.pop(self.group, None)
        await self.instance.unregister(consumer_group=self.group)
        if self._own_instance:
            await self.instance.shutdown()
        for d in list(self._tasks):
            d.cancel()

    # --- rebalance ----------------------------------------------------------------------------
    def rebalance_soon(self) -> None:
        """Schedule a rebalance now (NOTIFY_CONSUMER_IDS_CHANGED)."""
        if self._rebalance_pending or not self.running:
            return
        self._rebalance_pending = True

        def go() -> None:
            self._rebalance_pending = False
            self.rebalance()

        self.reactor.callLater(0, go)

    def rebalance(self) -> defer.Deferred:
        """Re-split the queues of every subscribed topic (``RebalanceImpl.doRebalance``)."""
        return self._rebalance_lock.run(lambda: defer.ensureDeferred(self._rebalance()))

    async def _rebalance(self) -> None:
        if not self.running:
            return
        for topic in list(self.subscriptions):
            try:
                await self._rebalance_topic(topic)
            except Exception as exc:
                log.info("rebalance of %s for %s failed: %s", topic, self.group, exc)

    async def _allocate(self, topic: str) -> list[MessageQueue] | None:
        """The queues of ``topic`` this client should read (None: no decision this time)."""
        route = self.instance.routes.get(topic) or await self.instance.update_route(topic)
        if route is None:
            self._route_watch.watch(topic)
            return None
        mqs = subscribe_queues(topic, route)
        if not self.clustering:
            return mqs
        addr = None
        for bd in route.broker_datas:
            addr = bd.master_addr() or next(iter(bd.broker_addrs.values()), None)
            if addr:
                break
        if addr is None:
            return None
        cids = await api.consumer_ids(self.instance, self.group, addr)
        return allocate_averagely(self.client_id, mqs, cids)

    def look_up_missing_routes(self) -> None:
        """Look up now the routes of subscribed topics not found yet, whatever their backoff
        (a hint that routes changed: the test harness gives it when a broker registers)."""
        if self.running:
            self._route_watch.look_now()

    def _look_up_route(self, topic: str) -> defer.Deferred:
        """The route of ``topic`` from the name server (None while it does not exist)."""
        if not self.running:
            return defer.succeed(None)
        return defer.ensureDeferred(self.instance.update_route(topic))

    def _route_appeared(self, topic: str) -> defer.Deferred:
        """A watched topic got its route: take its queues now. (Storing the route sent a
        heartbeat to a broker seen for the first time, ahead of the group's member list.)"""
        async def run() -> None:
            if self.running:
                await self._rebalance_topic(topic)

        d = self._rebalance_lock.run(lambda: defer.ensureDeferred(run()))
        return d.addErrback(lambda f: log.info("rebalance of %s for %s failed: %s", topic,
                                               self.group, f.getErrorMessage()))

    async def _rebalance_topic(self, topic: str) -> None:
        allocated = await self._allocate(topic)
        if allocated is None:
            return
        current = [mq for mq in self.process_queues if mq.topic == topic]
        to_add, to_remove = rebalance_diff(current, allocated)
        for mq in to_remove:
            pq = self.process_queues.pop(mq)
            pq.dropped = True
            await self._persist(mq)
            self.offsets.pop(mq, None)
        if to_remove and self.orderly and self.clustering:
            await self._unlock(to_remove)
        if to_add and self.orderly and self.clustering:
            locked = await self._lock(to_add)
            to_add = [mq for mq in to_add if mq in locked]
        for mq in to_add:
            try:
                offset = await self.compute_pull_from_where(mq)
            except Exception as exc:
                log.info("cannot compute the offset of %s: %s", mq, exc)
                continue
            if offset < 0:
                continue
            pq = ProcessQueue(mq, offset, locked=self.orderly and self.clustering, lock_time=self.reactor.seconds())
            self.process_queues[mq] = pq
            self.offsets[mq] = offset
            log.info("%s %s starts pulling %s at %d", self.group, self.client_id, mq, offset)
            self._spawn(self._pull_loop(pq))

    def local_offset(self, mq: MessageQueue) -> int:
        """BROADCASTING: ``mq``'s offset in memory, else in the local file loaded at start
        (``LocalFileOffsetStore.readOffset``, MEMORY_FIRST_THEN_STORE); -1 when neither."""
        return self.offsets.get(mq, self._stored_offsets.get(mq, -1))

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """``RebalancePushImpl.computePullFromWhere``."""
        if self.clustering:
            last = await api.query_consumer_offset(self.instance, self.group, mq)
        else:
            last = self.local_offset(mq)
        if last >= 0:
            return last
        is_retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        if self.consume_from_where == CONSUME_FROM_FIRST_OFFSET:
            return 0
        if self.consume_from_where == CONSUME_FROM_TIMESTAMP and not is_retry:
            ts = self.consume_timestamp_ms or int((time.time() - 1800) * 1000)
            return await api.search_offset(self.instance, mq, ts)
        if is_retry:
            return 0
        return await api.max_offset(self.instance, mq)

    async def _lock(self, mqs: list[MessageQueue]) -> set[MessageQueue]:
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        locked: set[MessageQueue] = set()
        for broker, group_mqs in by_broker.items():
            addr = self.instance.master_addr(broker)
            if addr is None:
                continue
            try:
                locked |= await api.lock_batch(self.instance, self.group, addr, group_mqs)
            except Exception as exc:
                log.info("lock of %s at %s failed: %s", group_mqs, addr, exc)
        return locked

    async def _unlock(self, mqs: list[MessageQueue]) -> None:
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for broker, group_mqs in by_broker.items():
            addr = self.instance.master_addr(broker)
            if addr is not None:
                try:
                    await api.unlock_batch(self.instance, self.group, addr, group_mqs)
                except Exception as exc:
                    log.debug("unlock at %s failed: %s", addr, exc)

    def lock_all(self) -> defer.Deferred:
        """Re-lock every assigned queue (``RebalanceImpl.lockAll``, every 20 s)."""
        return defer.ensureDeferred(self._lock_all())

    async def _lock_all(self) -> None:
        locked = await self._lock(list(self.process_queues))
        now = self.reactor.seconds()
        for mq, pq in self.process_queues.items():
            pq.locked = mq in locked
            if pq.locked:
                pq.lock_time = now

    # --- offsets ------------------------------------------------------------------------------
    async def _persist(self, mq: MessageQueue) -> None:
        offset = self.offsets.get(mq)
        if offset is None or not self.clustering:
            return
        try:
            await api.update_consumer_offset(self.instance, self.group, mq, offset)
        except Exception as exc:
            log.debug("persisting the offset of %s failed: %s", mq, exc)

    def _persist_local(self) -> None:
        """BROADCASTING: write the assigned queues' offsets to the local file."""
        table = {mq: self.offsets[mq] for mq in self.process_queues if mq in self.offsets}
        if not table or self.local_offsets is None:
            return
        try:
            self.local_offsets.persist(table)
        except OSError as exc:
            log.warning("persisting local offsets to %s failed: %s", self.local_offsets.path, exc)

    def persist_offsets(self) -> defer.Deferred:
        """UPDATE_CONSUMER_OFFSET (15) for every assigned queue (``persistAllConsumerOffset``);
        a BROADCASTING consumer writes its local offsets file instead."""
        async def run() -> None:
            if self.local_offsets is not None:
                self._persist_local()
                return
            for mq in list(self.process_queues):
                await self._persist(mq)
        return defer.ensureDeferred(run())

    # --- pulling and consuming --------------------------------------------------------------
    def _spawn(self, coro: Any) -> None:
        d = defer.ensureDeferred(coro)
        self._tasks.add(d)

        def done(result: Any) -> None:
            self._tasks.discard(d)
            if isinstance(result, Failure) and not result.check(defer.CancelledError):
                log.error("consumer task failed: %s", result.getTraceback())

        d.addBoth(done)

    async def _pull_loop(self, pq: ProcessQueue) -> None:
        sub = self.subscriptions[pq.mq.topic]
        while self.running and not pq.dropped:
            if self.orderly and self.clustering and not pq.locked:
                await deferred_sleep(self.reactor, 1.0)
                continue
            try:
                result = await api.pull(
                    self.instance, self.group, pq.mq, sub, pq.next_offset, self.pull_batch_size,
                    commit_offset=self.offsets.get(pq.mq, 0) if self.clustering else 0,
                    suspend_ms=self.suspend_ms, timeout=self.pull_timeout,
                )
            except Exception as exc:
                if not self.running or pq.dropped:
                    return
                log.debug("pull of %s failed: %s; retrying in 3 s", pq.mq, exc)
                if isinstance(exc, MQBrokerError) and exc.code in _NOT_REGISTERED:
                    # A restarted broker forgot us: re-register now, not at the next 30 s beat.
                    self.instance.heartbeat_soon()
                await deferred_sleep(self.reactor, 3.0)  # pullTimeDelayMillsWhenException
                continue
            if pq.dropped or not self.running:
                return
            if result.status is api.PullStatus.OFFSET_ILLEGAL:
                log.warning("offset %d of %s is illegal; moving to %d", pq.next_offset, pq.mq,
                            result.next_begin_offset)
            if result.messages:
                for m in result.messages:
                    restore_retry_topic(m, self.group)
                await self._consume(pq, result.messages)
                if pq.dropped:
                    return
            pq.next_offset = result.next_begin_offset
            self.offsets[pq.mq] = result.next_begin_offset

    # --- broker -> client requests (client.client_requests) ------------------------------------
    def consume_directly(self, msgs: list[MessageExt]) -> defer.Deferred:
        """Run the listener on ``msgs`` now (CONSUME_MESSAGE_DIRECTLY); fires with True on
        success, False for a failure status, or fails with the listener's exception."""
        mq = msgs[0].message_queue if msgs else MessageQueue("", "", 0)
        d = defer.maybeDeferred(self.listener, msgs, ConsumeContext(mq))
        return d.addCallback(consume_succeeded)

    @property
    def assigned_queues(self) -> list[MessageQueue]:
        """The queues this member currently pulls."""
        return sorted(self.process_queues)
