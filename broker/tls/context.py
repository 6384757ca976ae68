"""The server's OpenSSL context (Java ``TlsHelper.buildSslContext(false)``).

* test mode: the process's self-signed certificate (:mod:`.certs`), client certificates asked
  for but optional, checked against the system's trusted CAs (``ClientAuth.OPTIONAL`` with the
  default trust manager);
* otherwise ``tls.server.certPath`` / ``tls.server.keyPath`` (PEM; ``tls.server.keyPassword``
  for an encrypted key) and ``tls.server.need.client.auth``; client certificates are checked
  against ``tls.server.trustCertPath`` only when ``tls.server.authClient`` is true, and
  accepted as they come otherwise (``InsecureTrustManagerFactory``).

``alpn`` (the gRPC endpoint: ``h2``) is selected when the client offers it.
Imports pyOpenSSL: only loaded once a server has TLS configured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from OpenSSL import SSL
from twisted.internet.interfaces import (
    IOpenSSLClientConnectionCreator,
    IOpenSSLServerConnectionCreator,
)
from zope.interface import implementer

from rocketmq_emu.broker.tls.certs import self_signed
from rocketmq_emu.broker.tls.config import (
    TLS_SERVER_KEYPASSWORD,
    TLS_SERVER_KEYPATH,
    ClientAuth,
    TlsConfig,
    TlsConfigError,
)

_VERIFY = {
    ClientAuth.NONE: SSL.VERIFY_NONE,
    ClientAuth.OPTIONAL: SSL.VERIFY_PEER,
    ClientAuth.REQUIRE: SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT,
}


def _load_key(config: TlsConfig) -> Any:
    """The private key of ``tls.server.keyPath``, decrypted with ``tls.server.keyPassword``."""
    path = str(config.key_path)
    password = config.key_password.encode() if config.key_password else None
    try:
        key = load_pem_private_key(Path(path).read_bytes(), password)
    except (ValueError, TypeError) as e:
        what = TLS_SERVER_KEYPASSWORD if "password" in str(e).lower() else TLS_SERVER_KEYPATH
        raise TlsConfigError(f"{what}: cannot load the private key {path}: {e}") from None
    return key


@implementer(IOpenSSLServerConnectionCreator)
class ServerContextFactory:
    """The server side for ``TLSMemoryBIOFactory``: one context, built on first use."""

    def __init__(self, config: TlsConfig, alpn: tuple[bytes, ...] = ()) -> None:
        self.config = config
        self.alpn = alpn
        self._context: SSL.Context | None = None

    def getContext(self) -> SSL.Context:  # noqa: N802 (Twisted API)
        """The context, built on the first call (the test-mode certificate is made then)."""
        if self._context is None:
            self._context = self._build()
        return self._context

    def serverConnectionForTLS(self, tls_protocol: Any) -> SSL.Connection:  # noqa: N802
        """A server-side connection for one accepted TLS connection (Twisted API)."""
        return SSL.Connection(self.getContext(), None)

    def _build(self) -> SSL.Context:
        cfg = self.config
        ctx = SSL.Context(SSL.TLS_SERVER_METHOD)
        ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
        if cfg.test_mode:
            cert = self_signed()
            ctx.use_certificate(x509.load_pem_x509_certificate(cert.cert_pem))
            ctx.use_privatekey(load_pem_private_key(cert.key_pem, None))
            ctx.set_default_verify_paths()
            ctx.set_verify(SSL.VERIFY_PEER, lambda conn, x509, err, depth, ok: bool(ok))
        else:
            try:
                ctx.use_certificate_chain_file(str(cfg.cert_path))
            except SSL.Error as e:
                raise TlsConfigError(f"tls.server.certPath: cannot load {cfg.cert_path}: "
                                     f"{e}") from None
            ctx.use_privatekey(_load_key(cfg))
            try:
                ctx.check_privatekey()
            except SSL.Error:
                raise TlsConfigError(f"{TLS_SERVER_KEYPATH}: {cfg.key_path} is not the key of "
                                     f"{cfg.cert_path}") from None
            if cfg.auth_client:
                if cfg.trust_cert_path:
                    ctx.load_verify_locations(cfg.trust_cert_path)
                else:
                    ctx.set_default_verify_paths()
                ctx.set_verify(_VERIFY[cfg.need_client_auth],
                               lambda conn, x509, err, depth, ok: bool(ok))
            else:
                # InsecureTrustManagerFactory: any client certificate is accepted.
                ctx.set_verify(_VERIFY[cfg.need_client_auth],
                               lambda conn, x509, err, depth, ok: True)
        if self.alpn:
            offered = self.alpn

            def select(conn: SSL.Connection, protos: list[bytes]) -> bytes:
                for proto in offered:
                    if proto in protos:
                        return proto
                return SSL.NO_OVERLAPPING_PROTOCOLS

            ctx.set_alpn_select_callback(select)
        return ctx


@implementer(IOpenSSLClientConnectionCreator)
class InsecureClientCreator:
    """The broker's client side (Java ``TlsHelper.buildSslContext(true)`` in test mode, or with
    ``tls.client.authServer`` false): TLS that trusts any server certificate."""

    def __init__(self) -> None:
        self._context: SSL.Context | None = None

    def clientConnectionForTLS(self, tls_protocol: Any) -> SSL.Connection:  # noqa: N802
        """A client-side connection for one outgoing TLS connection (Twisted API)."""
        if self._context is None:
            ctx = SSL.Context(SSL.TLS_CLIENT_METHOD)
            ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
            ctx.set_verify(SSL.VERIFY_NONE, lambda conn, x509, err, depth, ok: True)
            self._context = ctx
        conn = SSL.Connection(self._context, None)
        conn.set_app_data(tls_protocol)
        conn.set_connect_state()
        return conn
