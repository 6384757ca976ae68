"""Long polling: pulls that found nothing wait for a message (``PullRequestHoldService``).

A PULL_MESSAGE that would answer PULL_NOT_FOUND with the suspend bit set is parked here per
``(topic, queueId)``. It is re-executed (with suspension no longer allowed, so it answers
whatever it finds, normally FOUND) as soon as a message that its subscription's tags code
accepts arrives on that queue, or when ``suspendTimeoutMillis`` ends (then normally
PULL_NOT_FOUND). Java checks parked pulls every 5 s and on arrival; here each pull has a precise
timer on the given clock and arrival is signalled by the store's arrival listener. A parked pull
whose connection closes is dropped without an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

log = logging.getLogger(__name__)

Execute = Callable[[RemotingCommand, Any], Any]
"""``execute(cmd, conn)`` re-runs a pull without suspension and returns its response."""


@dataclass(eq=False)
class PullRequest:
    """One parked pull (``longpolling/PullRequest.java``)."""

    cmd: RemotingCommand
    conn: Any
    topic: str
    queue_id: int
    pull_from_offset: int
    suspend_ms: int
    timeout_ms: int
    subscription: Any = None
    wake_on_arrival: bool = True
    deferred: defer.Deferred = field(default_factory=defer.Deferred)
    timer: Any = None

    def matches(self, tags_code: int | None) -> bool:
        """Whether a message with ``tags_code`` is one this pull would return."""
        if self.subscription is None:
            return True
        return self.subscription.matches_tags_code(tags_code)


class PullRequestHoldService:
    """Parked pulls by ``(topic, queueId)``."""

    def __init__(self, clock: Any, execute: Execute) -> None:
        self.clock = clock
        self.execute = execute
        self.table: dict[tuple[str, int], list[PullRequest]] = {}
        #: Topics with a parked pull, kept in step with ``table``: the gate of the store's
        #: arrival listener (``StoreDispatch.add_arrival_listener``), so a message on a topic
        #: nobody waits on costs no Python call.
        self.topics: set[str] = set()
        self._topic_keys: dict[str, int] = {}
        self._watched: set[int] = set()
        self._stopped = False

    def __len__(self) -> int:
        return sum(len(v) for v in self.table.values())

    def suspend(
        self,
        cmd: RemotingCommand,
        conn: Any,
        topic: str,
        queue_id: int,
        pull_from_offset: int,
        timeout_ms: int,
        subscription: Any = None,
        wake_on_arrival: bool = True,
    ) -> defer.Deferred:
        """Park a pull; the Deferred fires with its response (or None if its connection closes).

        ``wake_on_arrival=False`` is short polling (``longPollingEnable=false``): RocketMQ then
        does not signal arrivals, so the pull waits its whole (short) timeout.
        """
        now_ms = int(self.clock.seconds() * 1000)
        req = PullRequest(cmd, conn, topic, queue_id, pull_from_offset, now_ms, timeout_ms,
                          subscription, wake_on_arrival)
        if self._stopped:
            self._wake(req)
            return req.deferred
        waiting = self.table.get((topic, queue_id))
        if waiting is None:
            waiting = self.table[(topic, queue_id)] = []
            self._key_added(topic)
        waiting.append(req)
        req.timer = self.clock.callLater(max(timeout_ms, 0) / 1000.0, self._timed_out, req)
        key = id(conn)
        if key not in self._watched and hasattr(conn, "add_close_callback"):
            self._watched.add(key)
            conn.add_close_callback(self._connection_closed)
        return req.deferred

    def notify_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None
    ) -> None:
        """A message arrived: wake the pulls of that queue it satisfies.

        ``max_offset`` is the queue's new (exclusive) max offset; a pull waits for offsets past
        its own ``queueOffset``.
        """
        key = (topic, queue_id)
        waiting = self.table.get(key)
        if not waiting:
            return
        keep: list[PullRequest] = []
        wake: list[PullRequest] = []
        for req in waiting:
            if req.wake_on_arrival and max_offset > req.pull_from_offset and \
                    req.matches(tags_code):
                wake.append(req)
            else:
                keep.append(req)
        if keep:
            self.table[key] = keep
        else:
            self._drop(key)
        for req in wake:
            self._wake(req)

    def _key_added(self, topic: str) -> None:
        n = self._topic_keys.get(topic, 0)
        self._topic_keys[topic] = n + 1
        if not n:
            self.topics.add(topic)

    def _drop(self, key: tuple[str, int]) -> None:
        """Delete an emptied ``table`` entry, and its topic from :attr:`topics` with the last."""
        del self.table[key]
        topic = key[0]
        n = self._topic_keys[topic] - 1
        if n:
            self._topic_keys[topic] = n
        else:
            del self._topic_keys[topic]
            self.topics.discard(topic)

    def _remove(self, req: PullRequest) -> None:
        key = (req.topic, req.queue_id)
        waiting = self.table.get(key)
        if waiting and req in waiting:
            waiting.remove(req)
            if not waiting:
                self._drop(key)

    def _timed_out(self, req: PullRequest) -> None:
        req.timer = None
        self._remove(req)
        self._wake(req)

    def _wake(self, req: PullRequest) -> None:
        if req.timer is not None and req.timer.active():
            req.timer.cancel()
        req.timer = None
        if req.deferred.called:
            return
        if getattr(req.conn, "closed", False):
            req.deferred.callback(None)
            return
        try:
            response = self.execute(req.cmd, req.conn)
        except Exception as exc:
            log.exception("re-executing a held pull of %s:%d failed", req.topic, req.queue_id)
            response = req.cmd.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if isinstance(response, defer.Deferred):
            response.chainDeferred(req.deferred)
        else:
            req.deferred.callback(response)

    def _connection_closed(self, conn: Any) -> None:
        self._watched.discard(id(conn))
        for key in list(self.table):
            gone = [r for r in self.table[key] if r.conn is conn]
            if not gone:
                continue
            self.table[key] = [r for r in self.table[key] if r.conn is not conn]
            if not self.table[key]:
                self._drop(key)
            for req in gone:
                if req.timer is not None and req.timer.active():
                    req.timer.cancel()
                req.timer = None
                if not req.deferred.called:
                    req.deferred.callback(None)

    def shutdown(self) -> None:
        """Answer every parked pull now (as a timeout would) and stop parking new ones."""
        self._stopped = True
        pending = [r for reqs in self.table.values() for r in reqs]
        self.table.clear()
        self.topics.clear()
        self._topic_keys.clear()
        for req in pending:
            self._wake(req)
