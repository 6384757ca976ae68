"""``rmq-emu tls-cert``: the certificate a running server's TLS port presents, for a TLS client
to trust (printed, or written with ``-o``).

A server in test mode (``tls.test.mode.enable``, RocketMQ's default) presents a self-signed
certificate for ``localhost``, ``127.0.0.1`` and ``::1``, made when the process starts serving
TLS. RocketMQ's Java clients in test mode trust any certificate, but the 5.x SDKs check it
against their root certificates; this command fetches it from the endpoint a client uses::

    rmq-emu tls-cert -s 127.0.0.1:8081 -o emu-cert.pem
    GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=emu-cert.pem python app.py    # tls_enable=True

Every port of one process presents the same certificate; a new one is made at each start (as
Netty's ``SelfSignedCertificate`` is), so fetch it again after a restart, or configure your own
(``tls.test.mode.enable=false``, ``tls.server.certPath``, ``tls.server.keyPath``). A certificate
issued by a CA is printed too, with a warning: the client is to trust that CA.

Only the standard library's ``ssl`` fetches it: the command works without the ``[tls]`` extra.
"""

from __future__ import annotations

import argparse
import ssl
import sys
from pathlib import Path
from typing import Any

from rocketmq_emu.broker.grpc import DEFAULT_GRPC_PORT

#: Where ``rmq-emu up`` serves the 5.x SDKs' gRPC by default.
DEFAULT_SERVER = f"127.0.0.1:{DEFAULT_GRPC_PORT}"
#: The environment variable gRPC core (the 5.x Python SDK's ``grpc.ssl_channel_credentials()``)
#: reads its default root certificates from.
GRPC_ROOTS_ENV = "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"


class FetchError(Exception):
    """The certificate could not be fetched; the message says why in one sentence."""


def _split(addr: str) -> tuple[str, int]:
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise FetchError(f"{addr!r} is not host:port")
    return host.strip("[]"), int(port)


def fetch_certificate_pem(addr: str, timeout: float = 5.0) -> str:
    """The PEM of the certificate the TLS server at ``host:port`` presents (not verified: this
    is how a client learns what to trust). :class:`FetchError` when it cannot be had."""
    host, port = _split(addr)
    try:
        return ssl.get_server_certificate((host, port), timeout=timeout)
    except ConnectionRefusedError:
        raise FetchError(f"cannot connect to {addr}: connection refused (is the server "
                         f"running? give the endpoint your client uses with --server)") from None
    except TimeoutError:
        raise FetchError(f"{addr} did not complete a TLS handshake within {timeout:g} s") \
            from None
    except (ssl.SSLError, ConnectionResetError, ConnectionAbortedError, EOFError) as e:
        raise FetchError(f"{addr} refused a TLS handshake ({_reason(e)}): does it serve TLS? "
                         f"(tls.server.mode disabled, or not a rmq-emu port)") from None
    except OSError as e:
        raise FetchError(f"cannot connect to {addr}: {e.strerror or e}") from None


def _reason(e: BaseException) -> str:
    return getattr(e, "reason", None) or getattr(e, "strerror", None) or type(e).__name__


def self_issued(pem: str) -> bool | None:
    """Whether the certificate is its own issuer (a client can trust it as a root); None when
    that cannot be told (no ``cryptography``)."""
    try:
        from cryptography import x509
    except ImportError:
        return None
    cert = x509.load_pem_x509_certificate(pem.encode())
    return cert.issuer == cert.subject


def run(args: argparse.Namespace) -> int:
    """``rmq-emu tls-cert``: print or write the PEM; one line on stderr for a failure."""
    try:
        pem = fetch_certificate_pem(args.server, args.timeout)
    except FetchError as e:
        print(f"rmq-emu tls-cert: error: {e}", file=sys.stderr)
        return 1
    if self_issued(pem) is False:
        print(f"rmq-emu tls-cert: warning: {args.server}'s certificate is issued by a CA: "
              f"trust that CA's certificate rather than this one", file=sys.stderr)
    if args.out is None:
        sys.stdout.write(pem)
        return 0
    out = Path(args.out)
    try:
        out.write_text(pem)
    except OSError as e:
        print(f"rmq-emu tls-cert: error: cannot write {out}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"rmq-emu: wrote the certificate {args.server} presents to {out}; a 5.x SDK with "
          f"tls_enable=True trusts it with {GRPC_ROOTS_ENV}={out}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``tls-cert`` to the ``rmq-emu`` command line (``broker.cli`` plug-in contract)."""
    p = subparsers.add_parser(
        "tls-cert", help="print the certificate a server's TLS port presents, for a client to "
                         "trust",
        description="Fetch the certificate the server at --server presents over TLS (the "
                    "test-mode one by default, or tls.server.certPath's) and print it as PEM, "
                    f"or write it to -o FILE: give that file to a TLS client as its trusted "
                    f"roots, e.g. {GRPC_ROOTS_ENV}=FILE for the 5.x SDKs' tls_enable=True.")
    p.add_argument("-s", "--server", default=DEFAULT_SERVER, metavar="HOST:PORT",
                   help=f"the endpoint your client uses: the gRPC port, the name server or the "
                        f"broker (one process presents one certificate on all; "
                        f"default {DEFAULT_SERVER})")
    p.add_argument("-o", "--out", metavar="FILE", default=None,
                   help="write the PEM to FILE instead of printing it")
    p.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                   help="connect and handshake timeout (5)")
    p.set_defaults(func=run)
