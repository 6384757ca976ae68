"""TLS on the name server, broker and gRPC ports (issue 15): Python's ``ssl`` and grpcio against a
cluster started with each ``tls.server.mode`` (Java ``NettyRemotingServer``'s first-byte switch).

Blocking clients run in threads; the reactor serves them.
"""

from __future__ import annotations

import json
import socket
import ssl
import struct

import grpc
import pytest
import pytest_twisted
from twisted.internet import reactor, threads

from rocketmq_emu.broker.cluster import Cluster, ClusterSpec
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.status import Code
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.tls import certs, sniff
from rocketmq_emu.broker.tls.config import TlsConfig, TlsMode
from rocketmq_emu.client.testing import TEST_BROKER_SETTINGS, free_broker_port

META = (("x-mq-client-id", "tls-client@1"), ("x-mq-language", "PYTHON"),
        ("x-mq-client-version", "5.1.2"))


def start(tmp_path, tls: TlsConfig):
    """A name server, a broker and a gRPC endpoint with ``tls``: a Deferred firing with the
    started cluster."""
    cfg = BrokerConfig(broker_name="broker-a", listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(tmp_path / "a"), tls=tls,
                       **TEST_BROKER_SETTINGS)
    cluster = Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0, grpc_port=0), reactor)
    return cluster.start()


@pytest.fixture(params=["permissive", "enforcing", "disabled"])
def served(request, tmp_path):
    """A cluster in each mode (test-mode certificate); its mode."""
    mode = TlsMode(request.param)
    cluster = pytest_twisted.blockon(start(tmp_path, TlsConfig(mode=mode)))
    yield cluster, mode
    pytest_twisted.blockon(cluster.stop())


def client_context() -> ssl.SSLContext:
    """A client that trusts anything, as a RocketMQ client in test mode does."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def call(addr: str, cmd: RemotingCommand, tls: bool) -> RemotingCommand | None:
    """One request on a new connection; None when the server closes it (or the handshake
    fails) instead of answering."""
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    try:
        if tls:
            sock = client_context().wrap_socket(sock)
        sock.sendall(cmd.encode())
        head = _read(sock, 4)
        if head is None:
            return None
        frame = _read(sock, struct.unpack(">I", head)[0])
        return None if frame is None else RemotingCommand.decode(head + frame)
    except (ssl.SSLError, ConnectionError):
        return None
    finally:
        sock.close()


def _read(sock: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed (or reset) ``sock`` rather than leaving it open 10 s."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def query_route(channel: grpc.Channel) -> int:
    """QueryRoute for a topic that does not exist over ``channel`` (closed after); the code of
    the answer's status."""
    req = messages.message_class("QueryRouteRequest")()
    req.topic.name = "Nope"
    stub = channel.unary_unary(
        "/apache.rocketmq.v2.MessagingService/QueryRoute",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=messages.message_class("QueryRouteResponse").FromString)
    try:
        return stub(req, metadata=META, timeout=5).status.code
    finally:
        channel.close()


def cluster_info(cluster: Cluster, tls: bool):
    """GET_BROKER_CLUSTER_INFO from the name server."""
    return threads.deferToThread(call, cluster.namesrv.addr, RemotingCommand.request(
        RequestCode.GET_BROKER_CLUSTER_INFO), tls)


def runtime_info(cluster: Cluster, tls: bool):
    """GET_BROKER_RUNTIME_INFO from the broker."""
    return threads.deferToThread(call, cluster.broker.addr, RemotingCommand.request(
        RequestCode.GET_BROKER_RUNTIME_INFO), tls)


@pytest_twisted.inlineCallbacks
def test_each_mode_serves_the_clients_it_admits(served):
    """Permissive: plain and TLS on one port; enforcing: TLS only; disabled: plain only; on
    both the name server's and the broker's port."""
    cluster, mode = served
    for tls in (False, True):
        admitted = mode is TlsMode.PERMISSIVE or (mode is TlsMode.ENFORCING) == tls
        info = yield cluster_info(cluster, tls)
        runtime = yield runtime_info(cluster, tls)
        if admitted:
            assert info is not None and info.code == ResponseCode.SUCCESS, (mode, tls)
            assert json.loads(info.body)["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
            assert runtime is not None and runtime.code == ResponseCode.SUCCESS, (mode, tls)
        else:
            assert info is None and runtime is None, (mode, tls)
    # The refusals closed only their own connections.
    info = yield cluster_info(cluster, mode is TlsMode.ENFORCING)
    assert info.code == ResponseCode.SUCCESS


@pytest_twisted.inlineCallbacks
def test_default_is_permissive_on_every_port(tmp_path):
    """No tls.* setting (RocketMQ's defaults): the name server, broker and gRPC ports each serve
    plain and TLS clients; gRPC over TLS trusts the test-mode certificate."""
    cfg = BrokerConfig(broker_name="broker-a", listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(tmp_path / "a"), **TEST_BROKER_SETTINGS)
    cluster = Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0, grpc_port=0), reactor)
    yield cluster.start()
    try:
        for tls in (False, True):
            info = yield cluster_info(cluster, tls)
            runtime = yield runtime_info(cluster, tls)
            assert info.code == ResponseCode.SUCCESS and runtime.code == ResponseCode.SUCCESS
        target = f"127.0.0.1:{cluster.grpc.port}"
        for channel in (grpc.insecure_channel(target), grpc.secure_channel(
                target, grpc.ssl_channel_credentials(certs.self_signed().cert_pem))):
            code = yield threads.deferToThread(query_route, channel)
            assert code == Code.TOPIC_NOT_FOUND
    finally:
        yield cluster.stop()


@pytest_twisted.inlineCallbacks
def test_default_without_the_extra_refuses_tls_and_serves_plain(tmp_path, monkeypatch, caplog):
    """Without pyOpenSSL a TLS handshake on the default permissive port is closed with one line
    naming the extra; plain clients are served."""
    def missing(self):
        raise ImportError("No module named 'OpenSSL'")

    monkeypatch.setattr(sniff.TlsSwitchFactory, "tls_factory", missing)
    cluster = yield start(tmp_path, TlsConfig())
    try:
        refused = yield runtime_info(cluster, True)
        assert refused is None
        assert "rocketmq-emu[tls]" in caplog.text
        runtime = yield runtime_info(cluster, False)
        assert runtime.code == ResponseCode.SUCCESS
    finally:
        yield cluster.stop()


@pytest_twisted.inlineCallbacks
def test_failed_handshake_closes_only_its_connection(tmp_path):
    """A TLS record header followed by garbage: that connection is closed, the port keeps
    serving plain and TLS clients."""
    cluster = yield start(tmp_path, TlsConfig(mode=TlsMode.PERMISSIVE))
    try:
        host, port = cluster.broker.addr.rsplit(":", 1)

        def garbage() -> bool:
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(b"\x16\x03\x01\x00\x20" + b"\xff" * 32)
                received = 0  # a TLS alert record (7 bytes) may come before the close
                while not _closed(sock):
                    received += 1
                    if received > 64:
                        return False  # a stream of bytes: not an alert
                return True

        closed = yield threads.deferToThread(garbage)
        assert closed
        for tls in (True, False):
            runtime = yield runtime_info(cluster, tls)
            assert runtime.code == ResponseCode.SUCCESS
    finally:
        yield cluster.stop()


@pytest_twisted.inlineCallbacks
def test_stalled_handshake_does_not_block_others_and_is_closed(tmp_path, monkeypatch):
    """A client that sends a TLS record header and stops: others are served meanwhile, and the
    handshake deadline closes it."""
    monkeypatch.setattr(sniff, "HANDSHAKE_TIMEOUT_S", 0.5)
    cluster = yield start(tmp_path, TlsConfig(mode=TlsMode.PERMISSIVE))
    try:
        host, port = cluster.broker.addr.rsplit(":", 1)
        stalled = socket.create_connection((host, int(port)), timeout=10)
        stalled.sendall(b"\x16\x03\x01")
        silent = socket.create_connection((host, int(port)), timeout=10)  # not a byte
        for tls in (True, False):
            runtime = yield runtime_info(cluster, tls)
            assert runtime.code == ResponseCode.SUCCESS
        closed = yield threads.deferToThread(_closed, stalled)
        assert closed
        # A finished handshake outlives the deadline.
        ctx = client_context()

        def long_lived() -> RemotingCommand | None:
            with socket.create_connection((host, int(port)), timeout=10) as raw, \
                    ctx.wrap_socket(raw) as sock:
                import time

                time.sleep(1.0)
                sock.sendall(RemotingCommand.request(
                    RequestCode.GET_BROKER_RUNTIME_INFO).encode())
                head = _read(sock, 4)
                frame = _read(sock, struct.unpack(">I", head)[0])
                return RemotingCommand.decode(head + frame)

        resp = yield threads.deferToThread(long_lived)
        assert resp.code == ResponseCode.SUCCESS
        silent.close()
        stalled.close()
    finally:
        yield cluster.stop()


def make_cert(tmp_path):
    """A self-signed certificate for 127.0.0.1 and its key (encrypted with "secret"), written
    as PEM files; the certificate's PEM."""
    made = certs.make_self_signed("tls-test", ip_addresses=("127.0.0.1",),
                                  key_password=b"secret")
    (tmp_path / "server.crt").write_bytes(made.cert_pem)
    (tmp_path / "server.key").write_bytes(made.key_pem)
    return made.cert_pem


@pytest_twisted.inlineCallbacks
def test_grpc_over_tls_with_configured_certificate(tmp_path):
    """certPath/keyPath (an encrypted key and its password): grpcio's ssl_channel_credentials
    trusting that certificate gets answers; a plain channel to the enforcing port does not."""
    cert_pem = make_cert(tmp_path)
    cluster = yield start(tmp_path, TlsConfig(
        mode=TlsMode.ENFORCING, test_mode=False, cert_path=str(tmp_path / "server.crt"),
        key_path=str(tmp_path / "server.key"), key_password="secret"))
    try:
        target = f"127.0.0.1:{cluster.grpc.port}"

        code = yield threads.deferToThread(query_route, grpc.secure_channel(
            target, grpc.ssl_channel_credentials(root_certificates=cert_pem)))
        assert code == Code.TOPIC_NOT_FOUND
        with pytest.raises(grpc.RpcError) as err:
            yield threads.deferToThread(query_route, grpc.insecure_channel(target))
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        # The remoting ports present the same certificate.
        runtime = yield runtime_info(cluster, True)
        assert runtime.code == ResponseCode.SUCCESS
        served_cert = yield threads.deferToThread(
            ssl.get_server_certificate, ("127.0.0.1", cluster.namesrv.port))
        assert served_cert.encode().strip() == cert_pem.strip()
    finally:
        yield cluster.stop()
