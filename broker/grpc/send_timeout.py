"""The gRPC port's send timeout: a connection whose output waits on the client for too long is
closed.

A client can hold the server's memory and streams by not taking what it is sent: a zero
flow-control window (SETTINGS_INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE) keeps each answered
stream open with its DATA held, and a client that does not read the socket keeps the transport
full (the server stops reading it after :data:`PAUSED_OUTPUT_LIMIT` more, so it can queue no
more). As nginx's
``send_timeout`` (60 s; "only between two successive write operations"), the timer runs while
output waits and restarts whenever the client takes some (a WINDOW_UPDATE, a drained transport);
when it expires the connection is closed. Pure: a clock and a callback, no reactor of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PAUSED_OUTPUT_LIMIT", "SEND_TIMEOUT", "SendTimeout"]

#: Seconds output may wait on the client without progress (nginx's send_timeout default).
SEND_TIMEOUT = 60.0
#: Bytes the server may still write once the transport's buffer is full (the client does not
#: read) before it stops reading the client as well.
PAUSED_OUTPUT_LIMIT = 256 * 1024


class SendTimeout:
    """Arms a timer while output is stalled; ``expired()`` is called once it runs out."""

    __slots__ = ("clock", "timeout", "expired", "_timer", "_progress")

    def __init__(self, clock: Any, timeout: float, expired: Callable[[], None]) -> None:
        self.clock = clock
        self.timeout = timeout
        self.expired = expired
        self._timer: Any = None
        self._progress = -1

    @property
    def armed(self) -> bool:
        """Whether the timer runs (output is waiting on the client)."""
        return self._timer is not None

    def check(self, stalled: bool, progress: int) -> None:
        """After I/O: start the timer when output starts waiting, restart it when the client
        made ``progress`` since it started, stop it when nothing waits."""
        timer = self._timer
        if not stalled:
            if timer is not None:
                self._timer = None
                timer.cancel()
            return
        if timer is not None:
            if progress == self._progress:
                return
            timer.cancel()
        self._progress = progress
        self._timer = self.clock.callLater(self.timeout, self._fire)

    def stop(self) -> None:
        """The connection closed: no timer left behind."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        self.expired()
