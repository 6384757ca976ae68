"""namesrv.conf (``mqnamesrv -c``): NamesrvConfig / NettyServerConfig keys and the tls.* keys."""

from __future__ import annotations

import logging

import pytest

from rocketmq_emu.broker.tls.config import DEFAULT_TLS, ClientAuth, TlsMode
from rocketmq_emu.namesrv.config import NamesrvConfigError, parse_namesrv_conf


def test_empty_file_is_rocketmqs_defaults():
    """No key: port and KV path left to the command line, TLS permissive as RocketMQ's."""
    settings = parse_namesrv_conf("")
    assert settings.listen_port is None and settings.kv_config_path is None
    assert settings.tls == DEFAULT_TLS and settings.order_message_enable is False


def test_known_keys_are_read():
    """listenPort, kvConfigPath, orderMessageEnable."""
    settings = parse_namesrv_conf("listenPort=19876\nkvConfigPath=/tmp/kv.json\n"
                                  "orderMessageEnable=TRUE\n")
    assert settings.listen_port == 19876 and settings.kv_config_path == "/tmp/kv.json"
    assert settings.order_message_enable is True


def test_tls_keys_are_read_as_broker_conf_reads_them():
    """tls.server.mode and tls.server.need.client.auth reach the name server's TLS settings."""
    settings = parse_namesrv_conf("tls.server.mode=enforcing\n"
                                  "tls.server.need.client.auth=optional\n")
    assert settings.tls.mode is TlsMode.ENFORCING
    assert settings.tls.need_client_auth is ClientAuth.OPTIONAL


def test_java_keys_without_effect_are_not_unknown(caplog):
    """serverWorkerThreads and the like: accepted, INFO; a typo: warned and listed."""
    with caplog.at_level(logging.INFO):
        settings = parse_namesrv_conf("serverWorkerThreads=8\nlistenPrt=1\n")
    assert settings.unknown == ("listenPrt",)
    assert "serverWorkerThreads: accepted" in caplog.text
    assert "listenPrt: unknown key ignored" in caplog.text


@pytest.mark.parametrize("text, where", [
    ("listenPort=65536\n", "namesrv.conf:1 listenPort"),
    ("\nlistenPort=x\n", "namesrv.conf:2 listenPort"),
    ("orderMessageEnable=yes\n", "namesrv.conf:1 orderMessageEnable"),
    ("tls.server.mode=strict\n", "namesrv.conf:1 tls.server.mode"),
])
def test_bad_value_names_file_line_and_key(text, where):
    """A value that cannot be used is one error naming file, line and key."""
    with pytest.raises(NamesrvConfigError) as err:
        parse_namesrv_conf(text)
    assert where in str(err.value)
