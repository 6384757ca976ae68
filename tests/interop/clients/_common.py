"""Shared helpers for the Python interop client scripts (stdlib only: they run in a subprocess
with the registry-installed client on PYTHONPATH, not inside pytest)."""

from __future__ import annotations

import json
import os
import sys
import threading

_lock = threading.Lock()


def emit(**event) -> None:
    """Print one JSON line to stdout (thread-safe: the C++ client calls back on its threads)."""
    line = json.dumps(event, sort_keys=True)
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def text(value) -> str:
    """Decode a bytes field from the C++ client (None → "")."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def hard_exit(code: int = 0) -> None:
    """Leave without running the client's destructors (librocketmq may crash at teardown)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def watchdog(seconds: float, code: int = 3) -> threading.Timer:
    """Exit the process if it is still alive after ``seconds`` (a hung shutdown, a stuck call)."""

    def fire() -> None:
        emit(event="watchdog", seconds=seconds)
        hard_exit(code)

    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return t


def stdin_closed_event() -> threading.Event:
    """An event set when the parent closes our stdin or writes "stop" (test-driven shutdown)."""
    ev = threading.Event()

    def reader() -> None:
        try:
            for line in sys.stdin:
                if line.strip() == "stop":
                    break
        finally:
            ev.set()

    threading.Thread(target=reader, daemon=True).start()
    return ev


def consume_until_done(consumer, enough: threading.Event, lock: threading.Lock, received,
                       timeout: float, linger: float) -> None:
    """Run a started push consumer until ``enough`` is set, stdin closes or ``timeout`` passes;
    report ``done`` with ``received()`` (read under ``lock``), shut down and exit hard."""
    import time

    emit(event="started")
    stop = stdin_closed_event()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stop.is_set() and not enough.is_set():
        time.sleep(0.05)
    if enough.is_set():
        time.sleep(linger)
    with lock:
        emit(event="done", received=received(), timed_out=time.monotonic() >= deadline)
    watchdog(8)
    consumer.shutdown()
    emit(event="shutdown")
    hard_exit(0)
