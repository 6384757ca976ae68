"""Time of the harness's first delivery: from a send to ``inbox.wait_for(1)`` returning.

Two flows, alternated run by run in one embedded cluster (default clock, one warm producer):

* ``collector-first``: ``cluster.collector(topic)`` before the topic exists, then the send that
  creates it (the flow of a test that does not create its topic first);
* ``create_topic-first``: ``cluster.create_topic(topic)``, then the collector, then the send.

Each run uses a new topic and a new collector (stopped afterwards). ``--pause-ms`` waits that
long between making the collector and sending, to show how the first delivery depends on how
long the topic has been missing (the consumer looks for its route again on a backoff that
doubles from 10 ms up to its rebalance interval). Prints the median, best and worst of each
flow in ms; exit status 1 if the collector-first median is over ``--target-ms`` (100).

    .venv/bin/python bench/first_delivery.py [--runs 15] [--pause-ms 0] [--target-ms 100]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time

from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import EmbeddedCluster, unique

FLOWS = ("collector-first", "create_topic-first")


def one_run(cluster: EmbeddedCluster, producer: object, flow: str, pause_s: float,
            timeout: float) -> float:
    """Seconds from the send to ``wait_for(1)`` returning, for a new topic."""
    topic = unique("FirstDelivery")
    if flow == "create_topic-first":
        cluster.create_topic(topic)
    inbox = cluster.collector(topic)
    try:
        if pause_s:
            time.sleep(pause_s)  # the caller's thread; the reactor runs on meanwhile
        start = time.perf_counter()
        producer.send(Message(topic, b"first"))  # type: ignore[attr-defined]
        inbox.wait_for(1, timeout=timeout)
        return time.perf_counter() - start
    finally:
        inbox.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=15, help="runs of each flow (default 15)")
    p.add_argument("--pause-ms", type=float, default=0.0,
                   help="wait between making the collector and sending (default 0)")
    p.add_argument("--target-ms", type=float, default=100.0,
                   help="collector-first median to stay under (default 100)")
    p.add_argument("--timeout", type=float, default=10.0, help="wait_for's timeout, seconds")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    times: dict[str, list[float]] = {flow: [] for flow in FLOWS}
    with EmbeddedCluster() as cluster:
        producer = cluster.producer()
        producer.send(Message(unique("WarmUp"), b"warm-up"))  # connections and the TBW102 route
        for _ in range(args.runs):
            for flow in FLOWS:
                times[flow].append(one_run(cluster, producer, flow, args.pause_ms / 1000.0,
                                           args.timeout))
    print(f"send -> wait_for(1), {args.runs} runs each, pause {args.pause_ms:g} ms (ms)")
    print(f"{'flow':<20} {'median':>8} {'best':>8} {'worst':>8}")
    for flow, values in times.items():
        ms = [v * 1000 for v in values]
        print(f"{flow:<20} {statistics.median(ms):8.1f} {min(ms):8.1f} {max(ms):8.1f}")
    median = statistics.median(times["collector-first"]) * 1000
    if median > args.target_ms:
        print(f"collector-first median {median:.1f} ms is over the {args.target_ms:g} ms target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
