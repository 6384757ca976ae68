"""RocketMQ's TLS settings (Java ``TlsSystemConfig``, ``TlsHelper.extractTlsConfigFromFile``).

RocketMQ 4.9.8 reads these keys from JVM system properties, then overlays the ones found in the
``tls.config.file`` properties file. The emulator has no JVM properties: it reads them from
``broker.conf`` (the keys keep their dotted Java names), then from the ``tls.config.file`` named
there, whose values win as in ``TlsHelper``. As in Java, ``tls.server.mode`` is not read from
that file.

With no ``tls.*`` key at all the ports are permissive with the test-mode certificate, as
RocketMQ's defaults have them: a plain client pays one look at its first byte, and the
certificate is made at the first TLS connection, so a start stays fast. Without the ``[tls]``
extra (pyOpenSSL, cryptography) that default still serves plain clients and refuses a TLS
handshake with one log line naming the extra; a TLS key set explicitly without it is a start
error. A value Java would silently read as its default (an unknown mode or client-auth word, a
boolean that is not true/false) is a start error naming the key here.

Pure: no OpenSSL import (the context is built by :mod:`broker.tls.context`, lazily).
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# TlsSystemConfig's key names.
TLS_SERVER_MODE = "tls.server.mode"
TLS_ENABLE = "tls.enable"
TLS_CONFIG_FILE = "tls.config.file"
TLS_TEST_MODE_ENABLE = "tls.test.mode.enable"
TLS_SERVER_NEED_CLIENT_AUTH = "tls.server.need.client.auth"
TLS_SERVER_KEYPATH = "tls.server.keyPath"
TLS_SERVER_KEYPASSWORD = "tls.server.keyPassword"
TLS_SERVER_CERTPATH = "tls.server.certPath"
TLS_SERVER_AUTHCLIENT = "tls.server.authClient"
TLS_SERVER_TRUSTCERTPATH = "tls.server.trustCertPath"

#: Client-side keys: Java reads them for its own outgoing connections (BrokerOuterAPI); the
#: emulator's broker reads tls.enable only (its client trusts any server, presents no
#: certificate), the others are accepted without effect.
CLIENT_KEYS = frozenset({
    "tls.client.keyPath", "tls.client.keyPassword", "tls.client.certPath",
    "tls.client.authServer", "tls.client.trustCertPath",
})
SERVER_KEYS = frozenset({
    TLS_ENABLE, TLS_SERVER_MODE, TLS_CONFIG_FILE, TLS_TEST_MODE_ENABLE, TLS_SERVER_NEED_CLIENT_AUTH,
    TLS_SERVER_KEYPATH, TLS_SERVER_KEYPASSWORD, TLS_SERVER_CERTPATH, TLS_SERVER_AUTHCLIENT,
    TLS_SERVER_TRUSTCERTPATH,
})
#: Every key this module knows (``broker.conf`` does not warn about them).
TLS_KEYS = SERVER_KEYS | CLIENT_KEYS


class TlsConfigError(ValueError):
    """A TLS setting that cannot be used; the message names where it was set and the key."""


class TlsMode(enum.Enum):
    """Java ``TlsMode``: what the server does with the first byte of a connection."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


class ClientAuth(enum.Enum):
    """Netty ``ClientAuth`` as ``TlsHelper.parseClientAuthMode`` names it."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


@dataclass(frozen=True)
class TlsConfig:
    """The server side of ``TlsSystemConfig``; ``sources`` says where each key was set."""

    mode: TlsMode = TlsMode.PERMISSIVE
    test_mode: bool = True
    cert_path: str | None = None
    key_path: str | None = None
    key_password: str | None = None
    trust_cert_path: str | None = None
    need_client_auth: ClientAuth = ClientAuth.NONE
    auth_client: bool = False
    config_file: str | None = None
    #: ``tls.enable``: the broker's own connections use TLS (None: when the mode is enforcing,
    #: as ``BrokerStartup`` defaults it).
    client_enable: bool | None = None

    def client_enabled(self) -> bool:
        """Whether the broker's outgoing connections (to the name server) use TLS."""
        if self.client_enable is not None:
            return self.client_enable
        return self.mode is TlsMode.ENFORCING

    def tools_use_tls(self) -> bool:
        """Whether the project's own tools talking to these ports (the control API, the test
        harness's clients) use TLS: when the ports refuse plain connections (enforcing), or
        when ``tls.enable`` asks for TLS and the ports accept it (as the broker's own client
        decides, :meth:`client_enabled`); never towards disabled ports."""
        if self.mode is TlsMode.DISABLED:
            return False
        return self.mode is TlsMode.ENFORCING or self.client_enabled()

    def describe(self) -> str:
        """One log line of the settings in use (no password)."""
        what = "test-mode self-signed certificate" if self.test_mode else \
            f"certificate {self.cert_path}, key {self.key_path}"
        return (f"TLS {self.mode.value}: {what}, client auth {self.need_client_auth.value}"
                f"{', trusting ' + self.trust_cert_path if self.trust_cert_path else ''}")


#: RocketMQ's defaults: permissive, test-mode certificate, no client authentication.
DEFAULT_TLS = TlsConfig()


def _bool(raw: str, where: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise TlsConfigError(f"{where}: {raw!r} must be true or false")
    return value == "true"


def _enum(kind: type[enum.Enum], raw: str, where: str) -> enum.Enum:
    value = raw.strip().lower()
    for member in kind:
        if member.value == value:
            return member
    allowed = " | ".join(m.value for m in kind)
    raise TlsConfigError(f"{where}: {raw!r} must be one of {allowed}")


def _path(raw: str, where: str, base: Path | None) -> str | None:
    value = raw.strip()
    if not value:
        return None  # TlsHelper.isNullOrEmpty: an empty path is no path
    p = Path(os.path.expanduser(value))
    if not p.is_absolute() and base is not None:
        p = base / p
    if not p.is_file():
        raise TlsConfigError(f"{where}: {value!r}: no such file")
    return str(p)


def read_tls_file(path: str, where: str) -> list[tuple[str, str, str]]:
    """The ``(key, value, where)`` entries of a ``tls.config.file``.

    Java skips a missing or unreadable file with an INFO line; here it was named explicitly,
    so it is a start error."""
    from rocketmq_emu.broker.properties import PropertiesError, parse_properties

    try:
        text = Path(path).read_bytes().decode("latin-1")
        entries = parse_properties(text)
    except OSError as e:
        raise TlsConfigError(f"{where}: {path!r}: cannot read: {e.strerror or e}") from None
    except PropertiesError as e:
        raise TlsConfigError(f"{path} {e}") from None
    return [(e.key, e.value, f"{path}:{e.line} {e.key}") for e in entries]


#: What a TLS handshake or an explicit TLS setting without the ``[tls]`` extra is told.
NEEDS_EXTRA = "TLS needs pyOpenSSL and cryptography: pip install 'rocketmq-emu[tls]'"


def _check_installed(where: str) -> None:
    """TLS asked for explicitly needs the ``[tls]`` extra: say so at start rather than at the
    first handshake."""
    if not tls_available():
        raise TlsConfigError(f"{where}: {NEEDS_EXTRA}")


def tls_available() -> bool:
    """Whether the ``[tls]`` extra is installed (pyOpenSSL and cryptography)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("OpenSSL", "cryptography"))


def parse_tls(entries: Iterable[tuple[str, str, str]], base: Path | None = None) -> TlsConfig:
    """Build the TLS config from ``(key, raw value, where)`` entries of ``broker.conf`` (later
    entries win); without any, RocketMQ's defaults (permissive, test mode).

    Relative paths are taken from ``base`` (the directory of ``broker.conf``) if given."""
    raw: dict[str, tuple[str, str]] = {}
    for key, value, where in entries:
        if key in TLS_KEYS:
            raw[key] = (value, where)
    if TLS_CONFIG_FILE in raw:
        value, where = raw[TLS_CONFIG_FILE]
        file = _path(value, where, base)
        if file is not None:
            for key, fvalue, fwhere in read_tls_file(file, where):
                if key in (TLS_SERVER_MODE, TLS_ENABLE):
                    # TlsSystemConfig: the file holds everything but tlsMode and tlsEnable.
                    log.warning("%s: RocketMQ does not read %s from %s; set it in "
                                "broker.conf", fwhere, key, TLS_CONFIG_FILE)
                elif key in TLS_KEYS:
                    raw[key] = (fvalue, fwhere)
                else:
                    log.warning("%s: unknown key ignored", fwhere)
    return _build(raw, base)


def _build(raw: dict[str, tuple[str, str]], base: Path | None) -> TlsConfig:
    def get(key: str) -> tuple[str, str] | None:
        return raw.get(key)

    kwargs: dict = {}
    if (v := get(TLS_SERVER_MODE)) is not None:
        kwargs["mode"] = _enum(TlsMode, *v)
    if (v := get(TLS_TEST_MODE_ENABLE)) is not None:
        kwargs["test_mode"] = _bool(*v)
    if (v := get(TLS_ENABLE)) is not None:
        kwargs["client_enable"] = _bool(*v)
    if (v := get(TLS_SERVER_AUTHCLIENT)) is not None:
        kwargs["auth_client"] = _bool(*v)
    if (v := get(TLS_SERVER_NEED_CLIENT_AUTH)) is not None:
        # parseClientAuthMode: empty means NONE.
        if v[0].strip():
            kwargs["need_client_auth"] = _enum(ClientAuth, *v)
    for key, name in ((TLS_SERVER_CERTPATH, "cert_path"), (TLS_SERVER_KEYPATH, "key_path"),
                      (TLS_SERVER_TRUSTCERTPATH, "trust_cert_path"),
                      (TLS_CONFIG_FILE, "config_file")):
        if (v := get(key)) is not None:
            kwargs[name] = _path(v[0], v[1], base)
    if (v := get(TLS_SERVER_KEYPASSWORD)) is not None and v[0]:
        kwargs["key_password"] = v[0]
    for key in CLIENT_KEYS & raw.keys():
        log.info("%s: client-side TLS key, has no effect on the emulator's servers", raw[key][1])
    cfg = TlsConfig(**kwargs)
    asked = sorted(SERVER_KEYS & raw.keys() - {TLS_ENABLE}) if cfg.mode is not TlsMode.DISABLED \
        else []
    if cfg.client_enabled():
        asked.append(TLS_ENABLE if TLS_ENABLE in raw else TLS_SERVER_MODE)
    if asked:
        _check_installed(raw[asked[0]][1])
    if cfg.mode is not TlsMode.DISABLED and not cfg.test_mode:
        # SslContextBuilder.forServer needs both; Java logs the failure and closes every TLS
        # connection, here it is a start error.
        for key, value in ((TLS_SERVER_CERTPATH, cfg.cert_path),
                           (TLS_SERVER_KEYPATH, cfg.key_path)):
            if value is None:
                where = raw.get(TLS_TEST_MODE_ENABLE, ("", TLS_TEST_MODE_ENABLE))[1]
                raise TlsConfigError(f"{key}: required when {where} is false")
    if cfg.need_client_auth is not ClientAuth.NONE and cfg.auth_client \
            and not cfg.test_mode and cfg.trust_cert_path is None:
        log.warning("%s=true without %s: client certificates are checked against the "
                    "system's trusted CAs", TLS_SERVER_AUTHCLIENT, TLS_SERVER_TRUSTCERTPATH)
    return cfg
