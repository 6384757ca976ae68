"""``rmq-emu`` ports and banner as a test script uses them (issue 25 items 2 and 4): a port out of
range is one line; port 0 picks free ports that the banner prints, that accept connections and
that the name server routes clients to; the banner names TLS, ACL, recording, conformance report
and control API when they are on, with ``ready`` last. Subprocesses on loopback ports."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_cli import rpc

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.cli import READY
from rocketmq_emu.broker.remoting.codes import RequestCode

ROOT = Path(__file__).resolve().parents[2]
SMALL_CONF = f"mappedFileSizeCommitLog={1 << 20}\n"
#: The banner lines a script parses (broker/cli_banner.py).
NAMESRV_LINE = re.compile(r"^rmq-emu: name server (?:listening on )?(\S+:\d+)$")
BROKER_LINE = re.compile(r"^rmq-emu: broker \S+ \(\S+\) listening on (\S+:\d+) and (\S+:\d+) "
                         r"\(VIP channel\), advertised as (\S+:\d+)$")
GRPC_LINE = re.compile(r"^rmq-emu: gRPC \(RocketMQ 5 SDKs\) on (\S+:\d+)$")


class Server:
    """``rmq-emu ARGS`` in a subprocess; :meth:`banner` reads its output up to ``ready``."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketmq_emu.broker.cli", *args], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"), stdin=subprocess.DEVNULL)
        self.lines: list[str] = []
        self._done = threading.Event()

    def banner(self, timeout: float = 60) -> list[str]:
        """The lines up to and including ``ready`` (the process is killed if it takes longer
        than ``timeout``); the rest of the output is read in the background."""
        killer = threading.Timer(timeout, self.proc.kill)
        killer.start()
        try:
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                if line.startswith(READY):
                    threading.Thread(target=self._drain, daemon=True).start()
                    return list(self.lines)
        finally:
            killer.cancel()
        self._done.set()
        pytest.fail(f"no {READY!r} (exit {self.proc.wait()}):\n" + "\n".join(self.lines))

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
        self._done.set()

    def stop(self) -> list[str]:
        """SIGTERM, wait for the exit (status 0); every output line."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(30) == 0, "\n".join(self.lines)
        self._done.wait(10)
        return self.lines

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def servers():
    started: list[Server] = []

    def start(*args: str) -> Server:
        server = Server(*args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def one(pattern: re.Pattern, lines: list[str]) -> tuple[str, ...]:
    """The groups of the one line matching ``pattern``."""
    found = [m.groups() for m in map(pattern.match, lines) if m]
    assert len(found) == 1, (pattern.pattern, lines)
    return found[0]


def accepts(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10):
        return True


def routed_addrs(namesrv: str) -> list[str]:
    """The broker addresses the name server routes TBW102 to."""
    resp = rpc(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}, timeout=10)
    assert resp.code == 0, resp
    route = jsonutil.loads(resp.body)
    return [a for bd in route["brokerDatas"] for a in bd["brokerAddrs"].values()]


#: The project's Python producer and pull consumer, through the name server only.
CLIENT = """
import sys
from rocketmq_emu.client.blocking import BlockingProducer, BlockingPullConsumer
from rocketmq_emu.client.message import Message

namesrv = sys.argv[1]
producer, puller = BlockingProducer("PortsPG", namesrv), BlockingPullConsumer("PortsCG", namesrv)
producer.start()
puller.start()
sent = producer.send(Message("PortsZero", b"through the name server"))
queues = puller.fetch_subscribe_queues("PortsZero")
bodies = [m.body for q in queues for m in puller.pull(q, "*", 0, 8).messages]
print(sent.status.name, bodies, flush=True)
producer.shutdown()
puller.shutdown()
"""


@pytest.mark.parametrize("argv", [
    ("up", "--namesrv-port", "99999"),
    ("up", "--namesrv-port", "-5"),
    ("up", "--grpc-port", "70000"),
    ("up", "--broker-port", "65536"),
    ("up", "--control-port", "70000"),
    ("namesrv", "--port", "99999"),
    ("broker", "--port", "99999"),
    ("broker", "--grpc-port", "70000"),
], ids=" ".join)
def test_a_port_out_of_range_is_one_line_and_status_2(tmp_path, argv):
    """Exit status 2 and one argparse-style stderr line naming the option; no traceback."""
    command, option, value = argv
    store = ("--store", str(tmp_path / "s")) if command != "namesrv" else ()
    result = subprocess.run(
        [sys.executable, "-m", "rocketmq_emu.broker.cli", *argv, *store],
        cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        f"rmq-emu {command}: error: argument {option}: {value} is out of range "
        "(0-65535; 0 picks a free port)"], result.stderr


def up_on_free_ports(tmp_path: Path, servers) -> tuple[Server, list[str]]:
    """``up`` with every port 0 and a small commitlog; the server and its banner."""
    conf = tmp_path / "broker.conf"
    conf.write_text(SMALL_CONF)
    up = servers("up", "--namesrv-port", "0", "--broker-port", "0", "--grpc-port", "0",
                 "-c", str(conf), "--store", str(tmp_path / "store"))
    return up, up.banner()


def test_up_with_port_0_prints_free_ports_that_serve_and_route(tmp_path, servers):
    """``up --namesrv-port 0 --broker-port 0 --grpc-port 0``: the banner's ports are real and
    accept connections (the VIP channel answers requests), the name server routes to the
    advertised address, and the project's client sends and pulls through it."""
    up, lines = up_on_free_ports(tmp_path, servers)
    (namesrv,) = one(NAMESRV_LINE, lines)
    broker, vip, advertised = one(BROKER_LINE, lines)
    (grpc,) = one(GRPC_LINE, lines)
    ports = [int(a.rsplit(":", 1)[1]) for a in (namesrv, broker, vip, grpc)]
    assert 0 not in ports and len(set(ports)) == 4, lines
    assert all(accepts(a) for a in (namesrv, broker, vip, grpc))
    assert rpc(vip, RequestCode.GET_BROKER_RUNTIME_INFO, timeout=10).code == 0
    assert advertised == broker and routed_addrs(namesrv) == [advertised]
    client = subprocess.run([sys.executable, "-c", CLIENT, namesrv], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert client.stdout.splitlines() == ["SEND_OK [b'through the name server']"], client.stderr
    assert up.stop()[-1] == "rmq-emu: stopped"


def test_up_serves_tls_clients_on_every_port_though_started_without_pyopenssl(tmp_path, servers):
    """The server commands import the reactor without pyOpenSSL (broker/default_reactor.py);
    the default permissive ports still take TLS clients on the name server, broker and VIP
    ports (requests answered) and on the gRPC port (its certificate fetched by ``tls-cert``),
    beside plain ones."""
    up, lines = up_on_free_ports(tmp_path, servers)
    (namesrv,) = one(NAMESRV_LINE, lines)
    broker, vip, _ = one(BROKER_LINE, lines)
    (grpc,) = one(GRPC_LINE, lines)
    for tls in (True, False):
        assert rpc(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}, timeout=10,
                   tls=tls).code == 0
        for addr in (broker, vip):
            assert rpc(addr, RequestCode.GET_BROKER_RUNTIME_INFO, timeout=10, tls=tls).code == 0
    pem = tmp_path / "grpc.pem"
    fetched = subprocess.run(
        [sys.executable, "-m", "rocketmq_emu.broker.cli", "tls-cert", "-s", grpc, "-o", str(pem)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert fetched.returncode == 0, fetched.stderr
    assert pem.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert up.stop()[-1] == "rmq-emu: stopped"


def test_namesrv_and_broker_with_port_0_print_the_ports_bound(tmp_path, servers):
    """``namesrv --port 0`` and ``broker --port 0 --grpc-port 0 -n <printed>``: each banner's
    ports accept connections and the broker is routed at the address it printed."""
    (namesrv,) = one(NAMESRV_LINE, servers("namesrv", "--port", "0").banner())
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path / 'b'}\n{SMALL_CONF}")
    lines = servers("broker", "--port", "0", "--grpc-port", "0", "-n", namesrv,
                    "-c", str(conf)).banner()
    broker, vip, advertised = one(BROKER_LINE, lines)
    (grpc,) = one(GRPC_LINE, lines)
    assert all(accepts(a) for a in (namesrv, broker, vip, grpc))
    assert routed_addrs(namesrv) == [advertised]


def _feature_conf(tmp_path: Path) -> Path:
    """broker.conf with TLS enforced and ACL on (one account)."""
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(
        "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    admin: true\n")
    conf = tmp_path / "broker.conf"
    conf.write_text(f"{SMALL_CONF}tls.server.mode=enforcing\naclEnable=true\n"
                    f"rocketmqHome={home}\nstorePathRootDir={tmp_path / 'store'}\n")
    return conf


def test_up_banner_names_each_feature_that_is_on_before_ready(tmp_path, servers):
    """TLS mode, ACL, --record, --conformance-report and --control-port: one line each, and
    ``ready`` stays the last line of the banner."""
    record, report = tmp_path / "rec.bin", tmp_path / "report"
    up = servers("up", "--namesrv-port", "0", "--broker-port", "0", "--grpc-port", "0",
                 "--control-port", "0", "--record", str(record), "--conformance-report",
                 str(report), "-c", str(_feature_conf(tmp_path)))
    up.banner()
    lines = [line for line in up.stop() if line.startswith("rmq-emu: ")]
    banner = lines[:lines.index(f"{READY} (Ctrl-C to stop)") + 1]
    expected = [
        "rmq-emu: TLS enforcing: test-mode self-signed certificate, client auth none "
        "(TLS clients only on the ports above)",
        f"rmq-emu: ACL on (aclEnable=true) for broker-a: 1 account(s) from "
        f"{tmp_path / 'home' / 'conf' / 'plain_acl.yml'}",
        f"rmq-emu: recording the name server and broker ports to {record}",
        f"rmq-emu: conformance report to {report} at stop (conformance.json, conformance.html)",
    ]
    assert [line for line in banner if line in expected] == expected, banner
    assert re.match(r"^rmq-emu: control API http://127\.0\.0\.1:[1-9]\d*/ ", banner[-3]), banner
    assert re.match(r"^rmq-emu: dashboard http://127\.0\.0\.1:[1-9]\d*/ ", banner[-2]), banner
    assert lines[len(banner):] == ["rmq-emu: stopped"]


def test_broker_banner_names_tls_and_acl(tmp_path, servers):
    """``rmq-emu broker`` prints the TLS mode and the ACL line too, before ``ready``."""
    lines = servers("broker", "--port", "0", "-n", "127.0.0.1:1",
                    "-c", str(_feature_conf(tmp_path))).banner()
    assert any(line.startswith("rmq-emu: TLS enforcing: ") for line in lines), lines
    assert any(line.startswith("rmq-emu: ACL on (aclEnable=true) for broker-a: 1 account(s)")
               for line in lines), lines
