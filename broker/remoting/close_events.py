"""Who waits for a server connection to close: callbacks ``fn(conn)`` and Deferreds, each told
once. The remoting protocol and the gRPC server's connection share it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

log = logging.getLogger(__name__)


class CloseEvents:
    """The close callbacks and waiters of ``conn`` (an object with a ``closed`` flag): added
    after the close, a callback runs at once and a waiter fires at once."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._callbacks: list[Callable[[Any], Any]] = []
        self._waiters: list[defer.Deferred] = []

    def add_callback(self, fn: Callable[[Any], Any]) -> None:
        """Call ``fn(conn)`` once when the connection closes (at once if it is closed)."""
        if self._conn.closed:
            fn(self._conn)
        else:
            self._callbacks.append(fn)

    def when_closed(self) -> defer.Deferred:
        """A Deferred firing (with the connection) once the connection is closed."""
        if self._conn.closed:
            return defer.succeed(self._conn)
        d: defer.Deferred = defer.Deferred()
        self._waiters.append(d)
        return d

    def fire(self) -> None:
        """The connection has closed: run the callbacks (a failing one is logged), then fire
        the waiters."""
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn(self._conn)
            except Exception:
                log.exception("close callback %r for %r failed", fn, self._conn)
        waiters, self._waiters = self._waiters, []
        for d in waiters:
            d.callback(self._conn)
