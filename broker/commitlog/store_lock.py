"""The store's ``lock`` file: one broker process per store directory.

RocketMQ's ``DefaultMessageStore`` writes ``lock`` into the store root and holds it with
``FileChannel.tryLock`` (a POSIX record lock) for as long as it runs, so a second broker started on
the same directory fails at once instead of corrupting the files. ``fcntl.lockf`` takes the same
kind of lock: released by the kernel when the process dies (no stale lock after a crash), and not
in conflict with another lock taken by the same process (tests reopen a store in-process to
simulate a crash).
"""

from __future__ import annotations

import fcntl
import os


class StoreLockedError(OSError):
    """Another process holds the store directory."""


class StoreLock:
    """Hold ``{root}/lock`` while the store runs."""

    def __init__(self, root: str) -> None:
        self.path = os.path.join(root, "lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`StoreLockedError` naming the file."""
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise StoreLockedError(
                exc.errno, f"store directory is in use by another process (lock held on {self.path})"
            ) from None
        os.pwrite(fd, b"lock", 0)
        self._fd = fd

    def release(self) -> None:
        """Drop the lock (closing the file releases it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
