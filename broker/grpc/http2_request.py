"""RFC 9113 8.1-8.3: is a decoded request header list (or trailer list) a well-formed HTTP/2
request? Pure functions over ``(name, value)`` bytes pairs, no state, no I/O.

A malformed request (8.1.1) is a stream error of type PROTOCOL_ERROR: the stream is reset and
the request never reaches the gRPC layer. What is checked, as grpc-java's Netty server does
(``DefaultHttp2ConnectionDecoder`` / ``HpackDecoder``'s validation):

* field names (8.2.1): no upper-case letters, no character outside 0x21-0x7E, no ``:`` but as a
  pseudo-header's first character;
* connection-specific fields (8.2.2): ``connection``, ``keep-alive``, ``proxy-connection``,
  ``transfer-encoding``, ``upgrade``; ``te`` with any value but ``trailers``;
* pseudo-headers (8.3): only ``:method``, ``:scheme``, ``:authority``, ``:path`` (``:status`` is a
  response's), each at most once, all before the first regular field; ``:method``, ``:scheme``
  and a non-empty ``:path`` present, except for CONNECT (8.5: ``:authority`` only);
* ``content-length`` (8.1.1): digits; the DATA that follows must add up to it
  (:func:`content_length` gives the figure to count against);
* trailers (8.1): no pseudo-header at all, and the same name rules.

Validated once per distinct header list: the server checks the block it caches per connection
(``server.GrpcProtocol._parse_headers``), so a steady client's calls cost nothing here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MalformedRequest", "check_request", "check_trailers", "content_length", "trailers_ok"]

#: 8.2.1: a regular field name is a token without upper-case (0x21-0x7E less 0x3A and A-Z).
_REGULAR_NAME = re.compile(rb"[\x21-\x39\x3b-\x40\x5b-\x7e]+")
#: 8.2.2: fields that only mean something to HTTP/1.1 connections.
_CONNECTION_SPECIFIC = frozenset({b"connection", b"keep-alive", b"proxy-connection",
                                  b"transfer-encoding", b"upgrade"})
#: 8.3.1: the request pseudo-headers (``:protocol`` needs SETTINGS_ENABLE_CONNECT_PROTOCOL,
#: which we do not send).
_REQUEST_PSEUDO = frozenset({b":method", b":scheme", b":authority", b":path"})
_CONTENT_LENGTH = re.compile(rb"[0-9]+")

Fields = Sequence[tuple[bytes, bytes]]


class MalformedRequest(Exception):
    """A malformed request or trailers (RFC 9113 8.1.1): reset the stream with PROTOCOL_ERROR."""


def _check_regular(name: bytes, value: bytes) -> None:
    if _REGULAR_NAME.fullmatch(name) is None:
        raise MalformedRequest(f"field name {name!r} is not lower-case token characters (8.2.1)")
    if name in _CONNECTION_SPECIFIC:
        raise MalformedRequest(f"connection-specific field {name.decode()!r} (8.2.2)")
    if name == b"te" and value.lower() != b"trailers":
        raise MalformedRequest(f"te is {value!r}, not 'trailers' (8.2.2)")


def check_request(headers: Fields) -> None:
    """Raise :class:`MalformedRequest` unless ``headers`` is a well-formed request's field list
    (8.2, 8.3.1; see the module docstring)."""
    pseudo: dict[bytes, bytes] = {}
    regular = False
    for name, value in headers:
        if name[:1] == b":":
            if regular:
                raise MalformedRequest(f"pseudo-header {name!r} after a regular field (8.3)")
            if name not in _REQUEST_PSEUDO:
                raise MalformedRequest(f"pseudo-header {name!r} is not a request's (8.3.1)")
            if name in pseudo:
                raise MalformedRequest(f"pseudo-header {name!r} repeated (8.3.1)")
            pseudo[name] = value
            continue
        regular = True
        _check_regular(name, value)
    if pseudo.get(b":method") == b"CONNECT":  # 8.5: authority only
        if b":scheme" in pseudo or b":path" in pseudo or not pseudo.get(b":authority"):
            raise MalformedRequest("CONNECT with :scheme or :path, or without :authority (8.5)")
        return
    for required in (b":method", b":scheme", b":path"):
        if not pseudo.get(required):
            raise MalformedRequest(f"{required.decode()} missing or empty (8.3.1)")
    content_length(headers)  # its form; the count is the caller's


def check_trailers(headers: Fields) -> None:
    """Raise :class:`MalformedRequest` unless ``headers`` is a well-formed trailer section
    (8.1: no pseudo-header; 8.2 name rules)."""
    for name, value in headers:
        if name[:1] == b":":
            raise MalformedRequest(f"pseudo-header {name!r} in trailers (8.1)")
        _check_regular(name, value)


def content_length(headers: Fields) -> int | None:
    """The request's ``content-length`` (None without one); MalformedRequest if it is not
    digits or repeated with another value (8.1.1, RFC 9110 8.6)."""
    found: bytes | None = None
    for name, value in headers:
        if name == b"content-length":
            if _CONTENT_LENGTH.fullmatch(value) is None or (found is not None and value != found):
                raise MalformedRequest(f"content-length {value!r} (8.1.1)")
            found = value
    return None if found is None else int(found)


def trailers_ok(headers: Fields | None) -> bool:
    """:func:`check_trailers` as a test, for the connection; ``None`` (a trailer section over
    SETTINGS_MAX_HEADER_LIST_SIZE, its fields dropped) is not well-formed."""
    if headers is None:
        return False
    try:
        check_trailers(headers)
    except MalformedRequest:
        return False
    return True
