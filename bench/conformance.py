"""What the conformance monitor costs the broker (issue 17), in-process, CPU per request.

Every cluster (``rmq-emu up``, ``rmq-emu broker``, the test harness) hooks a
:class:`~rocketmq_emu.broker.conformance.monitor.ConformanceMonitor` into its dispatchers, so
each request also runs the request, message and session rules. This bench feeds the same
SEND_MESSAGE_V2 frames (1 KiB bodies, 32 per read; ``bench/remoting_bench.send_frame``) and
PULL_MESSAGE frames into one broker's protocol over a ``StringTransport``, with the monitor
attached and detached in alternation (``--repeat`` rounds, since this machine's speed drifts),
and prints the CPU µs per request of each and the difference. Exit status 1 if any answer was
an error.

Run: ``.venv/bin/python bench/conformance.py [--repeat 5] [--count 20000]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from remoting_bench import pull_frame, send_frame, start_broker  # noqa: E402
from send_pull_cpu import _check_all_ok  # noqa: E402


def _cost(proto, transport, batch: bytes, count: int, check: bool = True) -> float:
    """CPU µs per frame of feeding ``batch`` (32 frames) ``count // 32`` times."""
    cpu = 0.0
    for _ in range(count // 32):
        t0 = time.process_time()
        proto.dataReceived(batch)
        cpu += time.process_time() - t0
        if check:
            _check_all_ok(transport.value())
        transport.clear()
    return cpu / (count // 32 * 32) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--count", type=int, default=20000, help="sends per round")
    args = parser.parse_args()

    from twisted.internet import reactor
    from twisted.internet.testing import StringTransport

    from rocketmq_emu.broker.conformance.monitor import ConformanceMonitor

    sends = b"".join(send_frame(q) for q in range(4)) * 8
    store_dir = tempfile.mkdtemp(prefix="rmq-emu-bench-")
    try:
        controller, _ = start_broker(reactor, store_dir)
        controller.store.load()
        controller.store.start()
        monitor = ConformanceMonitor(reactor, store_of=lambda name: controller.store)
        gc.freeze()
        proto = controller.factory.buildProtocol(("127.0.0.1", 1))
        transport = StringTransport()
        proto.makeConnection(transport)
        _cost(proto, transport, sends, 3200)  # warm up: topic creation, first pages
        results: dict[str, list[float]] = {"off": [], "on": [], "pull off": [], "pull on": []}
        offset = 0
        for _ in range(args.repeat):
            for mode in ("off", "on"):
                if mode == "on":
                    monitor.attach("broker", controller.dispatcher, "bench")
                results[mode].append(_cost(proto, transport, sends, args.count))
                pulls = b"".join(pull_frame(offset + 32 * i, 0) for i in range(32))
                offset += 32 * 32
                results[f"pull {mode}"].append(_cost(proto, transport, pulls, 32, check=False))
                monitor.detach("bench")
        controller.store.shutdown()
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"send CPU, monitor off {med['off']:7.2f} us/msg   on {med['on']:7.2f} us/msg   "
          f"monitor {med['on'] - med['off']:+.2f} us ({args.repeat} alternating rounds of "
          f"{args.count}, medians)")
    print(f"pull CPU, monitor off {med['pull off']:7.2f} us/req   on {med['pull on']:7.2f} us/req"
          f"   monitor {med['pull on'] - med['pull off']:+.2f} us (32-message pulls)")
    for k, v in results.items():
        print(f"  {k:9s} " + " ".join(f"{x:7.2f}" for x in v))
    findings = monitor.findings.to_json()["summary"]
    print(f"findings on the bench's own frames: {findings}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
