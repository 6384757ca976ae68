"""The gRPC server's own HTTP/2 connection (broker/grpc/http2.py) as a codec: bytes in, listener
calls and bytes out. Clients are h2's client-side connection (a test dependency) or frames built
by hand with http2_frames; RFC 9113 sections in the test names' docstrings."""

from __future__ import annotations

from typing import Any

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, ResponseReceived, TrailersReceived, WindowUpdated
from hpack import Encoder
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.grpc.http2 import H2ServerConnection
from rocketmq_emu.broker.grpc.http2_frames import (
    ACK,
    CONNECTION_PREFACE,
    END_HEADERS,
    END_STREAM,
    HEADER,
    PADDED,
    PRIORITY_FLAG,
    ErrorCode,
    FrameType,
    Setting,
    frame,
    rst_stream,
    window_update,
)
from rocketmq_emu.broker.grpc.http2_frames import (
    settings as settings_frame,
)

REQUEST = [(":method", "POST"), (":scheme", "http"), (":path", "/s.S/M"), (":authority", "x"),
           ("content-type", "application/grpc"), ("te", "trailers")]
RAW_REQUEST = [(n.encode(), v.encode()) for n, v in REQUEST]


class Recorder:
    """A Listener that records what it is told."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_request(self, sid: int, headers: list[tuple[bytes, bytes]], end: bool) -> None:
        self.events.append(("request", sid, [tuple(h) for h in headers], end))

    def on_data(self, sid: int, data: bytes, end: bool) -> None:
        self.events.append(("data", sid, bytes(data), end))

    def on_reset(self, sid: int, code: int) -> None:
        self.events.append(("reset", sid, code))

    def on_goaway(self, code: int, debug: bytes) -> None:
        self.events.append(("goaway", code, debug))

    def merged(self) -> list[tuple[Any, ...]]:
        """Events with consecutive DATA of a stream joined (reads may split DATA anywhere)."""
        out: list[tuple[Any, ...]] = []
        for e in self.events:
            if e[0] == "data" and out and out[-1][0] == "data" and out[-1][1] == e[1] and not out[-1][3]:
                out[-1] = ("data", e[1], out[-1][2] + e[2], e[3])
            elif not (e[0] == "data" and not e[2] and not e[3]):
                out.append(e)
        return out


def server(**kw: Any) -> tuple[H2ServerConnection, Recorder]:
    rec = Recorder()
    conn = H2ServerConnection(rec, **kw)
    conn.initiate()
    return conn, rec


def frames(data: bytes) -> list[tuple[int, int, int, bytes]]:
    """(type, flags, stream id, payload) of each frame in ``data``."""
    out, at = [], 0
    while at < len(data):
        length_type, flags, sid = HEADER.unpack_from(data, at)
        length = length_type >> 8
        out.append((length_type & 0xFF, flags, sid, data[at + HEADER.size:at + HEADER.size + length]))
        at += HEADER.size + length
    return out


def client(**kw: Any) -> H2Connection:
    c = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8", **kw))
    c.initiate_connection()
    return c


def opened(**kw: Any) -> tuple[H2ServerConnection, Recorder, H2Connection]:
    """A server and an h2 client past the prefaces and SETTINGS exchange."""
    conn, rec = server(**kw)
    c = client()
    conn.receive(c.data_to_send())
    c.receive_data(conn.data_to_send())
    conn.receive(c.data_to_send())  # the client's SETTINGS ACK
    conn.data_to_send()
    return conn, rec, c


def preface() -> bytes:
    return CONNECTION_PREFACE + settings_frame({})


def headers_block(headers: list[tuple[str, str]] = REQUEST) -> bytes:
    return Encoder().encode(headers)


def conversation() -> bytes:
    """A client's bytes: preface, SETTINGS, two calls (one padded, one with CONTINUATION), PING."""
    c = client()
    c.send_headers(1, REQUEST)
    c.send_data(1, b"\x00\x00\x00\x00\x03abc", end_stream=True, pad_length=7)
    c.send_headers(3, REQUEST, end_stream=False, priority_weight=16, priority_depends_on=1)
    for _ in range(4):
        c.send_data(3, b"z" * 10000)
    c.end_stream(3)
    c.ping(b"12345678")
    return c.data_to_send()


def test_initiate_sends_settings_and_the_connection_window() -> None:
    conn, _ = server(max_concurrent_streams=1000, stream_window=1 << 20, connection_window=16 << 20)
    c = client()
    events = c.receive_data(conn.data_to_send())
    assert c.remote_settings.max_concurrent_streams == 1000
    assert c.remote_settings.initial_window_size == 1 << 20
    assert c.outbound_flow_control_window == 16 << 20
    assert any(isinstance(e, WindowUpdated) for e in events)


def test_a_conversation_reads_the_same_split_at_every_byte_boundary() -> None:
    """4.1: frame boundaries are the codec's business, not the reads'."""
    data = conversation()
    whole, rec = server(stream_window=1 << 20)
    whole.receive(data)
    expected = rec.merged()
    assert [e[0] for e in expected] == ["request", "data", "request", "data"]
    assert expected[1] == ("data", 1, b"\x00\x00\x00\x00\x03abc", True)
    assert expected[3][2] == b"z" * 40000 and expected[3][3]
    answer = whole.data_to_send()
    # Every boundary through both calls' HEADERS and the padded DATA; then through the bulk.
    for at in [*range(0, 1000), *range(1000, len(data) + 1, 97)]:
        conn, rec = server(stream_window=1 << 20)
        conn.receive(data[:at])
        conn.receive(data[at:])
        assert rec.merged() == expected, at
        assert conn.error is None
    assert (FrameType.PING, ACK, 0, b"12345678") in frames(answer)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=40))
def test_any_chunking_reads_the_same(sizes: list[int]) -> None:
    data = conversation()
    ref, ref_rec = server(stream_window=1 << 20)
    ref.receive(data)
    conn, rec = server(stream_window=1 << 20)
    at = 0
    for size in sizes:
        conn.receive(data[at:at + size])
        at += size
    conn.receive(data[at:])
    assert rec.merged() == ref_rec.merged() and conn.error is None


def test_continuation_frames_make_one_header_block() -> None:
    """6.10: HEADERS without END_HEADERS, then CONTINUATIONs on the same stream."""
    block = headers_block(REQUEST + [("x-big", "v" * 300)])
    conn, rec = server()
    parts = [block[:10], block[10:200], block[200:]]
    data = preface() + frame(FrameType.HEADERS, END_STREAM, 1, parts[0]) \
        + frame(FrameType.CONTINUATION, 0, 1, parts[1]) \
        + frame(FrameType.CONTINUATION, END_HEADERS, 1, parts[2])
    conn.receive(data)
    assert rec.events == [("request", 1, RAW_REQUEST + [(b"x-big", b"v" * 300)], True)]


def test_a_frame_inside_a_header_block_is_a_connection_error() -> None:
    conn, rec = server()
    conn.receive(preface() + frame(FrameType.HEADERS, 0, 1, headers_block()[:5])
                 + frame(FrameType.PING, 0, 0, b"8 bytes!"))
    assert conn.error and "PROTOCOL_ERROR" in conn.error
    [goaway] = [f for f in frames(conn.data_to_send()) if f[0] == FrameType.GOAWAY]
    assert goaway[3][4:8] == ErrorCode.PROTOCOL_ERROR.to_bytes(4, "big")


def test_padding_and_priority_are_stripped_and_padding_is_flow_controlled() -> None:
    """6.1, 6.2: Pad Length, Padding and the PRIORITY fields are not data; 6.9: padding counts."""
    block = headers_block()
    conn, rec = server(stream_window=1000, connection_window=65535)
    priority = (1 << 31 | 0).to_bytes(4, "big") + b"\x10"
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS | PADDED | PRIORITY_FLAG, 1,
                                   b"\x03" + priority + block + b"\x00" * 3)
                 + frame(FrameType.DATA, PADDED, 1, b"\x0a" + b"hello" + b"\x00" * 10))
    assert rec.events == [("request", 1, RAW_REQUEST, False), ("data", 1, b"hello", False)]
    assert conn.streams[1].recv_window == 1000 - 16
    conn.receive(frame(FrameType.DATA, PADDED, 1, b"\x05abc"))  # padding longer than the rest
    assert conn.error and "padding" in conn.error


def test_our_data_waits_for_the_peers_windows() -> None:
    """6.9.1: DATA beyond the stream's or the connection's window waits; WINDOW_UPDATE sends it;
    the trailers go out behind it."""
    conn, rec, c = opened()
    c.send_headers(1, REQUEST, end_stream=True)
    conn.receive(c.data_to_send())
    conn.send_headers(1, [(b":status", b"200")])
    conn.send_data(1, b"a" * 100000)
    conn.send_headers(1, [(b"grpc-status", b"0")], end_stream=True)
    got = c.receive_data(conn.data_to_send())
    assert sum(len(e.data) for e in got if isinstance(e, DataReceived)) == 65535
    assert conn.buffered(1) == 100000 - 65535 and 1 in conn.streams
    c.increment_flow_control_window(10000, 1)  # the stream only: the connection is still shut
    conn.receive(c.data_to_send())
    assert conn.data_to_send() == b""
    c.increment_flow_control_window(50000)
    conn.receive(c.data_to_send())
    got = c.receive_data(conn.data_to_send())
    assert sum(len(e.data) for e in got if isinstance(e, DataReceived)) == 10000
    c.increment_flow_control_window(50000, 1)
    conn.receive(c.data_to_send())
    got = c.receive_data(conn.data_to_send())
    assert sum(len(e.data) for e in got if isinstance(e, DataReceived)) == 100000 - 75535
    assert any(isinstance(e, TrailersReceived) for e in got)
    assert 1 not in conn.streams and conn.send_window == 65535 + 50000 - 100000


def test_initial_window_size_change_moves_open_streams_windows() -> None:
    """6.9.2: SETTINGS_INITIAL_WINDOW_SIZE changes every open stream's window by the delta
    (down to negative), and an increase sends what waited."""
    conn, rec = server()
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS | END_STREAM, 1, headers_block())
                 + window_update(0, 1 << 20))
    conn.send_data(1, b"x" * 70000)
    conn.data_to_send()
    assert conn.streams[1].send_window == 0 and conn.buffered(1) == 70000 - 65535
    conn.receive(settings_frame({Setting.INITIAL_WINDOW_SIZE: 1000}))
    assert conn.streams[1].send_window == 1000 - 65535
    assert frames(conn.data_to_send()) == [(FrameType.SETTINGS, ACK, 0, b"")]
    conn.receive(settings_frame({Setting.INITIAL_WINDOW_SIZE: 70000}))
    out = frames(conn.data_to_send())
    assert [f[0] for f in out] == [FrameType.SETTINGS, FrameType.DATA]
    assert len(out[1][3]) == 70000 - 65535 and conn.streams[1].send_window == 0


def test_max_frame_size_splits_data_and_header_blocks() -> None:
    """6.5.2 MAX_FRAME_SIZE (peer's) bounds our DATA; a large block continues (6.10)."""
    conn, rec, c = opened()
    c.send_headers(1, REQUEST, end_stream=True)
    conn.receive(c.data_to_send())
    conn.send_headers(1, [(b":status", b"200"), (b"x-long", b"y" * 40000)])
    conn.send_data(1, b"d" * 40000)
    out = conn.data_to_send()
    kinds = [(f[0], f[1] & END_HEADERS, len(f[3])) for f in frames(out)]
    assert kinds[:3] == [(FrameType.HEADERS, 0, 16384), (FrameType.CONTINUATION, 0, 16384),
                         (FrameType.CONTINUATION, END_HEADERS, kinds[2][2])]
    assert [k[2] for k in kinds[3:]] == [16384, 16384, 40000 - 32768]
    events = c.receive_data(out)
    [response] = [e for e in events if isinstance(e, ResponseReceived)]
    assert ("x-long", "y" * 40000) in response.headers


def test_receive_windows_are_credited_per_read_at_half_a_window() -> None:
    conn, rec = server(stream_window=40000, connection_window=65535)
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS, 1, headers_block()))
    conn.data_to_send()
    conn.receive(frame(FrameType.DATA, 0, 1, b"a" * 15000))
    assert conn.data_to_send() == b""  # under half of either window: nothing yet
    conn.receive(frame(FrameType.DATA, 0, 1, b"a" * 5000) * 2)
    assert frames(conn.data_to_send()) == [(FrameType.WINDOW_UPDATE, 0, 1, (25000).to_bytes(4, "big"))]
    conn.receive(frame(FrameType.DATA, 0, 1, b"a" * 15000) + frame(FrameType.DATA, END_STREAM, 1, b"a" * 5000))
    # The stream ended (no update for it); the connection has 45000 bytes unacknowledged.
    assert frames(conn.data_to_send()) == [(FrameType.WINDOW_UPDATE, 0, 0, (45000).to_bytes(4, "big"))]


def test_a_connection_window_below_the_default_is_the_default() -> None:
    """6.9.2: only WINDOW_UPDATE moves the connection window, which starts at 65535."""
    conn, rec = server(connection_window=1000)
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS, 1, headers_block())
                 + frame(FrameType.DATA, 0, 1, b"a" * 16000) * 4)
    assert conn.error is None and sum(len(e[2]) for e in rec.events if e[0] == "data") == 64000


def test_data_over_the_windows_is_a_flow_control_error() -> None:
    conn, rec = server(stream_window=100, connection_window=65535)
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS, 1, headers_block())
                 + frame(FrameType.DATA, 0, 1, b"a" * 101))
    assert rec.events[-1] == ("reset", 1, ErrorCode.FLOW_CONTROL_ERROR)
    assert (FrameType.RST_STREAM, 0, 1, rst_stream(1, ErrorCode.FLOW_CONTROL_ERROR)[9:]) \
        in frames(conn.data_to_send())
    conn.receive(frame(FrameType.DATA, 0, 1, b"a" * 16000) * 5)  # the connection's 65535
    assert conn.error and "FLOW_CONTROL_ERROR" in conn.error


def test_our_end_stream_before_the_clients_resets_it_no_error() -> None:
    """8.1: a complete response stops the request with RST_STREAM(NO_ERROR)."""
    conn, rec = server()
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS, 1, headers_block()))
    conn.send_headers(1, [(b":status", b"200"), (b"grpc-status", b"12")], end_stream=True)
    out = frames(conn.data_to_send())
    assert out[-1] == (FrameType.RST_STREAM, 0, 1, ErrorCode.NO_ERROR.to_bytes(4, "big"))
    conn.receive(frame(FrameType.DATA, END_STREAM, 1, b"late"))  # in flight: ignored (5.4.2)
    assert conn.error is None and rec.events[-1][0] == "request"


def test_client_reset_trailers_goaway_and_unknown_frames() -> None:
    conn, rec = server()
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS, 1, headers_block())
                 + frame(FrameType.HEADERS, END_HEADERS, 3, headers_block())
                 + frame(0xEE, 0xFF, 1, b"unknown")  # 5.5: ignored
                 + rst_stream(1, ErrorCode.CANCEL)
                 + frame(FrameType.HEADERS, END_HEADERS | END_STREAM, 3, headers_block([("x", "y")]))
                 + frame(FrameType.PRIORITY, 0, 3, b"\x00\x00\x00\x01\x10")
                 + frame(FrameType.GOAWAY, 0, 0, b"\x00\x00\x00\x03\x00\x00\x00\x00bye"))
    assert rec.events[2:] == [("reset", 1, ErrorCode.CANCEL), ("data", 3, b"", True),
                              ("goaway", 0, b"bye")]
    assert conn.error is None and list(conn.streams) == [3]


def test_stream_errors_reset_only_their_stream() -> None:
    conn, rec = server()
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS | END_STREAM, 1, headers_block())
                 + frame(FrameType.DATA, 0, 1, b"after end")  # 5.1 half-closed: STREAM_CLOSED
                 + frame(FrameType.HEADERS, END_HEADERS, 3, headers_block())
                 + frame(FrameType.HEADERS, END_HEADERS, 3, headers_block())  # trailers w/o END_STREAM
                 + frame(FrameType.HEADERS, END_HEADERS, 5, headers_block())
                 + window_update(5, 0))
    assert [e for e in rec.events if e[0] == "reset"] == [
        ("reset", 1, ErrorCode.STREAM_CLOSED), ("reset", 3, ErrorCode.PROTOCOL_ERROR),
        ("reset", 5, ErrorCode.PROTOCOL_ERROR)]
    assert conn.error is None and not conn.streams


def test_max_concurrent_streams_refuses_the_next_stream() -> None:
    conn, rec = server(max_concurrent_streams=2)
    data = preface()
    for sid in (1, 3, 5):
        data += frame(FrameType.HEADERS, END_HEADERS, sid, headers_block())
    conn.receive(data)
    assert [e[1] for e in rec.events] == [1, 3]
    assert frames(conn.data_to_send())[-1] == (FrameType.RST_STREAM, 0, 5,
                                               ErrorCode.REFUSED_STREAM.to_bytes(4, "big"))
    conn.reset_stream(1)
    conn.receive(frame(FrameType.HEADERS, END_HEADERS, 7, headers_block()))
    assert rec.events[-1][:2] == ("request", 7)


def test_a_reused_stream_id_is_ignored_and_the_hpack_table_follows() -> None:
    """5.1: a HEADERS on a stream we reset is dropped, its block still decoded."""
    enc = Encoder()
    conn, rec = server()
    conn.receive(preface() + frame(FrameType.HEADERS, END_HEADERS, 3, enc.encode(REQUEST)))
    conn.reset_stream(3)
    conn.receive(frame(FrameType.HEADERS, END_HEADERS, 3, enc.encode(REQUEST + [("a", "b")])))
    conn.receive(frame(FrameType.HEADERS, END_HEADERS, 5, enc.encode(REQUEST + [("a", "b")])))
    assert [e[1] for e in rec.events] == [3, 5] and (b"a", b"b") in rec.events[-1][2]


@pytest.mark.parametrize("data, code", [
    (b"GET / HTTP/1.1\r\n", None),
    (b"\x00\x00\x00\xa9\x00\x00\x00\x9d", None),
    (CONNECTION_PREFACE + frame(FrameType.PING, 0, 0, b"12345678"), ErrorCode.PROTOCOL_ERROR),
    (preface() + frame(FrameType.HEADERS, END_HEADERS, 2, headers_block()), ErrorCode.PROTOCOL_ERROR),
    (preface() + frame(FrameType.DATA, 0, 1, b"x"), ErrorCode.PROTOCOL_ERROR),
    (preface() + frame(FrameType.DATA, 0, 0, b"x"), ErrorCode.PROTOCOL_ERROR),
    (preface() + HEADER.pack(20000 << 8, 0, 1), ErrorCode.FRAME_SIZE_ERROR),
    (preface() + frame(FrameType.PUSH_PROMISE, END_HEADERS, 1, b"\x00\x00\x00\x02"), ErrorCode.PROTOCOL_ERROR),
    (preface() + window_update(0, 0), ErrorCode.PROTOCOL_ERROR),
    (preface() + window_update(0, (1 << 31) - 1), ErrorCode.FLOW_CONTROL_ERROR),
    (preface() + frame(FrameType.SETTINGS, ACK, 0, b"\x00"), ErrorCode.FRAME_SIZE_ERROR),
    (preface() + frame(FrameType.SETTINGS, 0, 0, b"\x00\x01"), ErrorCode.FRAME_SIZE_ERROR),
    (preface() + settings_frame({Setting.MAX_FRAME_SIZE: 100}), ErrorCode.PROTOCOL_ERROR),
    (preface() + settings_frame({Setting.INITIAL_WINDOW_SIZE: 1 << 31}), ErrorCode.FLOW_CONTROL_ERROR),
    (preface() + settings_frame({Setting.ENABLE_PUSH: 2}), ErrorCode.PROTOCOL_ERROR),
    (preface() + frame(FrameType.PING, 0, 0, b"short"), ErrorCode.FRAME_SIZE_ERROR),
    (preface() + frame(FrameType.PING, 0, 1, b"12345678"), ErrorCode.PROTOCOL_ERROR),
    (preface() + rst_stream(9, ErrorCode.CANCEL), ErrorCode.PROTOCOL_ERROR),
    (preface() + frame(FrameType.CONTINUATION, END_HEADERS, 1, b""), ErrorCode.PROTOCOL_ERROR),
    (preface() + frame(FrameType.HEADERS, END_HEADERS, 1, b"\xff\xff\xff\xff"), ErrorCode.COMPRESSION_ERROR),
])
def test_connection_errors_send_goaway_and_stop_reading(data: bytes, code: ErrorCode | None) -> None:
    """5.4.1: GOAWAY with the error code; 3.4: a client without the preface is not HTTP/2."""
    conn, rec = server()
    conn.data_to_send()
    conn.receive(data)
    assert conn.error is not None
    out = frames(conn.data_to_send())
    if code is None:
        assert conn.not_http2 and out == [] and "not an HTTP/2 client" in conn.error
    else:
        assert out[-1][0] == FrameType.GOAWAY and out[-1][3][4:8] == code.to_bytes(4, "big")
        assert code.name in conn.error
    conn.receive(frame(FrameType.HEADERS, END_HEADERS, 11, headers_block()))
    assert not [e for e in rec.events if e[0] == "request" and e[1] == 11]


def test_pings_are_acknowledged_and_goaway_refuses_new_streams() -> None:
    conn, rec, c = opened()
    c.ping(b"abcdefgh")
    conn.receive(c.data_to_send())
    assert frames(conn.data_to_send()) == [(FrameType.PING, ACK, 0, b"abcdefgh")]
    conn.close()
    assert frames(conn.data_to_send())[0][0] == FrameType.GOAWAY
    c.send_headers(1, REQUEST, end_stream=True)
    conn.receive(c.data_to_send())
    assert frames(conn.data_to_send()) == [
        (FrameType.RST_STREAM, 0, 1, ErrorCode.REFUSED_STREAM.to_bytes(4, "big"))]
    assert rec.events == []


def test_header_table_size_setting_makes_the_encoder_announce_size_zero() -> None:
    conn, rec, c = opened()
    c.send_headers(1, REQUEST, end_stream=True)
    conn.receive(c.data_to_send())
    conn.send_headers(1, [(b":status", b"200")])
    conn.data_to_send()
    conn.receive(settings_frame({Setting.HEADER_TABLE_SIZE: 0}))
    conn.send_data(1, b"x")
    conn.send_headers(1, [(b"grpc-status", b"0")], end_stream=True)
    out = frames(conn.data_to_send())
    assert out[-1][0] == FrameType.HEADERS and out[-1][3][:1] == b"\x20"  # RFC 7541 6.3
