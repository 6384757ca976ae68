"""The test-mode server certificate (Netty ``SelfSignedCertificate``, which ``TlsHelper`` uses
when ``tls.test.mode.enable`` is true).

Made on first use with an EC P-256 key (a few milliseconds, against a second or more for RSA)
and kept for the life of the process, so every port of every server in it presents the same one.
:func:`make_self_signed` makes others (the tests' configured certificates);
:func:`served_certificate_pem` is the certificate a configuration presents (what a TLS client is
to trust).
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Subject common name, as Netty's default ``SelfSignedCertificate`` fqdn ("localhost").
COMMON_NAME = "localhost"


@dataclass(frozen=True)
class SelfSigned:
    """A certificate and its private key, both PEM (the key unencrypted unless made with a
    password by :func:`make_self_signed`)."""

    cert_pem: bytes
    key_pem: bytes


@functools.cache
def self_signed() -> SelfSigned:
    """The process's test-mode certificate (made once): ``localhost``, with subject alternative
    names ``localhost`` and ``127.0.0.1``/``::1``, valid from a day ago for a year."""
    return make_self_signed(COMMON_NAME, dns_names=(COMMON_NAME,),
                            ip_addresses=("127.0.0.1", "::1"), valid_days=365, ca=True)


def make_self_signed(common_name: str, *, dns_names: tuple[str, ...] = (),
                     ip_addresses: tuple[str, ...] = (), valid_days: int = 1,
                     ca: bool = False, key_password: bytes | None = None) -> SelfSigned:
    """A new self-signed EC P-256 certificate for ``common_name`` with those subject alternative
    names, valid from a day ago for ``valid_days``; its private key PEM encrypted with
    ``key_password`` if given (PKCS#8)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    san = x509.SubjectAlternativeName(
        [x509.DNSName(n) for n in dns_names]
        + [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(san, critical=False)
    )
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None),
                                        critical=True)
    cert = builder.sign(key, hashes.SHA256())
    encryption = serialization.BestAvailableEncryption(key_password) if key_password \
        else serialization.NoEncryption()
    return SelfSigned(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                          encryption),
    )


def served_certificate_pem(config: Any) -> bytes:
    """The PEM certificate (chain) ports with the ``TlsConfig`` ``config`` present: the
    process's test-mode certificate (:func:`self_signed`), or the ``tls.server.certPath`` file.
    ValueError when they serve no TLS (None, or ``tls.server.mode=disabled``)."""
    from rocketmq_emu.broker.tls.config import TlsMode

    if config is None or config.mode is TlsMode.DISABLED:
        raise ValueError("these ports serve no TLS (tls.server.mode is disabled)")
    if config.test_mode:
        return self_signed().cert_pem
    return Path(config.cert_path).read_bytes()
