"""The one error type of the control API and the dashboard's endpoints (an HTTP status and a
one-line message, answered as ``{"error": message}``), their reading of a request's query
parameters and the check of an integer one that raises it."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs


class ApiError(Exception):
    """A client error: status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def int_arg(q: dict[str, str], name: str, default: int | None = None, *, low: int | None = None,
            high: int | None = None) -> int:
    """Query parameter ``name`` as an integer within [low, high]; 400 if absent without a default,
    not an integer or out of range."""
    raw = q.get(name)
    if raw is None or raw == "":
        if default is None:
            raise ApiError(400, f"give {name}")
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"{name} must be an integer, not {raw!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ApiError(400, f"{name} must be {bounds}, not {value}")
    return value


def query(request: Any) -> dict[str, str]:
    """The request's query parameters (the last value of each)."""
    qs = parse_qs(request.uri.decode().partition("?")[2])
    return {k: v[-1] for k, v in qs.items()}
