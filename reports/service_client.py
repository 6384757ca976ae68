"""Finding a running report service and running a report in it (the client side of
:mod:`rocketmq_emu.reports.service`). Standard library only: a report sent to a service needs
neither pyspark nor a JVM here.

Where a report runs, first match wins:

1. ``--local``, ``--master`` or ``--remote``: in this process.
2. ``--server URL``: in that service (unreachable: one error line, exit status 2).
3. ``RMQ_EMU_REPORT_SERVER``: ``local`` (or ``off``) means in this process; a URL, that service.
4. The state file a service on this machine writes (:func:`state_path`) when the process it
   names is alive and the service answers ``GET /health``: that service.
5. In this process.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.parse
from typing import TextIO

SERVER_ENV = "RMQ_EMU_REPORT_SERVER"
STATE_ENV = "RMQ_EMU_REPORT_STATE"
STATE_NAME = "report-service.json"
#: A service on loopback answers its health check in milliseconds; a dead port at once.
HEALTH_TIMEOUT = 2.0
_LOCAL = frozenset(("local", "off", "none", ""))


class ServiceError(Exception):
    """A named service that cannot be used (the message says which and why)."""


def state_path() -> str:
    """The state file of this user's local report service: ``$RMQ_EMU_REPORT_STATE``, else
    ``$XDG_RUNTIME_DIR/rocketmq-emu/report-service.json``, else the same name under
    ``~/.cache/rocketmq-emu``."""
    explicit = os.environ.get(STATE_ENV)
    if explicit:
        return explicit
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = os.path.join(runtime, "rocketmq-emu") if runtime else os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rocketmq-emu")
    return os.path.join(base, STATE_NAME)


def health(url: str, timeout: float = HEALTH_TIMEOUT) -> dict:
    """The service's ``GET /health`` answer; raises :class:`OSError` when it does not answer."""
    status, body = _request(url, "GET", "/health", None, timeout)
    if status != 200:
        raise OSError(f"GET /health answered {status}")
    return json.loads(body)


def find_service(explicit: str | None) -> str | None:
    """The URL of the service a report should run in, or None for this process (module
    docstring). Raises :class:`ServiceError` when ``explicit`` (or ``RMQ_EMU_REPORT_SERVER``)
    names a service that does not answer."""
    named = explicit if explicit is not None else os.environ.get(SERVER_ENV)
    if named is not None:
        if named.strip().lower() in _LOCAL:
            return None
        url = normalize(named)
        try:
            health(url)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise ServiceError(f"report service {url} does not answer ({_reason(exc)})") from None
        return url
    state = read_state(state_path())
    # A stale file of a service that is gone or not ready: run here.
    return state["url"] if state is not None and answers(state["url"]) else None


def answers(url: str) -> bool:
    """Whether a report service answers ``GET /health`` at ``url``."""
    try:
        health(url)
    except (OSError, ValueError, http.client.HTTPException):
        return False
    return True


def read_state(path: str) -> dict | None:
    """The state file's content when it names a live process and a URL, else None."""
    try:
        with open(path, encoding="utf-8") as fh:
            state = json.load(fh)
        pid = int(state["pid"])
        url = str(state["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return {**state, "url": url}


def normalize(url: str) -> str:
    """``HOST:PORT`` or ``http://HOST:PORT[/]`` as ``http://HOST:PORT``."""
    if "://" not in url:
        url = "http://" + url
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:  # "[::1" or a port out of range
        port = None
        parts = None
    if parts is None or parts.scheme != "http" or not parts.hostname or not port:
        raise ServiceError(f"report service URL {url!r}: give http://HOST:PORT")
    return f"http://{parts.netloc}"


def store_args(args: list[str]) -> list[str]:
    """``--store`` arguments with absolute paths (``NAME=DIR`` keeps its name): the service
    resolves them itself, from its own working directory."""
    out = []
    for arg in args:
        name, sep, path = arg.partition("=")
        if not sep or os.path.isdir(arg):
            out.append(os.path.abspath(os.path.expanduser(arg)))
        else:
            out.append(f"{name}={os.path.abspath(os.path.expanduser(path))}")
    return out


def run_remote(url: str, name: str, stores: list[str], out: str, delay_levels: str,
               stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run report ``name`` in the service at ``url``: its progress lines are printed to
    ``stderr`` as they come and the written pages to ``stdout``, as a report in this process
    prints them. Returns the exit status the service gives (2: it refused the stores)."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    request = {"name": name, "stores": stores, "out": out, "delayLevels": delay_levels}
    print(f"report service {url}: {name}", file=stderr, flush=True)
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=None)
    try:
        conn.request("POST", "/reports", json.dumps(request).encode(),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            error = _error_of(resp.read())
            print(f"rmq-emu: error: {error}", file=stderr)
            return 2 if resp.status == 400 else 1
        status = None
        for raw in resp:
            try:
                event = json.loads(raw)
            except ValueError:  # a line cut short: the service went away mid-report
                break
            if "progress" in event:
                print(event["progress"], file=stderr, flush=True)
            elif "written" in event:
                report, page = event["written"]
                print(f"{report}: {page}", file=stdout, flush=True)
            elif "error" in event:
                print(f"rmq-emu: error: {event['error']}", file=stderr, flush=True)
            if "exit" in event:
                status = int(event["exit"])
        if status is None:
            print(f"rmq-emu: error: report service {url} stopped before the report ended",
                  file=stderr)
            return 1
        return status
    except (OSError, http.client.HTTPException) as exc:
        print(f"rmq-emu: error: report service {url}: {_reason(exc)}", file=stderr)
        return 1
    finally:
        conn.close()


def _request(url: str, method: str, path: str, body: bytes | None,
             timeout: float) -> tuple[int, bytes]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request(method, path, body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _error_of(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body.decode(errors="replace").strip() or "no answer"


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
