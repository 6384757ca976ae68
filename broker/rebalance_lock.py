"""Orderly consumers' queue locks (RocketMQ ``broker/client/rebalance/RebalanceLockManager.java``).

LOCK_BATCH_MQ gives each ``(group, MessageQueue)`` to one client id; a lock not renewed for
``rocketmq.broker.rebalance.lockMaxLiveTime`` (60 s) may be taken by another client. Time comes
from an ``IReactorTime`` clock. State only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: ``RebalanceLockManager.REBALANCE_LOCK_MAX_LIVE_TIME`` (``rocketmq.broker.rebalance.lockMaxLiveTime``).
REBALANCE_LOCK_MAX_LIVE_TIME_MS = 60_000


def _now_ms(clock: Any) -> int:
    return int(clock.seconds() * 1000)


MessageQueueKey = tuple[str, str, int]
"""(topic, brokerName, queueId): ``MessageQueue`` identity."""


def mq_from_json(doc: dict[str, Any]) -> MessageQueueKey:
    """A MessageQueue JSON object as a key."""
    return (str(doc.get("topic") or ""), str(doc.get("brokerName") or ""),
            int(doc.get("queueId") or 0))


def mq_to_json(mq: MessageQueueKey) -> dict[str, Any]:
    """fastjson shape of a MessageQueue."""
    return {"brokerName": mq[1], "queueId": mq[2], "topic": mq[0]}


@dataclass
class LockEntry:
    """``RebalanceLockManager.LockEntry``."""

    client_id: str
    last_update_ms: int


class RebalanceLockManager:
    """Which client holds which queue of a group (``RebalanceLockManager``)."""

    def __init__(self, clock: Any, max_live_time_ms: int = REBALANCE_LOCK_MAX_LIVE_TIME_MS):
        self.clock = clock
        self.max_live_time_ms = max_live_time_ms
        self.mq_lock_table: dict[str, dict[MessageQueueKey, LockEntry]] = {}

    def _expired(self, entry: LockEntry, now: int) -> bool:
        return now - entry.last_update_ms > self.max_live_time_ms

    def is_locked(self, group: str, mq: MessageQueueKey, client_id: str) -> bool:
        """True when ``client_id`` holds an unexpired lock on ``mq`` (refreshing it)."""
        entry = self.mq_lock_table.get(group, {}).get(mq)
        now = _now_ms(self.clock)
        if entry is not None and entry.client_id == client_id and not self._expired(entry, now):
            entry.last_update_ms = now
            return True
        return False

    def try_lock_batch(
        self, group: str, mqs: Iterable[MessageQueueKey], client_id: str
    ) -> list[MessageQueueKey]:
        """``tryLockBatch``: the queues now locked by ``client_id`` (in request order)."""
        now = _now_ms(self.clock)
        table = self.mq_lock_table.setdefault(group, {})
        locked: list[MessageQueueKey] = []
        for mq in mqs:
            entry = table.get(mq)
            if entry is None:
                table[mq] = LockEntry(client_id, now)
                log.info("tryLockBatch, message queue not locked, I got it. Group: %s NewClientId: "
                         "%s %s", group, client_id, mq)
                locked.append(mq)
            elif entry.client_id == client_id:
                if self._expired(entry, now):
                    log.warning("tryLockBatch, message queue lock expired, I got it. Group: %s "
                                "OldClientId: %s NewClientId: %s %s", group, entry.client_id,
                                client_id, mq)
                entry.last_update_ms = now
                locked.append(mq)
            elif self._expired(entry, now):
                log.warning("tryLockBatch, message queue lock expired, I got it. Group: %s "
                            "OldClientId: %s NewClientId: %s %s", group, entry.client_id,
                            client_id, mq)
                entry.client_id = client_id
                entry.last_update_ms = now
                locked.append(mq)
            else:
                log.warning("tryLockBatch, message queue locked by other client. Group: %s "
                            "OtherClientId: %s NewClientId: %s %s", group, entry.client_id,
                            client_id, mq)
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueueKey], client_id: str) -> None:
        """``unlockBatch``: release the queues ``client_id`` holds."""
        table = self.mq_lock_table.get(group)
        if table is None:
            log.warning("unlockBatch, group not exist, Group: %s %s", group, client_id)
            return
        for mq in mqs:
            entry = table.get(mq)
            if entry is None:
                log.warning("unlockBatch, the mq not locked. Group: %s ClientId: %s %s",
                            group, client_id, mq)
            elif entry.client_id == client_id:
                del table[mq]
                log.info("unlockBatch, Group: %s %s %s", group, mq, client_id)
            else:
                log.warning("unlockBatch, but mq locked by other client: %s, Group: %s "
                            "ClientId: %s %s", entry.client_id, group, client_id, mq)
