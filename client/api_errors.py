"""The one error type of the control API and the dashboard's endpoints: an HTTP status and a
one-line message, answered as ``{"error": message}``."""

from __future__ import annotations


class ApiError(Exception):
    """A client error: status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
