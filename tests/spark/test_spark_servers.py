"""``rmq-emu report all`` on real Spark servers gives the CSVs it gives in local mode: a
standalone master with two one-core workers (each its own JVM, executors in JVMs of their
own, Python workers from the venv's interpreter that only the driver names), and a Spark
Connect server, each started and stopped by a fixture (:mod:`standalone`). Reports and Connect
clients run as subprocesses, as a user runs them (a Connect session also switches pyspark in
its process to Connect mode until it stops: not in the suite's process, which has ``spark``).
The local-mode CSVs they are compared with come from ``report all`` run in the suite's process
on its SparkSession (as in test_cluster_reports.py): a third JVM started beside the servers'
would only compete with them for this machine's two cores.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from standalone import (  # noqa: E402
    ConnectServer,
    StandaloneCluster,
    java_missing,
    write_spark_conf,
)

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(java_missing() is not None, reason=f"{java_missing()}: no Spark servers"),
]

APP_NAME = "rocketmq-emu-reports"  # reports/session.py get_session's default
RUN_TIMEOUT = 300


def report_cli() -> list[str]:
    """``rmq-emu report`` of this environment."""
    script = os.path.join(os.path.dirname(sys.executable), "rmq-emu")
    if os.path.exists(script):
        return [script, "report"]
    return [sys.executable, "-m", "rocketmq_emu.reports"]


class ReportRun:
    """``rmq-emu report all`` started in the background; :meth:`wait` checks it succeeded."""

    def __init__(self, store: str, out: Path, conf_dir: Path, *extra: str) -> None:
        self.out = out
        self.log = out.with_suffix(".log")
        env = dict(os.environ, SPARK_CONF_DIR=str(conf_dir))
        # The CLI must name the Python workers' interpreter itself (reports/session.py).
        env.pop("PYSPARK_PYTHON", None)
        env.pop("PYSPARK_DRIVER_PYTHON", None)
        self._log = open(self.log, "wb")  # noqa: SIM115 (closed in wait)
        self.proc = subprocess.Popen(
            [*report_cli(), "all", "--store", store, "--out", str(out), *extra],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True)

    def wait(self) -> Path:
        try:
            code = self.proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
            code = "timeout"
        finally:
            self._log.close()
        text = self.log.read_text(errors="replace")
        assert code == 0, f"{self.proc.args} exited {code}:\n{text[-6000:]}"
        return self.out


def csvs(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.csv"))}


@pytest.fixture(scope="module")
def conf_dir(tmp_path_factory) -> Path:
    return write_spark_conf(tmp_path_factory.mktemp("spark-conf"))


@pytest.fixture(scope="module")
def local_csvs(spark, store, tmp_path_factory) -> dict[str, bytes]:
    """The CSVs of ``report all`` in local mode (this process, the run's SparkSession)."""
    from rocketmq_emu.reports.cli import run_argv

    out = tmp_path_factory.mktemp("local") / "out"
    assert run_argv(["all", "--store", store.root, "--out", str(out)]) == 0
    return csvs(out)


@pytest.fixture
def standalone_cluster(tmp_path_factory):
    """A standalone master and two workers (1 core, 1g each); stopped, executors and all,
    after the test."""
    root = tmp_path_factory.mktemp("standalone")
    with StandaloneCluster(root, workers=2, cores=1, memory="1g") as cluster:
        yield cluster
    shutil.rmtree(root, ignore_errors=True)


def test_report_all_on_standalone_cluster_equals_local(
        local_csvs, standalone_cluster, store, conf_dir, tmp_path):
    """Every CSV of ``report all --master spark://...`` is byte for byte the local one's, and
    the run was the cluster's: one application of two cores, an executor on each worker that
    ran tasks."""
    cluster = standalone_cluster
    remote = ReportRun(store.root, tmp_path / "standalone", conf_dir, "--master", cluster.url)
    got, want = csvs(remote.wait()), local_csvs
    assert len(want) >= 10 and sorted(got) == sorted(want)
    differ = [name for name in want if got[name] != want[name]]
    assert not differ, f"CSVs that differ from local mode's: {differ}"

    state = cluster.state()
    apps = [app for app in state["completedapps"] + state["activeapps"]
            if app["name"] == APP_NAME]
    assert len(apps) == 1 and apps[0]["cores"] == 2, apps
    app_id = apps[0]["id"]
    finished = []
    for work in cluster.work_dirs:
        logs = list((work / app_id).glob("*/stderr"))
        assert len(logs) == 1, f"no executor of {app_id} in {work}"
        finished.append(logs[0].read_text(errors="replace").count("Finished task"))
    assert sum(finished) > 0, finished


def connect_missing() -> str | None:
    """Why a Spark Connect client cannot run here (pyspark's ``connect`` extra)."""
    need = ("grpc", "grpc_status", "google.rpc", "zstandard")
    missing = []
    for name in need:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            missing.append(name)
    return f"pyspark[connect] not installed (no {', '.join(missing)})" if missing else None


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """A Spark Connect server (its driver local[2], ``PYSPARK_PYTHON`` the venv's
    interpreter), stopped at the end of the module."""
    if connect_missing():
        pytest.skip(connect_missing())
    root = tmp_path_factory.mktemp("connect")
    with ConnectServer(root, master="local[2]") as server:
        yield server
    shutil.rmtree(root, ignore_errors=True)


CONNECT_READ = """
import json, sys
from rocketmq_emu.reports.session import default_parallelism, get_session, is_connect
spark = get_session(remote=sys.argv[1])
try:
    cl = spark.read.format("rocketmq-commitlog").load(sys.argv[2])
    topics = {r["topic"]: r["count"] for r in cl.groupBy("topic").count().collect()}
    cq = spark.read.format("rocketmq-consumequeue").load(sys.argv[2])
    print(json.dumps({"connect": is_connect(spark), "topics": topics, "units": cq.count(),
                      "parallelism": default_parallelism(spark)}))
finally:
    spark.stop()
"""


def test_data_sources_through_spark_connect(connect_server, spark, store):
    """Both data sources, registered by a Connect client (``get_session(remote=...)``), run
    in the server's Python workers and read what local mode reads; ``default_parallelism``
    gives the server's (local[2]: 2) without a ``sparkContext``."""
    env = dict(os.environ)
    env.pop("PYSPARK_PYTHON", None)
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    proc = subprocess.run(
        [sys.executable, "-c", CONNECT_READ, connect_server.url, store.root],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env)
    assert proc.returncode == 0, proc.stderr[-6000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    cl = spark.read.format("rocketmq-commitlog").load(store.root)
    topics = {r["topic"]: r["count"] for r in cl.groupBy("topic").count().collect()}
    units = spark.read.format("rocketmq-consumequeue").load(store.root).count()
    assert got == {"connect": True, "topics": topics, "units": units, "parallelism": 2}


def test_report_all_through_spark_connect_equals_local(
        local_csvs, connect_server, store, conf_dir, tmp_path):
    """Every CSV of ``report all --remote sc://...`` is byte for byte the local one's."""
    a = ReportRun(store.root, tmp_path / "connect", conf_dir, "--remote",
                  connect_server.url).wait()
    got, want = csvs(a), local_csvs
    assert len(want) >= 10 and sorted(got) == sorted(want)
    assert not [name for name in want if got[name] != want[name]]
