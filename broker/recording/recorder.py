"""Writing a recording as connections carry bytes (``rmq-emu up --record FILE``).

:class:`Recorder` owns the file (:mod:`.format`); :meth:`Recorder.wrap` puts a
:class:`~twisted.protocols.policies.WrappingFactory` around a server's factory, inside the TLS
switch, so what is recorded is the remoting bytes as the server reads and writes them. Every
read and write becomes one entry, written and flushed at once (a crash loses at most the entry
being written). A server without a recorder has no wrapper and pays nothing.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from twisted.protocols.policies import ProtocolWrapper, WrappingFactory

from rocketmq_emu.broker.recording.format import (
    CLIENT_TO_SERVER,
    SERVER_TO_CLIENT,
    Entry,
    encode_entry,
    encode_header,
)

log = logging.getLogger(__name__)


class Recorder:
    """Appends entries to ``path`` (created or truncated, header first); ``clock_ms`` stamps
    them (wall clock milliseconds by default)."""

    def __init__(self, path: str, clock_ms: Callable[[], int] | None = None) -> None:
        self.path = path
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._file: BinaryIO | None = open(path, "wb")  # noqa: SIM115 (closed in close)
        self._connections = itertools.count(1)
        self.entries = 0
        self._file.write(encode_header(self._clock_ms()))
        self._file.flush()

    def next_connection(self) -> int:
        """A new connection number (unique in the file)."""
        return next(self._connections)

    def record(self, connection: int, port: int, direction: int, payload: bytes) -> None:
        """Append one entry and flush it to the operating system."""
        if self._file is None or not payload:
            return
        try:
            self._file.write(encode_entry(Entry(self._clock_ms(), connection, port, direction,
                                                bytes(payload))))
            self._file.flush()
            self.entries += 1
        except OSError as exc:  # a full disk stops the recording, never the server
            log.error("recording to %s stopped: %s", self.path, exc)
            self.close()

    def wrap(self, factory: Any, port: Callable[[], int]) -> WrappingFactory:
        """``factory`` with every connection recorded; ``port`` gives the server's port (known
        once it listens)."""
        return RecordingFactory(factory, self, port)

    def close(self) -> None:
        """Flush and close the file (later entries are dropped)."""
        if self._file is not None:
            try:
                self._file.flush()
                os.fsync(self._file.fileno())
            except OSError:
                pass
            self._file.close()
            self._file = None


class RecordingProtocol(ProtocolWrapper):
    """Records what the wrapped protocol reads and writes, then passes it on unchanged."""

    def makeConnection(self, transport: Any) -> None:  # noqa: N802 (Twisted API)
        self.connection_number = self.factory.recorder.next_connection()
        super().makeConnection(transport)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted API)
        self.factory.recorder.record(self.connection_number, self.factory.port(),
                                     CLIENT_TO_SERVER, data)
        super().dataReceived(data)

    def write(self, data: bytes) -> None:
        self.factory.recorder.record(self.connection_number, self.factory.port(),
                                     SERVER_TO_CLIENT, data)
        super().write(data)

    def writeSequence(self, data: Any) -> None:  # noqa: N802 (Twisted API)
        self.write(b"".join(data))


class RecordingFactory(WrappingFactory):
    """Builds :class:`RecordingProtocol` around the server's own protocols."""

    protocol = RecordingProtocol

    def __init__(self, wrapped: Any, recorder: Recorder, port: Callable[[], int]) -> None:
        super().__init__(wrapped)
        self.recorder = recorder
        self.port = port
