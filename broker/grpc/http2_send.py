"""The sending half of the gRPC server's HTTP/2 connection (RFC 9113): each open stream's
state (:class:`Stream`), and :class:`Sender`, the mixin of
:class:`~rocketmq_emu.broker.grpc.http2.H2ServerConnection` that frames header blocks and DATA,
holds DATA beyond the peer's flow-control windows (6.9.1) with the trailers behind it, and sends
it when a WINDOW_UPDATE or a SETTINGS_INITIAL_WINDOW_SIZE increase opens them."""

from __future__ import annotations

from collections import deque

from rocketmq_emu.broker.grpc.hpack_plain import PlainEncoder
from rocketmq_emu.broker.grpc.http2_frames import (
    END_HEADERS,
    END_STREAM,
    HEADER,
    ErrorCode,
    FrameType,
    goaway,
    rst_stream,
)

__all__ = ["CLOSED", "RESET_BY_PEER", "RESET_BY_US", "Sender", "Stream"]

# How a stream closed (RFC 9113 5.1 "closed"), remembered for the frames that may still come:
#: both sides ended it: a frame other than PRIORITY, WINDOW_UPDATE or RST_STREAM is a
#: connection error STREAM_CLOSED;
CLOSED = 0
#: the client's RST_STREAM: any frame but PRIORITY is a stream error STREAM_CLOSED;
RESET_BY_PEER = 1
#: our RST_STREAM (or REFUSED_STREAM): what was in flight is ignored.
RESET_BY_US = 2
#: How many closed streams are remembered (at least half as many; the oldest are forgotten
#: first): frames on a stream older than these are treated as on one closed normally (5.1
#: allows limiting the period).
CLOSED_MEMORY = 1024

_DATA, _HEADERS, _CONTINUATION = FrameType.DATA, FrameType.HEADERS, FrameType.CONTINUATION
_pack_header = HEADER.pack


class Stream:
    """One open stream: windows, whether the client ended it, our DATA and trailers waiting."""

    __slots__ = ("id", "send_window", "recv_window", "unacked", "credit_due", "remote_closed",
                 "out", "trailers")

    def __init__(self, stream_id: int, send_window: int, recv_window: int, remote_closed: bool) -> None:
        self.id = stream_id
        self.send_window = send_window
        self.recv_window = recv_window
        self.unacked = 0
        self.credit_due = False
        self.remote_closed = remote_closed
        self.out: deque[bytes | memoryview] = deque()
        self.trailers: list[tuple[bytes, bytes]] | None = None


class Sender:
    """Writing frames for the owner and the connection (mixin of H2ServerConnection)."""

    streams: dict[int, Stream]
    last_stream_id: int
    goaway_sent: bool
    encoder: PlainEncoder
    send_window: int
    _peer_max_frame: int
    _out: list[bytes | memoryview]
    _blocked: dict[int, Stream]
    _closed: dict[int, int]

    def buffered(self, stream_id: int) -> int:
        """Bytes of DATA waiting for the peer's window on ``stream_id``."""
        stream = self.streams.get(stream_id)
        return sum(len(c) for c in stream.out) if stream is not None else 0

    def send_headers(self, stream_id: int, headers: list[tuple[bytes, bytes]],
                     end_stream: bool = False) -> bool:
        """Send a header block; with ``end_stream`` (trailers) it waits behind buffered DATA.
        False if the stream is not open."""
        stream = self.streams.get(stream_id)
        if stream is None:
            return False
        if end_stream and stream.out:
            stream.trailers = headers
            return True
        self._write_headers(stream_id, headers, end_stream)
        if end_stream:
            self._ended(stream)
        return True

    def send_data(self, stream_id: int, data: bytes | memoryview) -> bool:
        """Send DATA, framed to the peer's SETTINGS_MAX_FRAME_SIZE, as far as its windows allow
        (the rest waits, 6.9.1). False if the stream is not open."""
        stream = self.streams.get(stream_id)
        if stream is None:
            return False
        size = len(data)
        if not stream.out and size <= stream.send_window and size <= self.send_window \
                and size <= self._peer_max_frame:
            stream.send_window -= size
            self.send_window -= size
            self._out.append(_pack_header(size << 8 | _DATA, 0, stream_id))
            self._out.append(data)
            return True
        stream.out.append(memoryview(data) if type(data) is bytes else data)
        self._flush(stream)
        return True

    def reset_stream(self, stream_id: int, code: int = ErrorCode.CANCEL) -> None:
        """Send RST_STREAM and forget the stream (nothing more is sent or told for it)."""
        if self._forget(stream_id, RESET_BY_US) is not None:
            self._out.append(rst_stream(stream_id, code))

    def close(self, code: int = ErrorCode.NO_ERROR, debug: bytes = b"") -> None:
        """Queue GOAWAY (6.8) naming the last stream we took; later streams are refused."""
        if not self.goaway_sent:
            self.goaway_sent = True
            self._out.append(goaway(self.last_stream_id, code, debug))

    def _forget(self, stream_id: int, how: int) -> Stream | None:
        """Close an open stream (None if it was not), remembering ``how`` (5.1 "closed")."""
        self._blocked.pop(stream_id, None)
        stream = self.streams.pop(stream_id, None)
        if stream is not None:
            closed = self._closed
            closed[stream_id] = how
            if len(closed) > CLOSED_MEMORY:
                self._closed_as(stream_id, how)
        return stream

    def _closed_as(self, stream_id: int, how: int) -> None:
        closed = self._closed
        closed[stream_id] = how
        if len(closed) > CLOSED_MEMORY:
            # The newer half is kept, in one copy: deleting the oldest one by one makes
            # next(iter(dict)) walk the dict's deleted slots, a cost per call.
            self._closed = dict(list(closed.items())[CLOSED_MEMORY >> 1:])

    def _write_headers(self, stream_id: int, headers: list[tuple[bytes, bytes]], end_stream: bool) -> None:
        """HEADERS, plus CONTINUATIONs when the block exceeds the peer's frame size (6.10)."""
        block = self.encoder.encode(headers)
        flags = END_STREAM if end_stream else 0
        limit = self._peer_max_frame
        out = self._out
        if len(block) <= limit:
            out.append(_pack_header(len(block) << 8 | _HEADERS, flags | END_HEADERS, stream_id))
            out.append(block)
            return
        kind = _HEADERS
        for at in range(0, len(block), limit):
            part = block[at:at + limit]
            last = at + limit >= len(block)
            out.append(_pack_header(len(part) << 8 | kind, flags | (END_HEADERS if last else 0), stream_id))
            out.append(part)
            kind, flags = _CONTINUATION, 0

    def _ended(self, stream: Stream) -> None:
        """Our END_STREAM is out: the stream closes, or the client still sending is stopped."""
        if stream.remote_closed:
            self._forget(stream.id, CLOSED)
        else:
            self._forget(stream.id, RESET_BY_US)
            self._out.append(rst_stream(stream.id, ErrorCode.NO_ERROR))

    def _flush(self, stream: Stream) -> None:
        """Send a stream's waiting DATA as far as the windows allow, then its trailers."""
        queue = stream.out
        out = self._out
        limit = self._peer_max_frame
        while queue:
            window = min(stream.send_window, self.send_window, limit)
            if window <= 0:
                self._blocked[stream.id] = stream
                return
            chunk = queue[0]
            if len(chunk) <= window:
                queue.popleft()
            else:
                queue[0] = chunk[window:]
                chunk = chunk[:window]
            size = len(chunk)
            stream.send_window -= size
            self.send_window -= size
            out.append(_pack_header(size << 8 | _DATA, 0, stream.id))
            out.append(chunk)
        self._blocked.pop(stream.id, None)
        if stream.trailers is not None:
            headers, stream.trailers = stream.trailers, None
            self._write_headers(stream.id, headers, True)
            self._ended(stream)

    def _flush_blocked(self) -> None:
        for stream in list(self._blocked.values()):
            if self.send_window <= 0:
                return
            self._flush(stream)
