"""Startup failures of ``rmq-emu up | namesrv | broker`` as one line: the cause and what to do.

A port in use, a store held by another process, a store path that cannot be created or written,
a bad ``broker.conf`` value, an unusable store config file (``topics.json`` ...) or a bad
``plain_acl.yml`` (with ``aclEnable=true``) are expected
failures: :func:`describe_startup_failure` turns them into one sentence naming the port, the path
or the file; anything else returns None and is shown with its traceback (a bug).
Mirrors what ``BrokerStartup`` / ``NamesrvStartup`` do in Java (print the cause, ``exit(-1)``),
minus the stack trace. :class:`CliError` is the user error the CLI prints as its one line;
:func:`writable_file` / :func:`writable_dir` check an output path (``--record``,
``--conformance-report``) before anything starts; :func:`port_number` is the ``type=`` of every
port option and :class:`CliArgumentParser` prints argparse's errors as one line. The exception
classes are imported only when a start has failed, so a start that succeeds pays nothing for
this module.
"""

from __future__ import annotations

import argparse
import errno
import os
import tempfile
from collections.abc import Iterator
from typing import Any


class CliError(Exception):
    """A user error: printed without a traceback, exit status 2."""


class CliArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, ``rmq-emu up: error: ...``
    (exit status 2), without the usage block: ``--help`` shows that."""

    def error(self, message: str) -> Any:  # noqa: D102 (argparse API)
        self.exit(2, f"{self.prog}: error: {message}\n")


#: The highest TCP port.
MAX_PORT = 65535
#: What every port option and port key accepts, for its error messages.
PORT_RANGE = f"0-{MAX_PORT}; 0 picks a free port"


def port_number(text: str) -> int:
    """argparse ``type=`` of a port option: 0-65535, 0 meaning "pick a free port" (Java's
    ``NettyRemotingServer`` binds port 0 and reads the bound port back). Anything else is
    argparse's one-line error naming the option, instead of a bind() traceback at start."""
    try:
        port = int(text.strip(), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number ({PORT_RANGE})") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{port} is out of range ({PORT_RANGE})")
    return port


def namesrv_addresses(text: str) -> str:
    """argparse ``type=`` of ``-n``: ``host:port`` name server addresses, ``;``-separated, each
    port 1-65535 (the same check as ``namesrvAddr`` in ``broker.conf``)."""
    from rocketmq_emu.broker.config import namesrv_addr_problem

    problem = namesrv_addr_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def writable_file(path: str, option: str) -> str:
    """``path`` made absolute, checked creatable before anything starts (one line if not)."""
    full = os.path.abspath(os.path.expanduser(path))
    directory = os.path.dirname(full)
    if not os.path.isdir(directory):
        raise CliError(f"{option} {path}: directory {directory} does not exist")
    if os.path.isdir(full) or not os.access(directory, os.W_OK) \
            or (os.path.exists(full) and not os.access(full, os.W_OK)):
        raise CliError(f"{option} {path}: cannot write that file")
    return full


def writable_dir(path: str, option: str) -> str:
    """``path`` made absolute and created if missing, after writing a probe file in it: a
    report that could not be written at the stop fails here instead, in one line."""
    full = os.path.abspath(os.path.expanduser(path))
    try:
        os.makedirs(full, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=full, prefix=".probe-"):
            pass
    except OSError as e:
        raise CliError(f"{option} {path}: cannot write there ({e.strerror or e})") from None
    return full


class PortRole:
    """What a port is for and the option that changes it (``9876``: name server, --namesrv-port)."""

    def __init__(self, port: int, what: str, option: str) -> None:
        self.port = port
        self.what = what
        self.option = option


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or during, outermost first."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _port_message(exc: Any, roles: list[PortRole]) -> str:
    port = exc.port
    host = exc.interface or "0.0.0.0"
    role = next((r for r in roles if r.port == port), None)
    what = f" ({role.what})" if role else ""
    sock_err = getattr(exc.socketError, "errno", None)
    if sock_err == errno.EADDRINUSE:
        why = "address already in use"
        todo = "stop the process using it"
    else:
        why = getattr(exc.socketError, "strerror", None) or str(exc.socketError)
        todo = "check --host"
    if role is not None:
        todo += f" or choose another port with {role.option}"
    return f"cannot listen on {host}:{port}{what}: {why}; {todo}"


def describe_startup_failure(exc: BaseException, roles: list[PortRole],
                             store_root: str | None = None) -> str | None:
    """One line for an expected startup failure, or None for an unexpected one (a bug)."""
    from twisted.internet.error import CannotListenError

    from rocketmq_emu.broker.acl.config import AclConfigError
    from rocketmq_emu.broker.commitlog.mapped_file import MappedFileError
    from rocketmq_emu.broker.commitlog.recovery import RecoveryError
    from rocketmq_emu.broker.commitlog.store_lock import StoreLockedError
    from rocketmq_emu.broker.config import ConfigError
    from rocketmq_emu.broker.configs.base import ConfigFileError
    from rocketmq_emu.broker.index.index_file import IndexFileError

    for cause in _causes(exc):
        if isinstance(cause, CannotListenError):
            return _port_message(cause, roles)
        if isinstance(cause, StoreLockedError):
            lock = os.path.join(store_root, "lock") if store_root else "its lock file"
            where = f"store {store_root}" if store_root else "the store"
            return (f"{where} is in use by another running broker (lock held on {lock}); "
                    "stop that process or use another --store")
        if isinstance(cause, ConfigError):  # names file, line and key
            return f"{cause}; fix that line of the file"
        if isinstance(cause, AclConfigError):  # names plain_acl.yml and the key
            return f"cannot start with aclEnable=true: {cause}; fix that file"
        if isinstance(cause, ConfigFileError):  # names the JSON file
            return f"cannot start: {' '.join(str(cause).split())}; fix or remove that file"
        if isinstance(cause, RecoveryError):  # corrupt where acknowledged records follow
            return (f"cannot recover the store: {cause.strerror}; move the store aside "
                    "(it is never repaired by dropping acknowledged messages) or use another "
                    "--store")
        if isinstance(cause, MappedFileError):  # names the store file
            if cause.errno == errno.ENOSPC:
                return f"no space left for the store: {cause.strerror}; free disk space"
            return (f"cannot use a store file: {cause.strerror}; a store keeps the "
                    "mappedFileSize* settings it was written with, or use another --store")
        if isinstance(cause, IndexFileError):  # names the index file
            return (f"{' '.join(str(cause).split())}; index files are rebuilt from the "
                    "commitlog: move that file aside")
        if isinstance(cause, OSError) and cause.filename is not None:
            path = os.fsdecode(cause.filename)
            why = cause.strerror or str(cause)
            if store_root and _inside(path, store_root):
                return (f"cannot create or write the store at {store_root}: {why}: {path}; "
                        "choose a writable directory with --store (or storePathRootDir)")
            return f"{why}: {path}"
    return None


def _inside(path: str, root: str) -> bool:
    path, root = os.path.abspath(path), os.path.abspath(root)
    # A parent that cannot be created (makedirs of the root fails on it) is the store's problem.
    return path == root or path.startswith(root + os.sep) or root.startswith(path + os.sep)
