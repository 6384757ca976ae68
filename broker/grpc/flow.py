"""The I/O flow of a gRPC connection (mixin of :class:`~rocketmq_emu.broker.grpc.server
.GrpcProtocol`): reads handed to the HTTP/2 connection a slice per reactor turn, what they
produce written in one write, backpressure from a transport that does not drain, and the send
timeout (:mod:`.send_timeout`). Twisted edge; the protocol owns the state it reads here."""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.grpc.http2 import H2ServerConnection
from rocketmq_emu.broker.grpc.http2_frames import ErrorCode
from rocketmq_emu.broker.grpc.send_timeout import PAUSED_OUTPUT_LIMIT, SendTimeout

__all__ = ["ConnectionFlow"]

log = logging.getLogger("rocketmq_emu.broker.grpc.server")


class ConnectionFlow:
    """Reading, writing and backpressure of one connection (see the module docstring)."""

    h2: H2ServerConnection | None
    transport: Any
    clock: Any
    factory: Any
    closed: bool
    peer_addr: str
    _shut: bool
    _receiving: bool
    _deadlines: Any
    _send_timeout: SendTimeout
    #: Bytes written since the transport paused us (None: not paused); whether we stopped
    #: reading the client because of them; whether a read left frames for the next turn.
    _paused_output: int | None
    _reading_paused: bool
    _input_waiting: bool

    def _init_flow(self) -> None:
        self._send_timeout = SendTimeout(self.clock, self.factory.send_timeout,
                                         self._send_timed_out)
        self._paused_output = None
        self._reading_paused = False
        self._input_waiting = False

    def pauseProducing(self) -> None:  # noqa: N802 - Twisted's IPushProducer
        """The transport's buffer is full: the client is not reading. Reading goes on (so a
        PING or SETTINGS flood meets its limit, http2.MAX_QUEUED_ACKS) until what was written
        since passes :data:`PAUSED_OUTPUT_LIMIT`; then the client is not read either, and what
        it sends makes no more answers to hold (its socket fills instead), until the buffer
        drains or the send timeout closes the connection."""
        h2 = self.h2
        if h2 is not None and not self.closed:
            h2.pause_writing()
            self._paused_output = 0
            self._send_timeout.check(True, h2.progress)

    def resumeProducing(self) -> None:  # noqa: N802 - Twisted's IPushProducer
        """The transport's buffer drained: read again."""
        h2 = self.h2
        if h2 is not None and not self.closed:
            h2.resume_writing()
            self._paused_output = None
            if self._reading_paused:
                self._reading_paused = False
                if not self._shut and not self._input_waiting:
                    self.transport.resumeProducing()
            self._send_timeout.check(h2.stalled(), h2.progress)

    def stopProducing(self) -> None:  # noqa: N802 - Twisted's IPushProducer
        """The connection is going: connectionLost follows."""

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        """Feed the HTTP/2 connection (it calls back ``on_*``), then write what the read
        produced in one write."""
        h2 = self.h2
        if h2 is None or self.closed or self._shut or h2.error is not None:
            return
        self._receiving = True
        try:
            h2.receive(data)
        finally:
            self._receiving = False
        self._after_read(h2)

    def _read_on(self) -> None:
        """The next turn of a read that was left pending: hand the HTTP/2 connection what it
        kept, and read the client again once nothing is left."""
        h2 = self.h2
        if h2 is None or self.closed or self._shut or h2.error is not None:
            return
        self._receiving = True
        try:
            h2.receive(b"")
        finally:
            self._receiving = False
        self._after_read(h2)

    def _after_read(self, h2: H2ServerConnection) -> None:
        """Write what a read produced, settle deadlines, and go on with the rest of the read
        on the next turn (h2.input_pending), or close on a connection error."""
        self._write_out()
        self._deadlines.settle()
        if h2.input_pending and h2.error is None:
            if not self._input_waiting:
                self._input_waiting = True
                if not self._reading_paused:
                    self.transport.pauseProducing()
            self.clock.callLater(0, self._read_on)
        elif self._input_waiting:
            self._input_waiting = False
            if not self._reading_paused and not self._shut and not self.closed:
                self.transport.resumeProducing()
        if h2.error is not None:
            # One line; the connection's GOAWAY (if HTTP/2 at all) went out just above.
            log.warning("closing connection from %s: %s", self.peer_addr, h2.error)
            if h2.writing_paused:
                # The client does not read: what is queued (the GOAWAY too) would never drain.
                self.transport.abortConnection()
            else:
                self.transport.loseConnection()

    def _write_out(self) -> None:
        h2 = self.h2
        if h2 is None or self.closed:
            return
        data = h2.data_to_send()
        if data:
            self.transport.write(data)
            if self._paused_output is not None:
                self._paused_output += len(data)
                if self._paused_output > PAUSED_OUTPUT_LIMIT and not self._reading_paused:
                    self._reading_paused = True
                    if not self._input_waiting:
                        self.transport.pauseProducing()
        self._send_timeout.check(h2.stalled(), h2.progress)

    def _send_timed_out(self) -> None:
        """Output waited on the client for the send timeout without progress: GOAWAY (if it
        can still be read) and close, with one line naming the peer and the reason."""
        h2 = self.h2
        if self.closed or h2 is None or not h2.stalled():
            return
        reason = h2.stall_reason()
        log.warning("closing connection from %s: send timeout: %s for %g s", self.peer_addr,
                    reason, self.factory.send_timeout)
        h2.close(ErrorCode.NO_ERROR, b"send timeout")
        unread = h2.writing_paused  # the transport itself is full
        data = h2.data_to_send()
        if data and not unread:
            self.transport.write(data)
        self._shut = True
        if unread:
            self.transport.abortConnection()  # what is queued would never drain
        else:
            self.transport.loseConnection()

    def _io_done(self) -> None:
        """After writing outside dataReceived (a Deferred fired, a timer ran): flush now."""
        if not self._receiving:
            self._write_out()
            self._deadlines.settle()
