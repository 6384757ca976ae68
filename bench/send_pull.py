"""Send and pull throughput of the broker against the Twisted floor, in one run.

Phases (each driven by the same pipelined loopback client, run in a subprocess so it has its own
core: a raw non-blocking socket keeping ``--window`` requests in flight):

1. **floor**: a bare Twisted server that cuts the same SEND_MESSAGE_V2 frames from a bytearray
   and answers each with one fixed, pre-encoded response (the framework's cost, nothing else);
2. **send**: the broker (``BrokerController`` in this process, temporary store, no name server)
   handling SEND_MESSAGE_V2 (310) with 1 KiB bodies;
3. **pull**: PULL_MESSAGE (11) of 32 messages at a time over what phase 2 stored.

Prints msgs/s, server CPU µs per request and, as a reference, the ratio broker/floor.
``--profile FILE`` writes a cProfile of the broker phases. ``--cpu`` instead measures the CPU
cost per message of the floor's and the broker's request paths in this process, without sockets
(the same frames fed 32 per read into the protocol over a StringTransport): a figure far less
sensitive to a busy machine than throughput, for optimisation work; it also prints the cost of
the protocol + send path alone (``store.put_message`` stubbed with the result of a real put),
which splits the broker's figure into "remoting and send processor" and "store" (append,
consume queue, arrival listeners), the index entries those sends queued (built after the loop:
the broker builds them on the reactor's next turn, RocketMQ in its reput thread), and the CPU
per message of PULL_MESSAGE (32 per pull,
8 pulls per read) over what the send path stored, every answer checked to be FOUND with 32
records; with ``--profile FILE`` the pulls' profile goes to ``FILE.pull``. Targets (issue 13): send <= 10 us/msg,
pull <= 8 us/msg. Exit status 1 if any response was an error. Runtime well under a minute.

``--acl`` (issue 15) instead compares SEND_MESSAGE_V2 against two brokers in this process, one
without ACL and one with ``aclEnable=true`` (a temporary ``rocketmqHome`` whose
``conf/plain_acl.yml`` holds one account with PUB on the bench topic and no white list), phases
alternating ``--repeat`` times: the load generator signs its frames with that account (each of
its distinct frames signed once by ``broker.acl.signer``; the signature covers the extFields and
body, so it stays valid on every send, and the broker checks every request as a real client's).
Before measuring, the ACL broker must refuse an unsigned and a wrongly signed send. Prints both
rates and CPU per request and their ratios. ``--acl --cpu`` does the same in-process (CPU per
message, ``StringTransport``), plus the cost of the check alone.

``--control --cpu`` compares, in-process, sends to a bare broker and to one wired as
``rmq-emu up --control-port`` wires it: a controllable clock for business time and a fault
injector (no rules) recording the request log.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time

from remoting_bench import (
    ACL_ACCESS_KEY,
    ACL_SECRET_KEY,
    FRAME_LENGTH,
    check_acl_refuses,
    count_records,
    floor_factory,
    pull_frame,
    response_ok,
    send_frame,
    start_broker,
    write_acl_home,
)
from send_pull_cpu import acl_cpu_costs, control_cpu_costs, cpu_costs

# --- the load generator (runs in a child process) ---------------------------------------------


def run_load(host: str, port: int, kind: str, window: int, duration: float, warmup: float,
             total_msgs: int = 0, signed: bool = False, tls: bool = False) -> dict:
    """Keep ``window`` requests in flight for ``warmup + duration`` seconds; count answers.

    ``signed``: the send frames carry the bench account's AccessKey and Signature. ``tls``: the
    connection is TLS (handshake first, trusting any certificate, as a RocketMQ client in test
    mode); writes go in 16 KiB slices so a retried write repeats the same bytes.
    """
    if kind == "pull":
        step = 32
        offsets = list(range(0, max(total_msgs, 1), step))
        frames = [pull_frame(o) for o in offsets]
    else:
        credentials = (ACL_ACCESS_KEY, ACL_SECRET_KEY) if signed else None
        frames = [send_frame(q, credentials) for q in range(4)]
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    would_block: tuple[type[Exception], ...] = (BlockingIOError,)
    if tls:
        import ssl

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        sock = ctx.wrap_socket(sock)
        would_block = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    registered = selectors.EVENT_READ | selectors.EVENT_WRITE
    sel.register(sock, registered)
    buf = bytearray()
    out = bytearray()
    in_flight = 0
    sent = 0
    answered = 0
    errors = 0
    msgs = 0
    measured_answers = 0
    measured_msgs = 0
    t0 = time.perf_counter()
    t_measure = t0 + warmup
    t_end = t_measure + duration
    measuring = False
    t_start_measure = t_end
    fi = 0
    nframes = len(frames)
    batch = 32
    while True:
        now = time.perf_counter()
        if not measuring and now >= t_measure:
            measuring = True
            t_start_measure = now
            measured_answers = 0
            measured_msgs = 0
        if now >= t_end:
            break
        while in_flight < window and len(out) < 1 << 20:
            for _ in range(min(batch, window - in_flight)):
                out += frames[fi]
                fi += 1
                if fi == nframes:
                    fi = 0
                in_flight += 1
                sent += 1
        # Ask for writability only with bytes to send: otherwise select returns at once and
        # the client spins, taking CPU the server's flush and the kernel's TCP work need.
        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0)
        if want != registered:
            sel.modify(sock, want)
            registered = want
        for _key, mask in sel.select(0.5):
            if mask & selectors.EVENT_WRITE and out:
                try:
                    n = sock.send(out[:16384] if tls else out)
                    del out[:n]
                except would_block:
                    pass
            if mask & selectors.EVENT_READ:
                try:
                    data = sock.recv(1 << 20)
                    while tls and sock.pending():
                        data += sock.recv(1 << 20)
                except would_block:
                    continue
                if not data:
                    raise SystemExit("server closed the connection")
                buf += data
                pos = 0
                blen = len(buf)
                while blen - pos >= 4:
                    flen = FRAME_LENGTH.unpack_from(buf, pos)[0]
                    if blen - pos - 4 < flen:
                        break
                    if not response_ok(buf, pos + 4):
                        errors += 1
                        if errors == 1:
                            sys.stderr.write(f"error response: {bytes(buf[pos:pos + 300])!r}\n")
                    elif kind == "pull":
                        c = count_records(buf, pos + 4, pos + 4 + flen)
                        msgs += c
                        if measuring:
                            measured_msgs += c
                    pos += 4 + flen
                    in_flight -= 1
                    answered += 1
                    if measuring:
                        measured_answers += 1
                del buf[:pos]
    elapsed = time.perf_counter() - t_start_measure
    sock.close()
    return {
        "kind": kind, "answered": answered, "errors": errors, "msgs": msgs, "sent": sent,
        "measured_answers": measured_answers, "measured_msgs": measured_msgs,
        "elapsed": elapsed,
    }


def run_client_process(port: int, kind: str, args: argparse.Namespace, total_msgs: int = 0,
                       signed: bool = False, tls: bool = False) -> dict:
    """Run :func:`run_load` in a child Python process (its own core, its own GIL)."""
    spec = {"port": port, "kind": kind, "window": args.window, "duration": args.duration,
            "warmup": args.warmup, "total_msgs": total_msgs, "signed": signed, "tls": tls}
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--client", json.dumps(spec)],
        capture_output=True, text=True, timeout=args.warmup + args.duration + 60,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"load client failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- orchestration ----------------------------------------------------------------------------


def _phase(reactor, port: int, kind: str, args, total_msgs: int = 0, profiler=None,
           signed: bool = False, tls: bool = False):
    """Run one load phase from a thread while the reactor serves; returns (result, cpu_s)."""
    from twisted.internet import threads

    cpu0 = time.process_time()
    if profiler is not None:
        profiler.enable()
    d = threads.deferToThread(run_client_process, port, kind, args, total_msgs, signed, tls)

    def done(result):
        if profiler is not None:
            profiler.disable()
        return result, time.process_time() - cpu0

    d.addCallback(done)
    return d


def _report(name: str, result: dict, cpu: float, count_key: str = "measured_answers") -> float:
    rate = result[count_key] / result["elapsed"] if result["elapsed"] > 0 else 0.0
    per_req = cpu / result["answered"] * 1e6 if result["answered"] else float("nan")
    print(f"{name:<28} {rate:>12,.0f} msgs/s   server CPU {per_req:6.1f} us/request"
          f"   ({result['answered']} answers, {result['errors']} errors)")
    return rate


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--window", type=int, default=256, help="requests in flight")
    p.add_argument("--duration", type=float, default=4.0, help="measured seconds per phase")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds per phase")
    p.add_argument("--repeat", type=int, default=3,
                   help="alternate the floor and broker send phases N times; best of each "
                        "(default 3: this VM's speed drifts by up to 1.7x within a minute)")
    p.add_argument("--profile", metavar="FILE", help="write a cProfile of the broker phases")
    p.add_argument("--cpu", action="store_true",
                   help="only measure CPU us/msg of the floor and broker paths in-process")
    p.add_argument("--acl", action="store_true",
                   help="compare sends to a broker without ACL and one with aclEnable=true "
                        "(signed frames), alternating; with --cpu, in-process")
    p.add_argument("--control", action="store_true",
                   help="with --cpu: compare sends to a bare broker and to one wired as "
                        "rmq-emu up --control-port (controllable clock, fault hooks, request log)")
    p.add_argument("--client", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cpu:
        import logging

        logging.basicConfig(level=logging.ERROR)
        if args.acl:
            return acl_cpu_costs(repeat=args.repeat, profile=args.profile)
        if args.control:
            return control_cpu_costs(repeat=args.repeat, profile=args.profile)
        return cpu_costs(profile=args.profile)
    if args.client:
        spec = json.loads(args.client)
        print(json.dumps(run_load("127.0.0.1", spec.pop("port"), **spec)))
        return 0
    if args.acl:
        return acl_main(args)

    import logging

    from twisted.internet import defer, reactor

    # The broker warns about the auto-created topic and the like: expected here, and noise.
    logging.basicConfig(level=logging.ERROR)
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
    outcome: dict = {"rc": 0}
    store_dir = tempfile.mkdtemp(prefix="rmq-emu-bench-")

    @defer.inlineCallbacks
    def run():
        try:
            port = reactor.listenTCP(0, floor_factory(), interface="127.0.0.1")
            controller = None
            # --repeat N alternates the two phases N times and keeps the best of each (and its
            # CPU per request): the machine's load then weighs on both alike. The broker starts
            # after the first floor phase and its store is flushed after each of its phases, so
            # no broker work (write-back of what it stored) runs during a floor phase.
            floor_rate = send_rate = 0.0
            floor_cpu = send_cpu = float("inf")
            stored = 0
            errors = 0
            for _ in range(args.repeat):
                floor, cpu = yield _phase(reactor, port.getHost().port, "send", args)
                rate = _report("floor (bare Twisted)", floor, cpu)
                if rate > floor_rate:
                    floor_rate, floor_cpu = rate, cpu / max(floor["answered"], 1)
                if controller is None:
                    controller, bport = start_broker(reactor, store_dir)
                    yield defer.maybeDeferred(controller.start)
                    gc.freeze()  # as `rmq-emu up` / `broker` do once started (broker/cli.py)
                send, cpu = yield _phase(reactor, bport, "send", args, profiler=profiler)
                rate = _report("broker SEND_MESSAGE_V2 1KB", send, cpu)
                if rate > send_rate:
                    send_rate, send_cpu = rate, cpu / max(send["answered"], 1)
                stored += send["answered"] - send["errors"]
                errors += send["errors"]
                controller.store.flush()
            yield port.stopListening()
            # Everything went to queues 0..3 round robin; pull queue 0.
            pull, cpu = yield _phase(reactor, bport, "pull", args, total_msgs=stored // 4,
                                     profiler=profiler)
            _report("broker PULL_MESSAGE x32", pull, cpu, "measured_msgs")
            print(f"{'pull requests/s':<28} {pull['measured_answers'] / pull['elapsed']:>12,.0f}")
            ratio = send_rate / floor_rate if floor_rate else 0.0
            print(f"send ratio broker/floor      {ratio:12.2f}   (reference)")
            # Throughput shares the machine with whatever else runs; CPU per request does not.
            print(f"server CPU ratio floor/broker {floor_cpu / send_cpu:11.3f}   "
                  f"(the same comparison by CPU cost per request)")
            if errors or pull["errors"]:
                outcome["rc"] = 1
            yield defer.maybeDeferred(controller.stop)
        except Exception:
            import traceback

            traceback.print_exc()
            outcome["rc"] = 2
        finally:
            reactor.stop()

    reactor.callWhenRunning(run)
    reactor.run()
    if profiler is not None:
        profiler.dump_stats(args.profile)
        print(f"profile written to {args.profile} (python -m pstats {args.profile})")
    import shutil

    shutil.rmtree(store_dir, ignore_errors=True)
    return outcome["rc"]


def acl_main(args: argparse.Namespace) -> int:
    """``--acl``: send throughput and server CPU per request of a broker without ACL and of one
    with ``aclEnable=true`` (signed frames), phases alternating ``args.repeat`` times, best of
    each. Exit status 1 if any answer was an error, 2 if the run failed."""
    import logging
    import shutil

    from twisted.internet import defer, reactor

    logging.basicConfig(level=logging.ERROR)
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
    outcome: dict = {"rc": 0}
    plain_dir = tempfile.mkdtemp(prefix="rmq-emu-bench-")
    acl_dir = tempfile.mkdtemp(prefix="rmq-emu-bench-acl-")
    home = write_acl_home(tempfile.mkdtemp(prefix="rmq-emu-bench-home-"))

    @defer.inlineCallbacks
    def run():
        controllers = []
        try:
            plain, plain_port = start_broker(reactor, plain_dir)
            acl, acl_port = start_broker(reactor, acl_dir, acl_home=home)
            for controller in (plain, acl):
                yield defer.maybeDeferred(controller.start)
                controllers.append(controller)
            check_acl_refuses(acl)
            gc.freeze()  # as `rmq-emu up` / `broker` do once started (broker/cli.py)
            best = {"off": (0.0, float("inf")), "on": (0.0, float("inf"))}
            errors = 0
            for _ in range(args.repeat):
                for key, controller, port, signed, name in (
                        ("off", plain, plain_port, False, "send, ACL off"),
                        ("on", acl, acl_port, True, "send, ACL on (signed)")):
                    result, cpu = yield _phase(reactor, port, "send", args, signed=signed,
                                               profiler=profiler if signed else None)
                    rate = _report(name, result, cpu)
                    per_req = cpu / max(result["answered"], 1) * 1e6
                    best_rate, best_cpu = best[key]
                    best[key] = (max(best_rate, rate), min(best_cpu, per_req))
                    errors += result["errors"]
                    controller.store.flush()
            (off_rate, off_cpu), (on_rate, on_cpu) = best["off"], best["on"]
            print(f"best of {args.repeat}: ACL off {off_rate:,.0f} msgs/s, {off_cpu:.1f} us/request;"
                  f" ACL on {on_rate:,.0f} msgs/s, {on_cpu:.1f} us/request")
            print(f"throughput ratio ACL on/off     {on_rate / off_rate if off_rate else 0.0:8.3f}")
            print(f"server CPU ratio ACL on/off     {on_cpu / off_cpu:8.3f}   "
                  f"(the check: {on_cpu - off_cpu:+.1f} us/request, "
                  f"{(on_cpu - off_cpu) / off_cpu * 100:+.0f} % of a send)")
            if errors:
                outcome["rc"] = 1
        except Exception:
            import traceback

            traceback.print_exc()
            outcome["rc"] = 2
        finally:
            for controller in controllers:
                try:
                    yield defer.maybeDeferred(controller.stop)
                except Exception:
                    import traceback

                    traceback.print_exc()
                    outcome["rc"] = 2
            reactor.stop()

    reactor.callWhenRunning(run)
    reactor.run()
    if profiler is not None:
        profiler.dump_stats(args.profile)
        print(f"profile of the ACL-on phases written to {args.profile} "
              f"(python -m pstats {args.profile})")
    for path in (plain_dir, acl_dir, home):
        shutil.rmtree(path, ignore_errors=True)
    return outcome["rc"]


if __name__ == "__main__":
    sys.exit(main())
