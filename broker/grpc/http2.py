"""A small sans-IO HTTP/2 server connection made for gRPC (RFC 9113): bytes in, callbacks out,
bytes to send. No reactor, no socket, no event objects.

:class:`H2ServerConnection` parses frames (:mod:`~rocketmq_emu.broker.grpc.http2_frames`'
layouts), keeps the streams' states and both directions of flow control, and tells its
:class:`Listener` of each request's headers, DATA, END_STREAM and reset (the sending half, the
streams' buffers and the peer's windows, is :mod:`~rocketmq_emu.broker.grpc.http2_send`'s).
What the listener sends (:meth:`~H2ServerConnection.send_headers`, :meth:`~H2ServerConnection.send_data`,
:meth:`~H2ServerConnection.reset_stream`) is queued with the frames the connection answers on
its own (SETTINGS ACK, PING ACK, WINDOW_UPDATE) and taken with
:meth:`~H2ServerConnection.data_to_send`, so the owner writes once per read.

What a gRPC server needs and no more: no server push, no priorities (PRIORITY is parsed and
ignored, RFC 9113 5.3.2, but for a stream made to depend on itself, 5.3.1), no HTTP semantics beyond the one below (the gRPC layer checks the
headers it needs). Header blocks are decoded with
:class:`~rocketmq_emu.broker.grpc.hpack_decode.HeaderDecoder` and encoded with
:class:`~rocketmq_emu.broker.grpc.hpack_plain.PlainEncoder`.

* Our receive windows: ``stream_window`` per stream, ``connection_window`` for the connection;
  DATA is taken as consumed once handed over, and credited back with WINDOW_UPDATE at the end of
  the read that brought a stream's (or the connection's) unacknowledged bytes to half its window.
* The peer's windows: DATA beyond them waits in the stream's buffer (trailers behind it) and is
  sent on WINDOW_UPDATE or a SETTINGS_INITIAL_WINDOW_SIZE increase.
* A connection error (RFC 9113 5.4.1) sets :attr:`~H2ServerConnection.error`, queues GOAWAY
  and stops reading; the owner logs it and closes. A stream error (5.4.2) sends RST_STREAM and
  tells the listener ``on_reset``.
* Once our END_STREAM is out on a stream the client is still sending on, RST_STREAM(NO_ERROR)
  follows (RFC 9113 8.1: a complete response stops the request).
* Closed streams are remembered with how they closed (5.1), for the frames that may still come
  on them; those answers, and the budgets against Rapid Reset and unread PING/SETTINGS ACKs,
  are :mod:`~rocketmq_emu.broker.grpc.http2_guard`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from rocketmq_emu.broker.grpc.hpack_decode import (
    HeaderBlockError,
    HeaderDecoder,
    HeaderListTooLarge,
)
from rocketmq_emu.broker.grpc.hpack_plain import PlainEncoder
from rocketmq_emu.broker.grpc.http2_frames import (
    ACK,
    CONNECTION_PREFACE,
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_WINDOW,
    END_HEADERS,
    END_STREAM,
    FRAME_HEADER_SIZE,
    GOAWAY_HEAD,
    HEADER,
    MAX_FRAME_SIZE_LIMIT,
    MAX_WINDOW,
    PADDED,
    PING_SIZE,
    PRIORITY_FLAG,
    PRIORITY_SIZE,
    SETTING_ENTRY,
    STREAM_ID_MASK,
    WORD_STRUCT,
    ErrorCode,
    FrameType,
    Setting,
    frame,
    rst_stream,
    settings,
    window_update,
)
from rocketmq_emu.broker.grpc.http2_guard import Budgets, Guard
from rocketmq_emu.broker.grpc.http2_guard import Fatal as _Fatal
from rocketmq_emu.broker.grpc.http2_request import trailers_ok
from rocketmq_emu.broker.grpc.http2_send import RESET_BY_PEER, RESET_BY_US, Sender, Stream

__all__ = ["H2ServerConnection", "Listener"]

_SETTINGS, _CONTINUATION = FrameType.SETTINGS, FrameType.CONTINUATION
_SETTINGS_ACK = frame(FrameType.SETTINGS, ACK, 0)
#: Not a wire flag: marks a HEADERS whose priority names its own stream (5.3.1).
_SELF_DEPENDENT = 0x100
#: A header block held across CONTINUATION frames may not grow past this many times
#: SETTINGS_MAX_HEADER_LIST_SIZE (Huffman codes run to 30 bits a byte: a block that decodes
#: within the list size is at most ~4 times it), nor take more than ``_MAX_CONTINUATIONS`` frames
#: (10.5, the CONTINUATION flood of VU#421644: nghttp2 counts them too; empty ones grow nothing).
_HEADER_BLOCK_FACTOR = 4
_MAX_CONTINUATIONS = 32


class Listener(Protocol):
    """What the connection tells its owner (the gRPC layer)."""

    def on_request(self, stream_id: int, headers: list[tuple[bytes, bytes]], end_stream: bool) -> None:
        """A new stream's request header block (decoded, raw bytes pairs)."""

    def on_data(self, stream_id: int, data: bytes, end_stream: bool) -> None:
        """DATA on an open stream (``data`` may be empty when only END_STREAM arrives, as on
        trailers)."""

    def on_reset(self, stream_id: int, error_code: int) -> None:
        """The stream is gone: the client's RST_STREAM, or our own for a stream error."""

    def on_goaway(self, error_code: int, debug: bytes) -> None:
        """The client sent GOAWAY (it opens no more streams)."""


#: The per-turn work units (``blocks_per_read``): a header block costs _BLOCK_COST plus one
#: per 8 bytes of it (a 100-byte block 76, a 4 KB one 576), a PING or SETTINGS frame that
#: queues an ACK _ACK_COST.
_BLOCK_COST = 64
_ACK_COST = 2


class H2ServerConnection(Guard, Sender):
    """The server side of one HTTP/2 connection (see the module docstring).

    Call :meth:`initiate` once, :meth:`receive` with each read, then write
    :meth:`data_to_send`. ``streams`` holds the open streams (ours to answer or still
    sending); ``last_stream_id`` the highest the client opened; ``error`` the connection error
    once there is one (``not_http2`` when the preface was wrong).
    """

    def __init__(self, listener: Listener, *, max_concurrent_streams: int = 100,
                 stream_window: int = DEFAULT_WINDOW, connection_window: int = DEFAULT_WINDOW,
                 max_header_list_size: int = 1 << 16,
                 clock: Callable[[], float] = time.monotonic,
                 blocks_per_read: int | None = None) -> None:
        self.listener = listener
        self.max_concurrent_streams = max_concurrent_streams
        self.stream_window = stream_window
        # 6.9.2: the connection window starts at 65535 and only WINDOW_UPDATE moves it (up).
        self.connection_window = connection_window = max(connection_window, DEFAULT_WINDOW)
        self.max_header_list_size = max_header_list_size
        self.streams: dict[int, Stream] = {}
        self.last_stream_id = 0
        self.error: str | None = None
        self.not_http2 = False
        self.goaway_sent = False
        self.encoder = PlainEncoder()
        #: The peer's window for the connection and its SETTINGS (6.9.2, 6.5.2 defaults).
        self.send_window = DEFAULT_WINDOW
        self._peer_initial_window = DEFAULT_WINDOW
        self._peer_max_frame = DEFAULT_MAX_FRAME_SIZE
        self._recv_window = connection_window
        self._conn_unacked = 0
        self._out: list[bytes | memoryview] = []
        self._buffer = b""
        self._preface = CONNECTION_PREFACE
        self._settings_seen = False
        #: A header block awaiting CONTINUATION: stream id, HEADERS' flags, parts, their size.
        self._continuation: tuple[int, int, list[bytes], list[int]] | None = None
        self._max_header_block = _HEADER_BLOCK_FACTOR * max(max_header_list_size, DEFAULT_MAX_FRAME_SIZE)
        #: Closed streams by id: how each closed (http2_send's CLOSED, RESET_BY_PEER, RESET_BY_US).
        self._closed: dict[int, int] = {}
        self._budgets = Budgets(clock)
        #: The work one :meth:`receive` does before it leaves the rest of the read buffered
        #: (``input_pending``) for the owner to hand back on its next turn, in units of
        #: :data:`_BLOCK_COST`: ``blocks_per_read`` header blocks (each may open a call; a large
        #: one costs more to decode), or 32 PING/SETTINGS frames (each queues an ACK) per block.
        #: A read packed with them (Rapid Reset, HPACK bombs, floods) is served in slices, with
        #: the owner's other connections served in between.
        self._turn_units = blocks_per_read * _BLOCK_COST if blocks_per_read else 1 << 62
        self._units_left = self._turn_units
        #: True when the last :meth:`receive` stopped at ``blocks_per_read`` with frames left.
        self.input_pending = False
        self._decoder = HeaderDecoder(max_header_list_size)
        self._blocked: dict[int, Stream] = {}
        self._credit: list[Stream] = []
        self._handlers = (self._on_data, self._on_headers, self._on_priority, self._on_rst_stream,
                          self._on_settings, self._on_push_promise, self._on_ping, self._on_goaway,
                          self._on_window_update, self._on_continuation)

    # --- owner's side ----------------------------------------------------------------------------
    def initiate(self) -> None:
        """Queue the server preface (3.4): our SETTINGS, then the connection window's increase."""
        self._out.append(settings({
            Setting.MAX_CONCURRENT_STREAMS: self.max_concurrent_streams,
            Setting.INITIAL_WINDOW_SIZE: self.stream_window,
            Setting.MAX_HEADER_LIST_SIZE: self.max_header_list_size,
        }))
        if self.connection_window > DEFAULT_WINDOW:
            self._out.append(window_update(0, self.connection_window - DEFAULT_WINDOW))

    def data_to_send(self) -> bytes:
        """Everything queued since the last call, as one buffer (b"" if nothing)."""
        out = self._out
        if not out:
            return b""
        self._out = []
        return b"".join(out)

    def receive(self, data: bytes) -> None:
        """Take the bytes of one read: frames are handled and the listener told, as they come."""
        if self.error is not None:
            return
        self.input_pending = False
        self._units_left = self._turn_units
        if self._buffer:
            data = self._buffer + data
            self._buffer = b""
        if self._preface:
            data = self._check_preface(data)
            if not data:
                return
        try:
            self._frames(data)
        except _Fatal as fatal:
            self._fail(fatal.code, fatal.message)
            return
        if self._credit or self._conn_unacked >= self.connection_window >> 1:
            self._credit_windows()

    # --- reading -----------------------------------------------------------------------------------
    def _check_preface(self, data: bytes) -> bytes:
        expected = self._preface
        got = data[:len(expected)]
        if got != expected[:len(got)]:
            self.not_http2 = True
            self.error = f"not an HTTP/2 client (first bytes {bytes(data[:16])!r})"
            return b""
        self._preface = expected[len(got):]
        return data[len(got):]

    def _frames(self, data: bytes) -> None:
        unpack = HEADER.unpack_from
        handlers = self._handlers
        end = len(data)
        at = 0
        while end - at >= FRAME_HEADER_SIZE:
            length_type, flags, stream_id = unpack(data, at)
            length = length_type >> 8
            if length > DEFAULT_MAX_FRAME_SIZE:  # our SETTINGS_MAX_FRAME_SIZE (4.2)
                raise _Fatal(ErrorCode.FRAME_SIZE_ERROR, f"frame of {length} bytes")
            start = at + FRAME_HEADER_SIZE
            stop = start + length
            if stop > end:
                break
            at = stop
            kind = length_type & 0xFF
            if self._continuation is not None and kind != _CONTINUATION:
                raise _Fatal(ErrorCode.PROTOCOL_ERROR, f"frame type {kind} inside a header block (6.10)")
            if not self._settings_seen and kind != _SETTINGS:
                raise _Fatal(ErrorCode.PROTOCOL_ERROR, "the preface is not followed by SETTINGS (3.4)")
            if kind <= _CONTINUATION:  # unknown types are ignored (4.1, 5.5)
                handlers[kind](flags, stream_id & STREAM_ID_MASK, data[start:stop])
            if self.error is not None:
                return
            if self._units_left <= 0:
                self.input_pending = end - at >= FRAME_HEADER_SIZE
                break
        if at < end:
            self._buffer = data[at:]

    @staticmethod
    def _unpad(payload: bytes) -> bytes:
        """The payload of a PADDED frame without Pad Length and Padding (6.1, 6.2)."""
        if not payload or payload[0] >= len(payload):
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, "padding fills the frame (6.1)")
        return payload[1:len(payload) - payload[0]]

    def _on_data(self, flags: int, stream_id: int, payload: bytes) -> None:
        if not stream_id:
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, "DATA on stream 0 (6.1)")
        size = len(payload)  # padding included: the whole payload is flow-controlled (6.9)
        self._recv_window -= size
        if self._recv_window < 0:
            raise _Fatal(ErrorCode.FLOW_CONTROL_ERROR, "DATA over the connection window (6.9.1)")
        self._conn_unacked += size
        if flags & PADDED:
            payload = self._unpad(payload)
        stream = self.streams.get(stream_id)
        if stream is None:
            self._not_open(stream_id, "DATA")  # counted on the connection only (6.9)
            return
        if stream.remote_closed:
            self._stream_error(stream, ErrorCode.STREAM_CLOSED)  # 5.1 half-closed (remote)
            return
        stream.recv_window -= size
        if stream.recv_window < 0:
            self._stream_error(stream, ErrorCode.FLOW_CONTROL_ERROR)
            return
        end = bool(flags & END_STREAM)
        if end:
            stream.remote_closed = True
        else:
            stream.unacked += size
            if not stream.credit_due and stream.unacked >= self.stream_window >> 1:
                stream.credit_due = True
                self._credit.append(stream)
        self.listener.on_data(stream_id, payload, end)

    def _on_headers(self, flags: int, stream_id: int, payload: bytes) -> None:
        if not stream_id:
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, "HEADERS on stream 0 (6.2)")
        if flags & PADDED:
            payload = self._unpad(payload)
        if flags & PRIORITY_FLAG:
            if len(payload) < PRIORITY_SIZE:
                raise _Fatal(ErrorCode.FRAME_SIZE_ERROR, "HEADERS too short for its priority (6.2)")
            if WORD_STRUCT.unpack_from(payload)[0] & STREAM_ID_MASK == stream_id:
                flags |= _SELF_DEPENDENT  # 5.3.1: a stream error, once the block is decoded
            payload = payload[PRIORITY_SIZE:]
        if flags & END_HEADERS:
            self._header_block(stream_id, flags, payload)
        else:
            self._continuation = (stream_id, flags, [payload], [len(payload)])

    def _on_continuation(self, flags: int, stream_id: int, payload: bytes) -> None:
        pending = self._continuation
        if pending is None or pending[0] != stream_id:
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, f"unexpected CONTINUATION on stream {stream_id} (6.10)")
        parts, size = pending[2], pending[3]
        parts.append(payload)
        size[0] += len(payload)
        if size[0] > self._max_header_block:
            raise _Fatal(ErrorCode.ENHANCE_YOUR_CALM,
                         f"CONTINUATION flood: header block over {self._max_header_block} bytes (10.5)")
        if len(parts) > _MAX_CONTINUATIONS:
            raise _Fatal(ErrorCode.ENHANCE_YOUR_CALM,
                         f"CONTINUATION flood: over {_MAX_CONTINUATIONS} CONTINUATION frames (10.5)")
        if flags & END_HEADERS:
            self._continuation = None
            self._header_block(stream_id, pending[1], b"".join(parts))

    def _header_block(self, stream_id: int, flags: int, block: bytes) -> None:
        self._units_left -= _BLOCK_COST + (len(block) >> 3)  # a large block costs more to decode
        headers = self._decode(block)  # always: the decoder's table must follow every block (4.3)
        end = bool(flags & END_STREAM)
        stream = self.streams.get(stream_id)
        if stream is not None:  # trailers (8.1): they must end the stream
            if stream.remote_closed:
                self._stream_error(stream, ErrorCode.STREAM_CLOSED)
            elif not end or not trailers_ok(headers):  # 8.1: malformed trailers too
                self._stream_error(stream, ErrorCode.PROTOCOL_ERROR)
            else:
                stream.remote_closed = True
                self.listener.on_data(stream_id, b"", True)
            return
        if stream_id <= self.last_stream_id or stream_id in self._closed or not stream_id & 1:
            self._not_open(stream_id, "HEADERS")
            return
        self.last_stream_id = stream_id
        if flags & _SELF_DEPENDENT or headers is None:  # None: over MAX_HEADER_LIST_SIZE (6.5.2)
            self._closed_as(stream_id, RESET_BY_US)
            self._out.append(rst_stream(stream_id, ErrorCode.PROTOCOL_ERROR))
            self._count_reset()
            return
        if self.goaway_sent or len(self.streams) >= self.max_concurrent_streams:
            self._closed_as(stream_id, RESET_BY_US)
            self._out.append(rst_stream(stream_id, ErrorCode.REFUSED_STREAM))  # 5.1.2, 8.7
            return
        self.streams[stream_id] = Stream(stream_id, self._peer_initial_window, self.stream_window, end)
        self.listener.on_request(stream_id, headers, end)

    def _decode(self, block: bytes) -> list[tuple[bytes, bytes]] | None:
        """Decode a header block (RFC 7541); a bad one is a COMPRESSION_ERROR (4.3).

        The decoder remembers only blocks that leave its dynamic table unchanged (grpc C-core's
        clients repeat one such block); the 5.x Java SDK's carry a fresh ``x-mq-request-id``
        (and ``authorization``) with incremental indexing in every request, so each of its
        blocks changes the table and is decoded afresh."""
        try:
            return self._decoder.decode(block)
        except HeaderListTooLarge:
            return None  # decoded whole, the table in step: a stream error (hpack_decode)
        except HeaderBlockError as exc:
            raise _Fatal(ErrorCode.COMPRESSION_ERROR, f"header block: {exc} (4.3)") from None

    def _on_priority(self, flags: int, stream_id: int, payload: bytes) -> None:
        if not stream_id:
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, "PRIORITY on stream 0 (6.3)")
        if len(payload) != PRIORITY_SIZE:
            code = ErrorCode.FRAME_SIZE_ERROR
        elif WORD_STRUCT.unpack_from(payload)[0] & STREAM_ID_MASK == stream_id:
            code = ErrorCode.PROTOCOL_ERROR  # 5.3.1: a stream cannot depend on itself
        else:
            return  # 5.3.2: priorities are not used
        stream = self.streams.get(stream_id)
        if stream is not None:
            self._stream_error(stream, code)
        elif self._closed.get(stream_id) != RESET_BY_US:
            if stream_id & 1 and stream_id > self.last_stream_id:
                self._closed_as(stream_id, RESET_BY_US)  # an idle stream closes (5.1)
            self._out.append(rst_stream(stream_id, code))

    def _on_rst_stream(self, flags: int, stream_id: int, payload: bytes) -> None:
        if len(payload) != WORD_STRUCT.size:
            raise _Fatal(ErrorCode.FRAME_SIZE_ERROR, "RST_STREAM is not 4 bytes (6.4)")
        if not stream_id or not stream_id & 1 or stream_id > self.last_stream_id \
                and stream_id not in self._closed:
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, f"RST_STREAM on idle stream {stream_id} (6.4)")
        if self._forget(stream_id, RESET_BY_PEER) is not None:
            self.listener.on_reset(stream_id, WORD_STRUCT.unpack(payload)[0])
        self._count_reset()  # even on a stream we answered at once: the work was done

    def _on_settings(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id:
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, "SETTINGS on a stream (6.5)")
        if flags & ACK:
            if payload:
                raise _Fatal(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS ACK with a payload (6.5)")
            return
        if len(payload) % SETTING_ENTRY.size:
            raise _Fatal(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS is not a multiple of 6 bytes (6.5)")
        self._settings_seen = True
        grown = False
        for identifier, value in SETTING_ENTRY.iter_unpack(payload):
            if identifier == Setting.INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise _Fatal(ErrorCode.FLOW_CONTROL_ERROR, "INITIAL_WINDOW_SIZE over 2^31-1 (6.5.2)")
                delta = value - self._peer_initial_window
                self._peer_initial_window = value
                for stream in self.streams.values():  # 6.9.2: open streams' windows move too
                    stream.send_window += delta
                    if stream.send_window > MAX_WINDOW:
                        raise _Fatal(ErrorCode.FLOW_CONTROL_ERROR, "a stream window over 2^31-1 (6.9.2)")
                grown = grown or delta > 0
            elif identifier == Setting.MAX_FRAME_SIZE:
                if not DEFAULT_MAX_FRAME_SIZE <= value <= MAX_FRAME_SIZE_LIMIT:
                    raise _Fatal(ErrorCode.PROTOCOL_ERROR, f"MAX_FRAME_SIZE {value} (6.5.2)")
                self._peer_max_frame = value
            elif identifier == Setting.HEADER_TABLE_SIZE:
                self.encoder.header_table_size = value
            elif identifier == Setting.ENABLE_PUSH and value > 1:
                raise _Fatal(ErrorCode.PROTOCOL_ERROR, f"ENABLE_PUSH {value} (6.5.2)")
        self._units_left -= _ACK_COST
        self._out.append(_SETTINGS_ACK)  # 6.5.3
        if self._budgets.paused:
            self._ack_queued()
        if grown:
            self._budgets.progress += 1
            self._flush_blocked()

    def _on_push_promise(self, flags: int, stream_id: int, payload: bytes) -> None:
        raise _Fatal(ErrorCode.PROTOCOL_ERROR, "PUSH_PROMISE from a client (8.4)")

    def _on_ping(self, flags: int, stream_id: int, payload: bytes) -> None:
        if len(payload) != PING_SIZE:
            raise _Fatal(ErrorCode.FRAME_SIZE_ERROR, "PING is not 8 bytes (6.7)")
        if stream_id:
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, "PING on a stream (6.7)")
        if not flags & ACK:
            self._units_left -= _ACK_COST
            self._out.append(frame(FrameType.PING, ACK, 0, payload))
            if self._budgets.paused:
                self._ack_queued()

    def _on_goaway(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id:
            raise _Fatal(ErrorCode.PROTOCOL_ERROR, "GOAWAY on a stream (6.8)")
        if len(payload) < GOAWAY_HEAD.size:
            raise _Fatal(ErrorCode.FRAME_SIZE_ERROR, "GOAWAY under 8 bytes (6.8)")
        _, code = GOAWAY_HEAD.unpack_from(payload)
        self.listener.on_goaway(code, payload[GOAWAY_HEAD.size:])

    def _on_window_update(self, flags: int, stream_id: int, payload: bytes) -> None:
        if len(payload) != WORD_STRUCT.size:
            raise _Fatal(ErrorCode.FRAME_SIZE_ERROR, "WINDOW_UPDATE is not 4 bytes (6.9)")
        increment = WORD_STRUCT.unpack(payload)[0] & MAX_WINDOW
        self._budgets.progress += 1
        if not stream_id:
            if not increment:
                raise _Fatal(ErrorCode.PROTOCOL_ERROR, "WINDOW_UPDATE of 0 (6.9)")
            self.send_window += increment
            if self.send_window > MAX_WINDOW:
                raise _Fatal(ErrorCode.FLOW_CONTROL_ERROR, "connection window over 2^31-1 (6.9.1)")
            self._flush_blocked()
            return
        stream = self.streams.get(stream_id)
        if stream is None:
            how = self._not_open(stream_id, "WINDOW_UPDATE")
            if not increment and how != RESET_BY_PEER:  # 6.9: a stream error even once closed
                self._closed_as(stream_id, RESET_BY_US)
                self._out.append(rst_stream(stream_id, ErrorCode.PROTOCOL_ERROR))
            return
        if not increment:
            self._stream_error(stream, ErrorCode.PROTOCOL_ERROR)
            return
        stream.send_window += increment
        if stream.send_window > MAX_WINDOW:
            self._stream_error(stream, ErrorCode.FLOW_CONTROL_ERROR)
        elif stream.out or stream.trailers is not None:
            self._flush(stream)

    # --- errors and windows ----------------------------------------------------------------------
    def _fail(self, code: ErrorCode, message: str) -> None:
        """A connection error (5.4.1): GOAWAY with the code, stop reading."""
        self.error = f"HTTP/2 protocol error: {code.name}: {message}"
        self._buffer = b""
        self._continuation = None
        self.close(code, message.encode("utf-8"))

    def _stream_error(self, stream: Stream, code: ErrorCode) -> None:
        """A stream error (5.4.2): RST_STREAM, and the listener told."""
        self._forget(stream.id, RESET_BY_US)
        self._out.append(rst_stream(stream.id, code))
        self.listener.on_reset(stream.id, code)
        self._count_reset()  # "MadeYouReset": resets the client provokes count as its own

    def _credit_windows(self) -> None:
        """WINDOW_UPDATE for what this read consumed, where half a window is unacknowledged."""
        out = self._out
        for stream in self._credit:
            stream.credit_due = False
            if stream.unacked and not stream.remote_closed and stream.id in self.streams:
                out.append(window_update(stream.id, stream.unacked))
                stream.recv_window += stream.unacked
                stream.unacked = 0
        self._credit.clear()
        if self._conn_unacked >= self.connection_window >> 1:
            out.append(window_update(0, self._conn_unacked))
            self._recv_window += self._conn_unacked
            self._conn_unacked = 0
