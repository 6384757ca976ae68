"""The gRPC server's HTTP/2 connection (broker/grpc/http2.py) under frames a conforming client
never sends: RFC 9113 5.1 stream states, 5.1.1 stream identifiers, 5.3.1 self-dependency,
6.9 flow control on closed streams, and the framing-layer attacks (Rapid Reset, CONTINUATION
flood, PING and SETTINGS floods). Raw frames in, frames and listener calls out."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hpack import Encoder
from test_grpc_server_http2 import frames
from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from rocketmq_emu.broker.grpc.http2 import H2ServerConnection
from rocketmq_emu.broker.grpc.http2_frames import (
    CONNECTION_PREFACE,
    END_HEADERS,
    END_STREAM,
    PRIORITY_FLAG,
    ErrorCode,
    FrameType,
    frame,
    rst_stream,
    settings,
    window_update,
)
from rocketmq_emu.broker.grpc.server import GrpcServerFactory

REQUEST = [(":method", "POST"), (":scheme", "http"), (":path", "/s.S/M"), (":authority", "x"),
           ("content-type", "application/grpc"), ("te", "trailers")]
TRAILERS = [(b":status", b"200"), (b"grpc-status", b"0")]


class Recorder:
    """A Listener that records what it is told."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_request(self, sid: int, headers: list[tuple[bytes, bytes]], end: bool) -> None:
        self.events.append(("request", sid, end))

    def on_data(self, sid: int, data: bytes, end: bool) -> None:
        self.events.append(("data", sid, bytes(data), end))

    def on_reset(self, sid: int, code: int) -> None:
        self.events.append(("reset", sid, code))

    def on_goaway(self, code: int, debug: bytes) -> None:
        self.events.append(("goaway", code, debug))


class FakeClock:
    """The connection's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def opened(**kw: Any) -> tuple[H2ServerConnection, Recorder]:
    """A server past the client's preface and SETTINGS, its own output taken."""
    rec = Recorder()
    conn = H2ServerConnection(rec, **kw)
    conn.initiate()
    conn.receive(CONNECTION_PREFACE + settings({}))
    conn.data_to_send()
    return conn, rec


def headers(sid: int, flags: int = END_HEADERS, block: bytes | None = None) -> bytes:
    return frame(FrameType.HEADERS, flags, sid, Encoder().encode(REQUEST) if block is None else block)


def data(sid: int, payload: bytes = b"\x00\x00\x00\x00\x00", flags: int = 0) -> bytes:
    return frame(FrameType.DATA, flags, sid, payload)


def priority(sid: int, depends_on: int) -> bytes:
    return frame(FrameType.PRIORITY, 0, sid, depends_on.to_bytes(4, "big") + b"\x10")


def resets(conn: H2ServerConnection) -> list[tuple[int, ErrorCode]]:
    """(stream id, code) of each RST_STREAM the connection queued."""
    return [(sid, ErrorCode(int.from_bytes(payload, "big")))
            for kind, _, sid, payload in frames(conn.data_to_send()) if kind == FrameType.RST_STREAM]


def goaway_code(conn: H2ServerConnection) -> ErrorCode:
    out = [f for f in frames(conn.data_to_send()) if f[0] == FrameType.GOAWAY]
    assert len(out) == 1, "no GOAWAY"
    return ErrorCode(int.from_bytes(out[0][3][4:8], "big"))


# --- 5.1 stream states ---------------------------------------------------------------------------
def test_data_after_the_clients_rst_stream_is_a_stream_error_stream_closed() -> None:
    """5.1 closed: any frame but PRIORITY after receiving RST_STREAM is STREAM_CLOSED."""
    conn, rec = opened()
    conn.receive(headers(1) + rst_stream(1, ErrorCode.CANCEL) + headers(3))
    conn.data_to_send()
    conn.receive(data(1))
    assert resets(conn) == [(1, ErrorCode.STREAM_CLOSED)]
    assert conn.error is None and list(conn.streams) == [3]


def test_headers_after_the_clients_rst_stream_is_a_stream_error_stream_closed() -> None:
    conn, rec = opened()
    conn.receive(headers(1) + rst_stream(1, ErrorCode.CANCEL))
    conn.data_to_send()
    conn.receive(headers(1, END_HEADERS | END_STREAM))
    assert resets(conn) == [(1, ErrorCode.STREAM_CLOSED)]
    assert conn.error is None and rec.events == [("request", 1, False), ("reset", 1, ErrorCode.CANCEL)]


def test_data_on_a_stream_closed_by_both_ends_is_a_connection_error_stream_closed() -> None:
    """5.1 closed (after END_STREAM both ways): a connection error STREAM_CLOSED."""
    conn, rec = opened()
    conn.receive(headers(1, END_HEADERS | END_STREAM))
    conn.send_headers(1, TRAILERS, end_stream=True)
    conn.data_to_send()
    conn.receive(data(1))
    assert goaway_code(conn) == ErrorCode.STREAM_CLOSED
    assert conn.error is not None and "closed stream 1" in conn.error


def test_headers_on_a_stream_closed_by_both_ends_is_a_connection_error_stream_closed() -> None:
    conn, rec = opened()
    conn.receive(headers(1, END_HEADERS | END_STREAM))
    conn.send_headers(1, TRAILERS, end_stream=True)
    conn.data_to_send()
    conn.receive(headers(1, END_HEADERS | END_STREAM))
    assert goaway_code(conn) == ErrorCode.STREAM_CLOSED


def test_window_update_and_priority_on_a_closed_stream_are_ignored_but_a_zero_increment_is_not() -> None:
    """5.1: WINDOW_UPDATE may cross our END_STREAM; 6.9: an increment of 0 is still a stream
    error PROTOCOL_ERROR."""
    conn, rec = opened()
    conn.receive(headers(1, END_HEADERS | END_STREAM))
    conn.send_headers(1, TRAILERS, end_stream=True)
    conn.data_to_send()
    conn.receive(window_update(1, 100) + priority(1, 0) + rst_stream(1, ErrorCode.CANCEL))
    assert frames(conn.data_to_send()) == []
    conn.receive(window_update(1, 0))
    assert resets(conn) == [(1, ErrorCode.PROTOCOL_ERROR)] and conn.error is None


def test_a_stream_id_below_one_opened_before_is_a_connection_protocol_error() -> None:
    """5.1.1: a new stream's id must exceed every id the client opened."""
    conn, rec = opened()
    conn.receive(headers(5))
    conn.receive(headers(3))
    assert goaway_code(conn) == ErrorCode.PROTOCOL_ERROR
    assert rec.events == [("request", 5, False)]


@pytest.mark.parametrize("bad", [
    data(2), window_update(2, 1), rst_stream(2, ErrorCode.CANCEL)], ids=["data", "window_update", "rst_stream"])
def test_frames_on_an_even_stream_are_a_connection_protocol_error(bad: bytes) -> None:
    """5.1.1: even streams are the server's, and it opens none: they are idle (5.1, 6.1)."""
    conn, rec = opened()
    conn.receive(headers(3))
    conn.receive(bad)
    assert goaway_code(conn) == ErrorCode.PROTOCOL_ERROR


# --- 5.3.1 priority ------------------------------------------------------------------------------
def test_priority_making_an_open_stream_depend_on_itself_is_a_stream_error() -> None:
    conn, rec = opened()
    conn.receive(headers(1))
    conn.receive(priority(1, 1))
    assert resets(conn) == [(1, ErrorCode.PROTOCOL_ERROR)]
    assert rec.events[-1] == ("reset", 1, ErrorCode.PROTOCOL_ERROR) and conn.error is None


def test_priority_making_an_idle_stream_depend_on_itself_resets_it_for_good() -> None:
    conn, rec = opened()
    conn.receive(priority(1, 1))
    assert resets(conn) == [(1, ErrorCode.PROTOCOL_ERROR)]
    conn.receive(headers(1, END_HEADERS | END_STREAM))  # in flight: ignored (5.1 closed)
    assert rec.events == [] and conn.error is None


def test_headers_making_its_stream_depend_on_itself_is_a_stream_error() -> None:
    block = (1).to_bytes(4, "big") + b"\x10" + Encoder().encode(REQUEST)
    conn, rec = opened()
    conn.receive(headers(1, END_HEADERS | PRIORITY_FLAG, block))
    assert resets(conn) == [(1, ErrorCode.PROTOCOL_ERROR)]
    assert rec.events == [] and conn.error is None


# --- attacks -------------------------------------------------------------------------------------
def test_rapid_reset_past_the_bucket_is_goaway_enhance_your_calm() -> None:
    """CVE-2023-44487: 1000 resets at once are taken, the next is not; resets at the refill
    rate (33/s) never run the bucket dry."""
    clock = FakeClock()
    conn, rec = opened(clock=clock)
    sid = 1
    for _ in range(3000):  # 100 s at 30 resets a second
        conn.receive(headers(sid) + rst_stream(sid, ErrorCode.CANCEL))
        clock.now += 1 / 30
        sid += 2
    assert conn.error is None
    burst = b"".join(headers(s) + rst_stream(s, ErrorCode.CANCEL) for s in range(sid, sid + 2 * 1001, 2))
    conn.receive(burst)
    assert goaway_code(conn) == ErrorCode.ENHANCE_YOUR_CALM
    assert "rapid reset" in conn.error and not conn.streams


def test_stream_errors_the_client_provokes_count_as_resets() -> None:
    """MadeYouReset: a stream error per stream (here a zero WINDOW_UPDATE) is a reset too."""
    conn, rec = opened(clock=FakeClock())
    conn.receive(b"".join(headers(s) + window_update(s, 0) for s in range(1, 2 * 1001 + 1, 2)))
    assert goaway_code(conn) == ErrorCode.ENHANCE_YOUR_CALM


def test_empty_continuations_without_end_are_goaway_enhance_your_calm() -> None:
    """VU#421644: a header block that never ends is cut at 32 CONTINUATION frames."""
    conn, rec = opened()
    conn.receive(headers(1, 0) + frame(FrameType.CONTINUATION, 0, 1) * 40)
    assert goaway_code(conn) == ErrorCode.ENHANCE_YOUR_CALM
    assert "CONTINUATION flood" in conn.error and rec.events == []


def test_a_header_block_over_four_times_the_header_list_size_is_goaway() -> None:
    conn, rec = opened(max_header_list_size=1 << 16)
    chunk = frame(FrameType.CONTINUATION, 0, 1, b"\x00" * 16000)
    conn.receive(headers(1, 0, b"") + chunk * 17)  # 272,000 bytes > 4 * 65536
    assert goaway_code(conn) == ErrorCode.ENHANCE_YOUR_CALM


@pytest.mark.parametrize("flood", [
    frame(FrameType.PING, 0, 0, b"12345678"), settings({})], ids=["ping", "settings"])
def test_acks_unread_past_the_limit_are_goaway_enhance_your_calm(flood: bytes) -> None:
    """A client that sends PING or SETTINGS and never reads: 1000 ACKs may wait in the
    owner's transport, the next one is GOAWAY; once it drains the count starts again."""
    conn, rec = opened()
    conn.pause_writing()
    conn.receive(flood * 1000)
    conn.resume_writing()
    conn.pause_writing()
    conn.receive(flood * 1000)
    assert conn.error is None
    conn.receive(flood)
    assert goaway_code(conn) == ErrorCode.ENHANCE_YOUR_CALM
    assert "flood" in conn.error


def test_the_server_logs_one_line_naming_the_peer_and_the_attack(caplog: Any) -> None:
    clock = task.Clock()
    factory = GrpcServerFactory({}, clock, methods=[])
    proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 8081))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.7", 40001))
    proto.makeConnection(transport)
    attack = b"".join(headers(s) + rst_stream(s, ErrorCode.CANCEL) for s in range(1, 2 * 1100, 2))
    with caplog.at_level(logging.WARNING):
        proto.dataReceived(CONNECTION_PREFACE + settings({}) + attack)
        while clock.getDelayedCalls():  # the read is handled BLOCKS_PER_READ blocks a turn
            clock.advance(0)
    lines = [r.getMessage() for r in caplog.records if "10.0.0.7:40001" in r.getMessage()]
    assert len(lines) == 1 and "rapid reset" in lines[0] and "ENHANCE_YOUR_CALM" in lines[0]
    assert transport.disconnecting


def test_a_ping_flood_into_a_full_transport_is_logged_and_closed(caplog: Any) -> None:
    """The transport pauses the protocol (its buffer is full: the client does not read); the
    ACKs queued from then on are counted, and past the limit the connection ends."""
    factory = GrpcServerFactory({}, task.Clock(), methods=[])
    proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 8081))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.8", 40002))
    proto.makeConnection(transport)
    assert transport.producer is proto and transport.streaming
    proto.dataReceived(CONNECTION_PREFACE + settings({}))
    proto.pauseProducing()
    with caplog.at_level(logging.WARNING):
        proto.dataReceived(frame(FrameType.PING, 0, 0, b"12345678") * 1001)
    lines = [r.getMessage() for r in caplog.records if "10.0.0.8:40002" in r.getMessage()]
    assert len(lines) == 1 and "PING/SETTINGS flood" in lines[0]
    assert transport.disconnecting


def test_a_read_packed_with_streams_is_handled_a_slice_per_turn() -> None:
    """BLOCKS_PER_READ header blocks per reactor turn; the client is not read meanwhile, and
    is read again once the read is done."""
    clock = task.Clock()
    factory = GrpcServerFactory({}, clock, methods=[])
    proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 8081))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.9", 40003))
    proto.makeConnection(transport)
    opened = [s for s in range(1, 2 * 100, 2)]
    proto.dataReceived(CONNECTION_PREFACE + settings({}) + b"".join(headers(s) for s in opened))
    turns = [proto.h2.last_stream_id]
    assert transport.producerState == "paused"
    while clock.calls:  # one turn at a time (advance(0) would run the turns it schedules too)
        turn = clock.calls.pop(0)
        turn.func(*turn.args, **turn.kw)
        turns.append(proto.h2.last_stream_id)
    blocks = factory.blocks_per_read
    per_turn = [(b - a) // 2 for a, b in zip([-1, *turns], turns, strict=False)]
    assert turns[-1] == opened[-1] and len(turns) > 100 // blocks
    assert all(0 < n <= blocks for n in per_turn), per_turn
    assert transport.producerState == "producing"


def test_a_ping_flood_in_one_read_is_handled_a_slice_per_turn() -> None:
    """PINGs cost a turn's work too (each queues an ACK): 10,000 in one read take turns."""
    clock = task.Clock()
    factory = GrpcServerFactory({}, clock, methods=[])
    proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 8081))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.9", 40004))
    proto.makeConnection(transport)
    proto.dataReceived(CONNECTION_PREFACE + settings({}) + frame(FrameType.PING, 0, 0, b"12345678") * 10_000)
    turns = 1
    while clock.calls:
        turn = clock.calls.pop(0)
        turn.func(*turn.args, **turn.kw)
        turns += 1
    acks = [f for f in frames(transport.value()) if f[0] == FrameType.PING]
    assert len(acks) == 10_000 and turns > 2
