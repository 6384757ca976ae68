"""HTTP/2 frames as bytes (RFC 9113 section 4 and 6): the layouts, declared once with construct,
and the few frames a gRPC server writes.

Every layout here is a ``construct.Struct``; :class:`~rocketmq_emu.broker.layout.Layout` derives
the :mod:`struct` objects the codec runs on (no format is typed twice). The frame header's
24-bit Length has no :mod:`struct` code, so Length and Type are declared as the one 32-bit word
they share (``length_type``), split by Computed fields, as the remoting frame's header word is.
"""

from __future__ import annotations

import enum

import construct as cs

from rocketmq_emu.broker.layout import Layout

__all__ = [
    "ACK", "CONNECTION_PREFACE", "DEFAULT_MAX_FRAME_SIZE", "DEFAULT_WINDOW", "END_HEADERS",
    "END_STREAM", "FRAME_HEADER", "FRAME_HEADER_SIZE", "MAX_FRAME_SIZE_LIMIT", "MAX_WINDOW", "PADDED",
    "PRIORITY_FLAG", "PRIORITY_SIZE", "ErrorCode", "FrameType", "Setting", "frame", "goaway",
    "rst_stream", "settings", "window_update",
]

#: RFC 9113 4.1: Length (24) and Type (8) as one word, Flags (8), R (1) + Stream Identifier (31).
FRAME_HEADER = cs.Struct(
    "length_type" / cs.Rebuild(cs.Int32ub, lambda ctx: ctx.length << 8 | ctx.type),
    "length" / cs.Computed(cs.this.length_type >> 8),
    "type" / cs.Computed(cs.this.length_type & 0xFF),
    "flags" / cs.Int8ub,
    "stream_id" / cs.Int32ub,
)
#: RFC 9113 6.5.1: one SETTINGS parameter.
SETTING = cs.Struct("identifier" / cs.Int16ub, "value" / cs.Int32ub)
#: RFC 9113 6.9: WINDOW_UPDATE's payload (R + Window Size Increment); RST_STREAM's (6.4, Error
#: Code) has the same shape.
WORD = cs.Struct("value" / cs.Int32ub)
#: RFC 9113 6.8: GOAWAY's payload (R + Last-Stream-ID, Error Code, Additional Debug Data).
GOAWAY = cs.Struct("last_stream_id" / cs.Int32ub, "error_code" / cs.Int32ub,
                   "debug" / cs.GreedyBytes)
#: RFC 9113 6.3 (and HEADERS' PRIORITY flag, 6.2): E + Stream Dependency, Weight. Ignored
#: (RFC 9113 5.3.2 deprecates the scheme) but its bytes are skipped and its size checked.
PRIORITY = cs.Struct("dependency" / cs.Int32ub, "weight" / cs.Int8ub)
#: RFC 9113 6.7: PING's Opaque Data.
PING = cs.Struct("opaque_data" / cs.Bytes(8))

_FRAME = Layout(FRAME_HEADER)
_SETTING = Layout(SETTING)
_GOAWAY = Layout(GOAWAY)

#: The 9-byte frame header: ``(length << 8 | type, flags, stream_id)``.
HEADER = _FRAME.struct("length_type", "stream_id")
FRAME_HEADER_SIZE = HEADER.size
SETTING_ENTRY = _SETTING.struct("identifier", "value")
WORD_STRUCT = Layout(WORD).struct("value")
GOAWAY_HEAD = _GOAWAY.struct("last_stream_id", "error_code")
PRIORITY_SIZE = Layout(PRIORITY).min_size
PING_SIZE = Layout(PING).min_size

#: RFC 9113 3.4: the client connection preface.
CONNECTION_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#: RFC 9113 6.5.2: SETTINGS_INITIAL_WINDOW_SIZE and the connection window start at 65535.
DEFAULT_WINDOW = 65535
#: RFC 9113 6.9.1: a window may not exceed 2^31-1.
MAX_WINDOW = (1 << 31) - 1
#: RFC 9113 6.5.2: SETTINGS_MAX_FRAME_SIZE's initial value and its upper bound.
DEFAULT_MAX_FRAME_SIZE = 1 << 14
MAX_FRAME_SIZE_LIMIT = (1 << 24) - 1
#: The Stream Identifier's 31 bits (4.1: the R bit is ignored on receipt).
STREAM_ID_MASK = MAX_WINDOW

# Flags (RFC 9113 6.1, 6.2, 6.5, 6.7).
END_STREAM = 0x1
ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20


class FrameType(enum.IntEnum):
    """RFC 9113 6 (section numbers: 6.1 DATA ... 6.10 CONTINUATION)."""

    DATA = 0
    HEADERS = 1
    PRIORITY = 2
    RST_STREAM = 3
    SETTINGS = 4
    PUSH_PROMISE = 5
    PING = 6
    GOAWAY = 7
    WINDOW_UPDATE = 8
    CONTINUATION = 9


class Setting(enum.IntEnum):
    """RFC 9113 6.5.2 SETTINGS parameters."""

    HEADER_TABLE_SIZE = 1
    ENABLE_PUSH = 2
    MAX_CONCURRENT_STREAMS = 3
    INITIAL_WINDOW_SIZE = 4
    MAX_FRAME_SIZE = 5
    MAX_HEADER_LIST_SIZE = 6


class ErrorCode(enum.IntEnum):
    """RFC 9113 7 error codes (RST_STREAM, GOAWAY)."""

    NO_ERROR = 0
    PROTOCOL_ERROR = 1
    INTERNAL_ERROR = 2
    FLOW_CONTROL_ERROR = 3
    SETTINGS_TIMEOUT = 4
    STREAM_CLOSED = 5
    FRAME_SIZE_ERROR = 6
    REFUSED_STREAM = 7
    CANCEL = 8
    COMPRESSION_ERROR = 9
    CONNECT_ERROR = 10
    ENHANCE_YOUR_CALM = 11
    INADEQUATE_SECURITY = 12
    HTTP_1_1_REQUIRED = 13


_pack_header = HEADER.pack


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    """One whole frame (header + ``payload``, which must fit the peer's frame size)."""
    return _pack_header(len(payload) << 8 | kind, flags, stream_id) + payload


def settings(values: dict[int, int]) -> bytes:
    """A SETTINGS frame (6.5) with ``values`` (identifier -> value)."""
    return frame(FrameType.SETTINGS, 0, 0, b"".join(SETTING_ENTRY.pack(k, v) for k, v in values.items()))


def window_update(stream_id: int, increment: int) -> bytes:
    """A WINDOW_UPDATE frame (6.9)."""
    return frame(FrameType.WINDOW_UPDATE, 0, stream_id, WORD_STRUCT.pack(increment))


def rst_stream(stream_id: int, code: int) -> bytes:
    """A RST_STREAM frame (6.4)."""
    return frame(FrameType.RST_STREAM, 0, stream_id, WORD_STRUCT.pack(code))


def goaway(last_stream_id: int, code: int, debug: bytes = b"") -> bytes:
    """A GOAWAY frame (6.8)."""
    return frame(FrameType.GOAWAY, 0, 0, GOAWAY_HEAD.pack(last_stream_id, code) + debug)
