"""Per-minute / hour / day stats behind VIEW_BROKER_STATS_DATA (315), as RocketMQ 4.9.8's
``BrokerStatsManager`` keeps them (``common/stats/StatsItem``, ``StatsItemSet``).

Each item is a running ``value`` and ``times``; every 10 s, 10 min and 1 h a snapshot
``(timestamp, times, value)`` is appended to the minute (7 kept), hour (7) and day (25) lists,
and a window's stats are ``sum = last.value - first.value``, ``tps = sum * 1000 / (last.ts -
first.ts)``, ``avgpt = sum / (last.times - first.times)`` (``StatsItem.computeStatsData``).

The items are fed from the broker's cumulative counters (:class:`BrokerStats`) at sampling time,
so nothing is added to the send and pull paths. Kept: ``TOPIC_PUT_NUMS`` (key: topic),
``GROUP_GET_NUMS`` (``topic@group``), ``BROKER_PUT_NUMS`` and ``BROKER_GET_NUMS`` (cluster
name). The counters record messages, not requests, so ``times`` advances with the value and
``avgpt`` reads 1.0 where Java would give messages per request. Any other name or a key with no
traffic yet is answered like a Java broker without that item: SYSTEM_ERROR ``The stats <name>
<key> not exist``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"

#: ``StatsItemSet.init``: sampling periods (s) of the minute, hour and day lists.
SAMPLE_SECONDS_S = 10.0
SAMPLE_MINUTES_S = 600.0
SAMPLE_HOUR_S = 3600.0
#: Snapshots kept per list (``samplingInSeconds`` / ``InMinutes`` / ``InHour``).
_KEEP = {"minute": 7, "hour": 7, "day": 25}
#: The baseline a first snapshot gets, that far in the past (ms).
_BASELINE_MS = {"minute": 10_000, "hour": 600_000, "day": 3_600_000}


@dataclass(slots=True)
class StatsSnapshot:
    """``StatsSnapshot``: one window's sum, tps and average per call."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """``BrokerStatsItem`` as fastjson writes it (keys sorted)."""
        return {"avgpt": self.avgpt, "sum": self.sum, "tps": self.tps}


@dataclass
class StatsItem:
    """One ``StatsItem``: running totals and the three snapshot lists."""

    value: int = 0
    times: int = 0
    lists: dict[str, deque] = field(default_factory=lambda: {k: deque() for k in _KEEP})

    def sample(self, window: str, now_ms: int) -> None:
        """``samplingInSeconds`` (window ``minute``), ``InMinutes`` (``hour``), ``InHour``
        (``day``): a zero baseline first, then the current totals; oldest dropped."""
        snaps = self.lists[window]
        if not snaps:
            snaps.append((now_ms - _BASELINE_MS[window], 0, 0))
        snaps.append((now_ms, self.times, self.value))
        if len(snaps) > _KEEP[window]:
            snaps.popleft()

    def snapshot(self, window: str) -> StatsSnapshot:
        """``computeStatsData`` of one list."""
        snaps = self.lists[window]
        if not snaps:
            return StatsSnapshot()
        (ts0, times0, v0), (ts1, times1, v1) = snaps[0], snaps[-1]
        total = v1 - v0
        span = ts1 - ts0
        # Java divides by zero in double arithmetic (NaN/Infinity) for a one-snapshot list; a
        # list always starts with its baseline here, so span > 0 whenever it is not empty.
        tps = total * 1000.0 / span if span else 0.0
        times = times1 - times0
        return StatsSnapshot(total, tps, total / times if times > 0 else 0.0)


class BrokerStatsItems:
    """The kept ``statsTable`` entries, refreshed from ``stats`` (a :class:`BrokerStats`)."""

    def __init__(self, stats: Any, cluster_name: str, clock: Any) -> None:
        self.stats = stats
        self.cluster_name = cluster_name
        self.clock = clock
        self.table: dict[str, dict[str, StatsItem]] = {
            TOPIC_PUT_NUMS: {}, GROUP_GET_NUMS: {}, BROKER_PUT_NUMS: {}, BROKER_GET_NUMS: {}}

    def _totals(self) -> dict[str, dict[str, int]]:
        stats = self.stats
        by_group = {f"{topic}@{group}": n
                    for (group, topic), n in stats.get_by_group_topic.items()}
        totals = {
            TOPIC_PUT_NUMS: dict(stats.put_by_topic),
            GROUP_GET_NUMS: by_group,
            BROKER_PUT_NUMS: {},
            BROKER_GET_NUMS: {},
        }
        # Java creates the cluster-keyed item on the first put / get (getAndCreateStatsItem).
        if stats.put_by_topic:
            totals[BROKER_PUT_NUMS][self.cluster_name] = stats.put_total
        if by_group:
            totals[BROKER_GET_NUMS][self.cluster_name] = stats.get_total
        return totals

    def refresh(self) -> None:
        """Bring every item's value (and ``times``) up to the counters, creating new items."""
        for name, values in self._totals().items():
            items = self.table[name]
            for key, value in values.items():
                item = items.get(key)
                if item is None:
                    item = items[key] = StatsItem()
                item.times += max(value - item.value, 0)
                item.value = value

    def _sample(self, window: str) -> None:
        self.refresh()
        now = int(self.clock.seconds() * 1000)
        for items in self.table.values():
            for item in items.values():
                item.sample(window, now)

    def sampling_in_seconds(self) -> None:
        """Every 10 s: a minute-list snapshot of every item."""
        self._sample("minute")

    def sampling_in_minutes(self) -> None:
        """Every 10 min: an hour-list snapshot."""
        self._sample("hour")

    def sampling_in_hour(self) -> None:
        """Every hour: a day-list snapshot."""
        self._sample("day")

    def broker_totals_history(self) -> list[tuple[int, int, int]]:
        """The broker's put and get totals at its minute-list snapshots, oldest first:
        ``(timestamp ms, put total, get total)``, at the instants both totals are known (a
        total is 0 before its item's zero baseline; one snapshot dropped from a full list is
        not known)."""
        lists = [item.lists["minute"] if item is not None else deque()
                 for item in (self.table[BROKER_PUT_NUMS].get(self.cluster_name),
                              self.table[BROKER_GET_NUMS].get(self.cluster_name))]
        known = [{ts: v for ts, _, v in snaps} for snaps in lists]

        def total(i: int, ts: int) -> int | None:
            snaps = lists[i]
            if ts in known[i]:
                return known[i][ts]
            if not snaps or (ts < snaps[0][0] and snaps[0][2] == 0):
                return 0
            return None

        out = []
        for ts in sorted(known[0].keys() | known[1].keys()):
            put, get = total(0, ts), total(1, ts)
            if put is not None and get is not None:
                out.append((ts, put, get))
        return out

    def get_stats_item(self, name: str, key: str) -> StatsItem | None:
        """``BrokerStatsManager.getStatsItem``: None for an unknown name or key."""
        return self.table.get(name, {}).get(key)

    def periodic_tasks(self) -> list[tuple[float, Any]]:
        """(period in s, function) pairs the broker runs from its start."""
        return [(SAMPLE_SECONDS_S, self.sampling_in_seconds),
                (SAMPLE_MINUTES_S, self.sampling_in_minutes),
                (SAMPLE_HOUR_S, self.sampling_in_hour)]
