"""The file handling shared by schedule_log and dispatch_log segments (one file per bucket)."""

from __future__ import annotations

import os


class SegmentFile:
    """A bucket's file, opened lazily by the subclass into ``_fd``; fsync, close, delete."""

    def __init__(self, path: str, bucket_start_ms: int) -> None:
        self.path = path
        self.bucket_start_ms = bucket_start_ms
        self._fd: int | None = None

    def flush(self) -> None:
        """fsync the file if it is open."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the handle (the segment can be reopened by the next call)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        """Close and remove the file."""
        self.close()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
