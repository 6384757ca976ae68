"""Writing a call's responses on its HTTP/2 stream: Response-Headers, Length-Prefixed-Messages,
Trailers (or Trailers-Only). A mixin of :class:`~rocketmq_emu.broker.grpc.server.GrpcProtocol`
(the ServerCall's side of it); the HTTP/2 connection holds DATA until the peer's flow-control
windows allow it, sends the Trailers behind it, and stops a client still sending with
RST_STREAM(NO_ERROR)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

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
    from rocketmq_emu.broker.grpc.http2 import H2ServerConnection

__all__ = ["StreamWriter", "as_bytes"]

log = logging.getLogger("rocketmq_emu.broker.grpc.server")

#: Messages up to this size are framed in one buffer (one copy); larger ones go out as prefix +
#: the payload itself, sliced per DATA frame.
_COPY_LIMIT = 64 * 1024


def as_bytes(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """A header list of ``str`` pairs as the ``bytes`` pairs the HTTP/2 connection encodes."""
    return [(n.encode(), v.encode()) for n, v in headers]


#: The blocks nearly every call sends, built once (tuples: the encoder's cache key as is).
_RESPONSE_HEADERS = tuple(as_bytes(response_headers()))
_OK_TRAILERS = tuple(as_bytes(trailers(StatusCode.OK)))
_OK_TRAILERS_ONLY = tuple(as_bytes(trailers_only(StatusCode.OK)))


class StreamWriter:
    """Framing of responses (mixin of GrpcProtocol)."""

    h2: H2ServerConnection | None
    calls: dict[int, ServerCall]
    closed: bool

    def _io_done(self) -> None:  # pragma: no cover - GrpcProtocol's
        raise NotImplementedError

    def send_message(self, call: ServerCall, payload: bytes | bytearray | memoryview) -> None:
        """Send one Length-Prefixed-Message on the call's stream (Response-Headers first)."""
        if self.closed or call.stream_id not in self.calls:
            return
        h2 = self.h2
        sid = call.stream_id
        if not call._headers_sent:
            call._headers_sent = True
            headers: list[Any] = _RESPONSE_HEADERS
            if call.initial_metadata:
                try:
                    headers = as_bytes(response_headers(metadata=call.initial_metadata))
                except ValueError as exc:
                    log.error("%r: bad initial metadata dropped: %s", call, exc)
            h2.send_headers(sid, headers)
        if len(payload) <= _COPY_LIMIT:
            h2.send_data(sid, encode_message(bytes(payload)))
        else:
            h2.send_data(sid, message_prefix(len(payload)))
            h2.send_data(sid, memoryview(payload))
        self._io_done()

    def finish_call(self, call: ServerCall, code: StatusCode, message: str) -> None:
        """Send the call's Trailers (Trailers-Only if nothing was sent) behind its DATA; the call
        leaves ``calls``."""
        if self.closed or self.calls.pop(call.stream_id, None) is None:
            return
        try:
            if code == StatusCode.OK and not message and not call.trailing_metadata \
                    and not (call.initial_metadata and not call._headers_sent):
                headers: list[Any] = _OK_TRAILERS if call._headers_sent else _OK_TRAILERS_ONLY
            elif not call._headers_sent:
                headers = as_bytes(trailers_only(
                    code, message, metadata=[*call.initial_metadata, *call.trailing_metadata]))
            else:
                headers = as_bytes(trailers(code, message, metadata=call.trailing_metadata))
        except ValueError as exc:
            log.error("%r: bad metadata dropped: %s", call, exc)
            headers = as_bytes(trailers_only(code, message) if not call._headers_sent
                               else trailers(code, message))
        call._headers_sent = True
        self.h2.send_headers(call.stream_id, headers, end_stream=True)
        self._io_done()
