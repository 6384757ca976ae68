"""The one production wiring (``broker/cluster.py``): what it builds, and that ``rmq-emu up``
(with and without ``--control-port``), the control API and ``EmbeddedCluster`` all go through it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor, threads
from twisted.internet.error import CannotListenError
from twisted.internet.protocol import Factory, Protocol

from rocketmq_emu.broker.cluster import Cluster, ClusterSpec
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.client.control_up import Controls
from rocketmq_emu.client.testing import (
    TEST_BROKER_CONF,
    TEST_BROKER_SETTINGS,
    free_broker_port,
    free_port,
)

ROOT = Path(__file__).resolve().parents[2]


def spec(tmp_path, *names: str) -> ClusterSpec:
    """A name server on a free port and small-file brokers on free ports, each with its store."""
    brokers = [BrokerConfig(broker_name=name, listen_port=free_broker_port("127.0.0.1"),
                            store_path_root_dir=str(tmp_path / name), **TEST_BROKER_SETTINGS)
               for name in names or ("broker-a",)]
    return ClusterSpec(brokers=brokers, namesrv_port=0)


class Recorder:
    """DispatcherHooks that remember the order of attach and detach calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def attach(self, target, dispatcher, name=None):
        self.calls.append(("attach", name or target))

    def detach(self, name):
        self.calls.append(("detach", name))


@pytest_twisted.inlineCallbacks
def test_brokers_register_with_the_clusters_own_name_server(tmp_path):
    """Both brokers of the spec start and are registered with the name server the cluster runs."""
    cluster = Cluster(spec(tmp_path, "broker-a", "broker-b"), reactor)
    yield cluster.start()
    try:
        assert set(cluster.namesrv.route_info.broker_addr_table) == {"broker-a", "broker-b"}
        assert {s.config.namesrv_addr for s in cluster.slots} == {cluster.namesrv_addr}
    finally:
        yield cluster.stop()


@pytest_twisted.inlineCallbacks
def test_a_failed_broker_start_stops_what_started(tmp_path):
    """A taken broker port fails the start unchanged (CannotListenError) and the name server stops."""
    the_spec = spec(tmp_path)
    busy = reactor.listenTCP(the_spec.brokers[0].listen_port, Factory.forProtocol(Protocol),
                             interface="127.0.0.1")
    cluster = Cluster(the_spec, reactor)
    try:
        with pytest.raises(CannotListenError):
            yield cluster.start()
        assert cluster.namesrv is None and cluster.broker is None
    finally:
        yield busy.stopListening()


@pytest_twisted.inlineCallbacks
def test_hooks_follow_a_broker_restart(tmp_path):
    """The hooks see the name server, then the broker's two dispatchers again after a restart."""
    hooks = Recorder()
    cluster = Cluster(spec(tmp_path), reactor, hooks=[hooks])
    yield cluster.start()
    try:
        port = cluster.slot().port
        yield cluster.restart_broker()
        assert cluster.slot().port == port and cluster.broker is not None
        assert hooks.calls == [("attach", "namesrv"), ("attach", "broker-a"), ("attach", "broker-a"),
                               ("detach", "broker-a"), ("attach", "broker-a"), ("attach", "broker-a")]
    finally:
        yield cluster.stop()


@pytest_twisted.inlineCallbacks
def test_control_api_serves_a_production_cluster(tmp_path):
    """Controls.build + serve: /clock/advance moves the brokers' business clock, /health names them."""
    controls = Controls(reactor)
    cluster = controls.build(spec(tmp_path))
    yield cluster.start()
    try:
        port = controls.serve(cluster, 0)
        base = f"http://127.0.0.1:{port}"
        advanced = yield threads.deferToThread(http, base, "POST", "/clock/advance", {"seconds": 60})
        health = yield threads.deferToThread(http, base, "GET", "/health")
        assert advanced["advanced_s"] == 60 and cluster.broker.clock is controls.clock
        assert [b["name"] for b in health["brokers"]] == ["broker-a"] and health["broker_running"]
    finally:
        yield controls.stop()
        yield cluster.stop()


def test_embedded_cluster_runs_the_production_cluster(rocketmq):
    """The harness's name server and broker are those of a broker.cluster.Cluster it built."""
    assert isinstance(rocketmq.cluster, Cluster)
    assert rocketmq.broker is rocketmq.cluster.slot().controller
    assert rocketmq.namesrv is rocketmq.cluster.namesrv
    assert rocketmq.broker.clock is rocketmq.clock


def test_session_fixture_runs_the_production_cluster(rocketmq_session):
    """The session-wide fixture's cluster is a broker.cluster.Cluster too."""
    assert isinstance(rocketmq_session.cluster, Cluster)
    assert rocketmq_session.broker is rocketmq_session.cluster.slot().controller


#: Runs the CLI; reports whether Cluster.start ran, then (once `ready`) the loaded modules.
SCRIPT = """
import sys
from twisted.internet import reactor
from rocketmq_emu.broker import cli, cluster

start = cluster.Cluster.start

def reporting_start(self):
    print("CLUSTER-START", type(self).__module__, flush=True)
    return start(self)

cluster.Cluster.start = reporting_start
announce = cli._announce

def announce_then_stop(*args, **kwargs):
    announce(*args, **kwargs)
    reactor.callLater(0.5, lambda: print("MODULES", " ".join(sys.modules), flush=True))
    reactor.callLater(0.6, reactor.stop)

cli._announce = announce_then_stop
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("control", [False, True], ids=["plain", "control-port"])
def test_up_builds_its_cluster_with_the_production_wiring(tmp_path, control):
    """`up` (with or without --control-port) starts a broker.cluster.Cluster; no harness module loads."""
    conf = tmp_path / "broker.conf"
    conf.write_text(TEST_BROKER_CONF)
    argv = ["up", "--grpc-port", "0", "--store", str(tmp_path / "s"), "--namesrv-port", str(free_port()),
            "--broker-port", str(free_broker_port()), "-c", str(conf)]
    if control:
        argv += ["--control-port", str(free_port())]
    out = subprocess.run([sys.executable, "-c", SCRIPT, *argv], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "CLUSTER-START rocketmq_emu.broker.cluster" in lines
    mods = set(next(x for x in lines if x.startswith("MODULES ")).split()[1:])
    assert ("rocketmq_emu.client.control_api" in mods) is control
    assert not mods & {"rocketmq_emu.client.testing", "rocketmq_emu.client.pytest_plugin"}


def test_up_control_port_restarts_on_the_same_store(tmp_path):
    """A topic created through `up --control-port`'s API is there after a SIGINT and a restart."""
    store = tmp_path / "store"
    with running_up(tmp_path, store) as base:
        assert http(base, "POST", "/topics", {"topic": "Kept", "queues": 2})["brokers"] == ["broker-a"]
    with running_up(tmp_path, store) as base:
        health = http(base, "GET", "/health")
        assert health["store"] == str(store) and health["broker_running"]
        assert http(base, "GET", "/topics/Kept")["topic"] == "Kept"


class running_up:  # noqa: N801 (used as a context manager, like open())
    """`rmq-emu up --control-port` in a subprocess until `ready`; stopped with SIGINT (exit 0)."""

    def __init__(self, tmp_path: Path, store: Path) -> None:
        self.log = tmp_path / "up.log"
        self.control = free_port()
        conf = tmp_path / "broker.conf"
        conf.write_text(TEST_BROKER_CONF)
        self.argv = [sys.executable, "-m", "rocketmq_emu.broker.cli", "up", "--grpc-port", "0", "--store", str(store),
                     "--namesrv-port", str(free_port()), "--broker-port", str(free_broker_port()),
                     "--control-port", str(self.control), "-c", str(conf)]

    def __enter__(self) -> str:
        self.out = open(self.log, "wb")  # noqa: SIM115 - closed in __exit__
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdout=self.out, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"))
        deadline = time.monotonic() + 60
        while b"control API http" not in self.log.read_bytes():
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "rmq-emu up not ready"
            time.sleep(0.1)
        return f"http://127.0.0.1:{self.control}"

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            assert self.proc.wait(20) == 0, self.log.read_text()
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.out.close()


def http(base: str, method: str, path: str, body: dict | None = None) -> dict:
    """One JSON call to the control API (blocking: run it off the reactor thread)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    with urllib.request.urlopen(req, timeout=20) as resp:
        return json.loads(resp.read())
