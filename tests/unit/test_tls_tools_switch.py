"""How the project's tools decide to use TLS and what a TLS client is to trust (issue 25,
defect 1): the ports' settings for the control API and the harness, ``--tls`` or mqadmin's
``-Dtls.enable=true`` in ``$JAVA_OPT`` for the admin CLI, and the certificate the ports serve."""

from __future__ import annotations

import argparse

import pytest
from twisted.internet import defer, task

from rocketmq_emu.broker import cli
from rocketmq_emu.broker.remoting.client import RemotingClient, UnansweredCloseError
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RemotingConnectionError
from rocketmq_emu.broker.tls import certs
from rocketmq_emu.broker.tls.config import TlsConfig, TlsMode
from rocketmq_emu.client.admin_tls import java_opt_tls_enable, tls_hint, tls_requested
from rocketmq_emu.client.message import MQClientError


@pytest.mark.parametrize(("mode", "tls_enable", "expected"), [
    (TlsMode.ENFORCING, None, True),        # plain is refused
    (TlsMode.ENFORCING, False, True),       # whatever tls.enable says
    (TlsMode.PERMISSIVE, None, False),      # RocketMQ's default: plain is served
    (TlsMode.PERMISSIVE, True, True),       # tls.enable asks for TLS, the ports accept it
    (TlsMode.DISABLED, True, False),        # the ports would refuse a handshake
])
def test_tools_use_tls_where_the_ports_want_it(mode, tls_enable, expected):
    assert TlsConfig(mode=mode, client_enable=tls_enable).tools_use_tls() is expected


@pytest.mark.parametrize(("java_opt", "expected"), [
    ("", False),
    ("-Dtls.enable=true", True),
    ("-server -Xmx1g -Dtls.enable=TRUE -Dtls.test.mode.enable=true", True),
    ("-Dtls.enable=true -Dtls.enable=false", False),   # the JVM keeps the last
    ("-Dtls.enable=yes", False),                       # Boolean.parseBoolean
    ("-Dtls.enable", False),
    ("-Dtls.enabled=true", False),
    ("'-Dtls.enable=true' -Dfoo=\"a b\"", True),
])
def test_java_opt_tls_enable_reads_the_system_property_as_the_jvm_would(java_opt, expected):
    assert java_opt_tls_enable(java_opt) is expected


def test_tls_requested_by_the_option_or_java_opt():
    assert tls_requested(argparse.Namespace(tls=True), {})
    assert tls_requested(argparse.Namespace(tls=False), {"JAVA_OPT": "-Dtls.enable=true"})
    assert not tls_requested(argparse.Namespace(tls=False), {"JAVA_OPT": "-Xmx1g"})


def test_tls_hint_names_a_refused_plain_connection_however_wrapped():
    refused = UnansweredCloseError("127.0.0.1:9876")
    try:
        raise MQClientError("no name server answered 106") from refused
    except MQClientError as wrapped:
        hint = tls_hint(wrapped)
    assert hint == ("127.0.0.1:9876 closed the connection without answering: is the server "
                    "enforcing TLS (tls.server.mode=enforcing)? try --tls")
    assert tls_hint(MQClientError("no route")) is None


class _Conn:
    """A connection whose request fails because the peer closed it (cleanly or not)."""

    peer_addr = "127.0.0.1:9876"
    closed = True

    def __init__(self, closed_cleanly: bool) -> None:
        self.closed_cleanly = closed_cleanly

    def send_request(self, cmd, timeout, reactor):
        return defer.fail(RemotingConnectionError("closed before the response to opaque 1"))


@pytest.mark.parametrize(("closed_cleanly", "error"), [
    (False, UnansweredCloseError),      # reset at the first byte: an enforcing port
    (True, RemotingConnectionError),    # a clean close (a fault rule's close): no TLS hint
])
def test_a_plain_connection_reset_before_any_answer_is_named(closed_cleanly, error):
    client = RemotingClient(task.Clock())
    failures = []
    client._send(_Conn(closed_cleanly), RemotingCommand.request(106), 3.0) \
        .addErrback(failures.append)
    assert type(failures[0].value) is error


def test_served_certificate_is_the_test_mode_one_or_the_configured_file(tmp_path):
    assert certs.served_certificate_pem(TlsConfig()) == certs.self_signed().cert_pem
    own = tmp_path / "server.crt"
    own.write_bytes(b"-----BEGIN CERTIFICATE-----\n...\n")
    configured = TlsConfig(mode=TlsMode.ENFORCING, test_mode=False, cert_path=str(own))
    assert certs.served_certificate_pem(configured) == own.read_bytes()
    with pytest.raises(ValueError):
        certs.served_certificate_pem(TlsConfig(mode=TlsMode.DISABLED))


def test_tls_cert_is_a_subcommand():
    args = cli.build_parser(["tls-cert"]).parse_args(["tls-cert", "-o", "emu.pem"])
    assert args.server == "127.0.0.1:8081" and args.out == "emu.pem"
    assert args.func.__module__ == "rocketmq_emu.broker.tls.cli"
