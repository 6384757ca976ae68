"""RFC 9113 8.1-8.3 (malformed requests) and 6.5.2 (SETTINGS_MAX_HEADER_LIST_SIZE, the HPACK
bomb) at the gRPC server: raw frames in through a StringTransport, frames out, on a task.Clock.

A malformed request is a stream error of type PROTOCOL_ERROR (8.1.1): RST_STREAM, and the
handler never runs. Header blocks are written by hand (literals without indexing, RFC 7541
6.2.2) so that names the h2 client would refuse to send (upper-case, connection-specific) go out
as they are."""

from __future__ import annotations

import gzip
import tracemalloc
from typing import Any

import pytest
from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from rocketmq_emu.broker.grpc.hpack_decode import HeaderBlockError, HeaderDecoder
from rocketmq_emu.broker.grpc.http2_frames import (
    CONNECTION_PREFACE,
    END_HEADERS,
    END_STREAM,
    HEADER,
    ErrorCode,
    FrameType,
    Setting,
    frame,
)
from rocketmq_emu.broker.grpc.http2_frames import settings as settings_frame
from rocketmq_emu.broker.grpc.messages import Method
from rocketmq_emu.broker.grpc.server import GrpcServerFactory, RawPayload
from rocketmq_emu.broker.grpc.wire import GrpcError, MessageDecoder, StatusCode, encode_message

ECHO = Method(service="test.Raw", name="Echo", request=RawPayload, response=RawPayload,
              client_streaming=False, server_streaming=False)
PATH = b"/test.Raw/Echo"
REQUEST = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", PATH), (b":authority", b"x"),
           (b"content-type", b"application/grpc"), (b"te", b"trailers")]
PROTOCOL_ERROR = int(ErrorCode.PROTOCOL_ERROR)


def _length(n: int) -> bytes:
    assert n < 127
    return bytes((n,))


def block(fields: list[tuple[bytes, bytes]]) -> bytes:
    """A header block of literals without indexing, new names (RFC 7541 6.2.2), no Huffman."""
    return b"".join(b"\x00" + _length(len(n)) + n + _length(len(v)) + v for n, v in fields)


def headers_frame(sid: int, payload: bytes, end_stream: bool = True) -> bytes:
    return frame(FrameType.HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), sid, payload)


def data_frame(sid: int, payload: bytes, end_stream: bool = True) -> bytes:
    return frame(FrameType.DATA, END_STREAM if end_stream else 0, sid, payload)


class Server:
    """One GrpcProtocol serving Echo; ``calls`` counts the handler's runs."""

    def __init__(self) -> None:
        self.calls = 0
        self.factory = GrpcServerFactory({"Echo": self._echo}, task.Clock(), methods=[ECHO])
        self.proto = self.factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 8081))
        self.transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.7", 40001))
        self.proto.makeConnection(self.transport)
        self.frames: list[tuple[int, int, int, bytes]] = []
        self.send(CONNECTION_PREFACE + settings_frame({}))

    def _echo(self, request: RawPayload, call: Any) -> RawPayload:
        self.calls += 1
        return request

    def send(self, data: bytes) -> None:
        self.proto.dataReceived(data)
        out = self.transport.value()
        self.transport.clear()
        at = 0
        while at < len(out):
            length_type, flags, sid = HEADER.unpack_from(out, at)
            start = at + HEADER.size
            at = start + (length_type >> 8)
            self.frames.append((length_type & 0xFF, flags, sid, out[start:at]))

    def resets(self, sid: int) -> list[int]:
        return [int.from_bytes(p, "big") for kind, _, s, p in self.frames
                if kind == FrameType.RST_STREAM and s == sid]

    def answered(self, sid: int) -> bool:
        return any(kind == FrameType.HEADERS and s == sid for kind, _, s, _ in self.frames)

    def settings(self) -> dict[int, int]:
        payload = next(p for kind, flags, s, p in self.frames if kind == FrameType.SETTINGS and not flags)
        return {int.from_bytes(payload[i:i + 2], "big"): int.from_bytes(payload[i + 2:i + 6], "big")
                for i in range(0, len(payload), 6)}

    def goaway(self) -> bool:
        return any(kind == FrameType.GOAWAY for kind, *_ in self.frames)


def assert_malformed(server: Server, sid: int = 1) -> None:
    """8.1.1: RST_STREAM(PROTOCOL_ERROR), no response, no call, the connection kept."""
    assert server.resets(sid) == [PROTOCOL_ERROR]
    assert not server.answered(sid)
    assert server.calls == 0
    assert not server.goaway() and not server.proto.closed


def replaced(name: bytes, value: bytes | None) -> list[tuple[bytes, bytes]]:
    """REQUEST with ``name``'s value replaced (or the field left out, for None)."""
    return [(n, value if n == name else v) for n, v in REQUEST if n != name or value is not None]


MALFORMED = {
    "upper-case name (8.2.1)": [*REQUEST, (b"X-Custom", b"1")],
    "name with a space (8.2.1)": [*REQUEST, (b"x custom", b"1")],
    "connection (8.2.2)": [*REQUEST, (b"connection", b"keep-alive")],
    "keep-alive (8.2.2)": [*REQUEST, (b"keep-alive", b"timeout=5")],
    "proxy-connection (8.2.2)": [*REQUEST, (b"proxy-connection", b"keep-alive")],
    "transfer-encoding (8.2.2)": [*REQUEST, (b"transfer-encoding", b"chunked")],
    "upgrade (8.2.2)": [*REQUEST, (b"upgrade", b"h2c")],
    "te other than trailers (8.2.2)": replaced(b"te", b"trailers, deflate"),
    "unknown pseudo-header (8.3)": [(b":foo", b"bar"), *REQUEST],
    "response pseudo-header :status (8.3)": [(b":status", b"200"), *REQUEST],
    "pseudo-header after a regular field (8.3)": [*REQUEST, (b":authority", b"y")],
    "empty :path (8.3.1)": replaced(b":path", b""),
    "no :method (8.3.1)": replaced(b":method", None),
    "no :scheme (8.3.1)": replaced(b":scheme", None),
    "no :path (8.3.1)": replaced(b":path", None),
    "two :method (8.3.1)": [(b":method", b"POST"), *REQUEST],
    "two :scheme (8.3.1)": [(b":scheme", b"http"), *REQUEST],
    "two :path (8.3.1)": [(b":path", PATH), *REQUEST],
    "content-length not digits (8.1.1)": [*REQUEST, (b"content-length", b"-1")],
}


@pytest.mark.parametrize("fields", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_request_is_reset_with_protocol_error_and_never_served(fields) -> None:
    server = Server()
    server.send(headers_frame(1, block(fields), end_stream=False)
                + data_frame(1, encode_message(b"hi")))
    assert_malformed(server)


def test_the_connection_serves_the_next_request_after_a_malformed_one() -> None:
    """A stream error: the connection (and its HPACK state) carries on (5.4.2)."""
    server = Server()
    server.send(headers_frame(1, block([*REQUEST, (b"Upper", b"1")]), end_stream=False))
    server.send(headers_frame(3, block(REQUEST), end_stream=False) + data_frame(3, encode_message(b"hi")))
    assert server.resets(1) == [PROTOCOL_ERROR]
    assert server.answered(3) and server.calls == 1


def test_a_regular_field_that_varies_per_call_before_a_pseudo_header_is_malformed() -> None:
    """8.3: the SDKs' per-request fields (x-mq-request-id...) are taken apart from the cached
    block; one of them ahead of a pseudo-header still makes the request malformed."""
    server = Server()
    server.send(headers_frame(1, block(REQUEST), end_stream=False) + data_frame(1, encode_message(b"a")))
    assert server.calls == 1
    server.send(headers_frame(3, block([(b"x-mq-request-id", b"r1"), *REQUEST]), end_stream=False)
                + data_frame(3, encode_message(b"b")))
    assert server.resets(3) == [PROTOCOL_ERROR]
    assert server.calls == 1


def _with_trailers(server: Server, sid: int, fields: list[tuple[bytes, bytes]]) -> None:
    server.send(headers_frame(sid, block(REQUEST), end_stream=False)
                + data_frame(sid, encode_message(b"hi"), end_stream=False)
                + headers_frame(sid, block(fields), end_stream=True))


@pytest.mark.parametrize("fields", [[(b":path", PATH)], [(b"x-sum", b"1"), (b":status", b"200")]],
                         ids=["pseudo-header", "pseudo-header after a field"])
def test_pseudo_headers_in_trailers_are_malformed(fields) -> None:
    """8.1: trailers MUST NOT include pseudo-header fields (well-formed ones end the request)."""
    server = Server()
    _with_trailers(server, 1, fields)
    assert_malformed(server)
    _with_trailers(server, 3, [(b"x-sum", b"1")])
    assert server.calls == 1 and server.resets(3) == []


@pytest.mark.parametrize("fields", [[(b"connection", b"close")], [(b"X-Sum", b"1")],
                                    [(b"te", b"gzip")]], ids=["connection", "upper-case", "te"])
def test_connection_specific_or_upper_case_fields_in_trailers_are_malformed(fields) -> None:
    server = Server()
    _with_trailers(server, 1, fields)
    assert_malformed(server)


@pytest.mark.parametrize("declared", [1, 100])
def test_content_length_that_disagrees_with_the_data_is_malformed(declared: int) -> None:
    """8.1.1: content-length must equal the sum of the DATA payloads (7 here)."""
    server = Server()
    server.send(headers_frame(1, block([*REQUEST, (b"content-length", str(declared).encode())]),
                              end_stream=False)
                + data_frame(1, encode_message(b"hi")))
    assert_malformed(server)


def test_content_length_over_a_request_without_data_is_malformed() -> None:
    server = Server()
    server.send(headers_frame(1, block([*REQUEST, (b"content-length", b"7")]), end_stream=True))
    assert_malformed(server)


def test_content_length_that_disagrees_with_data_in_frames_is_malformed() -> None:
    """Counted over every DATA frame: 3 + 4 octets match 7, 3 + 4 do not match 8."""
    server = Server()
    for sid, declared in ((1, b"8"), (3, b"7")):
        server.send(headers_frame(sid, block([*REQUEST, (b"content-length", declared)]), end_stream=False)
                    + data_frame(sid, encode_message(b"hi")[:3], end_stream=False)
                    + data_frame(sid, encode_message(b"hi")[3:]))
    assert server.resets(1) == [PROTOCOL_ERROR] and not server.answered(1)
    assert server.calls == 1 and server.resets(3) == [] and server.answered(3)


# --- 6.5.2: SETTINGS_MAX_HEADER_LIST_SIZE, the HPACK bomb ---------------------------------------------
def test_the_server_advertises_grpc_javas_header_list_size() -> None:
    """grpc-java's GrpcUtil.DEFAULT_MAX_HEADER_LIST_SIZE (the RocketMQ proxy's): 8 KiB."""
    assert Server().settings()[Setting.MAX_HEADER_LIST_SIZE] == 8192


def _bomb(references: int) -> bytes:
    """One 4000-octet entry added to the dynamic table (6.2.1, index 62), then referenced
    ``references`` times (6.1): a few KB on the wire, megabytes decoded."""
    value = b"v" * 4000
    entry = b"\x40\x01b" + b"\x7f" + _prefix_tail(len(value) - 127) + value
    return entry + b"\xbe" * references


def _prefix_tail(n: int) -> bytes:
    out = bytearray()
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_an_hpack_bomb_resets_the_stream_and_keeps_the_connection() -> None:
    """A decoded list over the limit: the stream is reset, the block still decoded to the end
    so the dynamic table stays in step, and the next request (which uses the entry) is served."""
    server = Server()
    server.send(headers_frame(1, block(REQUEST[:3]) + _bomb(5000), end_stream=False))
    assert server.resets(1) == [PROTOCOL_ERROR]
    assert not server.goaway() and server.calls == 0
    # The table holds the bomb's entry at 62: a block using 62 decodes against the same table.
    payload = block(REQUEST) + b"\xbe"
    server.send(headers_frame(3, payload, end_stream=False) + data_frame(3, encode_message(b"hi")))
    assert server.answered(3) and server.calls == 1


def test_an_over_limit_block_is_decoded_to_its_end_for_the_dynamic_table() -> None:
    """6.5.2 / 10.5.1: fields past the limit are dropped (memory stays bounded), but entries the
    block adds after the limit was passed still go into the dynamic table (it stays in step with
    the client's encoder); HeaderListTooLarge is a HeaderBlockError raised at the end."""
    decoder = HeaderDecoder(max_header_list_size=8192)
    tracemalloc.start()
    try:
        with pytest.raises(HeaderBlockError, match="header list over 8192"):
            decoder.decode(_bomb(100_000) + b"\x40\x05after\x01x")  # then a new entry, 6.2.1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert decoder.entries[0] == (b"after", b"x")
    assert peak < 1 << 20  # 100,000 references to a 4 KB entry: 400 MB if kept


def test_past_the_limit_an_index_outside_the_tables_is_still_a_compression_error() -> None:
    """Over the limit, runs of one-byte indexed fields are stepped over in C (the bomb costs
    little), but an index in no table (here 100: 61 static + 1 dynamic entries) still fails the
    block, as it would under the limit (RFC 7541 2.3.3)."""
    decoder = HeaderDecoder(max_header_list_size=8192)
    with pytest.raises(HeaderBlockError) as raised:
        decoder.decode(_bomb(3000) + bytes([0x80 | 100]) + b"\xbe" * 10)
    assert "header list over" not in str(raised.value)
    decoder = HeaderDecoder(max_header_list_size=8192)
    with pytest.raises(HeaderBlockError, match="header list over 8192"):
        decoder.decode(_bomb(3000) + bytes([0x80 | 62]) + b"\x82")  # 62 and 2 are in the tables


def test_a_gzip_message_inflating_past_the_limit_is_refused_holding_little() -> None:
    """A ~30 KB gzip message inflating to 32 MiB + 1 under a 32 MiB limit: RESOURCE_EXHAUSTED,
    with the inflated bytes counted a step at a time rather than held (the proxy's limit is
    130 MiB: one such message must not make the server hold 130 MiB)."""
    limit = 32 << 20
    message = encode_message(gzip.compress(b"\0" * (limit + 1)), compressed=True)
    decoder = MessageDecoder(max_size=limit, encoding="gzip")
    tracemalloc.start()
    try:
        with pytest.raises(GrpcError) as caught:
            decoder.feed(message)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.code is StatusCode.RESOURCE_EXHAUSTED
    assert peak < 4 << 20
    body = bytes(range(256)) * 20_000  # 5 MB, under the limit: whole, counted then inflated
    assert MessageDecoder(max_size=limit, encoding="gzip").feed(
        encode_message(gzip.compress(body), compressed=True)) == [body]
