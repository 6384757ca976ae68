"""What the gRPC server's HTTP/2 connection answers to frames a conforming client never sends
(RFC 9113 5.1 on streams that are not open) and to the framing-layer attacks it bounds: Rapid
Reset (CVE-2023-44487, and the resets a client provokes) and PING/SETTINGS floods from a client
that never reads. :class:`Guard` is a mixin of
:class:`~rocketmq_emu.broker.grpc.http2.H2ServerConnection`; a connection error is raised as
:class:`Fatal`, which the connection turns into GOAWAY."""

from __future__ import annotations

from collections.abc import Callable

from rocketmq_emu.broker.grpc.http2_frames import ErrorCode, rst_stream
from rocketmq_emu.broker.grpc.http2_send import CLOSED, RESET_BY_PEER, RESET_BY_US

__all__ = ["MAX_QUEUED_ACKS", "RESET_BURST", "RESET_RATE", "Budgets", "Fatal", "Guard"]

#: Rapid Reset (CVE-2023-44487): streams the client resets, or makes us reset with a stream
#: error, draw on a bucket of this many, refilled at this rate a second (nghttp2's
#: stream_reset_burst / stream_reset_rate); an empty bucket is GOAWAY ENHANCE_YOUR_CALM.
RESET_BURST = 1000
RESET_RATE = 33.0
#: PING and SETTINGS ACKs queued while the owner's transport does not drain (between
#: :meth:`Guard.pause_writing` and :meth:`Guard.resume_writing`): past this many the client,
#: which sends and never reads, gets GOAWAY ENHANCE_YOUR_CALM (nghttp2's max outbound ACKs).
MAX_QUEUED_ACKS = 1000


class Fatal(Exception):
    """A connection error (RFC 9113 5.4.1)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Budgets:
    """A connection's attack budgets, in one object: the connection keeps its attributes few
    (CPython shares instance dict keys, the fast attribute path, up to 30 of them)."""

    __slots__ = ("clock", "reset_tokens", "reset_at", "paused", "queued_acks", "progress")

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.reset_tokens = float(RESET_BURST)
        self.reset_at: float | None = None
        #: Between pause_writing and resume_writing: the ACKs queued are counted.
        self.paused = False
        self.queued_acks = 0
        #: Counts the peer's signs that it takes what we send: WINDOW_UPDATEs, a larger
        #: SETTINGS_INITIAL_WINDOW_SIZE, a drained transport (the send timeout's progress).
        self.progress = 0


class Guard:
    """Closed-stream answers and attack budgets (mixin of H2ServerConnection)."""

    last_stream_id: int
    _out: list[bytes | memoryview]
    _closed: dict[int, int]
    _blocked: dict
    _budgets: Budgets

    def pause_writing(self) -> None:
        """The owner's transport holds too much unsent (the client does not read): from now
        on the ACKs we queue are counted (:data:`MAX_QUEUED_ACKS`)."""
        self._budgets.paused = True

    def resume_writing(self) -> None:
        """The owner's transport has drained: the ACKs sent so far are out."""
        budgets = self._budgets
        budgets.paused = False
        budgets.queued_acks = 0
        budgets.progress += 1

    def stalled(self) -> bool:
        """Whether what we send waits on the peer: DATA held by its flow-control windows, or
        the owner's transport not draining (the send timeout's condition)."""
        return bool(self._blocked) or self._budgets.paused

    @property
    def writing_paused(self) -> bool:
        """Between :meth:`pause_writing` and :meth:`resume_writing`."""
        return self._budgets.paused

    def stall_reason(self) -> str:
        """What the output waits on, for the log line of a send timeout."""
        if self._blocked:
            return (f"DATA of {len(self._blocked)} stream(s) held by the client's zero "
                    "flow-control window")
        return "the client not reading the socket"

    @property
    def progress(self) -> int:
        """A count that moves whenever the peer takes more of what we send (see Budgets)."""
        return self._budgets.progress

    def _not_open(self, stream_id: int, kind: str) -> int:
        """A frame (not PRIORITY or RST_STREAM) on a stream that is not open (5.1): a
        connection error on an idle stream; on a closed one, by how it closed: ignored after
        our RST_STREAM, a stream error STREAM_CLOSED after the client's, else (both ends or
        forgotten) a connection error STREAM_CLOSED -- but WINDOW_UPDATE, which may cross
        our END_STREAM, is ignored. Returns how the stream closed."""
        if not stream_id & 1:  # we open no streams (no push): an even one is idle
            raise Fatal(ErrorCode.PROTOCOL_ERROR, f"{kind} on stream {stream_id}, not a client's (5.1.1)")
        how = self._closed.get(stream_id)
        if how is None:
            if stream_id > self.last_stream_id:
                raise Fatal(ErrorCode.PROTOCOL_ERROR, f"{kind} on idle stream {stream_id} (5.1)")
            if kind == "HEADERS":  # a new stream, numbered below one opened before
                raise Fatal(ErrorCode.PROTOCOL_ERROR,
                            f"stream {stream_id} opened after stream {self.last_stream_id} (5.1.1)")
            how = CLOSED
        if how == RESET_BY_PEER:
            self._closed[stream_id] = RESET_BY_US
            self._out.append(rst_stream(stream_id, ErrorCode.STREAM_CLOSED))
        elif how == CLOSED and kind != "WINDOW_UPDATE":
            raise Fatal(ErrorCode.STREAM_CLOSED, f"{kind} on closed stream {stream_id} (5.1)")
        return how

    def _count_reset(self) -> None:
        """Take a token of the Rapid Reset bucket (:data:`RESET_BURST`, :data:`RESET_RATE`)."""
        budgets = self._budgets
        now = budgets.clock()
        tokens = budgets.reset_tokens
        if budgets.reset_at is not None:
            tokens = min(float(RESET_BURST), tokens + (now - budgets.reset_at) * RESET_RATE)
        budgets.reset_at = now
        if tokens < 1:
            raise Fatal(ErrorCode.ENHANCE_YOUR_CALM,
                        f"rapid reset: over {RESET_BURST} streams reset at over {RESET_RATE:g}/s (CVE-2023-44487)")
        budgets.reset_tokens = tokens - 1

    def _ack_queued(self) -> None:
        """A PING or SETTINGS ACK was queued while the transport is paused."""
        budgets = self._budgets
        budgets.queued_acks += 1
        if budgets.queued_acks > MAX_QUEUED_ACKS:
            raise Fatal(ErrorCode.ENHANCE_YOUR_CALM, f"PING/SETTINGS flood: over {MAX_QUEUED_ACKS} ACKs unread")
