"""``PopLongPollingService``: POP_MESSAGE and NOTIFICATION requests that found nothing wait here
for a message, on the **liveness clock** (Apache RocketMQ 5, ``broker/longpolling/
PopLongPollingService.java``).

A request is parked under ``topic@group@queueId`` (``KeyBuilder.buildPollingKey``; -1 for "any
queue") until ``pollTime`` ms have passed or a message arrives: an arrival on ``topic`` queue
``q`` wakes the oldest request of each parked group under ``topic@group@q`` and
``topic@group@-1``; one on a POP retry topic ``%RETRY%group_topic`` (or ``+``) wakes the group's
requests of every queue of ``topic``. A woken request is executed again and may park again
until its deadline; at the deadline it is executed once more without parking, which answers
POLLING_TIMEOUT (POP) or ``hasMsg=false`` (NOTIFICATION) when still nothing is there.

``polling`` answers :data:`POLLING_FULL` beyond ``popPollingSize`` (1024) requests under one key or
``maxPopPollingSize`` (100000) in all, :data:`NOT_POLLING` for ``pollTime <= 0`` or after
shutdown. Java measures the deadline from the client's ``bornTime``; here it is measured from
arrival at the broker on the liveness clock, so a client whose clock differs from the broker's
(or a business clock moved by a test) still waits its ``pollTime``. A parked request whose
connection closes is dropped without an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.pop import names
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

log = logging.getLogger(__name__)

POLLING_SUC = "POLLING_SUC"
POLLING_FULL = "POLLING_FULL"
POLLING_TIMEOUT = "POLLING_TIMEOUT"
NOT_POLLING = "NOT_POLLING"

#: ``BrokerConfig.maxPopPollingSize``.
MAX_POP_POLLING_SIZE = 100000

Execute = Callable[[RemotingCommand, Any, "PopRequest | None"], Any]
"""``execute(cmd, conn, parked)`` re-runs a request; ``parked`` is None when it may not park
again (deadline reached or shutdown)."""


@dataclass(eq=False)
class PopRequest:
    """One parked request (``longpolling/PopRequest.java``)."""

    cmd: RemotingCommand
    conn: Any
    key: str
    topic: str
    group: str
    deadline: float
    execute: Execute
    deferred: defer.Deferred = field(default_factory=defer.Deferred)
    timer: Any = None


class PopLongPollingService:
    """Parked POP/NOTIFICATION requests by polling key."""

    def __init__(self, clock: Any, *, polling_size: int = names.POP_POLLING_SIZE,
                 max_polling_size: int = MAX_POP_POLLING_SIZE) -> None:
        self.clock = clock
        self.polling_size = polling_size
        self.max_polling_size = max_polling_size
        self.table: dict[str, list[PopRequest]] = {}
        #: groups with a parked request, by topic (``topicCidMap``).
        self.topic_groups: dict[str, dict[str, int]] = {}
        #: Topics whose arrivals matter (normal topics and their groups' POP retry topics): the
        #: gate of the store's arrival listener.
        self.topics: set[str] = set()
        self._retry_of: dict[str, tuple[str, str]] = {}
        self._watched: set[int] = set()
        self.total = 0
        self.stopped = False

    def polling_num(self, topic: str, group: str, queue_id: int) -> int:
        """POLLING_INFO's ``pollingNum``."""
        return len(self.table.get(names.polling_key(topic, group, queue_id), ()))

    def polling(self, cmd: RemotingCommand, conn: Any, topic: str, group: str, queue_id: int,
                poll_time_ms: int, execute: Execute, previous: PopRequest | None = None,
                ) -> tuple[str, defer.Deferred | None]:
        """Park a request: ``(POLLING_SUC, deferred)`` — the Deferred fires with its answer,
        or None if its connection closes — or ``(POLLING_FULL | POLLING_TIMEOUT |
        NOT_POLLING, None)``. ``previous`` is the parked request being re-executed (its
        deadline and Deferred carry over)."""
        if previous is None and (poll_time_ms <= 0 or self.stopped):
            return NOT_POLLING, None
        if self.stopped:
            return POLLING_TIMEOUT, None
        if self.total >= self.max_polling_size:
            return POLLING_FULL, None
        now = self.clock.seconds()
        deadline = previous.deadline if previous is not None else now + poll_time_ms / 1000.0
        if now >= deadline:
            return POLLING_TIMEOUT, None
        key = names.polling_key(topic, group, queue_id)
        waiting = self.table.get(key)
        if waiting is not None and len(waiting) > self.polling_size:
            return POLLING_FULL, None
        if previous is not None:
            req = previous
        else:
            req = PopRequest(cmd, conn, key, topic, group, deadline, execute)
        if waiting is None:
            waiting = self.table[key] = []
        waiting.append(req)
        self.total += 1
        self._add_group(topic, group)
        req.timer = self.clock.callLater(max(0.0, deadline - now), self._timed_out, req)
        conn_key = id(conn)
        if conn_key not in self._watched and hasattr(conn, "add_close_callback"):
            self._watched.add(conn_key)
            conn.add_close_callback(self._connection_closed)
        return POLLING_SUC, req.deferred

    # --- groups and topics ------------------------------------------------------------------
    def _add_group(self, topic: str, group: str) -> None:
        groups = self.topic_groups.setdefault(topic, {})
        groups[group] = groups.get(group, 0) + 1
        self.topics.add(topic)
        for retry in (names.pop_retry_topic_v1(topic, group),
                      names.pop_retry_topic_v2(topic, group)):
            self._retry_of[retry] = (topic, group)
            self.topics.add(retry)

    def _remove_group(self, topic: str, group: str) -> None:
        groups = self.topic_groups.get(topic)
        if not groups or group not in groups:
            return
        groups[group] -= 1
        if groups[group] > 0:
            return
        del groups[group]
        for retry in (names.pop_retry_topic_v1(topic, group),
                      names.pop_retry_topic_v2(topic, group)):
            self._retry_of.pop(retry, None)
            self.topics.discard(retry)
        if not groups:
            del self.topic_groups[topic]
            self.topics.discard(topic)

    def _take(self, req: PopRequest) -> bool:
        waiting = self.table.get(req.key)
        if not waiting or req not in waiting:
            return False
        waiting.remove(req)
        if not waiting:
            del self.table[req.key]
        self.total -= 1
        self._remove_group(req.topic, req.group)
        if req.timer is not None and req.timer.active():
            req.timer.cancel()
        req.timer = None
        return True

    # --- wake-ups ---------------------------------------------------------------------------
    def notify_message_arriving(self, topic: str, queue_id: int, group: str | None = None) -> None:
        """A message arrived on ``topic`` queue ``queue_id`` (or on a POP retry topic): wake the
        oldest parked request per matching key (``notifyMessageArriving``)."""
        retry = self._retry_of.get(topic)
        if retry is not None:
            normal, retry_group = retry
            prefix = names.polling_key(normal, retry_group, 0)[:-1]
            for key in [k for k in self.table if k.startswith(prefix)]:
                self._wake_first(key)
            return
        groups = [group] if group is not None else list(self.topic_groups.get(topic, ()))
        for one in groups:
            self._wake_first(names.polling_key(topic, one, queue_id))
            if queue_id != -1:
                self._wake_first(names.polling_key(topic, one, -1))

    def _wake_first(self, key: str) -> None:
        waiting = self.table.get(key)
        if waiting:
            req = waiting[0]
            self._take(req)
            self._run(req, park_again=True)

    def _timed_out(self, req: PopRequest) -> None:
        req.timer = None
        if self._take(req):
            self._run(req, park_again=False)

    def _run(self, req: PopRequest, park_again: bool) -> None:
        if req.deferred.called:
            return
        if getattr(req.conn, "closed", False):
            req.deferred.callback(None)
            return
        try:
            response = req.execute(req.cmd, req.conn, req if park_again else None)
        except Exception as exc:
            log.exception("re-executing a parked pop of %s failed", req.key)
            response = req.cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if response is req.deferred:  # parked again
            return
        if isinstance(response, defer.Deferred):
            response.chainDeferred(req.deferred)
        else:
            req.deferred.callback(response)

    def _connection_closed(self, conn: Any) -> None:
        self._watched.discard(id(conn))
        gone = [r for reqs in self.table.values() for r in reqs if r.conn is conn]
        for req in gone:
            self._take(req)
            if not req.deferred.called:
                req.deferred.callback(None)

    def shutdown(self) -> None:
        """Answer every parked request now (as its timeout would) and park no more."""
        self.stopped = True
        pending = [r for reqs in self.table.values() for r in reqs]
        for req in pending:
            self._take(req)
            self._run(req, park_again=False)
