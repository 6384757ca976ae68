"""What RocketMQ's default ``tls.server.mode=permissive`` costs, and what TLS costs, in one run.

Two brokers in this process (temporary stores, no name server): **switch off** has no TLS
switch on its port (``tls=None``: the emulator's ports before issue 15, the reference) and
**permissive** has RocketMQ's default (the first byte of each connection decides plain or TLS,
test-mode certificate made at the first TLS connection). Phases alternate ``--repeat`` times,
each driven from a child process (bench/send_pull.py's pipelined load generator, ``--window``
requests in flight):

1. SEND_MESSAGE_V2 with 1 KiB bodies, plain client, switch off;
2. the same, plain client, permissive (the price of the default for every plain client);
3. the same over TLS (TLS 1.3, the certificate trusted blindly as a RocketMQ client in test
   mode does) to the permissive broker;
4. connection churn: ``--connections`` times connect, one GET_BROKER_RUNTIME_INFO, close,
   plain to switch off, plain to permissive, TLS to permissive (the first-byte look and the
   handshake are paid per connection).

Prints the best rate and the lowest server CPU per request (or per connection) of each, and
the ratios against the switch-off reference. Exit status 1 if any answer was an error.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

from send_pull import _phase, _report

HERE = os.path.dirname(os.path.abspath(__file__))


def client_context() -> ssl.SSLContext:
    """TLS trusting any server certificate (a RocketMQ client in test mode)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def run_connects(port: int, count: int, tls: bool) -> dict:
    """``count`` times: connect, one GET_BROKER_RUNTIME_INFO (28), read the answer, close."""
    from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
    from rocketmq_emu.broker.remoting.command import RemotingCommand

    frame = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO).encode()
    ctx = client_context() if tls else None
    errors = 0
    t0 = time.perf_counter()
    for _ in range(count):
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock = ctx.wrap_socket(raw) if ctx is not None else raw
        try:
            sock.sendall(frame)
            head = _read(sock, 4)
            body = _read(sock, struct.unpack(">I", head)[0])
            if RemotingCommand.decode(head + body).code != ResponseCode.SUCCESS:
                errors += 1
        finally:
            sock.close()
    elapsed = time.perf_counter() - t0
    return {"answered": count, "measured_answers": count, "errors": errors, "elapsed": elapsed}


def _read(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise SystemExit("server closed the connection")
        buf += chunk
    return buf


def _connects_phase(port: int, count: int, tls: bool):
    """Run :func:`run_connects` in a child process from a thread; (result, server cpu_s)."""
    from twisted.internet import threads

    cpu0 = time.process_time()

    def child() -> dict:
        spec = json.dumps({"port": port, "count": count, "tls": tls})
        proc = subprocess.run([sys.executable, os.path.join(HERE, "tls.py"), "--client", spec],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"connect client failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    return threads.deferToThread(child).addCallback(
        lambda result: (result, time.process_time() - cpu0))


SEND_PHASES = (("off", False, "send, switch off"), ("permissive", False, "send, permissive"),
               ("permissive", True, "send, permissive, TLS"))
CONNECT_PHASES = (("off", False, "connect, switch off"),
                  ("permissive", False, "connect, permissive"),
                  ("permissive", True, "connect, permissive, TLS"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--window", type=int, default=256, help="requests in flight")
    p.add_argument("--duration", type=float, default=3.0, help="measured seconds per phase")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds per phase")
    p.add_argument("--repeat", type=int, default=3, help="rounds of alternating phases")
    p.add_argument("--connections", type=int, default=500, help="connections per churn phase")
    p.add_argument("--client", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.client:
        spec = json.loads(args.client)
        print(json.dumps(run_connects(spec["port"], spec["count"], spec["tls"])))
        return 0

    import logging

    from remoting_bench import start_broker
    from twisted.internet import defer, reactor

    from rocketmq_emu.broker.tls.config import DEFAULT_TLS

    logging.basicConfig(level=logging.ERROR)
    dirs = {key: tempfile.mkdtemp(prefix=f"rmq-emu-bench-tls-{key}-") for key in ("off", "permissive")}
    outcome: dict = {"rc": 0}

    @defer.inlineCallbacks
    def run():
        started = []
        try:
            brokers = {"off": start_broker(reactor, dirs["off"], tls=None),
                       "permissive": start_broker(reactor, dirs["permissive"], tls=DEFAULT_TLS)}
            for controller, _port in brokers.values():
                yield defer.maybeDeferred(controller.start)
                started.append(controller)
            gc.freeze()  # as `rmq-emu up` / `broker` do once started (broker/cli.py)
            best: dict[str, tuple[float, float]] = {}
            errors = 0
            for _ in range(args.repeat):
                for key, tls, name in SEND_PHASES:
                    controller, port = brokers[key]
                    result, cpu = yield _phase(reactor, port, "send", args, tls=tls)
                    errors += _keep(best, name, result, cpu)
                    controller.store.flush()
                for key, tls, name in CONNECT_PHASES:
                    result, cpu = yield _connects_phase(brokers[key][1], args.connections, tls)
                    errors += _keep(best, name, result, cpu)
            print(f"\nbest of {args.repeat}               msgs or conns/s   server CPU us each")
            for group in (SEND_PHASES, CONNECT_PHASES):
                ref_rate, ref_cpu = best[group[0][2]]
                for _key, _tls, name in group:
                    rate, cpu = best[name]
                    print(f"{name:<28} {rate:>12,.0f} ({rate / ref_rate:5.2f}x)   {cpu:8.1f} "
                          f"({cpu / ref_cpu:5.2f}x)")
            if errors:
                outcome["rc"] = 1
        except Exception:
            import traceback

            traceback.print_exc()
            outcome["rc"] = 2
        finally:
            for controller in started:
                yield defer.maybeDeferred(controller.stop)
            reactor.stop()

    reactor.callWhenRunning(run)
    reactor.run()
    for path in dirs.values():
        shutil.rmtree(path, ignore_errors=True)
    return outcome["rc"]


def _keep(best: dict, name: str, result: dict, cpu: float) -> int:
    """Print a phase, keep its best rate and lowest CPU per request; its error count."""
    rate = _report(name, result, cpu)
    per_req = cpu / max(result["answered"], 1) * 1e6
    old_rate, old_cpu = best.get(name, (0.0, float("inf")))
    best[name] = (max(old_rate, rate), min(old_cpu, per_req))
    return result["errors"]


if __name__ == "__main__":
    sys.exit(main())
