"""Automatic renewal of the invisible time of messages a push consumer holds (the 5.x proxy's
``DefaultReceiptHandleManager`` with ``enableProxyAutoRenew``).

A ReceiveMessage with ``auto_renew`` pops with the proxy's default invisible time (60 s) and the
proxy keeps each message invisible while the client holds it: every 5 s it renews the handles due
within 10 s (``renewAheadTimeMillis``) by 1, 3, 5, 10, 30 then 60 minutes
(``RenewStrategyPolicy``), for at most 3 hours from the receive (``renewMaxTimeMillis``); after
that the message is released with the group's retry back-off. An ack or a
ChangeInvisibleDuration stops the renewal and uses the latest handle (the client's one is stale
after a renewal). When the client is gone (no longer in its group) its messages are made visible
again after 1 s (``invisibleTimeMillisWhenClear``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task

from rocketmq_emu.broker.pop.extra_info import ReceiptHandle

log = logging.getLogger(__name__)

RENEW_SCHEDULE_PERIOD_S = 5.0
RENEW_AHEAD_MS = 10_000
RENEW_MAX_TIME_MS = 3 * 3600 * 1000
MAX_RENEW_RETRY_TIMES = 3
INVISIBLE_TIME_WHEN_CLEAR_MS = 1000
#: ``RenewStrategyPolicy.next``: 1m 3m 5m 10m 30m 1h.
RENEW_NEXT_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)

#: ``change(group, topic, handle, invisible_ms)`` → the new handle, or None if refused.
Change = Callable[[str, str, str, int], Awaitable[str | None]]


@dataclass
class TrackedHandle:
    """``MessageReceiptHandle``: a held message and its latest receipt handle."""

    group: str
    topic: str
    msg_id: str
    original: str
    current: str
    reconsume_times: int
    consume_ms: int
    renew_times: int = 0
    renew_retry_times: int = 0

    @property
    def next_visible_ms(self) -> int:
        """When the latest handle's invisible time ends."""
        return ReceiptHandle.decode(self.current).next_visible_time


class ReceiptHandleManager:
    """Handles by (client id, group). ``now_ms()`` is business time (the broker's pop times),
    ``clock`` the liveness clock the scan runs on, ``change`` the CHANGE_MESSAGE_INVISIBLETIME
    round trip, ``online(client_id, group)`` whether the client is still in its group and
    ``release_delay_ms(group, reconsume_times)`` the group's retry back-off."""

    def __init__(self, clock: Any, now_ms: Callable[[], int], change: Change,
                 online: Callable[[str, str], bool],
                 release_delay_ms: Callable[[str, int], int]) -> None:
        self.clock = clock
        self.now_ms = now_ms
        self.change = change
        self.online = online
        self.release_delay_ms = release_delay_ms
        self._groups: dict[tuple[str, str], dict[tuple[str, str], TrackedHandle]] = {}
        self._loop: task.LoopingCall | None = None

    def __len__(self) -> int:
        return sum(len(g) for g in self._groups.values())

    def start(self) -> None:
        """Scan every 5 s on the liveness clock."""
        if self._loop is None:
            self._loop = task.LoopingCall(self.scan)
            self._loop.clock = self.clock
            self._loop.start(RENEW_SCHEDULE_PERIOD_S, now=False).addErrback(
                lambda f: log.error("receipt handle scan stopped: %s", f.getErrorMessage()))

    def stop(self) -> None:
        """Stop scanning (held messages then become visible when their time ends)."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def add(self, client_id: str, group: str, topic: str, msg_id: str, handle: str,
            reconsume_times: int) -> None:
        """``addReceiptHandle``: track a message just received with ``auto_renew``."""
        tracked = TrackedHandle(group, topic, msg_id, handle, handle, reconsume_times,
                                self.now_ms())
        self._groups.setdefault((client_id, group), {})[(msg_id, handle)] = tracked

    def remove(self, client_id: str, group: str, msg_id: str, handle: str) -> TrackedHandle | None:
        """``removeReceiptHandle``: stop tracking; the tracked entry (its ``current`` handle is
        the one to use) or None."""
        handles = self._groups.get((client_id, group))
        if not handles:
            return None
        tracked = handles.pop((msg_id, handle), None)
        if not handles:
            del self._groups[(client_id, group)]
        return tracked

    def scan(self) -> defer.Deferred:
        """``scheduleRenewTask``: release the handles of clients gone, renew those due soon."""
        work = []
        now = self.now_ms()
        for key in list(self._groups):
            client_id, group = key
            if not self.online(client_id, group):
                for tracked in self._groups.pop(key).values():
                    work.append(self._change(tracked, INVISIBLE_TIME_WHEN_CLEAR_MS))
                continue
            for handle_key, tracked in list(self._groups[key].items()):
                if tracked.next_visible_ms - now <= RENEW_AHEAD_MS:
                    work.append(defer.ensureDeferred(self._renew(key, handle_key, tracked, now)))
        return defer.DeferredList(work)

    def _change(self, tracked: TrackedHandle, invisible_ms: int) -> defer.Deferred:
        return defer.ensureDeferred(self.change(tracked.group, tracked.topic, tracked.current,
                                                invisible_ms))

    async def _renew(self, key: tuple[str, str], handle_key: tuple[str, str],
                     tracked: TrackedHandle, now: int) -> None:
        """``startRenewMessage``."""
        if tracked.renew_retry_times >= MAX_RENEW_RETRY_TIMES:
            self._drop(key, handle_key)
            return
        if now - tracked.consume_ms >= RENEW_MAX_TIME_MS:
            self._drop(key, handle_key)
            delay = self.release_delay_ms(tracked.group, tracked.reconsume_times)
            await self._change(tracked, delay)
            return
        invisible = RENEW_NEXT_MS[min(tracked.renew_times, len(RENEW_NEXT_MS) - 1)]
        try:
            renewed = await self._change(tracked, invisible)
        except Exception as exc:
            log.warning("error when renew. handle:%s: %s", tracked.current, exc)
            tracked.renew_retry_times += 1
            return
        if renewed is None:
            log.warning("renew response is not ok. handle:%s", tracked.current)
            self._drop(key, handle_key)
            return
        tracked.current = renewed
        tracked.renew_retry_times = 0
        tracked.renew_times += 1

    def _drop(self, key: tuple[str, str], handle_key: tuple[str, str]) -> None:
        handles = self._groups.get(key)
        if handles is not None:
            handles.pop(handle_key, None)
            if not handles:
                del self._groups[key]
