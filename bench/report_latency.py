"""``rmq-emu report`` turnaround on a small store, cold and warm: wall time and peak memory.

    .venv/bin/python bench/report_latency.py [--messages 1000] [--repeat 3] [--master local[*]]
                                             [--only session|cold|warm]

1. Store: ``--messages`` messages sent through an ``EmbeddedCluster`` (the production wiring)
   to 4 topics of 4 queues, 1 KiB bodies, one in 20 with delay level 1 (the clock is moved on
   so they are delivered), then a group commits offset 1 on every queue; written once into a
   temporary directory.
2. As a user's install runs: with a bytecode cache (a temporary ``PYTHONPYCACHEPREFIX``, even
   when the caller sets ``PYTHONDONTWRITEBYTECODE``) and the user's JVM class-data archive
   (``reports.jvm_archive``). A first ``report all``, not counted, fills the bytecode cache and
   writes the archive if there is none (its time is printed).
3. **session**: a Python process that starts the SparkSession a small store's report gets
   (``reports.session.get_session(quick=True)``) and stops it.
4. **cold**: ``python -m rocketmq_emu.reports all --store S --out O --local``, the command a
   user runs when no report service runs, from start to its exit.
5. **warm**: ``rmq-emu report serve`` started once (its time to ready is printed), then
   ``report all --server URL`` and ``report traffic --server URL``, each a fresh client process
   timed from start to exit; then SIGTERM, and the service must exit 0.

Runs alternate ``--repeat`` times; each is a fresh process tree sampled every 50 ms: peak RSS
summed over the tree (the driver, the Spark JVM it launches, the Python workers). Prints each
run and the medians. Targets (issue 29, 1,000 messages): cold ``report all`` <= 20 s and
<= 1 GiB; warm ``report all`` <= 3 s; warm single report <= 2 s.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

#: The session a small store's report gets (``quick``: reports.session.QUICK_CONF), alone.
SESSION_ONLY = (
    "from rocketmq_emu.reports.session import get_session, stop_session\n"
    "import sys\n"
    "stop_session(get_session(sys.argv[1] if len(sys.argv) > 1 else None, quick=True))\n"
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


TARGETS = {"cold": 20.0, "warm all": 3.0, "warm traffic": 2.0}
COLD_MEMORY = 1024 * 2**20


def start_service(env: dict, work: str, master: list[str]) -> tuple[psutil.Popen, str, float]:
    """``report serve`` on a free port; (process, URL, seconds until ready)."""
    t0 = time.perf_counter()
    proc = psutil.Popen(
        [sys.executable, "-m", "rocketmq_emu.reports", "serve", "--state-file",
         os.path.join(work, "service.json"), *master],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        found = re.search(r"report service: (http://\S+) ", line)
        if found:
            return proc, found.group(1), time.perf_counter() - t0
    raise SystemExit(f"report serve exited {proc.wait()} before it was ready")


def stop_service(proc: psutil.Popen) -> int:
    """SIGTERM; the exit status (the service stops its session and ends)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=120)
    finally:
        if proc.stdout:
            proc.stdout.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument("--only", choices=("session", "cold", "warm"), default=None,
                   help="run one phase (the suite's smoke tests run each alone)")
    args = p.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.ERROR)
    work = tempfile.mkdtemp(prefix="rmq-emu-bench-report-")
    store = os.path.join(work, "store")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONUNBUFFERED="1", PYTHONPYCACHEPREFIX=os.path.join(work, "pyc"),
               RMQ_EMU_REPORT_STATE=os.path.join(work, "no-service.json"))
    master = ["--master", args.master] if args.master else []
    phases = [args.only] if args.only else ["session", "cold", "warm"]
    runs: dict[str, list[tuple[float, int]]] = {}
    rc = 0
    try:
        if phases != ["session"]:  # the session alone reads no store
            t0 = time.perf_counter()
            build_store(store, args.messages)
            print(f"store: {args.messages} messages in {store} "
                  f"(built in {time.perf_counter() - t0:.1f} s)")
        report = [sys.executable, "-m", "rocketmq_emu.reports"]
        wall, peak, code = run_tree(
            [*report, "all", "--store", store, "--out", os.path.join(work, "first"), "--local",
             *master] if phases != ["session"] else [sys.executable, "-c", SESSION_ONLY], env)
        rc = rc or code
        print(f"first run (fills the bytecode cache, writes the JVM archive if absent): "
              f"{wall:.1f} s (not counted)")
        service = None
        if "warm" in phases:
            service, url, ready = start_service(env, work, master)
            print(f"report service ready in {ready:.1f} s at {url}")
        try:
            for i in range(args.repeat):
                if "session" in phases:
                    rc = _timed(runs, "SparkSession alone", i,
                                [sys.executable, "-c", SESSION_ONLY,
                                 *([args.master] if args.master else [])], env) or rc
                if "cold" in phases:
                    rc = _timed(runs, "cold", i, [*report, "all", "--store", store, "--out",
                                                  os.path.join(work, f"cold{i}"), "--local",
                                                  *master], env) or rc
                if service is not None:
                    for name in ("all", "traffic"):
                        rc = _timed(runs, f"warm {name}", i, [
                            *report, name, "--store", store, "--out",
                            os.path.join(work, f"warm{i}"), "--server", url], env) or rc
        finally:
            if service is not None:
                status = stop_service(service)
                print(f"report service: SIGTERM -> exit {status}")
                rc = rc or status
        print(f"\nmedian of {args.repeat}            wall s   peak RSS MiB (process tree)")
        for key, results in runs.items():
            walls = [w for w, _ in results]
            peaks = [m for _, m in results]
            print(f"{key:<24} {statistics.median(walls):7.1f}   "
                  f"{statistics.median(peaks) / 2**20:8.0f}")
        met = []
        for key, target in TARGETS.items():
            if key in runs:
                got = statistics.median(w for w, _ in runs[key])
                met.append(f"{key} <= {target:g} s ({got:.1f})")
        if "cold" in runs:
            peak = statistics.median(m for _, m in runs["cold"])
            met.append(f"cold <= 1024 MiB ({peak / 2**20:.0f})")
        if met:
            print("targets: " + ", ".join(met))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if rc else 0


def _timed(runs: dict, key: str, i: int, argv: list[str], env: dict) -> int:
    wall, peak, code = run_tree(argv, env)
    runs.setdefault(key, []).append((wall, peak))
    print(f"run {i + 1}: {key:<20} {wall:6.1f} s  peak RSS {peak / 2**20:6.0f} MiB  "
          f"(exit {code})", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
