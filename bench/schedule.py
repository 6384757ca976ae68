"""Benchmark of arbitrary-time delivery on the real reactor and the real MessageStore.

Run by hand (not part of the test suite)::

    .venv/bin/python bench/schedule.py                       # lateness, 200k msgs at 5,000/s
    .venv/bin/python bench/schedule.py --n 1000000 --window 200
    .venv/bin/python bench/schedule.py --mode rss            # 1,000,000 pending over 30 days

``lateness``: N timer messages (TIMER_DELIVER_MS) are sent through the send-path transform
into the store, due evenly over ``--window`` seconds starting ``--lead`` seconds after the
start (so the due rate is N / window); lateness = store timestamp of the delivered message
minus its due time (TIMER_OUT_MS). Prints p50 / p99 / max and peak RSS.

``rss``: N messages due uniformly over ``--days`` days; once all are copied into the
schedule_log, prints RSS (total, anonymous, file-backed: the commitlog is mmapped), peak RSS,
wheel size and schedule_log size on disk.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import resource
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import psutil  # noqa: E402
from twisted.internet import reactor  # noqa: E402

from rocketmq_emu.broker.commitlog.record import MessageRecord  # noqa: E402
from rocketmq_emu.broker.message import TIMER_TOPIC  # noqa: E402
from rocketmq_emu.broker.schedule import (  # noqa: E402
    ScheduleConfig,
    ScheduleServices,
    TimerConfig,
    transform_for_put,
)
from rocketmq_emu.broker.schedule.hash_wheel import now_ms  # noqa: E402
from rocketmq_emu.broker.store import MessageStore  # noqa: E402
from rocketmq_emu.broker.store_config import MessageStoreConfig  # noqa: E402

CHUNK = 2000  # messages sent per reactor turn


def rss_breakdown() -> dict[str, int]:
    """Current RSS, anonymous and file-backed parts (bytes) from /proc/self/status."""
    out = {"rss": psutil.Process().memory_info().rss}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:")):
                    key, value = line.split(":")
                    out[key.strip()] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def peak_rss() -> int:
    """Peak RSS of this process in bytes (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def mb(n: int) -> str:
    return f"{n / 1048576:.1f} MB"


def pct(sorted_values: list[int], p: float) -> int:
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(p / 100 * len(sorted_values)))]


def open_store(root: str, args) -> tuple[MessageStore, ScheduleServices]:
    cfg = MessageStoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commitlog=args.commitlog_mb * 1024 * 1024,
        mapped_file_size_consume_queue=args.cq_units * 20,
        warm_mapped_file_enable=args.warm,
        message_index_enable=False,
    )
    # --store-timers: the store's own flush/retention timers on the reactor (msync of dirty
    # mapped pages runs synchronously there); off, the OS writes dirty pages back by itself.
    store = MessageStore(cfg, reactor, reactor if args.store_timers else None)
    if not store.load():
        raise SystemExit(f"store did not load: {store.load_error}")
    store.start()
    services = ScheduleServices(store, reactor, ScheduleConfig(
        store_path_root_dir=root, timer=TimerConfig(tick_ms=args.tick_ms)))
    services.load()
    services.start()
    return store, services


def sender(store, services, dues: list[int], body: bytes, on_done) -> None:
    """Send the timer messages CHUNK per reactor turn (a producer would be interleaved too)."""
    state = {"i": 0}
    n = len(dues)

    def step():
        i = state["i"]
        end = min(i + CHUNK, n)
        for k in range(i, end):
            rec = MessageRecord(topic="BenchTopic", body=body, queue_id=k % 4,
                                properties={"UNIQ_KEY": f"K{k}",
                                            "TIMER_DELIVER_MS": str(dues[k])})
            result = store.put_message(transform_for_put(
                rec, now_ms(reactor), services.levels,
                timer_max_delay_sec=services.config.timer.max_delay_sec))
            if result.status.name != "PUT_OK":
                raise SystemExit(f"send {k} failed: {result.status}")
        state["i"] = end
        if end < n:
            reactor.callLater(0, step)
        else:
            on_done()

    reactor.callLater(0, step)


def run_lateness(args, root: str) -> None:
    store, services = open_store(root, args)
    n = args.n
    start_ms = int(reactor.seconds() * 1000)
    base = start_ms + int(args.lead * 1000)
    window_ms = int(args.window * 1000)
    rng = random.Random(7)
    dues = sorted(base + rng.randrange(window_ms) for _ in range(n))
    lateness: list[int] = []
    t = {"sent": 0.0}

    def on_arrival(topic, queue_id, queue_offset, tags_code, record):
        if topic == "BenchTopic" and record is not None:
            out = record.properties.get("TIMER_OUT_MS")
            if out is not None:
                lateness.append(record.store_timestamp - int(out))
                if len(lateness) == n:
                    reactor.callLater(0, reactor.stop)

    store.add_arrival_listener(on_arrival)
    t0 = time.monotonic()

    def sent():
        t["sent"] = time.monotonic() - t0
        ahead = base - int(reactor.seconds() * 1000)
        print(f"sent {n} timer messages in {t['sent']:.1f}s ({n / t['sent']:,.0f}/s); "
              f"first due {'in' if ahead >= 0 else 'PAST by'} {abs(ahead) / 1000:.1f}s",
              flush=True)

    sender(store, services, dues, b"x" * args.body, sent)
    reactor.callLater(args.lead + args.window + args.grace, reactor.stop)
    reactor.run()
    services.shutdown()
    store.shutdown()
    lateness.sort()
    print(f"delivered {len(lateness)}/{n} over a {args.window:.0f}s window "
          f"(due rate {n / args.window:,.0f} msgs/s), tick {args.tick_ms} ms")
    print(f"lateness ms: p50 {pct(lateness, 50)}  p99 {pct(lateness, 99)}  "
          f"max {lateness[-1] if lateness else 0}  min {lateness[0] if lateness else 0}")
    print(f"peak RSS {mb(peak_rss())}; store timers on the reactor: {args.store_timers}")


def run_rss(args, root: str) -> None:
    store, services = open_store(root, args)
    n = args.n
    now = int(reactor.seconds() * 1000)
    span = int(args.days * 86_400_000)
    rng = random.Random(11)
    dues = [now + 60_000 + rng.randrange(span) for _ in range(n)]
    t0 = time.monotonic()
    timer = services.timer

    def check():
        if timer.replay_offset >= store.get_max_offset_in_queue(TIMER_TOPIC, 0) and (
            timer.replay_offset >= n
        ):
            elapsed = time.monotonic() - t0
            r = rss_breakdown()
            size = sum(os.path.getsize(os.path.join(timer.slog.dir, f))
                       for f in os.listdir(timer.slog.dir))
            print(f"{n} pending over {args.days:g} days, stored and copied in {elapsed:.1f}s "
                  f"({n / elapsed:,.0f}/s)")
            print(f"schedule_log: {len(timer.slog.segments)} segments, {mb(size)} on disk; "
                  f"in the wheel (loaded horizon): {timer.pending}")
            print(f"RSS now {mb(r['rss'])} (anon {mb(r.get('RssAnon', 0))}, "
                  f"file-backed mmaps {mb(r.get('RssFile', 0))}); peak RSS {mb(peak_rss())}")
            reactor.stop()
        else:
            reactor.callLater(0.2, check)

    sender(store, services, dues, b"x" * args.body, lambda: reactor.callLater(0, check))
    reactor.run()
    services.shutdown()
    store.shutdown()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=["lateness", "rss"], default="lateness")
    p.add_argument("--n", type=int, default=None, help="messages (200k lateness, 1M rss)")
    p.add_argument("--window", type=float, default=None,
                   help="seconds over which messages come due (default n/5000)")
    p.add_argument("--lead", type=float, default=None,
                   help="seconds from start to the first due time (default: room to send)")
    p.add_argument("--grace", type=float, default=30.0, help="seconds to wait after the window")
    p.add_argument("--days", type=float, default=30.0, help="rss mode: spread in days")
    p.add_argument("--body", type=int, default=64, help="body bytes")
    p.add_argument("--tick-ms", type=int, default=10)
    p.add_argument("--commitlog-mb", type=int, default=128)
    p.add_argument("--warm", action=argparse.BooleanOptionalAction, default=True,
                   help="pre-touch new commitlog files (the store's default; avoids page "
                        "faults on the put path)")
    p.add_argument("--store-timers", action="store_true",
                   help="run the store's flush/retention timers on the reactor too")
    p.add_argument("--cq-units", type=int, default=300_000, help="units per consume-queue file")
    p.add_argument("--dir", default=None, help="store directory (default: a temp dir, removed)")
    args = p.parse_args()
    if args.n is None:
        args.n = 200_000 if args.mode == "lateness" else 1_000_000
    if args.window is None:
        args.window = args.n / 5000
    if args.lead is None:
        args.lead = 10 + args.n / 12_000  # sending runs at ~15-25k msgs/s on one core
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from twisted.logger import globalLogBeginner, textFileLogObserver

    globalLogBeginner.beginLoggingTo([textFileLogObserver(sys.stderr)], redirectStandardIO=False)
    root = args.dir or tempfile.mkdtemp(prefix="bench-schedule-")
    try:
        (run_lateness if args.mode == "lateness" else run_rss)(args, root)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
