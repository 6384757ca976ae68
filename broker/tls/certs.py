"""The test-mode server certificate (Netty ``SelfSignedCertificate``, which ``TlsHelper`` uses
when ``tls.test.mode.enable`` is true).

Made on first use with an EC P-256 key (a few milliseconds, against a second or more for RSA)
and kept for the life of the process, so every port of every server in it presents the same one.
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass

#: Subject common name, as Netty's default ``SelfSignedCertificate`` fqdn ("localhost").
COMMON_NAME = "localhost"


@dataclass(frozen=True)
class SelfSigned:
    """A certificate and its unencrypted private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes


@functools.cache
def self_signed() -> SelfSigned:
    """The process's test-mode certificate (made once): ``localhost``, with subject alternative
    names ``localhost`` and ``127.0.0.1``/``::1``, valid from a day ago for a year."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, COMMON_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    san = x509.SubjectAlternativeName([
        x509.DNSName(COMMON_NAME),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return SelfSigned(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                          serialization.NoEncryption()),
    )
