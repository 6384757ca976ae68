"""The recording file: a header, then one entry per chunk of bytes a connection carried.

Declared once here with ``construct``; the writer and the reader run on the :mod:`struct`
formats :class:`~rocketmq_emu.broker.layout.Layout` derives. All integers big-endian (as
RocketMQ's own frames)::

    file   = HEADER entry*
    HEADER = magic "RMQEMREC" | version u16 (1) | startMs i64
    entry  = ENTRY payload
    ENTRY  = length u32 | crc32c u32 (of payload) | timestampMs i64 | connection u32
             | port u16 (the server port: name server, broker, VIP) | direction u8
             (0: client to server, 1: server to client)

An entry is the bytes of one read or one write of the connection, in order: the remoting frames
of a direction are those bytes concatenated (:func:`frames`). The file is appended to and
flushed entry by entry, so a crash loses at most the entries being written; a torn or damaged
entry is reported by :func:`read_entries` with its number and byte offset, never a crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import construct as cs
import crc32c

from rocketmq_emu.broker.layout import Layout
from rocketmq_emu.broker.remoting.command import FRAME_LENGTH

MAGIC = b"RMQEMREC"
VERSION = 1
CLIENT_TO_SERVER = 0
SERVER_TO_CLIENT = 1

HEADER = cs.Struct(
    "magic" / cs.Const(MAGIC),
    "version" / cs.Int16ub,
    "startMs" / cs.Int64sb,
)
ENTRY = cs.Struct(
    "length" / cs.Int32ub,
    "crc" / cs.Int32ub,
    "timestampMs" / cs.Int64sb,
    "connection" / cs.Int32ub,
    "port" / cs.Int16ub,
    "direction" / cs.Int8ub,
)
_HEADER = Layout(HEADER)
_ENTRY = Layout(ENTRY)
HEADER_STRUCT = _HEADER.struct()
ENTRY_STRUCT = _ENTRY.struct()
#: The largest payload a reader accepts (a remoting frame is at most 16 MiB; reads are smaller).
MAX_PAYLOAD = 64 * 1024 * 1024


class RecordingError(ValueError):
    """A recording that cannot be read on: names the entry number and its byte offset."""

    def __init__(self, message: str, entry: int, offset: int) -> None:
        super().__init__(f"entry {entry} at byte {offset}: {message}")
        self.entry = entry
        self.offset = offset


@dataclass(frozen=True, slots=True)
class Entry:
    """One chunk of a connection's bytes."""

    timestamp_ms: int
    connection: int
    port: int
    direction: int
    payload: bytes


def encode_header(start_ms: int) -> bytes:
    """The file header."""
    return HEADER_STRUCT.pack(MAGIC, VERSION, start_ms)


def encode_entry(entry: Entry) -> bytes:
    """One entry with its payload."""
    head = ENTRY_STRUCT.pack(len(entry.payload), crc32c.crc32c(entry.payload),
                             entry.timestamp_ms, entry.connection, entry.port, entry.direction)
    return head + entry.payload


def read_entries(data: bytes) -> Iterator[Entry]:
    """The entries of a recording's bytes, in order. Raises :class:`RecordingError` (entry
    number, byte offset) at the first one that is truncated or damaged."""
    if len(data) < HEADER_STRUCT.size:
        raise RecordingError("no recording header (file shorter than it)", 0, 0)
    magic, version, _start = HEADER_STRUCT.unpack_from(data, 0)
    if magic != MAGIC:
        raise RecordingError(f"not a recording (magic {magic!r})", 0, 0)
    if version != VERSION:
        raise RecordingError(f"recording version {version}, this reader knows {VERSION}", 0, 0)
    pos = HEADER_STRUCT.size
    number = 1
    while pos < len(data):
        if len(data) - pos < ENTRY_STRUCT.size:
            raise RecordingError("truncated entry header", number, pos)
        length, crc, ts, conn, port, direction = ENTRY_STRUCT.unpack_from(data, pos)
        start = pos + ENTRY_STRUCT.size
        if length > MAX_PAYLOAD or direction > SERVER_TO_CLIENT:
            raise RecordingError(f"damaged entry header (length {length}, direction "
                                 f"{direction})", number, pos)
        if start + length > len(data):
            raise RecordingError(f"truncated payload ({len(data) - start} of {length} bytes)",
                                 number, pos)
        payload = bytes(data[start:start + length])
        if crc32c.crc32c(payload) != crc:
            raise RecordingError("payload checksum mismatch", number, pos)
        yield Entry(ts, conn, port, direction, payload)
        pos = start + length
        number += 1


class FrameSplitter:
    """Whole remoting frames (length prefix included) out of a byte stream cut anywhere."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The frames ``data`` completes, in order."""
        buf = self._buf
        buf += data
        while len(buf) >= FRAME_LENGTH.size:
            (length,) = FRAME_LENGTH.unpack_from(buf, 0)
            end = FRAME_LENGTH.size + length
            if len(buf) < end:
                return
            frame = bytes(buf[:end])
            del buf[:end]
            yield frame


def frames(entries: Iterator[Entry]) -> Iterator[tuple[Entry, bytes]]:
    """The whole remoting frames (length prefix included) of each connection and direction, in
    the order they completed; with each, the entry whose bytes completed it."""
    streams: dict[tuple[int, int], FrameSplitter] = {}
    for entry in entries:
        splitter = streams.get((entry.connection, entry.direction))
        if splitter is None:
            splitter = streams[(entry.connection, entry.direction)] = FrameSplitter()
        for frame in splitter.feed(entry.payload):
            yield entry, frame
