"""``rmq-emu report serve``: a long-lived process that keeps one SparkSession warm and runs
reports on request, so the reports after the first pay neither the JVM's start nor the Python
workers' imports.

HTTP on loopback (``--host`` to change; whoever reaches the port can have reports written
wherever this process may write):

* ``GET /health``: ``{"status": "ok", "pid": ..., "url": ..., "master": ..., "busy": bool,
  "served": n}``.
* ``POST /reports`` with ``{"name": "all" | report, "stores": ["[NAME=]DIR", ...], "out": DIR,
  "delayLevels": "1s 5s ..."}`` (absolute paths, read and written by this process). A store it
  cannot read is refused at once: status 400, ``{"error": "--store ...: ..."}``. Otherwise
  status 200 and one JSON object per line as the report goes: ``{"progress": line}``,
  ``{"written": [report, page]}``, and last ``{"exit": 0}`` (or ``{"error": ..., "exit": 1}``).

One report runs at a time; a request that comes while one runs waits its turn (and says so).
The state file (:func:`rocketmq_emu.reports.service_client.state_path`) tells reports on this
machine where the service is; it is removed when the service stops. SIGTERM and SIGINT stop
it cleanly: no new request is taken, the running report ends, the session stops.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rocketmq_emu.broker.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL
from rocketmq_emu.reports.service_client import answers, read_state, state_path
from rocketmq_emu.reports.stores import StoreError, resolve

log = logging.getLogger(__name__)
NAMES = ("traffic", "delays", "consumers", "retries", "all")
#: The service's own session settings beside the small-store ones (session.QUICK_CONF): the
#: Python workers are kept between tasks and reports (a fresh one imports pyspark, pandas and
#: pyarrow again: about a second of CPU here).
SERVICE_CONF = {"spark.python.worker.reuse": "true"}
MAX_REQUEST_BYTES = 64 * 1024


class LineStream:
    """A text stream that hands each complete line to ``emit`` (the report's progress lines).
    The reports of ``all`` print from their own threads, and ``print`` writes a line's text
    and its newline apart: each thread has its own buffer, so lines never mix."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self._local = threading.local()

    def write(self, text: str) -> int:
        """Buffer ``text``; emit the lines it completes."""
        *lines, rest = (getattr(self._local, "buffer", "") + text).split("\n")
        self._local.buffer = rest
        for line in lines:
            self._emit(line)
        return len(text)

    def flush(self) -> None:
        """Nothing to do: lines go out as they complete."""


class ReportService:
    """Runs reports in one warm session, one at a time."""

    def __init__(self, spark, master: str) -> None:
        self.spark = spark
        self.master = master
        self.url = ""
        self.served = 0
        self._lock = threading.Lock()

    @property
    def busy(self) -> bool:
        """Whether a report is running."""
        return self._lock.locked()

    def health(self) -> dict:
        """What ``GET /health`` answers."""
        return {"status": "ok", "pid": os.getpid(), "url": self.url, "master": self.master,
                "busy": self.busy, "served": self.served}

    def check(self, request: dict) -> tuple[str, list, str, str]:
        """The request's (name, stores, out, delay levels); raises :class:`StoreError` or
        :class:`ValueError` with the one line the client prints."""
        name = request.get("name")
        if name not in NAMES:
            raise ValueError(f"unknown report {name!r} (one of {', '.join(NAMES)})")
        args = request.get("stores")
        if not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args):
            raise ValueError("stores: a list of [NAME=]DIR")
        out = request.get("out")
        if not isinstance(out, str) or not os.path.isabs(out):
            raise ValueError("out: an absolute directory path")
        levels = request.get("delayLevels") or DEFAULT_MESSAGE_DELAY_LEVEL
        if not isinstance(levels, str):
            raise ValueError("delayLevels: the broker's messageDelayLevel string")
        return name, resolve(args), out, levels

    def run(self, name: str, stores: list, out: str, levels: str,
            emit: Callable[[dict], None]) -> int:
        """Run one checked request, sending its events to ``emit``; the exit status."""
        from rocketmq_emu.reports.runner import run_reports

        if not self._lock.acquire(blocking=False):
            emit({"progress": "waiting: another report is running in this service"})
            self._lock.acquire()
        start = time.perf_counter()
        try:
            stream = LineStream(lambda line: emit({"progress": line}))
            for report, page in run_reports(self.spark, stores, name, out, levels, stream):
                emit({"written": [report, page]})
        except Exception as exc:  # noqa: BLE001 - the client gets one line, the log the rest
            log.error("report %s failed:\n%s", name, traceback.format_exc())
            emit({"error": f"report {name} failed: {type(exc).__name__}: {exc}".splitlines()[0],
                  "exit": 1})
            return 1
        finally:
            self.served += 1
            self._lock.release()
        print(f"report {name} of {', '.join(s.path for s in stores)} -> {out} "
              f"in {time.perf_counter() - start:.1f} s", flush=True)
        emit({"exit": 0})
        return 0


class Handler(BaseHTTPRequestHandler):
    """``GET /health`` and ``POST /reports`` (module docstring)."""

    server_version = "rmq-emu-report-service"
    service: ReportService  # set on the subclass :func:`make_server` builds
    #: Seconds a socket read or write may block: a silent client cannot hold a thread (and
    #: with it the service's stop, which waits for every request) for longer.
    timeout = 30

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base's signature
        log.debug("%s " + format, self.address_string(), *args)

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        """``/health``."""
        if self.path != "/health":
            self._json(404, {"error": f"no {self.path} here (GET /health, POST /reports)"})
            return
        self._json(200, self.service.health())

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        """``/reports``: check the request, then stream the report's events."""
        if self.path != "/reports":
            self._json(404, {"error": f"no {self.path} here (GET /health, POST /reports)"})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_REQUEST_BYTES:
                raise ValueError("a JSON body up to 64 KiB")
            request = json.loads(self.rfile.read(length))
            if not isinstance(request, dict):
                raise ValueError("a JSON object")
            name, stores, out, levels = self.service.check(request)
        except (StoreError, ValueError) as exc:
            self._json(400, {"error": str(exc)})
            return
        except OSError as exc:  # a directory the service may not list, a body cut short
            self._json(400, {"error": f"{exc.filename or 'request'}: {exc.strerror or exc}"})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes
        gone = False
        lock = threading.Lock()  # the reports' threads emit side by side

        def emit(event: dict) -> None:
            nonlocal gone
            with lock:
                if gone:
                    return
                try:
                    self.wfile.write(json.dumps(event).encode() + b"\n")
                    self.wfile.flush()
                except OSError:
                    gone = True  # the client left; the report still ends and is written

        self.service.run(name, stores, out, levels, emit)


def make_server(service: ReportService, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server for ``service`` bound to ``host:port`` (0: any free port)."""
    handler = type("BoundHandler", (Handler,), {"service": service})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = False  # server_close() waits for a running report
    return server


def warm_up(spark) -> None:
    """Run every report once over a small store of every kind of record, so the first real
    request finds the Python workers started and the jobs' code (scan, joins, aggregations,
    charts) loaded and compiled: over an empty store, the first request took 4.4 s against
    3.1 s for the next ones."""
    from rocketmq_emu.reports.runner import run_reports
    from rocketmq_emu.reports.stores import Store

    work = tempfile.mkdtemp(prefix="rmq-emu-report-warm-")
    try:
        root = os.path.join(work, "store")
        write_warm_up_store(root)
        run_reports(spark, [Store("warm-up", root)], "all", os.path.join(work, "out"),
                    DEFAULT_MESSAGE_DELAY_LEVEL, LineStream(lambda _line: None))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_warm_up_store(root: str) -> None:
    """A store with what the reports look at (the broker's own MessageStore writes it): user
    messages, a delay-level copy and its re-put, a retry, a dead letter, a committed offset."""
    from twisted.internet.task import Clock

    from rocketmq_emu.broker.commitlog.record import MessageRecord
    from rocketmq_emu.broker.message import RMQ_SYS_SCHEDULE_TOPIC
    from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig

    clock = Clock()
    clock.advance(time.time())
    store = MessageStore(MessageStoreConfig(
        store_path_root_dir=root, mapped_file_size_commitlog=1 << 20,
        mapped_file_size_consume_queue=100 * 20, max_hash_slot_num=100, max_index_num=400,
    ), clock)
    store.load()
    store.start()
    host = ("127.0.0.1", 10911)
    delayed = {"UNIQ_KEY": "W" * 32, "DELAY": "1", "REAL_TOPIC": "WarmUp", "REAL_QID": "0"}
    records = [("WarmUp", i % 2, {"UNIQ_KEY": f"W{i:031d}", "TAGS": "t"}) for i in range(8)]
    records += [(RMQ_SYS_SCHEDULE_TOPIC, 0, delayed), ("WarmUp", 0, delayed),
                ("%RETRY%warm", 0, {"UNIQ_KEY": "R" * 32, "RETRY_TOPIC": "WarmUp"}),
                ("%DLQ%warm", 0, {"UNIQ_KEY": "R" * 32, "RETRY_TOPIC": "WarmUp"})]
    for topic, queue_id, props in records:
        clock.advance(1.5)
        store.put_message(MessageRecord(topic=topic, body=b"warm-up", queue_id=queue_id,
                                        properties=props, born_host=host, store_host=host))
    store.consumer_offsets.commit_offset("127.0.0.1", "warm", "WarmUp", 0, 1)
    store.shutdown()


def write_state(path: str, state: dict) -> None:
    """Write the state file atomically, readable by this user only."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    os.replace(tmp, path)


def remove_state(path: str) -> None:
    """Remove the state file if it is still this process's."""
    state = read_state(path)
    if state is not None and state.get("pid") == os.getpid():
        try:
            os.remove(path)
        except OSError:
            pass


def serve(args: argparse.Namespace) -> int:
    """Run the service until SIGTERM or SIGINT; exit status 0, or 2 for a port it cannot
    listen on or a service already running under the same state file."""
    path = args.state_file or state_path()
    running = read_state(path)
    if running is not None and running.get("pid") != os.getpid() and answers(running["url"]):
        print(f"rmq-emu: error: a report service already runs at {running['url']} "
              f"(pid {running['pid']}, state file {path})", file=sys.stderr)
        return 2
    service = ReportService(None, args.remote or args.master or "local[*]")
    try:
        server = make_server(service, args.host, args.port)
    except OSError as exc:
        print(f"rmq-emu: error: report service cannot listen on {args.host}:{args.port}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum, _frame) -> None:
        if stop.is_set():
            # A second signal: do not wait for the running report.
            print("report service: stopped at once", flush=True)
            remove_state(path)
            os._exit(128 + signum)
        stop.set()
        print(f"report service: {signal.Signals(signum).name}, stopping", flush=True)
        threading.Thread(target=server.shutdown, daemon=True).start()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    from rocketmq_emu.reports.session import QUICK_CONF, get_session, stop_session

    host, port = server.server_address[:2]
    service.url = f"http://{host}:{port}"
    try:
        t0 = time.perf_counter()
        try:
            service.spark = get_session(args.master, remote=args.remote, quick=True,
                                        conf={**QUICK_CONF, **SERVICE_CONF})
            if not stop.is_set():
                warm_up(service.spark)
        except Exception as exc:  # noqa: BLE001 - one line for the user, the rest in the log
            log.debug("starting Spark", exc_info=True)
            print(f"rmq-emu: error: report service: Spark did not start: "
                  f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                  file=sys.stderr)
            return 1
        if not stop.is_set():
            write_state(path, {"pid": os.getpid(), "url": service.url,
                               "master": service.master, "started": time.time()})
            print(f"report service: {service.url} (Spark {service.master}, pid {os.getpid()}, "
                  f"ready in {time.perf_counter() - t0:.1f} s; state file {path})", flush=True)
            server.serve_forever(poll_interval=0.2)
    finally:
        remove_state(path)
        server.server_close()  # waits for a running report to end
        if service.spark is not None:
            try:
                stop_session(service.spark)
            except Exception:  # noqa: BLE001 - a JVM already gone (SIGINT to the group)
                log.debug("stopping the session", exc_info=True)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print("report service stopped", flush=True)
    return 0
