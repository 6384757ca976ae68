"""Pre-touching the commitlog's next pages off the reactor thread.

The first write to a page of a mapped file faults it in. The store keeps a window ahead of
the writer pre-touched (:meth:`MappedFile.warm_ahead`), which on the reactor thread took ~7 %
of it under a pipelined SEND_MESSAGE_V2 load (``bench/send_pull.py``, perf). This runs the
touching in a thread of its own, as RocketMQ prepares mapped files in
``AllocateMappedFileService``'s thread (``MappedFile.warmMappedFile`` when
``warmMapedFileEnable``). ``madvise(MADV_POPULATE_WRITE)`` changes no byte, so the writer may
append into the range meanwhile; the call releases the GIL (``commitlog/madvise.py``). If the
thread's touching fails (a kernel before Linux 5.14), warming goes back to the reactor thread,
whose per-page fallback is safe there.
"""

from __future__ import annotations

import logging

from rocketmq_emu.broker.commitlog.disk_sync import DiskSyncer
from rocketmq_emu.broker.commitlog.mapped_file_queue import MappedFileQueue

log = logging.getLogger(__name__)


class CommitLogWarmer:
    """Advances the commitlog's pre-touched window from a timer, in its own thread when the
    reactor runs threads (inline otherwise, e.g. with ``task.Clock``)."""

    def __init__(self, queue: MappedFileQueue, reactor=None) -> None:
        self.queue = queue
        self.thread = DiskSyncer(reactor, name="store-warm")
        #: True once the thread's touching failed: warm on the calling thread from then on.
        self.inline = False
        self._idle_at: int | None = None

    def start(self) -> None:
        """Start the thread (if the reactor runs threads)."""
        self.thread.start()
        #: The commitlog's end at start: nothing is warmed until the writer moves past it.
        self._idle_at = self.queue.get_max_offset()

    def stop(self) -> None:
        """Wait for the touching under way and stop the thread."""
        self.thread.stop()

    def tick(self) -> int:
        """Claim the next range to touch and touch it (there or here); returns its size."""
        if self._idle_at is not None:
            if self.queue.get_max_offset() == self._idle_at:
                return 0  # an idle broker keeps no pre-touched window
            self._idle_at = None
        if self.inline or not self.thread.running:
            return self.queue.warm_ahead()
        return self.queue.warm_ahead(submit=self._submit)

    def _submit(self, fn, *args) -> None:
        self.thread.submit(fn, *args).addErrback(self._failed)

    def _failed(self, failure) -> None:
        log.warning("pre-touching commitlog pages in the warm thread failed (%s); warming on "
                    "the reactor thread from now on", failure.getErrorMessage())
        self.inline = True
