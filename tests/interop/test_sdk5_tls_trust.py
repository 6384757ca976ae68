"""The documented way to use an emulator enforcing TLS with its own test-mode certificate
(issue 25, defect 1), as a user runs it: ``rmq-emu up`` with ``tls.server.mode=enforcing`` in
broker.conf and nothing else, topics created with ``rmq-emu admin updateTopic --tls`` (or
mqadmin's ``JAVA_OPT=-Dtls.enable=true``), and the RocketMQ 5.x Python SDK (PyPI
``rocketmq-python-client==5.1.2``, ``tls_enable=True``, unmodified) trusting the emulator through
``rmq-emu tls-cert -o FILE`` and ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=FILE``.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import sys

import pytest
from interop_support import (
    ROOT,
    TEST_BROKER_CONF,
    ClientLauncher,
    Emulator,
    start_emulator,
    stop_emulator,
    unique,
    wait_route,
)

from rocketmq_emu.client.testing_tools import free_port

TOPIC = unique("S5Trust")


def rmq_emu(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``rmq-emu ARGV`` as a user runs it (``python -m rocketmq_emu.broker.cli``)."""
    return subprocess.run([sys.executable, "-m", "rocketmq_emu.broker.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})))


def any_server() -> ssl.SSLContext:
    """For the test's own route checks: TLS trusting any server, as the admin CLI does."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


@pytest.fixture(scope="module")
def enforcing(tmp_path_factory) -> Emulator:
    """``rmq-emu up --grpc-port`` with only ``tls.server.mode=enforcing`` set: every port
    presents the test-mode certificate and refuses plain connections."""
    tmp = tmp_path_factory.mktemp("sdk5-tls-trust")
    conf = tmp / "broker.conf"
    conf.write_text(TEST_BROKER_CONF + "tls.server.mode=enforcing\n")
    emu = start_emulator(tmp, ["-c", str(conf)], grpc_port=free_port())
    yield emu
    stop_emulator(emu)


def update_topic_tls(emu: Emulator, topic: str, message_type: str) -> str:
    """``rmq-emu admin updateTopic --tls ... -a +message.type=T`` (``JAVA_OPT`` cleared, so
    only the option turns TLS on); its output, once the name server routes the topic."""
    proc = rmq_emu("admin", "updateTopic", "--tls", "-n", emu.namesrv, "-b", emu.broker,
                   "-t", topic, "-r", "2", "-w", "2", "-a", f"+message.type={message_type}",
                   env={"JAVA_OPT": ""})
    assert proc.returncode == 0, proc.stderr
    wait_route(emu, topic, context=any_server())
    return proc.stdout


@pytest.fixture(scope="module")
def topic(enforcing) -> str:
    """TOPIC, a NORMAL topic created with the admin CLI over TLS."""
    update_topic_tls(enforcing, TOPIC, "NORMAL")
    return TOPIC


def test_admin_update_topic_with_tls_creates_a_typed_topic(enforcing):
    """``rmq-emu admin updateTopic --tls -a +message.type=FIFO``: created and routed."""
    fifo = unique("S5TrustFifo")
    out = update_topic_tls(enforcing, fifo, "FIFO")
    assert f"create topic to {enforcing.broker} success." in out
    assert out.rstrip().endswith("attributes={+message.type=FIFO}]")


def test_admin_follows_mqadmins_java_opt_switch(enforcing):
    """``JAVA_OPT=-Dtls.enable=true rmq-emu admin ...`` as for mqadmin; without it, one line
    saying the server enforces TLS."""
    topic = unique("S5TrustJavaOpt")
    argv = ("admin", "updateTopic", "-n", enforcing.namesrv, "-b", enforcing.broker, "-t", topic)
    proc = rmq_emu(*argv, env={"JAVA_OPT": "-Xmx256m -Dtls.enable=true"})
    assert proc.returncode == 0, proc.stderr
    wait_route(enforcing, topic, context=any_server())
    refused = rmq_emu(*argv, env={"JAVA_OPT": ""})
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        f"updateTopic command failed: {enforcing.broker} closed the connection without "
        f"answering: is the server enforcing TLS (tls.server.mode=enforcing)? try --tls"]


def test_sdk_with_tls_enable_trusts_the_emulator_through_tls_cert(
        request, tmp_path, enforcing, topic, sdk5_python):
    """``rmq-emu tls-cert -s ENDPOINT -o FILE``, then ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=FILE``:
    the SDK with ``tls_enable=True`` verifies the emulator, sends, receives and acks."""
    cert = tmp_path / "emu-cert.pem"
    proc = rmq_emu("tls-cert", "-s", enforcing.grpc, "-o", str(cert))
    assert proc.returncode == 0, proc.stderr
    assert f"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH={cert}" in proc.stdout
    roots = {"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(cert)}
    sdk = ClientLauncher(tmp_path, enforcing, None, None, sdk5_py=sdk5_python)
    request.addfinalizer(sdk.close)
    cons = sdk.sdk5_python("sdk5_py_simple_consumer.py", env=roots, topic=topic,
                           group=unique("GID_S5Trust"), expect=2, tls=True)
    cons.wait_for(lambda evs: any(e["event"] in ("started", "start_error") for e in evs), 30,
                  "start")
    assert cons.events("started"), cons.diagnostics()
    prod = sdk.sdk5_python("sdk5_py_producer.py", env=roots, topic=topic, count=2,
                           body_prefix="trusted", tls=True)
    prod.wait(60)
    sent = prod.events("sent")
    assert len(sent) == 2, prod.diagnostics()
    cons.wait(40)
    assert sorted((e["message_id"], e["body"]) for e in cons.events("acked")) == sorted(
        (e["message_id"], e["body"]) for e in sent), cons.diagnostics()

