"""``rmq-emu report all`` turnaround on a small store: wall time and peak memory, beside the
SparkSession start alone.

    .venv/bin/python bench/report_latency.py [--messages 1000] [--repeat 3] [--master local[*]]
                                             [--only session|report]

1. Store: ``--messages`` messages sent through an ``EmbeddedCluster`` (the production wiring)
   to 4 topics of 4 queues, 1 KiB bodies, one in 20 with delay level 1 (the clock is moved on
   so they are delivered), then a group commits offset 1 on every queue; written once into a
   temporary directory.
2. ``--repeat`` times, alternating: (a) a Python process that starts the SparkSession a small
   store's report gets (``reports.session.get_session(quick=True)``) and stops it; (b) ``python -m
   rocketmq_emu.reports all --store S --out O``, the command a user runs, from start to its
   exit (the last file written). Each is a fresh process tree, sampled every 50 ms: peak RSS
   summed over the tree (the driver, the Spark JVM it launches, the Python workers).

Prints each run and the median of the runs for (a) and (b); ``--only`` runs one of them (the
suite's smoke tests run each alone: the two in a row take longer than a test may). Targets
(issue 16): (b) <= 20 s and <= 1 GB peak RSS over the tree for 1,000 messages.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

#: The session a small store's report gets (``quick``: reports.session.QUICK_CONF), alone.
SESSION_ONLY = (
    "from rocketmq_emu.reports.session import get_session\n"
    "import sys\n"
    "get_session(sys.argv[1] if len(sys.argv) > 1 else None, quick=True).stop()\n"
)


def build_store(root: str, messages: int) -> None:
    """Send ``messages`` through a one-broker EmbeddedCluster whose store is ``root``."""
    from rocketmq_emu.client.message import Message
    from rocketmq_emu.client.testing import EmbeddedCluster

    topics = [f"BenchReport{i}" for i in range(4)]
    with EmbeddedCluster(store_dir=root, grpc_port=None, clock="manual") as cluster:
        for topic in topics:
            cluster.create_topic(topic, 4)
        producer = cluster.producer()
        body = b"x" * 1024
        for i in range(messages):
            msg = Message(topics[i % len(topics)], body, tags=f"T{i % 3}", keys=f"k{i}")
            if i % 20 == 0:
                msg.delay_level = 1
            producer.send(msg)
        cluster.clock.advance(2.0)  # level 1 (1 s): the scheduled copies are delivered
        time.sleep(0.5)
        puller = cluster.pull_consumer("BenchReportGroup")
        for topic in topics:
            for mq in puller.fetch_subscribe_queues(topic):
                puller.update_offset(mq, 1)


def run_tree(argv: list[str], env: dict) -> tuple[float, int, int]:
    """Run ``argv``; (wall seconds, peak RSS bytes summed over its process tree, exit code)."""
    t0 = time.perf_counter()
    proc = psutil.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while proc.poll() is None:
        total = 0
        try:
            tree = [proc, *proc.children(recursive=True)]
        except psutil.Error:
            tree = [proc]
        for p in tree:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        peak = max(peak, total)
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        sys.stderr.write(err[-3000:])
    return wall, peak, proc.returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument("--only", choices=("session", "report"), default=None,
                   help="run (a) the SparkSession alone or (b) report all, not both")
    args = p.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.ERROR)
    work = tempfile.mkdtemp(prefix="rmq-emu-bench-report-")
    store = os.path.join(work, "store")
    rc = 0
    try:
        if args.only != "session":  # the session alone reads no store
            t0 = time.perf_counter()
            build_store(store, args.messages)
            print(f"store: {args.messages} messages in {store} "
                  f"(built in {time.perf_counter() - t0:.1f} s)")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        master = ["--master", args.master] if args.master else []
        phases = [args.only] if args.only else ["session", "report"]
        runs: dict[str, list[tuple[float, int]]] = {phase: [] for phase in phases}
        for i in range(args.repeat):
            if "session" in runs:
                wall, peak, code = run_tree(
                    [sys.executable, "-c", SESSION_ONLY, *([args.master] if args.master else [])],
                    env)
                rc = rc or code
                runs["session"].append((wall, peak))
                print(f"run {i + 1}: SparkSession start+stop {wall:6.1f} s  peak RSS "
                      f"{peak / 2**20:6.0f} MiB  (exit {code})")
            if "report" in runs:
                out = os.path.join(work, f"out{i}")
                wall, peak, code = run_tree(
                    [sys.executable, "-m", "rocketmq_emu.reports", "all", "--store", store,
                     "--out", out, *master], env)
                rc = rc or code
                runs["report"].append((wall, peak))
                print(f"run {i + 1}: report all              {wall:6.1f} s  peak RSS "
                      f"{peak / 2**20:6.0f} MiB  (exit {code})")
        print(f"\nmedian of {args.repeat}          wall s   peak RSS MiB (process tree)")
        for key, label in (("session", "SparkSession alone"), ("report", "report all")):
            if key not in runs:
                continue
            walls = [w for w, _ in runs[key]]
            peaks = [m for _, m in runs[key]]
            print(f"{label:<24} {statistics.median(walls):7.1f}   "
                  f"{statistics.median(peaks) / 2**20:8.0f}")
        if "report" in runs:
            walls = [w for w, _ in runs["report"]]
            peaks = [m for _, m in runs["report"]]
            print(f"targets: report all <= 20 s ({statistics.median(walls):.1f}), "
                  f"<= 1024 MiB ({statistics.median(peaks) / 2**20:.0f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
