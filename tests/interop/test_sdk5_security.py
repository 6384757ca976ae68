"""The RocketMQ 5.x Python SDK (PyPI ``rocketmq-python-client==5.1.2``, gRPC) against
``rmq-emu up --grpc-port`` with security on, unmodified: ACL 1.0 (``aclEnable=true``,
``plain_acl.yml`` under ``rocketmqHome``; the SDK signs each call with
``ClientConfiguration(endpoints, Credentials(ak, sk))``; wrong keys, no keys and a topic
without PUB are PERMISSION_DENIED) and TLS (``tls.server.mode`` enforcing and permissive with a
certificate made by the test; the SDK's ``tls_enable=True`` trusts gRPC core's default roots,
pointed at that certificate with ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``). One emulator per
configuration for the module; each client runs in a subprocess (clients/sdk5_py_*.py).
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from interop_support import (
    TEST_BROKER_CONF,
    ClientLauncher,
    Emulator,
    create_topic,
    plain_acl_yml,
    start_emulator,
    stop_emulator,
    unique,
)

from rocketmq_emu.broker.tls.certs import make_self_signed
from rocketmq_emu.client.testing_tools import free_port

AK, SK = "RocketMQ", "12345678"
TOPIC = unique("S5Acl")
READ_ONLY = unique("S5AclRo")
PLAIN_ACL = plain_acl_yml(AK, SK, TOPIC, READ_ONLY)
RIGHT = {"access_key": AK, "secret_key": SK}


def _started(cp, timeout: float = 30):
    cp.wait_for(lambda evs: any(e["event"] in ("started", "start_error") for e in evs), timeout,
                "start")
    return cp


def _produce(sdk: ClientLauncher, env: dict | None = None, **config):
    prod = sdk.sdk5_python("sdk5_py_producer.py", env=env, **config)
    prod.wait(60)
    return prod


def _sdk_log(launcher: ClientLauncher) -> str:
    """The SDK's own log under the launcher's $HOME: it logs the gRPC status of a failed
    QueryRoute, then raises only "failed to fetch topic:T route." from send/receive."""
    path = launcher.home / "logs" / "rocketmq_python" / "rocketmq_client.log"
    return path.read_text(errors="replace") if path.exists() else ""


def _route_refused(cp, launcher: ClientLauncher, status: str, event: str = "send_error") -> None:
    """``cp`` reported ``event`` for the topic route, and the SDK logged QueryRoute's ``status``."""
    errors = cp.events(event)
    assert errors and all("failed to fetch topic" in e["error"] for e in errors), cp.diagnostics()
    assert f"status = StatusCode.{status}" in _sdk_log(launcher), cp.diagnostics()


# --- ACL


@pytest.fixture(scope="module")
def acl_emulator(tmp_path_factory) -> Emulator:
    """``rmq-emu up --grpc-port`` with aclEnable=true and plain_acl.yml under rocketmqHome."""
    tmp = tmp_path_factory.mktemp("sdk5-acl")
    home = tmp / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    conf = tmp / "broker.conf"
    conf.write_text(TEST_BROKER_CONF +
                    f"aclEnable=true\nrocketmqHome={home}\n")
    emu = start_emulator(tmp, ["-c", str(conf)], grpc_port=free_port())
    for topic in (TOPIC, READ_ONLY):
        create_topic(emu, topic, credentials=(AK, SK))
    yield emu
    stop_emulator(emu)


@pytest.fixture
def acl_sdk(request, tmp_path, acl_emulator, sdk5_python) -> ClientLauncher:
    """Launcher for the 5.x Python SDK scripts against the ACL emulator."""
    launcher = ClientLauncher(tmp_path, acl_emulator, None, None, sdk5_py=sdk5_python)
    request.addfinalizer(launcher.close)
    return launcher


def test_right_credentials_send_and_the_simple_consumer_receives_and_acks(acl_sdk):
    """Signed with the account's keys, sends are stored and a SimpleConsumer receives and acks them."""
    group = unique("GID_S5Acl")
    cons = _started(acl_sdk.sdk5_python("sdk5_py_simple_consumer.py", topic=TOPIC, group=group,
                                        expect=2, **RIGHT))
    assert cons.events("started"), cons.diagnostics()
    prod = _produce(acl_sdk, topic=TOPIC, count=2, body_prefix="acl", **RIGHT)
    sent = prod.events("sent")
    assert len(sent) == 2, prod.diagnostics()
    cons.wait(40)
    assert sorted((e["message_id"], e["body"]) for e in cons.events("acked")) == sorted(
        (e["message_id"], e["body"]) for e in sent), cons.diagnostics()
    assert not cons.events("ack_error") and not cons.events("receive_error"), cons.diagnostics()


def test_wrong_secret_key_is_refused_and_the_broker_stays_up(acl_sdk):
    """A wrong secret key: QueryRoute is PERMISSION_DENIED, nothing sent; the right keys then send."""
    prod = _produce(acl_sdk, topic=TOPIC, count=1, access_key=AK, secret_key="wrong-secret")
    assert prod.events("sent") == [], prod.diagnostics()
    _route_refused(prod, acl_sdk, "PERMISSION_DENIED")
    assert acl_sdk.emulator.proc.poll() is None
    ok = _produce(acl_sdk, topic=TOPIC, count=1, **RIGHT)
    assert len(ok.events("sent")) == 1, ok.diagnostics()


def test_simple_consumer_with_a_wrong_secret_key_receives_nothing(acl_sdk):
    """A SimpleConsumer signing with a wrong secret key gets only PERMISSION_DENIED errors."""
    cons = _started(acl_sdk.sdk5_python("sdk5_py_simple_consumer.py", topic=TOPIC,
                                        group=unique("GID_S5AclBad"), access_key=AK,
                                        secret_key="wrong-secret", timeout=3))
    cons.wait(30)
    assert cons.events("received") == [], cons.diagnostics()
    _route_refused(cons, acl_sdk, "PERMISSION_DENIED", "receive_error")


def test_sdk_without_credentials_is_refused(acl_sdk):
    """Empty Credentials() (the SDK still signs, with an empty access key): PERMISSION_DENIED."""
    prod = _produce(acl_sdk, topic=TOPIC, count=1)
    assert prod.events("sent") == [], prod.diagnostics()
    _route_refused(prod, acl_sdk, "PERMISSION_DENIED")


def test_topic_without_pub_permission_is_refused(acl_sdk):
    """Right keys but only SUB on the topic: the route is served, SendMessage is PERMISSION_DENIED."""
    prod = _produce(acl_sdk, topic=READ_ONLY, count=1, **RIGHT)
    assert prod.events("sent") == [], prod.diagnostics()
    assert [e["code"] for e in prod.events("send_error")] == ["PERMISSION_DENIED"], \
        prod.diagnostics()


# --- TLS


def make_cert(tmp: Path) -> Path:
    """A self-signed certificate for IP 127.0.0.1 (server.crt) and its key (server.key)."""
    made = make_self_signed("sdk5-tls-test", ip_addresses=("127.0.0.1",))
    (tmp / "server.crt").write_bytes(made.cert_pem)
    (tmp / "server.key").write_bytes(made.key_pem)
    return tmp / "server.crt"


TLS_TOPIC = unique("S5Tls")


def _tls_emulator(tmp_path_factory, mode: str) -> tuple[Emulator, Path]:
    """``rmq-emu up --grpc-port`` with ``tls.server.mode=mode`` and the test's certificate (not
    the test-mode one), and TLS_TOPIC created over TLS."""
    tmp = tmp_path_factory.mktemp(f"sdk5-tls-{mode}")
    cert = make_cert(tmp)
    conf = tmp / "broker.conf"
    conf.write_text(TEST_BROKER_CONF +
                    f"tls.server.mode={mode}\ntls.test.mode.enable=false\n"
                    f"tls.server.certPath={cert}\ntls.server.keyPath={tmp / 'server.key'}\n")
    emu = start_emulator(tmp, ["-c", str(conf)], grpc_port=free_port())
    create_topic(emu, TLS_TOPIC, context=ssl.create_default_context(cafile=str(cert)))
    return emu, cert


@pytest.fixture(scope="module")
def enforcing_emulator(tmp_path_factory):
    """``rmq-emu up --grpc-port`` with tls.server.mode=enforcing and the test's certificate
    (the broker then talks TLS to its name server too); yields it and the certificate file."""
    emu, cert = _tls_emulator(tmp_path_factory, "enforcing")
    yield emu, cert
    stop_emulator(emu)


@pytest.fixture(scope="module")
def permissive_emulator(tmp_path_factory):
    """The same with tls.server.mode=permissive: TLS and plain clients on the same ports."""
    emu, cert = _tls_emulator(tmp_path_factory, "permissive")
    yield emu, cert
    stop_emulator(emu)


def _launcher(request, tmp_path, emu: Emulator, sdk5_python) -> ClientLauncher:
    launcher = ClientLauncher(tmp_path, emu, None, None, sdk5_py=sdk5_python)
    request.addfinalizer(launcher.close)
    return launcher


def _roots(cert: Path) -> dict[str, str]:
    """The client environment making gRPC core's default roots (what the SDK's
    ``grpc.ssl_channel_credentials()`` trusts) the test's certificate."""
    return {"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(cert)}


def test_tls_enabled_sdk_sends_and_the_simple_consumer_receives_and_acks(
        request, tmp_path, enforcing_emulator, sdk5_python):
    """Enforcing TLS: with tls_enable and the certificate as gRPC's roots, send and receive+ack
    work."""
    emu, cert = enforcing_emulator
    sdk = _launcher(request, tmp_path, emu, sdk5_python)
    cons = _started(sdk.sdk5_python("sdk5_py_simple_consumer.py", env=_roots(cert),
                                    topic=TLS_TOPIC, group=unique("GID_S5Tls"), expect=2, tls=True))
    assert cons.events("started"), cons.diagnostics()
    prod = _produce(sdk, env=_roots(cert), topic=TLS_TOPIC, count=2, body_prefix="tls", tls=True)
    sent = prod.events("sent")
    assert len(sent) == 2, prod.diagnostics()
    cons.wait(40)
    assert sorted((e["message_id"], e["body"]) for e in cons.events("acked")) == sorted(
        (e["message_id"], e["body"]) for e in sent), cons.diagnostics()


def test_plaintext_sdk_cannot_send_to_an_enforcing_endpoint(
        request, tmp_path, enforcing_emulator, sdk5_python):
    """Enforcing TLS: without tls_enable the connection is refused (UNAVAILABLE), nothing sent."""
    emu, _ = enforcing_emulator
    sdk = _launcher(request, tmp_path, emu, sdk5_python)
    prod = _produce(sdk, topic=TLS_TOPIC, count=1)
    assert prod.events("sent") == [], prod.diagnostics()
    _route_refused(prod, sdk, "UNAVAILABLE")
    assert "refused: TLS is enforced on this port" in emu.log_path.read_text(), emu.log_tail()


def test_permissive_endpoint_serves_tls_and_plaintext_sdk_clients(
        request, tmp_path, permissive_emulator, sdk5_python):
    """Permissive TLS: a tls_enable producer and a plaintext one both send; a consumer gets both."""
    emu, cert = permissive_emulator
    sdk = _launcher(request, tmp_path, emu, sdk5_python)
    cons = _started(sdk.sdk5_python("sdk5_py_simple_consumer.py", topic=TLS_TOPIC,
                                    group=unique("GID_S5Perm"), expect=2))
    assert cons.events("started"), cons.diagnostics()
    secure = _produce(sdk, env=_roots(cert), topic=TLS_TOPIC, body_prefix="tls", tls=True)
    plain = _produce(sdk, topic=TLS_TOPIC, body_prefix="plain")
    sent = secure.events("sent") + plain.events("sent")
    assert len(sent) == 2, secure.diagnostics() + plain.diagnostics()
    cons.wait(40)
    assert sorted(e["body"] for e in cons.events("acked")) == ["plain-0", "tls-0"], \
        cons.diagnostics()
