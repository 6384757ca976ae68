"""``rmq-emu`` as a user runs it: subprocesses on loopback ports, temporary stores."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.cli import READY  # a bare "ready" would match "already in use"
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.testing_tools import free_broker_port, free_port

ROOT = Path(__file__).resolve().parents[2]


class Proc:
    """A ``python -m broker.cli ...`` subprocess with its output in a file."""

    def __init__(self, tmp: Path, name: str, *args: str) -> None:
        if args and args[0] == "up" and "--grpc-port" not in args:
            args = (*args, "--grpc-port", "0")  # 8081 may be taken by another test's emulator
        self.log = tmp / f"{name}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "rocketmq_emu.broker.cli", *args], cwd=ROOT, stdout=out,
                stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_output(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.output()
            if text in out:
                return out
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.kill()
        pytest.fail(f"no {text!r} in output (exit {self.proc.returncode}):\n{self.output()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"did not stop within {timeout}s after signal {sig}:\n{self.output()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def procs():
    started: list[Proc] = []
    yield started
    for p in started:
        p.kill()


def rpc(addr: str, code: int, ext: dict | None = None, body: bytes = b"",
        timeout: float = 5, tls: bool = False) -> RemotingCommand:
    """One blocking request/response over a fresh connection (``tls``: trusting any
    certificate, as a RocketMQ client in test mode)."""
    host, port = addr.rsplit(":", 1)
    frame = RemotingCommand.request(code, ext or {}, body).encode()
    with socket.create_connection((host, int(port)), timeout=timeout) as raw:
        s = raw
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            s = ctx.wrap_socket(raw)
        s.sendall(frame)
        head = _recv_exact(s, 4)
        (length,) = struct.unpack(">i", head)
        return RemotingCommand.decode_frame(_recv_exact(s, length))


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def send_message(broker: str, topic: str, body: bytes, queue_id: int = 0) -> RemotingCommand:
    """SEND_MESSAGE_V2 as a Java producer writes it."""
    ext = {"a": "PID_cli", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
           "g": str(int(time.time() * 1000)), "h": "0",
           "i": properties_to_string({"TAGS": "T", "WAIT": "true"}), "j": "0", "k": "false",
           "m": "false"}
    return rpc(broker, RequestCode.SEND_MESSAGE_V2, ext, body)


def wait_route(namesrv: str, topic: str, timeout: float = 10, tls: bool = False) -> dict:
    """Poll GET_ROUTEINFO_BY_TOPIC until the name server knows ``topic``."""
    deadline = time.monotonic() + timeout
    while True:
        resp = rpc(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, tls=tls)
        if resp.code == 0:
            return jsonutil.loads(resp.body)
        if time.monotonic() > deadline:
            pytest.fail(f"no route for {topic}: code {resp.code} {resp.remark}")
        time.sleep(0.2)


#: The default 1 GiB commit log file is pre-touched (really written): too big for test stores.
SMALL_COMMITLOG = "mappedFileSizeCommitLog=16777216\n"


def start_up(tmp: Path, procs: list, *extra: str) -> tuple[Proc, str, str, Path]:
    ns_port, broker_port = free_port(), free_broker_port()
    store = tmp / "store"
    conf = tmp / "small.conf"
    conf.write_text(SMALL_COMMITLOG)
    p = Proc(tmp, "up", "up", "--store", str(store), "--namesrv-port", str(ns_port),
             "--broker-port", str(broker_port), "-c", str(conf), *extra)
    procs.append(p)
    p.wait_output(READY)
    return p, f"127.0.0.1:{ns_port}", f"127.0.0.1:{broker_port}", store


def test_help_lists_the_subcommands():
    """``rmq-emu --help`` names up, namesrv and broker."""
    out = subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    for word in ("up", "namesrv", "broker"):
        assert word in out.stdout


def test_up_prints_addresses_and_store(tmp_path, procs):
    """``up`` prints the name server and broker addresses and the store path."""
    p, namesrv, broker, store = start_up(tmp_path, procs)
    out = p.output()
    assert namesrv in out and broker in out and str(store) in out


def test_up_prints_its_grpc_endpoint(tmp_path, procs):
    """``up --grpc-port N`` names its gRPC endpoint for the 5.x SDKs, which answers there."""
    port = free_port()
    p, _, _, _ = start_up(tmp_path, procs, "--grpc-port", str(port))
    assert f"gRPC (RocketMQ 5 SDKs) on 127.0.0.1:{port}" in p.output()
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_broker_alone_serves_no_grpc_unless_asked(tmp_path, procs):
    """``broker`` without --grpc-port prints no gRPC endpoint (several brokers share hosts)."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"listenPort={free_broker_port()}\n"
                    f"storePathRootDir={tmp_path / 'b'}\n{SMALL_COMMITLOG}")
    br = Proc(tmp_path, "broker", "broker", "-n", "127.0.0.1:1", "-c", str(conf))
    procs.append(br)
    assert "gRPC" not in br.wait_output(READY)


def test_up_broker_registers_with_its_name_server(tmp_path, procs):
    """The embedded broker is routable: TBW102's route names its address."""
    _, namesrv, broker, _ = start_up(tmp_path, procs)
    route = wait_route(namesrv, "TBW102")
    addrs = [a for bd in route["brokerDatas"] for a in bd["brokerAddrs"].values()]
    assert addrs == [broker]


def test_up_serves_the_vip_port_too(tmp_path, procs):
    """The broker answers on listenPort - 2 as well (older Java producers use it)."""
    _, _, broker, _ = start_up(tmp_path, procs)
    host, port = broker.rsplit(":", 1)
    resp = send_message(f"{host}:{int(port) - 2}", "CliVip", b"vip")
    assert resp.code == 0, resp


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_up_stops_cleanly_and_keeps_messages(tmp_path, procs, sig):
    """A signal stops ``up`` with status 0, no ``abort`` marker left, messages kept on restart."""
    p, _, broker, store = start_up(tmp_path, procs)
    resp = send_message(broker, "CliKeep", b"kept")
    assert resp.code == 0, resp
    assert (store / "abort").exists()
    assert p.stop(sig) == 0, p.output()
    assert "stopped" in p.output()
    assert not (store / "abort").exists()
    p2, _, broker2, _ = start_up(tmp_path, procs)
    resp = rpc(broker2, RequestCode.GET_MAX_OFFSET, {"topic": "CliKeep", "queueId": "0"})
    assert resp.code == 0 and resp.ext_fields["offset"] == "1", resp


def test_separate_namesrv_and_broker_with_broker_conf(tmp_path, procs):
    """``namesrv`` + ``broker -n -c broker.conf``: the broker registers under its conf's names."""
    ns_port, broker_port = free_port(), free_broker_port()
    ns = Proc(tmp_path, "namesrv", "namesrv", "--port", str(ns_port))
    procs.append(ns)
    ns.wait_output(READY)
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerClusterName=CliCluster\nbrokerName=broker-cli\nlistenPort={broker_port}\n"
        f"storePathRootDir={tmp_path / 'bstore'}\nnoSuchKey=1\n{SMALL_COMMITLOG}")
    br = Proc(tmp_path, "broker", "broker", "-n", f"127.0.0.1:{ns_port}", "-c", str(conf))
    procs.append(br)
    out = br.wait_output(READY)
    assert "noSuchKey" in out  # unknown keys are warned about, not fatal
    route = wait_route(f"127.0.0.1:{ns_port}", "TBW102")
    (bd,) = route["brokerDatas"]
    assert bd["brokerName"] == "broker-cli" and bd["cluster"] == "CliCluster"
    assert list(bd["brokerAddrs"].values()) == [f"127.0.0.1:{broker_port}"]
    assert br.stop() == 0 and ns.stop() == 0


def test_bad_broker_conf_exits_with_a_message(tmp_path):
    """An unusable value stops the start with status 2 and names the key."""
    conf = tmp_path / "broker.conf"
    conf.write_text("listenPort=abc\n")
    out = subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", "broker", "-c", str(conf)],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "listenPort" in out.stderr and "broker.conf" in out.stderr


def test_enforcing_namesrv_conf_and_broker_conf_talk_tls(tmp_path, procs):
    """``namesrv -c namesrv.conf`` and ``broker -c broker.conf`` with tls.server.mode=enforcing:
    the broker registers over TLS (tls.enable follows the mode), clients get answers only over
    TLS, a plain connection is closed."""
    ns_port, broker_port = free_port(), free_broker_port()
    (tmp_path / "namesrv.conf").write_text(f"listenPort={ns_port}\ntls.server.mode=enforcing\n")
    ns = Proc(tmp_path, "namesrv", "namesrv", "-c", str(tmp_path / "namesrv.conf"))
    procs.append(ns)
    ns.wait_output(READY)
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=broker-tls\nlistenPort={broker_port}\n"
                    f"storePathRootDir={tmp_path / 'bstore'}\ntls.server.mode=enforcing\n"
                    f"{SMALL_COMMITLOG}")
    br = Proc(tmp_path, "broker", "broker", "-n", f"127.0.0.1:{ns_port}", "-c", str(conf))
    procs.append(br)
    br.wait_output(READY)
    route = wait_route(f"127.0.0.1:{ns_port}", "TBW102", tls=True)
    assert route["brokerDatas"][0]["brokerName"] == "broker-tls"
    resp = rpc(f"127.0.0.1:{broker_port}", RequestCode.GET_BROKER_RUNTIME_INFO, tls=True)
    assert resp.code == 0
    for port in (ns_port, broker_port):
        with pytest.raises((ConnectionError, OSError)):
            rpc(f"127.0.0.1:{port}", RequestCode.GET_BROKER_CLUSTER_INFO)
    assert "TLS is enforced" in ns.output()
    assert br.stop() == 0 and ns.stop() == 0


def test_bad_namesrv_conf_exits_with_a_message(tmp_path):
    """An unusable namesrv.conf value stops the start with status 2 and names file and key."""
    conf = tmp_path / "namesrv.conf"
    conf.write_text("tls.server.mode=strict\n")
    out = subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", "namesrv", "-c",
                          str(conf)], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "namesrv.conf:1 tls.server.mode" in out.stderr and "Traceback" not in out.stderr


def test_record_to_an_unwritable_place_is_one_line(tmp_path):
    """--record into a directory that does not exist: exit 2 naming the option, no traceback."""
    out = subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", "up", "--record",
                          str(tmp_path / "nope" / "r.bin"), "--store", str(tmp_path / "s")],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "--record" in out.stderr and "does not exist" in out.stderr
    assert "Traceback" not in out.stderr
