"""The project's own tools against a cluster enforcing TLS (issue 25, defect 1): the admin CLI
(``--tls``, or ``-Dtls.enable=true`` in ``$JAVA_OPT`` as for mqadmin; without either, one line
naming the cause), the control API and the harness follow the cluster's mode, and
``rmq-emu tls-cert`` hands out the certificate a TLS client is to trust."""

from __future__ import annotations

import socket
import ssl

import pytest
from control_api_support import call
from twisted.internet import defer, reactor, threads

from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.tls.cli import FetchError, fetch_certificate_pem
from rocketmq_emu.broker.tls.config import TlsConfig, TlsMode
from rocketmq_emu.broker.topic_message_type import TopicMessageType, topic_message_type
from rocketmq_emu.client.admin_cli import build_parser, execute
from rocketmq_emu.client.blocking import run_blocking
from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import TEST_BROKER_SETTINGS, unique

ENFORCING = pytest.mark.rocketmq(tls="enforcing")


def admin(cluster, *argv: str) -> tuple[int, str]:
    """One ``rmq-emu admin`` command in-process, against ``cluster``'s name server."""
    args = build_parser().parse_args([argv[0], "-n", cluster.namesrv_addr, *argv[1:]])
    return run_blocking(lambda: defer.ensureDeferred(execute(args, reactor)), timeout=30)


def in_thread(fn, *args):
    """``fn(*args)`` in a worker thread while the reactor serves (a blocking socket client)."""
    return run_blocking(threads.deferToThread, fn, *args, timeout=30)


def message_type(cluster, topic: str) -> TopicMessageType:
    return topic_message_type(cluster.store.topic_config.select_topic_config(topic))


@ENFORCING
def test_admin_update_topic_with_tls_creates_a_typed_topic(rocketmq, monkeypatch):
    """``updateTopic --tls -a +message.type=FIFO`` reaches an enforcing name server and broker."""
    monkeypatch.delenv("JAVA_OPT", raising=False)
    topic = unique("TlsFifo")
    status, text = admin(rocketmq, "updateTopic", "--tls", "-c", "DefaultCluster", "-t", topic,
                         "-a", "+message.type=FIFO")
    assert status == 0, text
    assert f"create topic to {rocketmq.broker_addr} success." in text
    assert message_type(rocketmq, topic) is TopicMessageType.FIFO


@ENFORCING
def test_admin_uses_tls_when_java_opt_sets_tls_enable(rocketmq, monkeypatch):
    """``JAVA_OPT=-Dtls.enable=true`` (mqadmin's switch) turns TLS on without ``--tls``."""
    monkeypatch.setenv("JAVA_OPT", "-Xmx256m -Dtls.enable=true")
    topic = unique("TlsJavaOpt")
    status, text = admin(rocketmq, "updateTopic", "-b", rocketmq.broker_addr, "-t", topic)
    assert status == 0, text
    assert message_type(rocketmq, topic) is TopicMessageType.NORMAL


@ENFORCING
def test_admin_without_tls_says_the_server_enforces_tls(rocketmq, monkeypatch):
    """A plain admin command refused by an enforcing port fails with one line naming the cause
    and the option, whether the name server or the broker refused it."""
    monkeypatch.delenv("JAVA_OPT", raising=False)
    for argv in (("clusterList",), ("updateTopic", "-b", rocketmq.broker_addr, "-t", "T")):
        status, text = admin(rocketmq, *argv)
        assert status == 1, text
        assert len(text.splitlines()) == 1, text
        assert "closed the connection without answering: is the server enforcing TLS " \
               "(tls.server.mode=enforcing)? try --tls" in text


@pytest.mark.rocketmq(tls="enforcing", control_port=0)
def test_control_api_creates_a_topic_on_an_enforcing_cluster(rocketmq):
    """``POST /topics`` talks to its enforcing broker over TLS."""
    topic = unique("TlsCtl")
    status, doc = call(rocketmq, "POST", "/topics", {"topic": topic, "queues": 2})
    assert status == 200, doc
    assert (doc["topic"], doc["queues"], doc["brokers"]) == (topic, 2, ["broker-a"])
    status, doc = call(rocketmq, "GET", f"/topics/{topic}")
    assert status == 200 and len(doc["queues"]) == 2


@pytest.mark.rocketmq(config=BrokerConfig(tls=TlsConfig(mode=TlsMode.ENFORCING),
                                          **TEST_BROKER_SETTINGS))
def test_harness_given_an_enforcing_config_creates_sends_and_receives(rocketmq):
    """A whole BrokerConfig with ``tls.server.mode=enforcing``: the harness's topic creation,
    producer and consumer follow it."""
    assert rocketmq.client_tls
    topic = unique("TlsConfigT")
    rocketmq.create_topic(topic)
    inbox = rocketmq.collector(topic)
    assert rocketmq.producer().send(Message(topic, b"sealed")).status.name == "SEND_OK"
    assert [m.body for m in inbox.wait_for(1, timeout=20)] == [b"sealed"]


def _verified_handshake(addr: str, pem: str) -> str:
    """A TLS handshake with ``addr`` trusting only ``pem`` and checking the host name; the
    protocol version agreed."""
    host, port = addr.rsplit(":", 1)
    ctx = ssl.create_default_context(cadata=pem)
    with socket.create_connection((host, int(port)), timeout=10) as sock, \
            ctx.wrap_socket(sock, server_hostname=host) as tls:
        return tls.version() or ""


@ENFORCING
def test_tls_cert_fetches_the_certificate_clients_can_trust(rocketmq):
    """The certificate fetched from the gRPC endpoint is the one every port presents (the
    harness's :meth:`tls_certificate_pem`), and a client trusting only it verifies the broker."""
    pem = in_thread(fetch_certificate_pem, rocketmq.grpc_endpoint)
    assert pem.encode() == rocketmq.tls_certificate_pem()
    assert in_thread(fetch_certificate_pem, rocketmq.namesrv_addr) == pem
    assert in_thread(_verified_handshake, rocketmq.broker_addr, pem).startswith("TLS")


@pytest.mark.rocketmq(tls="disabled")
def test_tls_cert_on_a_port_without_tls_is_one_sentence(rocketmq):
    """A port with TLS disabled closes the handshake: the error says TLS may be off."""
    with pytest.raises(FetchError) as info:
        in_thread(fetch_certificate_pem, rocketmq.namesrv_addr)
    assert f"{rocketmq.namesrv_addr} refused a TLS handshake" in str(info.value)
    assert "tls.server.mode disabled" in str(info.value)
