"""What the conformance monitor costs the broker (issue 17), in-process, CPU per request.

Every cluster (``rmq-emu up``, ``rmq-emu broker``, the test harness) hooks a
:class:`~rocketmq_emu.broker.conformance.monitor.ConformanceMonitor` into its dispatchers, so
each request also runs the request, message and session rules. This bench feeds the same
SEND_MESSAGE_V2 frames (1 KiB bodies, 32 per read; ``bench/remoting_bench.send_frame``) and
PULL_MESSAGE frames into one broker's protocol over a ``StringTransport``, with the monitor
attached and detached in alternation (``--repeat`` rounds, since this machine's speed drifts),
and prints the CPU µs per request of each and the difference; then the CPU of the monitor's
observer alone on one decoded send and pull (the steadier figure: the broker's own cost
drifts between rounds as the store grows). Exit status 1 if any answer was an error.

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


#: Pulls per queue per round (32 messages each, 4 queues, 32 frames per read).
PULLS_PER_QUEUE = 64


def _pull_cost(proto, transport, offset: int) -> float:
    """CPU µs per PULL_MESSAGE of 32 messages from ``offset`` on each of the 4 queues."""
    cpu = 0.0
    frames = [pull_frame(offset + 32 * i, q) for q in range(4) for i in range(PULLS_PER_QUEUE)]
    for start in range(0, len(frames), 32):
        batch = b"".join(frames[start:start + 32])
        t0 = time.process_time()
        proto.dataReceived(batch)
        cpu += time.process_time() - t0
        transport.clear()
    return cpu / len(frames) * 1e6


def _observer_cost(monitor, controller, frame: bytes, count: int = 20000) -> float:
    """CPU µs of the monitor's observer alone on one decoded request, seen ``count`` times on
    one connection (what it adds to every request of that kind, without the broker's noise)."""
    from twisted.internet.testing import StringTransport

    from rocketmq_emu.broker.remoting.command import decode
    from rocketmq_emu.broker.remoting.dispatcher import RequestDispatcher, RequestEvent

    dispatcher = RequestDispatcher(controller.dispatcher.clock)
    monitor.attach("broker", dispatcher, "observer-bench")
    try:
        [observe] = dispatcher._observers
        proto = controller.factory.buildProtocol(("127.0.0.1", 2))
        proto.makeConnection(StringTransport())
        cmd = decode(frame)
        event = RequestEvent(0.0, cmd.code, cmd.opaque, cmd.flag, cmd.ext_fields, len(cmd.body),
                             ("127.0.0.1", 2), proto, cmd)
        t0 = time.process_time()
        for _ in range(count):
            observe(event)
        return (time.process_time() - t0) / count * 1e6
    finally:
        monitor.detach("observer-bench")


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
                results[f"pull {mode}"].append(_pull_cost(proto, transport, offset))
                offset += PULLS_PER_QUEUE * 32
                monitor.detach("bench")
        alone = {"send": [], "pull": []}
        for _ in range(args.repeat):
            alone["send"].append(_observer_cost(monitor, controller, send_frame(0)))
            alone["pull"].append(_observer_cost(monitor, controller, pull_frame(0, 0)))
        controller.store.shutdown()
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"send CPU, monitor off {med['off']:7.2f} us/msg   on {med['on']:7.2f} us/msg   "
          f"monitor {med['on'] - med['off']:+.2f} us ({args.repeat} alternating rounds of "
          f"{args.count}, medians)")
    print(f"pull CPU, monitor off {med['pull off']:7.2f} us/req   on {med['pull on']:7.2f} us/req"
          f"   monitor {med['pull on'] - med['pull off']:+.2f} us (32-message pulls, "
          f"{4 * PULLS_PER_QUEUE} a round)")
    print(f"the observer alone: {statistics.median(alone['send']):.2f} us per send, "
          f"{statistics.median(alone['pull']):.2f} us per pull (medians of {args.repeat} x "
          "20000 calls on one decoded request)")
    for k, v in results.items():
        print(f"  {k:9s} " + " ".join(f"{x:7.2f}" for x in v))
    findings = monitor.findings.to_json()["summary"]
    print(f"findings on the bench's own frames: {findings}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
