"""Send and receive+ack throughput over gRPC beside the remoting figures, with the server CPU
per message of each, in one run.

The server is this process: a :class:`~rocketmq_emu.broker.cluster.Cluster` (one broker on a
temporary store, no name server) serving remoting and, on ``grpc_port``, the gRPC
MessagingService, with the reactor on the main thread. Every load runs in a child process (its
own core and GIL), so ``time.process_time()`` of this process over a phase is the server's CPU
and nothing else: the reactor, the store's flush and warm threads and the idle thread waiting for
the child. (Why not the other way round, the server in a child: the server's CPU would then be
read from ``/proc/<pid>/stat`` in clock ticks, and ``--profile`` could not wrap the server's
phases with cProfile.)

Phases, each from a separate client process:

* **remoting send**: SEND_MESSAGE_V2 with 1 KiB bodies, ``--window`` (256) requests pipelined on
  one connection (``bench/send_pull.py``'s load generator and frames);
* **gRPC send**: ``SendMessage`` of one 1 KiB message, a raw grpcio client on one channel
  keeping ``--grpc-window`` (64) calls in flight (pre-serialized requests);
* **remoting pull**: PULL_MESSAGE of 32 (``bench/send_pull.py``'s);
* **remoting pop+ack**: POP_MESSAGE of 32 (5 s long polling, 30 s invisible time) then one
  ACK_MESSAGE per message, ``--pop-threads`` connections: the broker work gRPC's receive+ack
  is turned into, without the gRPC layer;
* **gRPC receive+ack**: ``ReceiveMessage`` (batch 32, 30 s invisible duration, 5 s long
  polling) then one ``AckMessage`` per message (as the 5.x SDKs acknowledge; the batch's acks
  in flight together), ``--pop-threads`` threads.

A round runs them all, the remoting and gRPC phases alternating which goes first; ``--repeat``
rounds (this VM's speed drifts), and the table gives the best rate and the lowest and median
server CPU per message of each phase, then the ratios gRPC/remoting (the issue's aim: at most
3x). The server CPU of a phase is divided by every message it answered (warm-up included);
rates count the measured seconds only. ``--quick``: one round of short phases (a smoke run).
``--profile FILE`` writes a cProfile of the server during each phase, all rounds together, to
``FILE.<phase>`` (``FILE.grpc-send``, ``FILE.remoting-pop``, ...). Exit status 1 if any answer was an error.

``--cpu`` instead measures the sends in-process, without sockets (``bench/grpc_cpu.py``): one
connection of the gRPC send load (``--duration`` seconds) is recorded, then fed read by read
into a fresh gRPC connection of the broker over a ``StringTransport``, ``--repeat`` times,
alternating with remoting SEND_MESSAGE_V2 frames (32 per read, ``bench/send_pull.py --cpu``'s):
CPU µs per message of each, their ratio, and the gRPC side in absolute terms (gRPC minus
remoting, and the gRPC server with the broker's dispatch stubbed). ``--profile FILE`` then
profiles the gRPC rounds to ``FILE.grpc-send-cpu``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

# This file is called grpc.py: with its folder first on sys.path, ``import grpc`` would load it
# again. grpcio is imported with the folder moved to the end (the bench modules still load).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE] + [HERE]

from remoting_bench import (  # noqa: E402
    BODY_SIZE,
    FRAME_LENGTH,
    TOPIC,
    free_port,
    response_ok,
)

GRPC_SERVICE = "/apache.rocketmq.v2.MessagingService/"
GRPC_GROUP = "bench_grpc_group"
POP_GROUP = "bench_pop_group"
BATCH = 32
INVISIBLE_S = 30
POLLING_S = 5
CLIENT_ID = "bench-client@1"
METADATA = (("x-mq-client-id", CLIENT_ID), ("x-mq-language", "PYTHON"),
            ("x-mq-client-version", "5.0.3"), ("x-mq-protocol", "v2"))


# --- the gRPC load (runs in a child process) --------------------------------------------------


def _grpc_channel(addr: str) -> Any:
    import grpc

    return grpc.insecure_channel(addr, options=[("grpc.enable_http_proxy", 0)])


def _message_class(name: str) -> Any:
    from rocketmq_emu.broker.grpc.messages import message_class

    return message_class(name)


def _ok_code() -> int:
    from rocketmq_emu.broker.grpc import messages

    return messages.Code.Value("OK")


class _Tally:
    """Counts shared by a load's threads: answers, messages, errors, and the measured share."""

    def __init__(self, warmup: float, duration: float) -> None:
        self.lock = threading.Lock()
        self.t0 = time.perf_counter()
        self.t_measure = self.t0 + warmup
        self.t_end = self.t_measure + duration
        self.answered = self.msgs = self.errors = 0
        self.measured_msgs = self.measured_answers = 0
        self.first_error = ""

    def add(self, msgs: int, error: str = "") -> None:
        """One answer carrying ``msgs`` messages (or an error)."""
        now = time.perf_counter()
        with self.lock:
            self.answered += 1
            if error:
                self.errors += 1
                self.first_error = self.first_error or error
                return
            self.msgs += msgs
            if now >= self.t_measure:
                self.measured_answers += 1
                self.measured_msgs += msgs

    def result(self, kind: str) -> dict:
        """The load's outcome (what the parent reads)."""
        elapsed = min(time.perf_counter(), self.t_end) - self.t_measure
        if self.first_error:
            sys.stderr.write(f"first error: {self.first_error}\n")
        return {"kind": kind, "answered": self.answered, "errors": self.errors,
                "msgs": self.msgs, "measured_answers": self.measured_answers,
                "measured_msgs": self.measured_msgs, "elapsed": max(elapsed, 1e-9)}


def grpc_send_load(addr: str, window: int, duration: float, warmup: float) -> dict:
    """``SendMessage`` of one 1 KiB message per call, ``window`` calls in flight."""
    request_class = _message_class("SendMessageRequest")
    response_class = _message_class("SendMessageResponse")
    ok = _ok_code()
    requests = []
    for i in range(64):
        req = request_class()
        m = req.messages.add()
        m.topic.name = TOPIC
        m.body = b"x" * BODY_SIZE
        sp = m.system_properties
        sp.tag = "TagA"
        sp.keys.append("k")
        sp.message_id = f"01BENCH{os.getpid():08X}{i:012X}"
        sp.born_host = "127.0.0.1"
        sp.born_timestamp.GetCurrentTime()
        requests.append(req.SerializeToString())
    channel = _grpc_channel(addr)
    send = channel.unary_unary(GRPC_SERVICE + "SendMessage",
                               request_serializer=lambda b: b,
                               response_deserializer=response_class.FromString)
    tally = _Tally(warmup, duration)
    slots = threading.Semaphore(window)

    def done(future: Any) -> None:
        try:
            resp = future.result()
            if resp.status.code != ok:
                tally.add(0, f"status {resp.status.code} {resp.status.message}")
            else:
                tally.add(1)
        except Exception as exc:  # a gRPC error: counted, the load goes on
            tally.add(0, repr(exc))
        slots.release()

    i = 0
    while time.perf_counter() < tally.t_end:
        slots.acquire()
        future = send.future(requests[i & 63], metadata=METADATA, timeout=30)
        future.add_done_callback(done)
        i += 1
    for _ in range(window):  # wait for the calls in flight
        slots.acquire()
    channel.close()
    return tally.result("grpc-send")


def grpc_receive_load(addr: str, threads: int, duration: float, warmup: float,
                      limit: int) -> dict:
    """``threads`` loops of ReceiveMessage (32) then one AckMessage per message (as the SDKs
    ack), until the time is up or ``limit`` messages were received (so no receive waits for
    messages)."""
    receive_class = _message_class("ReceiveMessageRequest")
    receive_response = _message_class("ReceiveMessageResponse")
    ack_class = _message_class("AckMessageRequest")
    ack_response = _message_class("AckMessageResponse")
    ok = _ok_code()
    req = receive_class()
    req.group.name = GRPC_GROUP
    req.message_queue.topic.name = TOPIC
    req.filter_expression.expression = "*"
    req.batch_size = BATCH
    req.invisible_duration.seconds = INVISIBLE_S
    req.long_polling_timeout.seconds = POLLING_S
    req.auto_renew = False
    receive_bytes = req.SerializeToString()
    channel = _grpc_channel(addr)
    receive = channel.unary_stream(GRPC_SERVICE + "ReceiveMessage",
                                   request_serializer=lambda b: b,
                                   response_deserializer=receive_response.FromString)
    ack = channel.unary_unary(GRPC_SERVICE + "AckMessage",
                              request_serializer=ack_class.SerializeToString,
                              response_deserializer=ack_response.FromString)
    tally = _Tally(warmup, duration)
    claimed = [0]

    def loop() -> None:
        while time.perf_counter() < tally.t_end:
            with tally.lock:  # stop before a receive could find the group's queues empty
                if claimed[0] + BATCH > limit:
                    return
                claimed[0] += BATCH
            entries = []
            error = ""
            try:
                for resp in receive(receive_bytes, metadata=METADATA, timeout=POLLING_S + 20):
                    which = resp.WhichOneof("content")
                    if which == "status" and resp.status.code != ok:
                        error = f"receive status {resp.status.code} {resp.status.message}"
                    elif which == "message":
                        m = resp.message
                        entries.append((m.system_properties.message_id,
                                        m.system_properties.receipt_handle))
            except Exception as exc:
                error = repr(exc)
            # One AckMessage per message, as the 5.x SDKs acknowledge (all of a batch in
            # flight at once).
            futures = []
            for message_id, handle in entries:
                areq = ack_class()
                areq.group.name = GRPC_GROUP
                areq.topic.name = TOPIC
                e = areq.entries.add()
                e.message_id = message_id
                e.receipt_handle = handle
                futures.append(ack.future(areq, metadata=METADATA, timeout=30))
            for future in futures:
                try:
                    aresp = future.result()
                    if aresp.status.code != ok:
                        error = error or f"ack status {aresp.status.code} {aresp.status.message}"
                except Exception as exc:
                    error = error or repr(exc)
            tally.add(len(entries), error)
            with tally.lock:
                claimed[0] -= BATCH - len(entries)

    workers = [threading.Thread(target=loop, daemon=True) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    channel.close()
    return tally.result("grpc-receive")


# --- the remoting POP load (runs in a child process) ------------------------------------------


def _read_frame(sock: socket.socket, buf: bytearray) -> bytes:
    """The next whole frame (without its length) from ``sock``; ``buf`` keeps the rest."""
    while True:
        if len(buf) >= 4:
            flen = FRAME_LENGTH.unpack_from(buf, 0)[0]
            if len(buf) >= 4 + flen:
                frame = bytes(buf[4:4 + flen])
                del buf[:4 + flen]
                return frame
        data = sock.recv(1 << 20)
        if not data:
            raise ConnectionError("server closed the connection")
        buf += data


def remoting_pop_load(port: int, broker_name: str, threads: int, duration: float,
                      warmup: float, limit: int) -> dict:
    """``threads`` connections each looping POP_MESSAGE (32) then one ACK_MESSAGE per message
    (pipelined), as the gRPC phase but over remoting."""
    from rocketmq_emu.broker.commitlog.record import iter_records
    from rocketmq_emu.broker.pop.extra_info import (
        ExtraInfo,
        build_extra_info,
        parse_start_offset_info,
        start_offset_info_key,
    )
    from rocketmq_emu.broker.remoting.codes import RequestCode
    from rocketmq_emu.broker.remoting.command import RemotingCommand

    tally = _Tally(warmup, duration)
    claimed = [0]

    def run() -> None:
        try:
            loop()
        except Exception as exc:  # counted: the parent reports errors and exits 1
            tally.add(0, repr(exc))

    def loop() -> None:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray()
        while time.perf_counter() < tally.t_end:
            with tally.lock:
                if claimed[0] + BATCH > limit:
                    break
                claimed[0] += BATCH
            pop = RemotingCommand.request(RequestCode.POP_MESSAGE, {
                "consumerGroup": POP_GROUP, "topic": TOPIC, "queueId": "-1",
                "maxMsgNums": str(BATCH), "invisibleTime": str(INVISIBLE_S * 1000),
                "pollTime": str(POLLING_S * 1000), "bornTime": str(int(time.time() * 1000)),
                "initMode": "1", "expType": "TAG", "exp": "*", "order": "false"})
            sock.sendall(pop.encode())
            frame = _read_frame(sock, buf)
            answer = RemotingCommand.decode_frame(frame)
            error = "" if answer.code == 0 else f"pop code {answer.code} {answer.remark}"
            acks = []
            ext = answer.ext_fields
            starts = parse_start_offset_info(ext.get("startOffsetInfo"))
            for _pos, rec in iter_records(answer.body or b""):
                extra = rec.properties.get("POP_CK")
                if extra is None:  # as MQClientAPIImpl.processPopResponse builds it
                    extra = build_extra_info(
                        starts[start_offset_info_key(rec.topic, rec.queue_id)],
                        int(ext["popTime"]), int(ext["invisibleTime"]), int(ext["reviveQid"]),
                        rec.topic, broker_name, rec.queue_id, rec.queue_offset)
                info = ExtraInfo.parse(extra)
                acks.append(RemotingCommand.request(RequestCode.ACK_MESSAGE, {
                    "consumerGroup": POP_GROUP, "topic": info.real_topic(TOPIC, POP_GROUP),
                    "queueId": str(info.queue_id), "extraInfo": extra,
                    "offset": str(info.queue_offset)}).encode())
            if acks:
                sock.sendall(b"".join(acks))
                for _ in acks:
                    frame = _read_frame(sock, buf)
                    if not response_ok(bytearray(frame), 0) and not error:
                        error = f"ack answered {frame[:200]!r}"
            tally.add(len(acks), error)
            with tally.lock:
                claimed[0] -= BATCH - len(acks)
        sock.close()

    workers = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return tally.result("remoting-pop")


def run_client(spec: dict) -> dict:
    """The load ``spec["kind"]`` describes (in the child process)."""
    kind = spec["kind"]
    if kind == "grpc-send":
        return grpc_send_load(spec["addr"], spec["window"], spec["duration"], spec["warmup"])
    if kind == "grpc-receive":
        return grpc_receive_load(spec["addr"], spec["threads"], spec["duration"],
                                 spec["warmup"], spec["limit"])
    if kind == "remoting-pop":
        return remoting_pop_load(spec["port"], spec["broker_name"], spec["threads"],
                                 spec["duration"], spec["warmup"], spec["limit"])
    raise ValueError(f"unknown load {kind!r}")


def client_process(spec: dict, timeout: float) -> dict:
    """Run a load in a child process; its JSON result."""
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--client", json.dumps(spec)],
        capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"load client failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- orchestration (the server process) -------------------------------------------------------


class Phases:
    """Each phase's results over the rounds: rates and server CPU per message."""

    NAMES = {
        "remoting-send": "remoting SEND_MESSAGE_V2",
        "grpc-send": "gRPC SendMessage",
        "remoting-pull": "remoting PULL_MESSAGE x32",
        "remoting-pop": "remoting POP x32 + ACK",
        "grpc-receive": "gRPC Receive x32 + Acks",
    }

    def __init__(self) -> None:
        self.rates: dict[str, list[float]] = {k: [] for k in self.NAMES}
        self.cpus: dict[str, list[float]] = {k: [] for k in self.NAMES}
        self.errors = 0

    def add(self, key: str, result: dict, cpu: float, per_msg: bool) -> int:
        """Record one phase; ``per_msg``: count messages (pulls, receives), else answers.
        Returns the messages counted."""
        count = result["msgs"] if per_msg else result["answered"] - result["errors"]
        measured = result["measured_msgs"] if per_msg else result["measured_answers"]
        rate = measured / result["elapsed"]
        us = cpu / count * 1e6 if count else float("nan")
        self.rates[key].append(rate)
        self.cpus[key].append(us)
        self.errors += result["errors"]
        print(f"  {self.NAMES[key]:<27} {rate:>9,.0f} msgs/s  server CPU {us:7.1f} us/msg  "
              f"({count} msgs, {result['errors']} errors)", flush=True)
        return count

    def table(self) -> None:
        """The summary: best rate, lowest and median CPU per message, and the ratios."""
        print(f"\n{'phase':<27} {'best msgs/s':>11} {'CPU us/msg min':>15} {'median':>8}")
        for key, name in self.NAMES.items():
            if not self.cpus[key]:
                continue
            print(f"{name:<27} {max(self.rates[key]):>11,.0f} {min(self.cpus[key]):>15.1f} "
                  f"{statistics.median(self.cpus[key]):>8.1f}")
        print()
        for grpc_key, remoting_key, label in (
                ("grpc-send", "remoting-send", "send"),
                ("grpc-receive", "remoting-pop", "receive+ack vs POP+ACK"),
                ("grpc-receive", "remoting-pull", "receive+ack vs PULL")):
            g, r = self.cpus[grpc_key], self.cpus[remoting_key]
            if g and r:
                print(f"server CPU ratio gRPC/remoting, {label:<23} "
                      f"{min(g) / min(r):5.2f}x (min)  "
                      f"{statistics.median(g) / statistics.median(r):5.2f}x (median)  "
                      f"(aim <= 3x)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--window", type=int, default=256, help="remoting sends in flight")
    p.add_argument("--grpc-window", type=int, default=64, help="gRPC SendMessage calls in flight")
    p.add_argument("--pop-threads", type=int, default=4,
                   help="concurrent receive (gRPC) / pop (remoting) loops")
    p.add_argument("--duration", type=float, default=4.0, help="measured seconds per phase")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds per phase")
    p.add_argument("--repeat", type=int, default=3, help="rounds of all phases")
    p.add_argument("--quick", action="store_true", help="one round of 1 s phases")
    p.add_argument("--profile", metavar="FILE",
                   help="cProfile the server during each phase, to FILE.<phase>")
    p.add_argument("--cpu", action="store_true",
                   help="in-process CPU per send: a recorded gRPC connection replayed, and "
                        "remoting frames (bench/grpc_cpu.py)")
    p.add_argument("--client", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.client:
        print(json.dumps(run_client(json.loads(args.client))))
        return 0
    if args.quick:
        args.repeat, args.duration, args.warmup = 1, 1.0, 0.3
    if args.cpu:
        return cpu_mode(args)
    return serve_and_measure(args)


def _start_cluster(reactor: Any, store_dir: str) -> Any:
    """A started Cluster (a Deferred of it): one broker, no name server, gRPC on a free port,
    :data:`TOPIC` with 4 queues."""
    from rocketmq_emu.broker.cluster import Cluster, broker_spec
    from rocketmq_emu.broker.config import BrokerConfig
    from rocketmq_emu.broker.configs.topics import TopicConfig

    cfg = BrokerConfig(store_path_root_dir=store_dir, listen_port=free_port(),
                       namesrv_addr=None, mapped_file_size_commit_log=256 * 1024 * 1024)
    cluster = Cluster(broker_spec(cfg, "127.0.0.1", grpc_port=0), reactor)

    def started(_: Any) -> Any:
        cluster.broker.ctx.topic_config.update_topic_config(TopicConfig(TOPIC, 4, 4))
        return cluster

    return cluster.start().addCallback(started)


def _run_with_cluster(body: Any) -> int:
    """Start a cluster (temporary store) on the reactor, run ``body(cluster)`` (an
    ``inlineCallbacks`` generator function; its value, if any, is the exit status), then stop
    the cluster and the reactor; exit status 2 with the traceback if anything raised."""
    import traceback

    from twisted.internet import defer, reactor

    store_dir = tempfile.mkdtemp(prefix="rmq-emu-bench-")
    outcome = {"rc": 0}

    @defer.inlineCallbacks
    def run() -> Any:
        cluster = None
        try:
            cluster = yield _start_cluster(reactor, store_dir)
            outcome["rc"] = (yield defer.inlineCallbacks(body)(cluster)) or 0
        except Exception:
            traceback.print_exc()
            outcome["rc"] = 2
        finally:
            if cluster is not None:
                yield cluster.stop()
            reactor.stop()

    reactor.callWhenRunning(run)
    reactor.run()
    shutil.rmtree(store_dir, ignore_errors=True)
    return outcome["rc"]


def cpu_mode(args: argparse.Namespace) -> int:
    """``--cpu``: record one gRPC send connection, then the in-process rounds."""
    import logging

    from grpc_cpu import RecordingProxy, measure
    from twisted.internet import threads

    logging.basicConfig(level=logging.ERROR)

    def body(cluster: Any) -> Any:
        host, port = cluster.grpc_endpoint.rsplit(":", 1)
        proxy = RecordingProxy((host, int(port)))
        spec = {"kind": "grpc-send", "addr": f"127.0.0.1:{proxy.port}",
                "window": args.grpc_window, "duration": args.duration, "warmup": 0.0}
        result = yield threads.deferToThread(client_process, spec, args.duration + 60)
        yield threads.deferToThread(proxy.join, 30)
        if result["errors"]:
            raise RuntimeError(f"the recorded load had {result['errors']} errors")
        measure(cluster, proxy.reads, args.repeat, args.profile)

    return _run_with_cluster(body)


def serve_and_measure(args: argparse.Namespace) -> int:
    """Run the cluster on the reactor and the phases from a thread; print the table."""
    import logging

    from twisted.internet import defer, threads

    logging.basicConfig(level=logging.ERROR)  # auto-created groups and the like: noise here
    profilers: dict[str, Any] = {}
    if args.profile:
        import cProfile

        profilers = {key: cProfile.Profile() for key in Phases.NAMES}
    phases = Phases()
    timeout = args.warmup + args.duration + 60

    def phase(key: str, spec: dict, per_msg: bool, runner: Any = None) -> defer.Deferred:
        profiler = profilers.get(key)
        cpu0 = time.process_time()
        if profiler is not None:
            profiler.enable()
        d = threads.deferToThread(runner or client_process, spec, timeout)

        def done(result: dict) -> int:
            if profiler is not None:
                profiler.disable()
            return phases.add(key, result, time.process_time() - cpu0, per_msg)

        return d.addCallback(done)

    def remoting(spec: dict, _timeout: float) -> dict:
        from send_pull import run_client_process

        ns = argparse.Namespace(window=args.window, duration=args.duration, warmup=args.warmup)
        return run_client_process(spec["port"], spec["kind"], ns, spec.get("total_msgs", 0))

    def body(cluster: Any) -> Any:
        broker = cluster.broker
        gc.freeze()  # as `rmq-emu up` / `broker` do once started (broker/cli.py)
        port, addr = cluster.slot().port, cluster.grpc_endpoint
        store = broker.store
        popped = {"grpc-receive": 0, "remoting-pop": 0}

        def stored() -> int:
            return sum(store.get_max_offset_in_queue(TOPIC, q) for q in range(4))

        base = {"duration": args.duration, "warmup": args.warmup}
        for round_no in range(args.repeat):
            print(f"round {round_no + 1}/{args.repeat}", flush=True)
            grpc_first = round_no % 2 == 1
            sends = [("remoting-send", {"kind": "send", "port": port}, remoting),
                     ("grpc-send", {**base, "kind": "grpc-send", "addr": addr,
                                    "window": args.grpc_window}, None)]
            for key, spec, runner in (sends[::-1] if grpc_first else sends):
                yield phase(key, spec, False, runner)
                store.flush()
            pull = ("remoting-pull", {"kind": "pull", "port": port,
                                      "total_msgs": store.get_max_offset_in_queue(TOPIC, 0)},
                    remoting)
            yield phase(*pull[:2], True, pull[2])
            consumers = ["remoting-pop", "grpc-receive"]
            for key in (consumers[::-1] if grpc_first else consumers):
                limit = stored() - popped[key] - BATCH * args.pop_threads
                spec = {**base, "kind": key, "addr": addr, "port": port,
                        "threads": args.pop_threads, "limit": limit,
                        "broker_name": cluster.slot().name}
                popped[key] += yield phase(key, spec, True)
        phases.table()
        return 1 if phases.errors else 0

    rc = _run_with_cluster(body)
    for key, profiler in profilers.items():
        path = f"{args.profile}.{key}"
        profiler.dump_stats(path)
        print(f"profile of {key} written to {path} (python -m pstats {path})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
