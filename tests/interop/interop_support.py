"""Interop helpers: real RocketMQ clients installed from the registries, an emulator to point
them at, and client subprocesses that print JSON lines (fixtures in conftest.py).

* The clients are installed inside the test run into a cache shared by reruns
  (``$RMQ_EMU_INTEROP_CACHE``, default ``~/.cache/rocketmq-emu/interop``): PyPI
  ``rocketmq==0.4.4`` with ``pip install --target`` and npm ``ali-ons``/``rocketmq-nodejs`` with
  ``npm install --prefix``. An unreachable registry fails the test with the installer's output;
  it never skips.
* Each client runs as a subprocess (``tests/interop/clients/*``) printing JSON lines, so a native
  client crashing at shutdown cannot take pytest down, and every run has a timeout.
* The emulator is ``python -m broker.cli up`` in a subprocess on free loopback ports with a
  temporary store, one per session; tests use their own topics and groups.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rocketmq_emu.broker.cli import READY  # a bare "ready" would match "already in use"
from rocketmq_emu.client import testing_tools

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).resolve().parent / "clients"
PYPI_SPEC = "rocketmq==0.4.4"
CVS_SPEC = "rocketmq-python-cvs==2.1.0.3"
NPM_SPECS = ("ali-ons@3.12.0", "rocketmq-nodejs@1.1.2")
SDK5_PY_SPEC = "rocketmq-python-client==5.1.2"
SDK5_NPM_SPEC = "rocketmq-client-nodejs@1.0.8"
INSTALL_TIMEOUT = 600
#: Test-sized store files (an 8 MB commitlog, not 1 GiB reserved ahead), for every emulator.
TEST_BROKER_CONF = testing_tools.TEST_BROKER_CONF


def cache_dir() -> Path:
    """Where registry installs are kept between runs."""
    env = os.environ.get("RMQ_EMU_INTEROP_CACHE")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "rocketmq-emu" / "interop"


def install(name: str, target: Path, command: list[str], check_import: list[str] | None) -> Path:
    """Run an installer into ``target`` once; a stamp file records a finished install.

    Parallel test workers (pytest-xdist) ask for the same client at once: a lock file beside
    ``target`` lets one install while the others wait, then find its stamp (no worker ever
    replaces a directory another is running a client from)."""
    stamp = target / ".rmq-emu-installed"
    if stamp.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return target
        return _install_locked(name, target, command, check_import)


def _install_locked(name: str, target: Path, command: list[str],
                    check_import: list[str] | None) -> Path:
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cmd = [c.replace("{target}", str(tmp)) for c in command]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    except FileNotFoundError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.fail(f"cannot install {name}: {e.filename} not found (needed by the interop tests)")
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.fail(f"installing {name} timed out after {INSTALL_TIMEOUT}s: is the registry reachable?")
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.fail(
            f"installing {name} failed (exit {proc.returncode}); is the registry reachable?\n"
            f"$ {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    if check_import:
        probe = subprocess.run(
            [c.replace("{target}", str(tmp)) for c in check_import],
            capture_output=True, text=True, timeout=60,
        )
        if probe.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            pytest.fail(f"{name} installed but does not load:\n{probe.stderr[-3000:]}")
    (tmp / ".rmq-emu-installed").write_text(" ".join(command) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


# --- the emulator


def free_port_pair() -> tuple[int, int]:
    """Two free ports: one for the name server, one for the broker whose port - 2 is free too
    (:mod:`rocketmq_emu.client.testing_tools`: outside the ephemeral range, the xdist worker's
    own)."""
    for _ in range(200):
        ns, port = testing_tools.free_port(), testing_tools.free_broker_port()
        if ns not in (port, port - 2):
            return ns, port
    raise RuntimeError("no free port pair found")


@dataclass
class Emulator:
    """A running ``rmq-emu up`` subprocess."""

    proc: subprocess.Popen
    namesrv: str
    broker: str
    store: Path
    log_path: Path
    grpc: str | None = None
    control: str | None = None

    def log_tail(self, n: int = 60) -> str:
        """The last lines of the emulator's output (for assertion messages)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])


def start_emulator(tmp: Path, extra: list[str] | None = None, timeout: float = 30,
                   grpc_port: int | None = None, control_port: int | None = None) -> Emulator:
    """Start ``python -m broker.cli up`` on free ports; wait until it prints ``ready``.

    ``grpc_port`` adds ``--grpc-port`` (the 5.x SDKs' endpoint), ``control_port`` the HTTP control
    API (``--control-port``: business clock, faults); both are recorded on the :class:`Emulator`.
    """
    ns_port, broker_port = free_port_pair()
    store = tmp / "store"
    log_path = tmp / "emulator.log"
    extra = list(extra or [])
    # 0: a free port (the default, 8081, may be taken by another emulator of the session).
    extra += ["--grpc-port", str(grpc_port if grpc_port is not None else 0)]
    if control_port is not None:
        extra += ["--control-port", str(control_port)]
    if "-c" not in extra:
        # The default 1 GiB commitlog file is reserved whole when created: a test store does
        # not need it.
        conf = tmp / "broker.conf"
        conf.write_text(TEST_BROKER_CONF)
        extra += ["-c", str(conf)]
    log = open(log_path, "wb")  # noqa: SIM115 - kept open for the child's lifetime
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketmq_emu.broker.cli", "up", "--store", str(store),
         "--namesrv-port", str(ns_port), "--broker-port", str(broker_port),
         "--host", "127.0.0.1", *extra],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"rmq-emu up exited with {proc.returncode}:\n"
                        f"{log_path.read_text(errors='replace')[-4000:]}")
        text = log_path.read_text(errors="replace")
        if READY in text:
            return Emulator(proc, f"127.0.0.1:{ns_port}", f"127.0.0.1:{broker_port}", store,
                            log_path,
                            grpc=None if grpc_port is None else f"127.0.0.1:{grpc_port}",
                            control=None if control_port is None else
                            f"http://127.0.0.1:{control_port}")
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"rmq-emu up not ready after {timeout}s:\n{log_path.read_text()[-4000:]}")


def stop_emulator(emu: Emulator, timeout: float = 15) -> int:
    """SIGTERM the emulator and wait; kill it if it does not stop in time."""
    if emu.proc.poll() is None:
        emu.proc.send_signal(signal.SIGTERM)
        try:
            emu.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            emu.proc.kill()
            emu.proc.wait(5)
    return emu.proc.returncode


# --- client subprocesses


@dataclass
class ClientProcess:
    """A client script running in the background; its stdout is JSON lines in a file."""

    name: str
    proc: subprocess.Popen
    out_path: Path
    err_path: Path
    emulator: Emulator | None = None
    _stopped: bool = field(default=False)
    killed_after_finish: bool = field(default=False)
    #: Log files the client library writes (their tails go into :meth:`diagnostics`).
    sdk_logs: tuple[Path, ...] = ()

    def events(self, kind: str | None = None) -> list[dict]:
        """Parsed JSON lines printed so far (optionally only ``event == kind``)."""
        out = []
        for line in self.out_path.read_text(errors="replace").splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if kind is None or ev.get("event") == kind:
                out.append(ev)
        return out

    def wait_for(self, predicate, timeout: float, what: str) -> list[dict]:
        """Poll the events until ``predicate(events)`` is true; fail with diagnostics if not."""
        deadline = time.monotonic() + timeout
        while True:
            evs = self.events()
            if predicate(evs):
                return evs
            if self.proc.poll() is not None and not predicate(self.events()):
                pytest.fail(f"{self.name} exited ({self.proc.returncode}) before {what}\n"
                            + self.diagnostics())
            if time.monotonic() > deadline:
                pytest.fail(f"{self.name}: no {what} within {timeout}s\n" + self.diagnostics())
            time.sleep(0.1)

    def stop(self, timeout: float = 20) -> int:
        """Close stdin (the scripts' stop signal) and wait; kill on timeout."""
        if not self._stopped:
            self._stopped = True
            try:
                self.proc.stdin.close()
            except (OSError, AttributeError):
                pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def wait(self, timeout: float, exit_grace: float = 5.0) -> int:
        """Wait for the script to finish by itself; kill it (and fail) on timeout.

        Native clients sometimes hang in their exit handlers after a clean shutdown (the
        rocketmq-nodejs addon does, now and then): once the script has printed its last line
        (``shutdown``, or ``done`` for producers) it gets ``exit_grace`` seconds, then is killed
        and judged by what it printed.
        """
        deadline = time.monotonic() + timeout
        last_line = "shutdown" if "consumer" in self.name else "done"
        finished_at = None
        while True:
            rc = self.proc.poll()
            if rc is not None:
                return rc
            now = time.monotonic()
            if finished_at is None and self.events(last_line):
                finished_at = now
            if finished_at is not None and now - finished_at > exit_grace:
                self.killed_after_finish = True
                self.proc.kill()
                return self.proc.wait(5)
            if now > deadline:
                self.proc.kill()
                self.proc.wait(5)
                pytest.fail(f"{self.name} did not finish within {timeout}s\n" + self.diagnostics())
            time.sleep(0.1)

    def diagnostics(self) -> str:
        """Output of the client and the emulator, for assertion messages."""
        out = self.out_path.read_text(errors="replace")[-3000:]
        err = self.err_path.read_text(errors="replace")[-3000:]
        emu = self.emulator.log_tail() if self.emulator else ""
        logs = ""
        for path in self.sdk_logs:
            try:
                logs += f"--- {path.name} (tail)\n{path.read_text(errors='replace')[-3000:]}\n"
            except OSError:
                pass
        return (f"--- {self.name} stdout\n{out}\n--- {self.name} stderr\n{err}\n{logs}"
                f"--- emulator log (tail)\n{emu}")


class ClientLauncher:
    """Starts client scripts with the right interpreter, module path and HOME."""

    def __init__(self, tmp: Path, emulator: Emulator, pypi: Path | None, npm: Path | None,
                 sdk5_py: Path | None = None, sdk5_npm: Path | None = None):
        self.tmp = tmp
        self.emulator = emulator
        self.pypi = pypi
        self.npm = npm
        self.sdk5_py = sdk5_py
        self.sdk5_npm = sdk5_npm
        self.started: list[ClientProcess] = []
        self.home = tmp / "home"  # the C++ clients log under $HOME/logs
        self.home.mkdir(exist_ok=True)

    def _spawn(self, name: str, argv: list[str], env: dict,
               sdk_logs: tuple[Path, ...] = ()) -> ClientProcess:
        n = len(self.started)
        out_path = self.tmp / f"{n:02d}-{name}.out"
        err_path = self.tmp / f"{n:02d}-{name}.err"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                    cwd=self.tmp, env=env)
        cp = ClientProcess(name, proc, out_path, err_path, self.emulator, sdk_logs=sdk_logs)
        self.started.append(cp)
        return cp

    def python(self, script: str, *args: str) -> ClientProcess:
        """Start ``clients/<script>`` with PyPI rocketmq 0.4.4 importable."""
        assert self.pypi is not None, "request the pypi_rocketmq fixture"
        env = dict(os.environ, HOME=str(self.home), PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.pathsep.join([str(self.pypi), str(CLIENTS)]))
        argv = [sys.executable, str(CLIENTS / script), "--namesrv", self.emulator.namesrv,
                *args]
        return self._spawn(script.removesuffix(".py"), argv, env)

    def node(self, script: str, **config) -> ClientProcess:
        """Start ``clients/<script>`` with the npm clients on NODE_PATH; config goes as JSON."""
        assert self.npm is not None, "request the npm_clients fixture"
        config.setdefault("namesrv", self.emulator.namesrv)
        config.setdefault("log_dir", str(self.home / "logs"))
        env = dict(os.environ, HOME=str(self.home), NODE_PATH=str(self.npm))
        argv = ["node", str(CLIENTS / script), json.dumps(config)]
        return self._spawn(script.removesuffix(".js"), argv, env)

    def sdk5_python(self, script: str, env: dict[str, str] | None = None,
                    **config) -> ClientProcess:
        """Start ``clients/<script>`` with PyPI rocketmq-python-client 5.x importable; ``config``
        goes as one JSON argument (``endpoint`` defaults to the emulator's gRPC endpoint), ``env``
        is added to the subprocess's environment (e.g. GRPC_DEFAULT_SSL_ROOTS_FILE_PATH)."""
        assert self.sdk5_py is not None, "request the sdk5_python fixture"
        config.setdefault("endpoint", self.emulator.grpc)
        env = dict(os.environ, HOME=str(self.home), PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.pathsep.join([str(self.sdk5_py), str(CLIENTS)]), **(env or {}))
        argv = [sys.executable, str(CLIENTS / script), json.dumps(config)]
        log = self.home / "logs" / "rocketmq_python" / "rocketmq_client.log"
        return self._spawn(script.removesuffix(".py"), argv, env, (log,))

    def sdk5_node(self, script: str, **config) -> ClientProcess:
        """Start ``clients/<script>`` with npm rocketmq-client-nodejs 1.x on NODE_PATH."""
        assert self.sdk5_npm is not None, "request the sdk5_nodejs fixture"
        config.setdefault("endpoint", self.emulator.grpc)
        env = dict(os.environ, HOME=str(self.home), NODE_PATH=str(self.sdk5_npm))
        argv = ["node", str(CLIENTS / script), json.dumps(config)]
        log = self.home / "logs" / "rocketmq" / "rocketmq_client_nodejs.log"
        return self._spawn(script.removesuffix(".js"), argv, env, (log,))

    def run_python(self, script: str, *args: str, timeout: float = 60) -> ClientProcess:
        """Run a Python client script to completion."""
        cp = self.python(script, *args)
        cp.wait(timeout)
        return cp

    def run_node(self, script: str, timeout: float = 60, **config) -> ClientProcess:
        """Run a Node client script to completion."""
        cp = self.node(script, **config)
        cp.wait(timeout)
        return cp

    def close(self) -> None:
        """Stop every client still running."""
        for cp in self.started:
            if cp.proc.poll() is None:
                cp.stop(timeout=10)


def unique(prefix: str) -> str:
    """A topic or group name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# --- admin calls from the test itself (what mqadmin would do)


def rpc(addr: str, code: int, ext: dict | None = None, body: bytes = b"",
        timeout: float = 5, context: ssl.SSLContext | None = None) -> Any:
    """One blocking request/response to ``addr`` over a fresh connection (TLS with
    ``context``, checking the server's certificate for ``addr``'s host)."""
    from rocketmq_emu.broker.remoting.command import RemotingCommand

    host, port = addr.rsplit(":", 1)
    frame = RemotingCommand.request(code, ext or {}, body).encode()
    with socket.create_connection((host, int(port)), timeout=timeout) as raw:
        s = raw if context is None else context.wrap_socket(raw, server_hostname=host)
        with s:
            s.sendall(frame)
            (length,) = struct.unpack(">i", _recv_exact(s, 4))
            return RemotingCommand.decode_frame(_recv_exact(s, length))


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def plain_acl_yml(access_key: str, secret_key: str, topic: str, read_only: str) -> str:
    """A plain_acl.yml with one admin account: PUB|SUB on ``topic``, SUB only on
    ``read_only``, no other topic, SUB on every group."""
    return (f"accounts:\n  - accessKey: {access_key}\n    secretKey: '{secret_key}'\n"
            "    admin: true\n    defaultTopicPerm: DENY\n    defaultGroupPerm: SUB\n"
            f"    topicPerms:\n      - {topic}=PUB|SUB\n      - {read_only}=SUB\n")


def topic_header(topic: str, queues: int = 4) -> dict[str, str]:
    """UPDATE_AND_CREATE_TOPIC's extFields as ``mqadmin updateTopic`` sends them."""
    return {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues),
            "writeQueueNums": str(queues), "perm": "6", "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": "0", "order": "false"}


def create_topic(emu: Emulator, topic: str, queues: int = 4, timeout: float = 10,
                 credentials: tuple[str, str] | None = None,
                 context: ssl.SSLContext | None = None) -> None:
    """UPDATE_AND_CREATE_TOPIC on the broker (``mqadmin updateTopic``), then wait for the route;
    signed with ``credentials`` (access key, secret key) when given, over TLS with ``context``.

    Needed for clients that, like ali-ons, refuse to send to a topic the name server does not
    know (they never fall back to TBW102 auto-creation).
    """
    from rocketmq_emu.broker.acl.signer import sign_request
    from rocketmq_emu.broker.remoting.codes import RequestCode

    ext = topic_header(topic, queues)
    if credentials is not None:
        sign_request(ext, b"", *credentials)
    resp = rpc(emu.broker, RequestCode.UPDATE_AND_CREATE_TOPIC, ext, context=context)
    assert resp.code == 0, f"UPDATE_AND_CREATE_TOPIC {topic}: {resp.code} {resp.remark}"
    wait_route(emu, topic, timeout, context)


def wait_route(emu: Emulator, topic: str, timeout: float = 10,
               context: ssl.SSLContext | None = None) -> None:
    """Wait until the name server has a route for ``topic`` (broker registration is async)."""
    from rocketmq_emu.broker.remoting.codes import RequestCode

    deadline = time.monotonic() + timeout
    while rpc(emu.namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic},
              context=context).code != 0:
        if time.monotonic() > deadline:
            pytest.fail(f"name server has no route for {topic} after {timeout}s\n"
                        + emu.log_tail())
        time.sleep(0.1)


def consumer_ids(emu: Emulator, group: str) -> list[str]:
    """GET_CONSUMER_LIST_BY_GROUP on the broker: the client ids it knows for ``group``."""
    from rocketmq_emu.broker import jsonutil
    from rocketmq_emu.broker.remoting.codes import RequestCode

    resp = rpc(emu.broker, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})
    if resp.code != 0 or not resp.body:
        return []
    return list(jsonutil.loads(resp.body).get("consumerIdList", []))


def wait_consumers(emu: Emulator, group: str, count: int, timeout: float = 20) -> list[str]:
    """Wait until the broker lists ``count`` clients in ``group``."""
    deadline = time.monotonic() + timeout
    while True:
        ids = consumer_ids(emu, group)
        if len(ids) == count:
            return ids
        if time.monotonic() > deadline:
            pytest.fail(f"group {group}: {ids} after {timeout}s, expected {count} clients\n"
                        + emu.log_tail())
        time.sleep(0.1)


# --- 5.x SDK set-up: typed topics, consumer groups, the control API


def update_topic(emu: Emulator, topic: str, queues: int = 4, message_type: str | None = None,
                 timeout: float = 30) -> None:
    """``rmq-emu admin updateTopic`` (mqadmin's command; ``-a +message.type=T`` for a typed topic,
    as RocketMQ 5 creates FIFO/DELAY/TRANSACTION topics), then wait for the route. The 5.x SDKs
    never auto-create a topic."""
    argv = [sys.executable, "-m", "rocketmq_emu.broker.cli", "admin", "updateTopic",
            "-n", emu.namesrv, "-b", emu.broker, "-t", topic, "-r", str(queues), "-w", str(queues)]
    if message_type is not None:
        argv += ["-a", f"+message.type={message_type}"]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"$ {' '.join(argv)}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    wait_route(emu, topic)


def update_subscription_group(emu: Emulator, group: str, **fields: Any) -> None:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (``mqadmin updateSubGroup``) with SubscriptionGroupConfig
    fields in their JSON names, e.g. ``retryMaxTimes=2`` or ``consumeMessageOrderly=True`` (a FIFO
    group: what RocketMQ 5's proxy reports as ``Settings.subscription.fifo``)."""
    from rocketmq_emu.broker.remoting.codes import RequestCode

    body = json.dumps({"groupName": group, **fields}).encode()
    resp = rpc(emu.broker, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
    assert resp.code == 0, f"UPDATE_AND_CREATE_SUBSCRIPTIONGROUP {group}: {resp.code} {resp.remark}"


def control(emu: Emulator, method: str, path: str, body: dict | None = None) -> Any:
    """One JSON call to the emulator's control API (started with ``control_port``)."""
    import urllib.request

    assert emu.control, "start the emulator with control_port"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(emu.control + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def advance_clock(emu: Emulator, seconds: float) -> None:
    """Move the broker's business clock forward (invisible times, delivery timestamps)."""
    control(emu, "POST", "/clock/advance", {"seconds": seconds})


def stored_messages(emu: Emulator, topic: str, queues: int = 1) -> list[dict]:
    """The messages of ``topic`` as the control API's /messages lists them (all queues given)."""
    import urllib.parse

    out = []
    for queue in range(queues):
        q = urllib.parse.urlencode({"topic": topic, "queueId": queue, "max": 1000})
        out += control(emu, "GET", f"/messages?{q}")
    return out


def business_now_ms(emu: Emulator) -> int:
    """The broker's business time (control API), for delivery timestamps after clock travel."""
    return int(control(emu, "GET", "/clock")["now_ms"])


def matching(events: list[dict], event: str = "received", **fields: Any) -> list[dict]:
    """The events of kind ``event`` whose ``fields`` have the given values."""
    return [e for e in events if e.get("event") == event
            and all(e.get(k) == v for k, v in fields.items())]


def wait_events(cp: ClientProcess, n: int, event: str = "received", timeout: float = 20,
                **fields: Any) -> list[dict]:
    """Wait until ``cp`` printed ``n`` events like :func:`matching`; return them."""
    evs = cp.wait_for(lambda evs: len(matching(evs, event, **fields)) >= n, timeout,
                      f"{n} {event} {fields or ''}")
    return matching(evs, event, **fields)


def wait_dlq(emu: Emulator, group: str, timeout: float = 15) -> list[dict]:
    """The messages of ``%DLQ%group`` once there are any (or [] after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        dlq = stored_messages(emu, f"%DLQ%{group}")
        if dlq or time.monotonic() > deadline:
            return dlq
        time.sleep(0.3)
