"""The tls.* keys of broker.conf and of a tls.config.file (Java TlsSystemConfig, issue 15)."""

from __future__ import annotations

import logging

import pytest

from rocketmq_emu.broker.config import ConfigError, parse_broker_conf
from rocketmq_emu.broker.tls import config as tls_config
from rocketmq_emu.broker.tls.config import ClientAuth, TlsConfig, TlsMode


def test_no_tls_key_is_rocketmqs_default_permissive():
    """No tls.* key: permissive with the test-mode certificate, as RocketMQ's defaults."""
    tls = parse_broker_conf("brokerName=b\n").config.tls
    assert tls == TlsConfig(mode=TlsMode.PERMISSIVE, test_mode=True)
    assert not tls.client_enabled()


def test_a_key_without_the_mode_applies_to_the_default(tmp_path):
    """tls.server.need.client.auth alone configures the default permissive mode."""
    tls = parse_broker_conf("tls.server.need.client.auth=optional\n").config.tls
    assert tls.mode is TlsMode.PERMISSIVE and tls.need_client_auth is ClientAuth.OPTIONAL


def test_default_without_the_extra_starts_but_explicit_tls_does_not(monkeypatch):
    """Without pyOpenSSL the default still starts; a TLS key set explicitly is a start error."""
    monkeypatch.setattr(tls_config, "tls_available", lambda: False)
    assert parse_broker_conf("brokerName=b\n").config.tls.mode is TlsMode.PERMISSIVE
    assert parse_broker_conf("tls.server.mode=disabled\n").config.tls.mode is TlsMode.DISABLED
    with pytest.raises(ConfigError) as err:
        parse_broker_conf("tls.server.mode=permissive\n", "broker.conf")
    assert "tls.server.mode" in str(err.value) and "rocketmq-emu[tls]" in str(err.value)
    with pytest.raises(ConfigError) as err:
        parse_broker_conf("tls.server.mode=disabled\ntls.enable=true\n", "broker.conf")
    assert "tls.enable" in str(err.value)


def test_mode_alone_wires_tls_with_rocketmqs_defaults(caplog):
    """tls.server.mode set: test mode on, client auth none; the keys are not 'unknown'."""
    with caplog.at_level(logging.WARNING):
        loaded = parse_broker_conf("tls.server.mode=Enforcing\n")
    assert loaded.config.tls == TlsConfig(mode=TlsMode.ENFORCING)
    assert loaded.unknown == [] and "unknown" not in caplog.text
    assert loaded.config.tls.client_enabled()  # BrokerStartup: tls.enable defaults to enforcing


def test_every_server_key(tmp_path):
    """Paths, password, client auth, authClient and tls.enable are read."""
    for name in ("c.pem", "k.pem", "ca.pem"):
        (tmp_path / name).write_text("x")
    text = (f"tls.server.mode=permissive\ntls.test.mode.enable=false\n"
            f"tls.server.certPath={tmp_path / 'c.pem'}\ntls.server.keyPath={tmp_path / 'k.pem'}\n"
            f"tls.server.keyPassword=pw\ntls.server.trustCertPath={tmp_path / 'ca.pem'}\n"
            "tls.server.need.client.auth=require\ntls.server.authClient=true\ntls.enable=true\n")
    tls = parse_broker_conf(text).config.tls
    assert tls.mode is TlsMode.PERMISSIVE and tls.test_mode is False
    assert tls.cert_path == str(tmp_path / "c.pem") and tls.key_path == str(tmp_path / "k.pem")
    assert tls.key_password == "pw" and tls.trust_cert_path == str(tmp_path / "ca.pem")
    assert tls.need_client_auth is ClientAuth.REQUIRE and tls.auth_client is True
    assert tls.client_enabled()
    assert "pw" not in tls.describe()


@pytest.mark.parametrize("line, key", [
    ("tls.server.mode=strict", "tls.server.mode"),
    ("tls.server.mode=permissive\ntls.test.mode.enable=yes", "tls.test.mode.enable"),
    ("tls.server.mode=permissive\ntls.server.need.client.auth=always",
     "tls.server.need.client.auth"),
    ("tls.server.mode=permissive\ntls.server.certPath=/nonexistent/c.pem", "tls.server.certPath"),
    ("tls.server.mode=permissive\ntls.test.mode.enable=false", "tls.server.certPath"),
    ("tls.config.file=/nonexistent/tls.properties", "tls.config.file"),
])
def test_bad_value_is_one_error_naming_the_key(line, key):
    """Values Java would quietly replace by its default stop the start here."""
    with pytest.raises(ConfigError) as err:
        parse_broker_conf(line + "\n", "broker.conf")
    assert key in str(err.value)


def test_config_file_values_win_but_not_its_mode(tmp_path, caplog):
    """TlsHelper.extractTlsConfigFromFile: the file overrides, except tls.server.mode."""
    (tmp_path / "c.pem").write_text("x")
    (tmp_path / "k.pem").write_text("x")
    props = tmp_path / "tls.properties"
    props.write_text(f"tls.server.mode=disabled\ntls.test.mode.enable=false\n"
                     f"tls.server.certPath={tmp_path / 'c.pem'}\n"
                     f"tls.server.keyPath={tmp_path / 'k.pem'}\n"
                     "tls.server.need.client.auth=optional\n")
    with caplog.at_level(logging.WARNING):
        tls = parse_broker_conf(f"tls.server.need.client.auth=none\ntls.config.file={props}\n"
                                ).config.tls
    assert tls.mode is TlsMode.PERMISSIVE  # RocketMQ's default mode
    assert tls.need_client_auth is ClientAuth.OPTIONAL and tls.test_mode is False
    assert tls.config_file == str(props)
    assert "tls.server.mode" in caplog.text


def test_tls_is_not_listed_as_a_broker_property():
    """GET_BROKER_CONFIG lists BrokerConfig's properties; tls.* are JVM properties in Java."""
    import dataclasses

    from rocketmq_emu.broker.config import BrokerConfig

    field = {f.name: f for f in dataclasses.fields(BrokerConfig)}["tls"]
    assert field.metadata["property"] is False


def test_test_mode_certificate_is_made_once(tmp_path):
    """The self-signed certificate is EC and cached for the process."""
    from cryptography import x509

    from rocketmq_emu.broker.tls.certs import self_signed

    first = self_signed()
    assert self_signed() is first
    cert = x509.load_pem_x509_certificate(first.cert_pem)
    assert cert.public_key().curve.name == "secp256r1"
