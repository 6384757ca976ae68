"""gRPC over HTTP/2 as pure codecs: what a server reads from and writes into HTTP/2 frames.

Everything here follows grpc's ``doc/PROTOCOL-HTTP2.md`` ("gRPC over HTTP2"); section names in
the docstrings are that document's. Status codes and which one a server generates for which
failure follow grpc's ``doc/statuscodes.md``. No HTTP/2 library, reactor or socket is involved:
the HTTP/2 layer hands in header lists and DATA chunks and writes out what these functions return.

* Length-Prefixed-Message ("Requests"): :func:`encode_message`, :class:`MessageDecoder`.
* Request-Headers ("Requests"): :func:`parse_request_headers` -> :class:`RequestHeaders`, or
  :class:`RequestRejected` carrying the response to send.
* Response-Headers, Trailers, Trailers-Only ("Responses"): :func:`response_headers`,
  :func:`trailers`, :func:`trailers_only`, :func:`parse_status`.
* Status-Message percent-encoding: :func:`encode_grpc_message`, :func:`decode_grpc_message`.
* Timeout ("Requests"): :func:`parse_timeout`, :func:`format_timeout`.

Header lists are ``(name, value)`` pairs of ``str``; incoming ones may also be ``bytes`` (what an
HTTP/2 library hands over by default).
"""

from __future__ import annotations

import base64
import binascii
import enum
import math
import re
import zlib
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import construct as cs

from rocketmq_emu.broker.layout import Layout

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE", "LENGTH_PREFIXED_MESSAGE", "MAX_TIMEOUT_VALUE", "PREFIX_SIZE",
    "SUPPORTED_ENCODINGS", "GrpcError", "MessageDecoder", "RequestHeaders", "RequestRejected",
    "StatusCode", "decode_binary_header", "decode_grpc_message", "encode_grpc_message",
    "encode_message", "encode_metadata", "message_prefix",
    "format_timeout", "parse_request_headers", "parse_status", "parse_timeout",
    "response_headers", "trailers", "trailers_only",
]


class StatusCode(enum.IntEnum):
    """gRPC's 17 status codes (grpc ``doc/statuscodes.md``; the numbers of ``grpc/status.h``)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class GrpcError(Exception):
    """A failure that ends a call with ``code`` and ``message`` (sent in Trailers)."""

    def __init__(self, code: StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message

    def trailers(self) -> list[tuple[str, str]]:
        """The Trailers that end the call with this status ("Responses")."""
        return trailers(self.code, self.message)


class RequestRejected(GrpcError):
    """Request-Headers a server refuses before running the call.

    ``http_status`` is 200 for a gRPC error (answered Trailers-Only) or the HTTP error the spec
    asks for (415 for a Content-Type not starting with ``application/grpc``).
    """

    def __init__(self, code: StatusCode, message: str, http_status: int = 200,
                 metadata: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(code, message)
        self.http_status = http_status
        self.metadata = metadata

    def response(self) -> list[tuple[str, str]]:
        """The single HEADERS block (sent with END_STREAM) answering the rejected request."""
        if self.http_status == 200:
            return trailers_only(self.code, self.message, metadata=self.metadata)
        return [(":status", str(self.http_status)), ("content-type", "text/plain; charset=utf-8"),
                *trailers(self.code, self.message, metadata=self.metadata)]


# --- Length-Prefixed-Message ---------------------------------------------------------------------
#: "Length-Prefixed-Message -> Compressed-Flag Message-Length Message": a 1-byte flag (0 or 1),
#: a 4-byte big-endian unsigned length, then the message bytes (PROTOCOL-HTTP2.md, "Requests").
LENGTH_PREFIXED_MESSAGE = cs.Struct(
    "compressed" / cs.Int8ub,
    "length" / cs.Rebuild(cs.Int32ub, cs.len_(cs.this.message)),
    "message" / cs.Bytes(cs.this.length),
)

_MESSAGE = Layout(LENGTH_PREFIXED_MESSAGE)
#: The struct of the 5-byte prefix (flag, length).
_PREFIX = _MESSAGE.struct("compressed", "length")
#: Bytes in front of every message.
PREFIX_SIZE = _PREFIX.size
#: grpc's default limit on a received message (4 MiB), used when no other is given.
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024
#: Message-Encodings this module can decompress ("identity" means none).
SUPPORTED_ENCODINGS = ("identity", "gzip", "deflate")
_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
#: A compressed message is inflated whole up to this; past it, the rest is first inflated in
#: :data:`_INFLATE_STEP` pieces and counted, not kept, so a small message that inflates past the
#: limit (a "zip bomb") is refused having held this much, not the limit (130 MiB at the proxy).
_INFLATE_AT_ONCE = 1 << 20
_INFLATE_STEP = 1 << 16


def encode_message(payload: bytes, compressed: bool = False) -> bytes:
    """One Length-Prefixed-Message: flag, big-endian length, ``payload`` ("Requests")."""
    return _PREFIX.pack(1 if compressed else 0, len(payload)) + payload


def message_prefix(length: int, compressed: bool = False) -> bytes:
    """The 5 bytes (Compressed-Flag, Message-Length) in front of a ``length``-byte message, for
    a writer that sends a large payload after them without copying it into one buffer."""
    return _PREFIX.pack(1 if compressed else 0, length)


class MessageDecoder:
    """Cuts Length-Prefixed-Messages out of DATA frame payloads of any size.

    DATA frame boundaries have no relation to message boundaries ("Data Frames"): :meth:`feed`
    takes each chunk and returns the messages it completed (none, one or several), decompressed.
    ``encoding`` is the request's grpc-encoding; without one (or ``identity``) a Compressed-Flag of
    1 is an error, as "If the Message-Encoding header is omitted then the Compressed-Flag must be
    0". Errors are :class:`GrpcError`: INTERNAL for bad framing or a message that does not
    decompress, RESOURCE_EXHAUSTED for one over ``max_size`` (statuscodes.md).
    """

    def __init__(self, max_size: int = DEFAULT_MAX_MESSAGE_SIZE, encoding: str | None = None) -> None:
        if encoding not in (None, "identity") and encoding not in _ZLIB_WBITS:
            raise GrpcError(StatusCode.UNIMPLEMENTED, f"grpc-encoding {encoding!r} is not supported")
        self.max_size = max_size
        self.encoding = None if encoding == "identity" else encoding
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole message (non-zero at EOS: truncated)."""
        return len(self._buffer)

    def feed(self, chunk: bytes) -> list[bytes]:
        """Append ``chunk``; return the whole messages it completed, in order."""
        buf = self._buffer
        if not buf and len(chunk) >= PREFIX_SIZE:
            # A unary request is nearly always one DATA frame holding exactly one message: cut
            # it out of the chunk without the round trip through the buffer.
            flag, length = _PREFIX.unpack_from(chunk)
            if len(chunk) == PREFIX_SIZE + length:
                self._check(flag, length)
                payload = bytes(chunk[PREFIX_SIZE:])
                return [self._decompress(payload) if flag else payload]
        buf += chunk
        out: list[bytes] = []
        at = 0
        while len(buf) - at >= PREFIX_SIZE:
            flag, length = _PREFIX.unpack_from(buf, at)
            self._check(flag, length)
            end = at + PREFIX_SIZE + length
            if end > len(buf):
                break
            payload = bytes(buf[at + PREFIX_SIZE:end])
            out.append(self._decompress(payload) if flag else payload)
            at = end
        if at:
            del buf[:at]
        return out

    def _check(self, flag: int, length: int) -> None:
        if flag not in (0, 1):
            raise GrpcError(StatusCode.INTERNAL, f"Compressed-Flag is {flag}; it must be 0 or 1")
        if flag and self.encoding is None:
            raise GrpcError(StatusCode.INTERNAL,
                            "Compressed-Flag is 1 but the request has no grpc-encoding")
        if length > self.max_size:
            raise GrpcError(StatusCode.RESOURCE_EXHAUSTED,
                            f"message of {length} bytes is over the limit of {self.max_size}")

    def _decompress(self, payload: bytes) -> bytes:
        wbits = _ZLIB_WBITS[self.encoding]  # type: ignore[index]
        limit = self.max_size
        inflater = zlib.decompressobj(wbits)
        try:
            data = inflater.decompress(payload, min(limit, _INFLATE_AT_ONCE) + 1)
            if len(data) > _INFLATE_AT_ONCE and limit > _INFLATE_AT_ONCE:
                data = self._inflate_large(inflater, payload, wbits, len(data))
        except zlib.error as exc:
            raise GrpcError(StatusCode.INTERNAL,
                            f"message does not decompress with {self.encoding}: {exc}") from None
        if len(data) > limit:
            raise GrpcError(StatusCode.RESOURCE_EXHAUSTED,
                            f"decompressed message is over the limit of {limit} bytes")
        if not inflater.eof:  # (the large path checked it)
            raise GrpcError(StatusCode.INTERNAL, f"message is a truncated {self.encoding} stream")
        return data

    def _inflate_large(self, inflater: Any, payload: bytes, wbits: int, size: int) -> bytes:
        """A message inflating past one step: its size counted a step at a time (nothing kept),
        then, under the limit, inflated again whole (a second pass only for large messages)."""
        limit = self.max_size
        while not inflater.eof and size <= limit:
            step = inflater.decompress(inflater.unconsumed_tail, _INFLATE_STEP)
            if not step:
                break
            size += len(step)
        if size > limit:
            raise GrpcError(StatusCode.RESOURCE_EXHAUSTED,
                            f"decompressed message is over the limit of {limit} bytes")
        if not inflater.eof:
            raise GrpcError(StatusCode.INTERNAL, f"message is a truncated {self.encoding} stream")
        return zlib.decompressobj(wbits).decompress(payload, limit + 1)


# --- Timeout ---------------------------------------------------------------------------------------
#: "TimeoutValue -> positive integer as ASCII string of at most 8 digits".
MAX_TIMEOUT_VALUE = 99_999_999
#: TimeoutUnit -> seconds: Hour, Minute, Second, Millisecond, Microsecond, Nanosecond.
#: Whole units are multiplied, fractions divided (21n is 21 / 1e9, the float nearest 2.1e-08).
_UNITS = {"H": (3600, 1), "M": (60, 1), "S": (1, 1), "m": (1, 10**3), "u": (1, 10**6), "n": (1, 10**9)}
_UNIT_NS = {"n": 1, "u": 1_000, "m": 1_000_000, "S": 10**9, "M": 60 * 10**9, "H": 3600 * 10**9}
_TIMEOUT = re.compile(r"([0-9]{1,8})([HMSmun])")


def parse_timeout(value: str) -> float:
    """A ``grpc-timeout`` value ("Timeout" in "Requests": 1-8 digits and one of H M S m u n) in
    seconds; ValueError naming the value otherwise. ``0`` is taken (a deadline already past)."""
    match = _TIMEOUT.fullmatch(value)
    if match is None:
        raise ValueError(f"grpc-timeout {value!r} is not 1 to 8 digits followed by H, M, S, m, u or n")
    times, per = _UNITS[match.group(2)]
    return int(match.group(1)) * times / per


def format_timeout(seconds: float) -> str:
    """``seconds`` as a ``grpc-timeout`` value: the finest unit whose value fits in 8 digits,
    rounded up so the deadline is never shortened; capped at 99999999H. ValueError if <= 0."""
    if not seconds > 0:
        raise ValueError(f"a grpc-timeout must be positive, not {seconds!r}")
    if math.isinf(seconds):
        return f"{MAX_TIMEOUT_VALUE}H"
    # The shortest decimal of the float, so that 2.1e-08 is 21n, not 22n.
    nanos = math.ceil(Decimal(repr(float(seconds))) * 10**9)
    for unit in "numSMH":
        value = -(-nanos // _UNIT_NS[unit])
        if value <= MAX_TIMEOUT_VALUE:
            return f"{value}{unit}"
    return f"{MAX_TIMEOUT_VALUE}H"


# --- Status-Message percent-encoding ------------------------------------------------------------------
_PERCENT = re.compile(rb"%([0-9A-Fa-f]{2})")


def encode_grpc_message(message: str) -> str:
    """``grpc-message``: UTF-8, then every byte outside "Percent-Byte-Unencoded" (%x20-24,
    %x26-7E: space and VCHAR except ``%``) written ``%XX`` upper-case ("Responses")."""
    return "".join(chr(b) if 0x20 <= b <= 0x7E and b != 0x25 else f"%{b:02X}"
                   for b in message.encode("utf-8"))


def decode_grpc_message(value: str | bytes) -> str:
    """Undo :func:`encode_grpc_message`. Never fails ("MUST NOT error or throw away the
    message"): a broken ``%`` escape stays as it is, invalid UTF-8 becomes U+FFFD."""
    raw = value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")
    return _PERCENT.sub(lambda m: bytes((int(m.group(1), 16),)), raw).decode("utf-8", "replace")


# --- Request-Headers ----------------------------------------------------------------------------
#: Call-Definition headers; every other non-pseudo header is Custom-Metadata.
_CALL_DEFINITION = frozenset({
    "te", "content-type", "grpc-timeout", "grpc-encoding", "grpc-accept-encoding",
    "user-agent", "grpc-message-type",
})
_HEADER_NAME = re.compile(r"[0-9a-z_.\-]+")


@dataclass(frozen=True, slots=True)
class RequestHeaders:
    """A gRPC call's Request-Headers ("Requests"), parsed.

    ``timeout`` is seconds (None: infinite, as when Timeout is omitted); ``encoding`` is None for
    ``identity`` or no grpc-encoding; ``metadata`` is the Custom-Metadata in order, a ``-bin``
    header's values base64-decoded to bytes (one pair per comma-separated value).
    """

    path: str
    service: str
    method: str
    scheme: str
    authority: str | None
    content_type: str
    timeout: float | None
    encoding: str | None
    accept_encodings: tuple[str, ...]
    user_agent: str | None
    metadata: tuple[tuple[str, str | bytes], ...]
    #: :attr:`mq_headers` once read (it is read on every call, by the proxy's context and the
    #: conformance monitor; a copy with the same metadata shares it).
    _mq: Mapping[str, str] | None = field(default=None, compare=False, repr=False)

    def with_request_fields(self, timeout: float | None,
                            metadata: tuple[tuple[str, str | bytes], ...]) -> RequestHeaders:
        """A copy with another ``timeout`` and ``metadata`` (a call's own grpc-timeout and
        per-request fields over a block parsed once per connection). The constructor, with
        every field in order, rather than ``dataclasses.replace``: it runs once a call, and
        replace (which walks the fields' list) costs about 3 us where this costs 1."""
        return RequestHeaders(self.path, self.service, self.method, self.scheme, self.authority,
                              self.content_type, timeout, self.encoding, self.accept_encodings,
                              self.user_agent, metadata,
                              self.mq_headers if metadata is self.metadata else None)

    def get(self, name: str, default: str | bytes | None = None) -> str | bytes | None:
        """The first metadata value called ``name`` (lower-case), or ``default``."""
        return next((v for k, v in self.metadata if k == name), default)

    @property
    def authorization(self) -> str | None:
        """The ``authorization`` header (RocketMQ 5 SDKs: ``MQv2-HMAC-SHA1 Credential=...``)."""
        value = self.get("authorization")
        return value if isinstance(value, str) else None

    @property
    def mq_headers(self) -> Mapping[str, str]:
        """The RocketMQ SDK's ``x-mq-*`` headers (client id, language, date-time...), first wins
        (read-only: computed once per header block)."""
        mq = self._mq
        if mq is None:
            out: dict[str, str] = {}
            for k, v in self.metadata:
                if k.startswith("x-mq-") and isinstance(v, str):
                    out.setdefault(k, v)
            mq = MappingProxyType(out)
            object.__setattr__(self, "_mq", mq)  # frozen: a cache, not a change of value
        return mq


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def decode_binary_header(name: str, value: str) -> list[bytes]:
    """A ``-bin`` header's values: split on ``,``, each base64 padded or not ("Custom-Metadata");
    RequestRejected (INTERNAL) naming the header for one that is not base64."""
    out = []
    for part in value.split(","):
        part = part.strip()
        try:
            out.append(base64.b64decode(part + "=" * (-len(part) % 4), validate=True))
        except (binascii.Error, ValueError):
            raise RequestRejected(StatusCode.INTERNAL, f"header {name} is not base64: {part!r}") from None
    return out


def parse_request_headers(headers: Iterable[tuple[str | bytes, str | bytes]],
                          methods: Container[str] | None = None,
                          encodings: Iterable[str] = SUPPORTED_ENCODINGS) -> RequestHeaders:
    """Validate and parse one request's HEADERS ("Requests": Call-Definition, Custom-Metadata).

    ``methods`` holds the served ``:path`` values (e.g. the paths of ``messages.service_methods()``);
    ``encodings`` the grpc-encodings accepted. Raises :class:`RequestRejected`, whose
    ``response()`` is what to send, checking in this order:

    * ``:method`` not POST: HTTP 405 (a gRPC call is POST; the status is HTTP's own choice);
    * ``content-type`` not starting with ``application/grpc``: HTTP 415, as the spec asks;
    * ``:path``/``:scheme`` missing or repeated: HTTP 400 (a malformed HTTP/2 request);
    * a ``:path`` not of the form ``/Service/Method`` or not in ``methods``: UNIMPLEMENTED
      ("Method not found at server", statuscodes.md), Trailers-Only;
    * ``te`` present but not ``trailers``: INTERNAL (TE is "used to detect incompatible
      proxies"; its absence is tolerated);
    * a malformed ``grpc-timeout``: INTERNAL;
    * a ``grpc-encoding`` not in ``encodings``: UNIMPLEMENTED ("Compression mechanism used by
      client not supported at server"), with ``grpc-accept-encoding`` listing what is.
    """
    pseudo: dict[str, list[str]] = {}
    fields: list[tuple[str, str]] = []
    for raw_name, raw_value in headers:
        name, value = _text(raw_name), _text(raw_value)
        if name.startswith(":"):
            pseudo.setdefault(name, []).append(value)
        else:
            fields.append((name.lower(), value))
    single = {k: v[0] for k, v in pseudo.items() if len(v) == 1}
    known = {}
    for name, value in fields:
        if name in _CALL_DEFINITION:
            known.setdefault(name, value)

    if single.get(":method") != "POST":
        got = ",".join(pseudo.get(":method", [])) or "none"
        raise RequestRejected(StatusCode.INTERNAL, f":method is {got}, a gRPC call is POST", 405)
    content_type = known.get("content-type", "")
    if not content_type.startswith("application/grpc"):
        raise RequestRejected(StatusCode.INTERNAL,
                              f"content-type {content_type or 'none'!r} is not application/grpc", 415)
    for required in (":path", ":scheme"):
        if required not in single:
            raise RequestRejected(StatusCode.INTERNAL, f"{required} missing or repeated", 400)
    path = single[":path"]
    parts = path.split("/")
    if len(parts) != 3 or parts[0] or not parts[1] or not parts[2] \
            or (methods is not None and path not in methods):
        raise RequestRejected(StatusCode.UNIMPLEMENTED, f"Method not found: {path}")
    te = known.get("te")
    if te is not None and te.strip().lower() != "trailers":
        raise RequestRejected(StatusCode.INTERNAL, f"te is {te!r}, not 'trailers'")
    timeout = None
    if "grpc-timeout" in known:
        try:
            timeout = parse_timeout(known["grpc-timeout"])
        except ValueError as exc:
            raise RequestRejected(StatusCode.INTERNAL, str(exc)) from None
    encoding = known.get("grpc-encoding", "identity").strip().lower() or "identity"
    served = tuple(encodings)
    if encoding != "identity" and encoding not in served:
        raise RequestRejected(StatusCode.UNIMPLEMENTED, f"grpc-encoding {encoding!r} is not supported",
                              metadata=(("grpc-accept-encoding", ",".join(served)),))
    accept = tuple(e.strip().lower() for e in known.get("grpc-accept-encoding", "").split(",") if e.strip())

    metadata: list[tuple[str, str | bytes]] = []
    for name, value in fields:
        if name in _CALL_DEFINITION:
            continue
        if name.endswith("-bin"):
            metadata.extend((name, v) for v in decode_binary_header(name, value))
        else:
            metadata.append((name, value.strip()))
    return RequestHeaders(
        path=path, service=parts[1], method=parts[2], scheme=single[":scheme"],
        authority=single.get(":authority"), content_type=content_type, timeout=timeout,
        encoding=None if encoding == "identity" else encoding, accept_encodings=accept,
        user_agent=known.get("user-agent"), metadata=tuple(metadata),
    )


# --- Responses ----------------------------------------------------------------------------------------
def encode_metadata(metadata: Iterable[tuple[str, str | bytes]]) -> list[tuple[str, str]]:
    """Custom-Metadata as header pairs: names lower-cased and checked against Header-Name,
    a ``-bin`` value base64 without padding ("should emit un-padded values")."""
    out = []
    for name, value in metadata:
        name = name.lower()
        if not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"metadata name {name!r} has characters outside 0-9 a-z _ - .")
        if name.endswith("-bin"):
            raw = value if isinstance(value, bytes) else value.encode("utf-8")
            out.append((name, base64.b64encode(raw).decode("ascii").rstrip("=")))
        elif isinstance(value, bytes):
            raise ValueError(f"metadata {name!r} has bytes but no -bin suffix")
        else:
            out.append((name, value))
    return out


def response_headers(encoding: str | None = None, accept_encodings: Iterable[str] = (),
                     metadata: Iterable[tuple[str, str | bytes]] = ()) -> list[tuple[str, str]]:
    """Response-Headers: ``:status 200``, optional grpc-encoding and grpc-accept-encoding,
    ``content-type application/grpc``, then Custom-Metadata ("Responses")."""
    out = [(":status", "200")]
    if encoding is not None:
        out.append(("grpc-encoding", encoding))
    accept = ",".join(accept_encodings)
    if accept:
        out.append(("grpc-accept-encoding", accept))
    out.append(("content-type", "application/grpc"))
    out.extend(encode_metadata(metadata))
    return out


def trailers(code: StatusCode | int, message: str = "", details: bytes | None = None,
             metadata: Iterable[tuple[str, str | bytes]] = ()) -> list[tuple[str, str]]:
    """Trailers: ``grpc-status`` (decimal, no leading zeros; sent even for OK), then a
    percent-encoded ``grpc-message`` when there is one, ``grpc-status-details-bin`` when
    ``details`` (a serialized google.rpc.Status) is given, then Custom-Metadata ("Responses")."""
    out = [("grpc-status", str(int(code)))]
    if message:
        out.append(("grpc-message", encode_grpc_message(message)))
    extra = list(metadata)
    if details is not None:
        extra.insert(0, ("grpc-status-details-bin", details))
    out.extend(encode_metadata(extra))
    return out


def trailers_only(code: StatusCode | int, message: str = "", details: bytes | None = None,
                  metadata: Iterable[tuple[str, str | bytes]] = ()) -> list[tuple[str, str]]:
    """Trailers-Only ("HTTP-Status Content-Type Trailers"): the single HEADERS block, sent with
    END_STREAM, of a call that fails at once ("Responses")."""
    return [(":status", "200"), ("content-type", "application/grpc"),
            *trailers(code, message, details, metadata)]


def parse_status(headers: Iterable[tuple[str | bytes, str | bytes]]) -> tuple[int, str, bytes | None]:
    """(grpc-status, decoded grpc-message, grpc-status-details-bin) of Trailers or Trailers-Only.

    A missing or unreadable grpc-status reads as UNKNOWN ("Error parsing returned status",
    statuscodes.md; the spec's "must synthesize a Status")."""
    found = {}
    for name, value in headers:
        found.setdefault(_text(name).lower(), _text(value))
    raw = found.get("grpc-status", "")
    code = int(raw) if raw.isdigit() else int(StatusCode.UNKNOWN)
    message = decode_grpc_message(found.get("grpc-message", ""))
    details = None
    if "grpc-status-details-bin" in found:
        details = b"".join(decode_binary_header("grpc-status-details-bin", found["grpc-status-details-bin"]))
    return code, message, details
