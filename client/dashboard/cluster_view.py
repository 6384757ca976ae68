"""``GET /cluster`` and ``GET /recording``: the name server, each broker (identity, TLS and ACL
mode, store and disk, put/get counters and their rate) and whether the session is recorded.

The rate is sampled from the brokers' own counters (``BrokerStats``, what
GET_BROKER_RUNTIME_INFO reports) each time a page asks, at most once a second, and the last
ten minutes of samples are kept: with no page open nothing is sampled and nothing grows.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketmq_emu.broker.processors.admin import VERSION_DESC

#: How long the samples behind the throughput chart go back.
WINDOW_S = 600.0
#: Samples closer together than this are not kept (two pages open poll twice as often).
MIN_STEP_S = 1.0


def dir_bytes(path: Path) -> int:
    """Bytes the files under ``path`` take on disk (0 when it does not exist): allocated
    blocks, not sizes, as a mapped file is created at its full size and filled later."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue  # a file removed meanwhile (retention, a consume queue deleted)
    return total


class ThroughputSamples:
    """Put/get counters of each broker sampled on request; rates between successive samples."""

    def __init__(self, wall: Callable[[], float] = time.time) -> None:
        self.wall = wall
        #: broker name -> (wall seconds, put total, get total, the BrokerStats sampled)
        self._samples: dict[str, deque[tuple[float, int, int, Any]]] = {}

    def sample(self, broker: str, stats: Any,
               history: Callable[[], list[tuple[float, int, int]]] | None = None,
               ) -> list[dict[str, float]]:
        """Take a sample of ``stats`` (unless the last is under a second old) and return the
        rates: ``[{"t": ms, "put": msg/s, "get": msg/s}]``, one per step between samples. A
        restarted broker counts from zero with a new ``stats``: its history starts again.
        ``history()`` gives ``(wall seconds, put total, get total)`` points taken without a
        page (the broker's own 10 s snapshots); those a second or more after the last sample
        fill the time no page polled, so a page opened after the traffic still shows it."""
        now = self.wall()
        samples = self._samples.setdefault(broker, deque())
        if samples and samples[-1][3] is not stats:
            samples.clear()
        if history is not None:
            since = max(samples[-1][0] + MIN_STEP_S if samples else now - WINDOW_S,
                        now - WINDOW_S)
            samples.extend((t, put, get, stats) for t, put, get in history() if since <= t < now)
        if not samples or now - samples[-1][0] >= MIN_STEP_S:
            samples.append((now, stats.put_total, stats.get_total, stats))
        while samples and now - samples[0][0] > WINDOW_S:
            samples.popleft()
        out = []
        points = list(samples)
        for (t0, put0, get0, _), (t1, put1, get1, _) in zip(points, points[1:], strict=False):
            span = t1 - t0
            out.append({"t": int(t1 * 1000), "put": round((put1 - put0) / span, 2),
                        "get": round((get1 - get0) / span, 2)})
        return out


def recording(cluster: Any) -> dict[str, Any]:
    """Whether the cluster records its traffic (``--record``), to which file, how big it is."""
    recorder = getattr(cluster, "recorder", None)
    if recorder is None:
        return {"enabled": False, "file": None, "bytes": None}
    try:
        size = os.stat(recorder.path).st_size
    except OSError:
        size = None
    return {"enabled": True, "file": str(recorder.path), "bytes": size}


#: How long a store's measured size is reused: walking a store of thousands of consume-queue
#: files on every 2 s poll would take the broker's reactor for that long each time.
STORE_SIZE_TTL_S = 30.0


class StoreSizes:
    """Each store's size on disk (:func:`dir_bytes`), measured again at most every
    :data:`STORE_SIZE_TTL_S`."""

    def __init__(self, wall: Callable[[], float] = time.time) -> None:
        self.wall = wall
        #: store path -> (wall seconds, bytes on disk) of its last measure
        self._sizes: dict[Path, tuple[float, int]] = {}

    def disk(self, store_dir: Path) -> dict[str, int]:
        """The file system's total and free bytes and the store's own bytes."""
        usage = shutil.disk_usage(store_dir if store_dir.exists() else Path("."))
        now = self.wall()
        cached = self._sizes.get(store_dir)
        if cached is None or now - cached[0] > STORE_SIZE_TTL_S:
            cached = self._sizes[store_dir] = (now, dir_bytes(store_dir))
        return {"total": usage.total, "free": usage.free, "storeBytes": cached[1]}


def broker_row(cluster: Any, slot: Any, samples: ThroughputSamples,
               sizes: StoreSizes) -> dict[str, Any]:
    """One broker of the Cluster view."""
    cfg = slot.config or slot.template
    tls = getattr(cfg, "tls", None)
    row: dict[str, Any] = {
        "name": slot.name, "addr": cluster.broker_addrs.get(slot.name), "running": slot.running,
        "version": VERSION_DESC, "cluster": getattr(cfg, "broker_cluster_name", None),
        "tls": tls.mode.value if tls is not None else None,
        "acl": bool(getattr(cfg, "acl_enable", False)), "store": str(slot.store_dir),
        "disk": sizes.disk(Path(slot.store_dir)), "putTotal": None, "getTotal": None, "tps": [],
    }
    if slot.running and slot.controller is not None:
        ctx = slot.controller.ctx
        row.update(putTotal=ctx.stats.put_total, getTotal=ctx.stats.get_total,
                   bootTimestamp=ctx.boot_timestamp,
                   tps=samples.sample(slot.name, ctx.stats, lambda: snapshots(ctx, samples.wall())))
    return row


def snapshots(ctx: Any, wall_now: float) -> list[tuple[float, int, int]]:
    """The broker's put and get totals at its 10 s stats snapshots (``BrokerStatsManager``'s,
    on the business clock), placed on the wall clock: ``(wall seconds, put, get)``."""
    items = ctx.stats_items
    if items is None:
        return []
    offset = wall_now - ctx.clock.seconds()
    return [(ts / 1000 + offset, put, get) for ts, put, get in items.broker_totals_history()]


def cluster_view(cluster: Any, clock_state: dict[str, Any], samples: ThroughputSamples,
                 sizes: StoreSizes) -> dict[str, Any]:
    """``GET /cluster``."""
    first = (cluster.slots[0].config or cluster.slots[0].template) if cluster.slots else None
    return {
        "clusterName": getattr(first, "broker_cluster_name", None),
        "namesrv": cluster.namesrv_addr, "grpc": getattr(cluster, "grpc_endpoint", None),
        "now_ms": clock_state["now_ms"], "clock": clock_state, "recording": recording(cluster),
        "brokers": [broker_row(cluster, s, samples, sizes) for s in cluster.slots],
    }
