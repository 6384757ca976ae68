"""The name server's configuration file (``mqnamesrv -c namesrv.conf``, Java ``NamesrvStartup``).

Java loads the file's properties into ``NamesrvConfig`` and ``NettyServerConfig`` and reads TLS
from JVM system properties (``-Dtls.server.mode=...``). The emulator has no JVM properties, so
the ``tls.*`` keys are read from this file too, as ``broker.conf`` does for the broker (see
:mod:`rocketmq_emu.broker.tls.config`). Keys Java knows but the emulator does not use are
accepted with an INFO line, unknown keys with a warning; a bad value is an error naming the file,
line and key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from rocketmq_emu.broker.properties import did_you_mean, parse_properties
from rocketmq_emu.broker.tls.config import (
    DEFAULT_TLS,
    TLS_KEYS,
    TlsConfig,
    TlsConfigError,
    parse_tls,
)

log = logging.getLogger(__name__)

#: NamesrvConfig / NettyServerConfig keys accepted without effect (the emulator's name server
#: has no thread pools, config store or product-environment lookup to tune).
IGNORED_KEYS = frozenset({
    "rocketmqHome", "configStorePath", "productEnvName", "clusterTest",
    "serverWorkerThreads", "serverCallbackExecutorThreads", "serverSelectorThreads",
    "serverOnewaySemaphoreValue", "serverAsyncSemaphoreValue", "serverChannelMaxIdleTimeSeconds",
    "serverSocketSndBufSize", "serverSocketRcvBufSize", "serverPooledByteBufAllocatorEnable",
    "useEpollNativeSelector", "defaultThreadPoolNums",
})

#: Every key ``namesrv.conf`` accepts, for "did you mean" on an unknown one.
KNOWN_KEYS = frozenset({"listenPort", "kvConfigPath", "orderMessageEnable"}) | IGNORED_KEYS \
    | TLS_KEYS


class NamesrvConfigError(ValueError):
    """A value of ``namesrv.conf`` that cannot be used; the message names file, line and key."""


@dataclass(frozen=True)
class NamesrvSettings:
    """What ``namesrv.conf`` sets (None: not set, the command line's or the default applies)."""

    listen_port: int | None = None
    kv_config_path: str | None = None
    order_message_enable: bool = False
    tls: TlsConfig = DEFAULT_TLS
    #: Keys the file has that the emulator does not know (each also logged as a warning).
    unknown: tuple[str, ...] = ()


def parse_namesrv_conf(text: str, source: str = "namesrv.conf") -> NamesrvSettings:
    """Parse ``namesrv.conf`` text (relative TLS paths are taken from the working directory, as
    in Java and in ``broker.conf``)."""
    values: dict = {}
    tls_entries: list[tuple[str, str, str]] = []
    unknown: list[str] = []
    for entry in parse_properties(text):
        where = f"{source}:{entry.line} {entry.key}"
        key, raw = entry.key, entry.value.strip()
        if key in TLS_KEYS:
            tls_entries.append((key, entry.value, where))
        elif key == "listenPort":
            # 0 binds a free port (NettyRemotingServer reads the bound port back).
            if not raw.isdigit() or not 0 <= int(raw) <= 65535:
                raise NamesrvConfigError(f"{where}: {raw!r} is not a port (0-65535; 0 picks "
                                         "a free port)")
            values["listen_port"] = int(raw)
        elif key == "kvConfigPath":
            values["kv_config_path"] = raw or None
        elif key == "orderMessageEnable":
            if raw.lower() not in ("true", "false"):
                raise NamesrvConfigError(f"{where}: {raw!r} must be true or false")
            values["order_message_enable"] = raw.lower() == "true"
        elif key in IGNORED_KEYS:
            log.info("%s: accepted, has no effect in the emulator", where)
        else:
            log.warning("%s: unknown key ignored%s", where, did_you_mean(key, KNOWN_KEYS))
            unknown.append(key)
    try:
        tls = parse_tls(tls_entries)
    except TlsConfigError as e:
        raise NamesrvConfigError(str(e)) from None
    return NamesrvSettings(tls=tls, unknown=tuple(unknown), **values)


def load_namesrv_conf(path: str) -> NamesrvSettings:
    """Read ``namesrv.conf`` (UTF-8, else ISO-8859-1 as ``Properties.load``). OSError if it
    cannot be read."""
    p = Path(path)
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return parse_namesrv_conf(text, str(p))
