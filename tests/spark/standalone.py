"""Real Spark servers for the tests, started from the installed pyspark (its ``SPARK_HOME``):
a standalone master with workers (:class:`StandaloneCluster`) and a Spark Connect server
(:class:`ConnectServer`). Each JVM is its own process in its own process group, so stopping
one also ends what it started (a worker's executors). Nothing here shares a port: each server
gets free loopback ports.

The servers' environment is the caller's minus ``PYSPARK_PYTHON``, ``PYSPARK_DRIVER_PYTHON`` and
the venv's ``bin`` on ``PATH``: executors find the venv's interpreter only if the driver sends
it (:mod:`rocketmq_emu.reports.session`), so a test through them checks that it does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from rocketmq_emu.client import testing_tools

HOST = "127.0.0.1"
#: JVM options for short test runs: the C1 compiler only and the serial collector take a
#: report run on this 2-core machine from ~60 s to ~35 s (C2 compiling costs more than it gains).
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: ``spark-defaults.conf`` for the drivers the tests start (:func:`write_spark_conf`).
TEST_SPARK_DEFAULTS = {
    "spark.driver.extraJavaOptions": FAST_JVM,
    "spark.executor.extraJavaOptions": FAST_JVM,
    # No wait for a data-local executor: every executor is on this machine.
    "spark.locality.wait": "0",
}


def spark_home() -> str:
    """The installed pyspark's package directory (it ships bin/, sbin/ and jars/)."""
    import pyspark

    return os.path.dirname(pyspark.__file__)


def java_missing() -> str | None:
    """Why a JVM cannot start here (None when ``java`` is found)."""
    if os.environ.get("JAVA_HOME") and os.access(
            os.path.join(os.environ["JAVA_HOME"], "bin", "java"), os.X_OK):
        return None
    return None if shutil.which("java") else "java not found (no JAVA_HOME, none on PATH)"


def free_port() -> int:
    """A loopback TCP port nobody listens on now (outside the ephemeral range, the xdist
    worker's own: :func:`rocketmq_emu.client.testing_tools.free_port`)."""
    return testing_tools.free_port(HOST)


def server_env(**extra: str) -> dict[str, str]:
    """The servers' environment (see the module docstring)."""
    env = dict(os.environ)
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "SPARK_CONF_DIR"):
        env.pop(key, None)
    venv_bin = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env["SPARK_HOME"] = spark_home()
    env["SPARK_LOCAL_IP"] = HOST
    env["SPARK_NO_DAEMONIZE"] = "1"
    # The daemons (master, worker) need little heap; their default is 1g each. (spark-submit
    # takes the Connect server for a daemon too, so its driver memory is set by --driver-memory.)
    env["SPARK_DAEMON_MEMORY"] = "256m"
    env["SPARK_DAEMON_JAVA_OPTS"] = FAST_JVM
    env.update(extra)
    return env


def write_spark_conf(conf_dir: Path, conf: dict[str, str] | None = None) -> Path:
    """A ``SPARK_CONF_DIR`` holding ``spark-defaults.conf`` with :data:`TEST_SPARK_DEFAULTS`
    (and ``conf``): a driver started with it in its environment reads it."""
    conf_dir = Path(conf_dir)
    conf_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"{k} {v}" for k, v in {**TEST_SPARK_DEFAULTS, **(conf or {})}.items()]
    (conf_dir / "spark-defaults.conf").write_text("\n".join(lines) + "\n")
    return conf_dir


class Process:
    """One server JVM, started in a new session; stdout and stderr go to ``log``."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = log
        self._out = open(log, "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(argv, stdout=self._out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the process group (the JVM's shutdown hooks stop its children), then
        SIGKILL to whatever of the group is left."""
        pgid = self.proc.pid  # start_new_session: the group is the leader's pid
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._out.close()


def _wait(what: str, check, timeout: float, procs: list[Process]) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        for p in procs:
            if not p.alive():
                raise RuntimeError(f"{p.name} exited ({p.proc.returncode}) while waiting for "
                                   f"{what}:\n{p.text()[-4000:]}")
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {p.name}\n{p.text()[-2000:]}" for p in procs)
            raise TimeoutError(f"no {what} after {timeout:.0f} s\n{logs}")
        time.sleep(0.25)


class StandaloneCluster:
    """A Spark standalone master and ``workers`` workers of ``cores`` cores and ``memory``
    each, on loopback, with logs and the workers' work dirs under ``root``."""

    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.root = Path(root)
        self.port = free_port()
        self.webui_port = free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.json_url = f"http://{HOST}:{self.webui_port}/json/"
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.procs: list[Process] = []
        self.work_dirs: list[Path] = []

    def start(self, timeout: float = 60.0) -> StandaloneCluster:
        """Start the master and the workers together (a worker retries until the master is
        up) and return once the master lists every worker ALIVE."""
        self.root.mkdir(parents=True, exist_ok=True)
        env = server_env()
        spark_class = os.path.join(spark_home(), "bin", "spark-class")
        try:
            self.procs.append(Process("master", [
                spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST,
                "--port", str(self.port), "--webui-port", str(self.webui_port),
            ], self.root / "master.log", env))
            for i in range(self.workers):
                work = self.root / f"worker{i}"
                work.mkdir(parents=True, exist_ok=True)
                self.work_dirs.append(work)
                self.procs.append(Process(f"worker{i}", [
                    spark_class, "org.apache.spark.deploy.worker.Worker", self.url,
                    "--host", HOST, "--cores", str(self.cores), "--memory", self.memory,
                    "--webui-port", str(free_port()), "--work-dir", str(work),
                ], self.root / f"worker{i}.log", env))
            _wait(f"{self.workers} ALIVE workers at {self.json_url}",
                  lambda: self.alive_workers() >= self.workers, timeout, self.procs)
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> dict:
        """The master's ``/json/`` page (workers, active and completed applications)."""
        with urllib.request.urlopen(self.json_url, timeout=5) as resp:
            return json.load(resp)

    def alive_workers(self) -> int:
        try:
            return sum(w.get("state") == "ALIVE" for w in self.state().get("workers", []))
        except OSError:
            return 0

    def stop(self) -> None:
        """Stop the workers (and their executors), then the master."""
        for p in reversed(self.procs):
            p.stop()
        self.procs.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ConnectServer:
    """A Spark Connect server (``SparkConnectServer`` by ``spark-submit`` with the connect jar
    that ships in pyspark's jars/) on a free port, its driver in ``local[2]``."""

    def __init__(self, root: Path, master: str = "local[2]", conf: dict | None = None) -> None:
        self.root = Path(root)
        self.port = free_port()
        self.url = f"sc://{HOST}:{self.port}"
        self.master = master
        self.conf = {
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
            **(conf or {}),
        }
        self.proc: Process | None = None

    def jar(self) -> str:
        jars = Path(spark_home(), "jars")
        found = sorted(jars.glob("spark-connect_*.jar"))
        if not found:
            raise FileNotFoundError(f"no spark-connect_*.jar in {jars}")
        return str(found[0])

    def start(self, timeout: float = 90.0) -> ConnectServer:
        """Start the server and return once its gRPC port accepts connections."""
        argv = [os.path.join(spark_home(), "bin", "spark-submit"), "--master", self.master,
                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                "--name", "Spark Connect server (tests)", "--driver-memory", "1g",
                "--driver-java-options", FAST_JVM]
        for key, value in self.conf.items():
            argv += ["--conf", f"{key}={value}"]
        argv.append(self.jar())
        self.root.mkdir(parents=True, exist_ok=True)
        self.proc = Process("connect", argv, self.root / "connect.log",
                            server_env(SPARK_DAEMON_MEMORY="1g", PYSPARK_PYTHON=sys.executable))
        try:
            _wait(f"Spark Connect on {HOST}:{self.port}", self._listening, timeout, [self.proc])
        except BaseException:
            self.stop()
            raise
        return self

    def _listening(self) -> bool:
        try:
            socket.create_connection((HOST, self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def __enter__(self) -> ConnectServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
