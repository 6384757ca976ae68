"""Writing a call's responses on its HTTP/2 stream: Response-Headers, Length-Prefixed-Messages
held until the peer's flow-control windows allow them, Trailers (or Trailers-Only), and the
RST_STREAM(NO_ERROR) that stops a client still sending. A mixin of
:class:`~rocketmq_emu.broker.grpc.server.GrpcProtocol` (the ServerCall's side of it)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from h2.errors import ErrorCodes
from h2.exceptions import ProtocolError, StreamClosedError

from rocketmq_emu.broker.grpc.call import ServerCall
from rocketmq_emu.broker.grpc.wire import (
    StatusCode,
    encode_message,
    message_prefix,
    response_headers,
    trailers,
    trailers_only,
)

if TYPE_CHECKING:
    from h2.connection import H2Connection

__all__ = ["StreamWriter"]

log = logging.getLogger("rocketmq_emu.broker.grpc.server")

#: Messages up to this size are framed in one buffer (one copy); larger ones go out as prefix +
#: the payload itself, sliced per DATA frame.
_COPY_LIMIT = 64 * 1024


def _as_bytes(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(n.encode(), v.encode()) for n, v in headers]


#: The blocks nearly every call sends, built once (bytes: h2 passes them on as they are).
_RESPONSE_HEADERS = _as_bytes(response_headers())
_OK_TRAILERS = _as_bytes(trailers(StatusCode.OK))
_OK_TRAILERS_ONLY = _as_bytes(trailers_only(StatusCode.OK))


class StreamWriter:
    """Framing and flow control of responses (mixin of GrpcProtocol)."""

    _h2: H2Connection
    calls: dict[int, ServerCall]
    closed: bool

    def _io_done(self) -> None:  # pragma: no cover - GrpcProtocol's
        raise NotImplementedError

    def _drop(self, call: ServerCall) -> None:  # pragma: no cover - GrpcProtocol's
        raise NotImplementedError

    def send_message(self, call: ServerCall, payload: bytes | bytearray | memoryview) -> None:
        """Queue one Length-Prefixed-Message on the call's stream (headers first) and send what
        the flow-control window allows."""
        if self.closed or call.stream_id not in self.calls:
            return
        if not call._headers_sent:
            call._headers_sent = True
            headers: list[Any] = _RESPONSE_HEADERS
            if call.initial_metadata:
                try:
                    headers = response_headers(metadata=call.initial_metadata)
                except ValueError as exc:
                    log.error("%r: bad initial metadata dropped: %s", call, exc)
            if not self._send_headers(call, headers, end_stream=False):
                return
        if len(payload) <= _COPY_LIMIT:
            call._out.append(encode_message(bytes(payload)))
        else:
            call._out.append(message_prefix(len(payload)))
            call._out.append(memoryview(payload))
        self._flush(call)
        self._io_done()

    def finish_call(self, call: ServerCall, code: StatusCode, message: str) -> None:
        """Queue the call's Trailers (Trailers-Only if nothing was sent) after its DATA."""
        if self.closed or call.stream_id not in self.calls:
            return
        try:
            if code == StatusCode.OK and not message and not call.trailing_metadata \
                    and not (call.initial_metadata and not call._headers_sent):
                headers: list[Any] = _OK_TRAILERS if call._headers_sent else _OK_TRAILERS_ONLY
            elif not call._headers_sent:
                headers = trailers_only(code, message,
                                        metadata=[*call.initial_metadata, *call.trailing_metadata])
            else:
                headers = trailers(code, message, metadata=call.trailing_metadata)
        except ValueError as exc:
            log.error("%r: bad metadata dropped: %s", call, exc)
            headers = trailers_only(code, message) if not call._headers_sent else trailers(code, message)
        if not call._headers_sent and not call._out:
            call._headers_sent = True
            self._end(call, headers)
        else:
            call._trailers = headers
            self._flush(call)
        self._io_done()

    def _send_headers(self, call: ServerCall, headers: list[tuple[str, str]], end_stream: bool) -> bool:
        try:
            self._h2.send_headers(call.stream_id, headers, end_stream=end_stream)
        except (StreamClosedError, ProtocolError) as exc:
            log.debug("%r: stream gone: %s", call, exc)
            self.calls.pop(call.stream_id, None)
            self._drop(call)
            return False
        return True

    def _end(self, call: ServerCall, headers: list[tuple[str, str]]) -> None:
        """Send the final HEADERS (END_STREAM); stop a client still sending (RST NO_ERROR)."""
        if not self._send_headers(call, headers, end_stream=True):
            return
        self.calls.pop(call.stream_id, None)
        if not call.client_closed:
            try:
                self._h2.reset_stream(call.stream_id, ErrorCodes.NO_ERROR)
            except (StreamClosedError, ProtocolError):
                pass

    def _flush(self, call: ServerCall) -> None:
        """Send queued DATA as far as the peer's windows allow, then the Trailers if queued."""
        h2 = self._h2
        sid = call.stream_id
        out = call._out
        try:
            while out:
                window = h2.local_flow_control_window(sid)
                if window <= 0:
                    return
                chunk = out[0]
                size = min(window, h2.max_outbound_frame_size)
                if len(chunk) <= size:
                    out.popleft()
                    h2.send_data(sid, chunk if type(chunk) is bytes else bytes(chunk))
                else:
                    h2.send_data(sid, bytes(chunk[:size]))
                    out[0] = memoryview(chunk)[size:]
        except (StreamClosedError, ProtocolError) as exc:
            log.debug("%r: stream gone while sending: %s", call, exc)
            self.calls.pop(sid, None)
            self._drop(call)
            return
        if call._trailers is not None:
            headers, call._trailers = call._trailers, None
            self._end(call, headers)
