"""``broker.conf`` → :class:`BrokerConfig`.

``broker.conf`` is RocketMQ's Java-properties file. ``BrokerStartup`` copies every key onto
``BrokerConfig``, ``NettyServerConfig``, ``NettyClientConfig`` and ``MessageStoreConfig`` at once
(``MixAll.properties2Object``), so one flat key space covers the broker and its store; this module
does the same into one dataclass whose fields are the snake_case forms of the Java keys, with
RocketMQ's defaults. The store's own :class:`~broker.store_config.MessageStoreConfig` is derived
from it by :meth:`BrokerConfig.to_store_config`.

Values are converted the way ``MixAll.properties2Object`` converts them (``Integer.parseInt``,
``Long.parseLong``, ``Boolean.parseBoolean`` — so only ``true``, in any case, is true). Unknown
keys are logged as warnings (with the nearest known key: "did you mean brokerName?"), never
fatal; a number that does not parse is an error naming the key (Java silently keeps the default
there, which hides typos), as is a port out of range (``listenPort`` 0 binds a free port).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketmq_emu.broker.acl import DEFAULT_PLAIN_FILE
from rocketmq_emu.broker.delay_levels import (
    DEFAULT_MESSAGE_DELAY_LEVEL,
    DelayLevelError,
    parse_delay_levels,
)
from rocketmq_emu.broker.properties import PropertiesError, did_you_mean, parse_properties
from rocketmq_emu.broker.schedule.timer_message import DEFAULT_TIMER_MAX_DELAY_SEC
from rocketmq_emu.broker.tls.config import (
    DEFAULT_TLS,
    TLS_KEYS,
    TlsConfig,
    TlsConfigError,
    parse_tls,
)

log = logging.getLogger(__name__)

#: The highest TCP port (``listenPort`` 0 binds a free one).
MAX_PORT = 65535


class ConfigError(ValueError):
    """A ``broker.conf`` value that cannot be used; the message names the file, line and key."""


def _key(java_key: str) -> dict[str, str]:
    """Field metadata naming the Java property when snake→camel conversion would not give it."""
    return {"java_key": java_key}


@dataclass
class BrokerConfig:
    """The broker's settings, named after RocketMQ's keys (``brokerIP1`` → ``broker_ip1``).

    Defaults are RocketMQ 4.9's, except ``broker_name`` (Java uses the host name; a fixed
    ``broker-a`` keeps routes stable) and ``broker_ip1`` (Java picks a non-loopback interface;
    the emulator advertises the host it listens on unless told otherwise).
    """

    # --- identity / cluster (BrokerConfig.java)
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = "broker-a"
    broker_id: int = 0
    broker_ip1: str | None = field(default=None, metadata=_key("brokerIP1"))
    broker_ip2: str | None = field(default=None, metadata=_key("brokerIP2"))
    broker_permission: int = 6
    broker_role: str = "ASYNC_MASTER"
    namesrv_addr: str | None = None
    register_name_server_period: int = 30_000
    # --- network (NettyServerConfig.java)
    listen_port: int = 10911
    # --- topics, groups (BrokerConfig.java)
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = 8
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    # --- send / pull behaviour (BrokerConfig.java)
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    reject_transaction_message: bool = False
    #: RocketMQ 5.3 RECALL_MESSAGE: off by default as on Apache's broker (recall answers
    #: NO_PERMISSION until ``recallMessageEnable=true``).
    recall_message_enable: bool = False
    allow_recall_when_broker_not_writeable: bool = True
    #: RocketMQ 5: whether UPDATE_AND_CREATE_TOPIC may set ``+message.type=MIXED``.
    enable_mixed_message_type: bool = False
    # --- SQL92 filters and transactions (BrokerConfig.java; used by broker.filter and
    # broker.transaction)
    enable_property_filter: bool = False
    transaction_time_out: int = 6_000
    transaction_check_max: int = 15
    transaction_check_interval: int = 60_000
    max_reconsume_times: int = 16
    # --- store (MessageStoreConfig.java)
    store_path_root_dir: str = field(
        default_factory=lambda: os.path.join(os.path.expanduser("~"), "store")
    )
    store_path_commit_log: str | None = None
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    flush_disk_type: str = "ASYNC_FLUSH"
    flush_interval_commit_log: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: int = 1000 * 10
    flush_interval_consume_queue: int = 1000
    flush_consume_queue_least_pages: int = 2
    sync_flush_timeout: int = 1000 * 5
    file_reserved_time: int = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    # RocketMQ 5 keys (percent); 4.9 takes them from JVM properties (rocketmq.broker.*).
    disk_space_warning_level_ratio: int = 90
    disk_space_clean_forcibly_ratio: int = 85
    clean_file_forcibly_enable: bool = True
    clean_resource_interval: int = 10_000
    max_message_size: int = 1024 * 1024 * 4
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    check_crc_on_recover: bool = field(default=True, metadata=_key("checkCRCOnRecover"))
    #: RocketMQ's key is misspelt ``warmMapedFileEnable`` and defaults to false; the emulator
    #: pre-touches new files by default (the first touch of a page costs 4-6x).
    warm_mapped_file_enable: bool = field(default=True, metadata=_key("warmMapedFileEnable"))
    #: The emulator's own: flush as soon as this many pages are dirty.
    flush_commit_log_max_dirty_pages: int = 16_384
    max_msgs_num_batch: int = 64
    max_transfer_bytes_on_message_in_memory: int = 1024 * 256
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 1024 * 64
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    auto_message_version_on_topic_len: bool = True
    # --- RocketMQ 5 timer messages (MessageStoreConfig.java, 5.x)
    timer_wheel_enable: bool = True
    # The issue's horizon is QMQ's 2 years; RocketMQ 5's broker default is 259200 s (3 days).
    timer_max_delay_sec: int = DEFAULT_TIMER_MAX_DELAY_SEC
    timer_precision_ms: int = 1000
    # --- ACL 1.0 (BrokerConfig.aclEnable / rocketmqHome; see broker.acl.service). Read at start.
    acl_enable: bool = False
    #: Java's default is ``$ROCKETMQ_HOME``; None here, and the ACL service falls back to it.
    rocketmq_home: str | None = None
    #: System property ``rocketmq.acl.plain.file`` (``PlainPermissionManager``): the accounts file
    #: relative to rocketmqHome. No JVM here: read from broker.conf; not a BrokerConfig property.
    acl_plain_file: str = field(default=DEFAULT_PLAIN_FILE, metadata={
        "java_key": "rocketmq.acl.plain.file", "property": False})
    #: The emulator's own: check what clients send against the Java client and record findings
    #: (:mod:`rocketmq_emu.broker.conformance`, about 6 us per send; ``bench/conformance.py``).
    #: Not a Java BrokerConfig property.
    conformance_enable: bool = field(default=True, metadata={"property": False})
    # --- TLS (Java TlsSystemConfig: the dotted tls.* keys, see broker.tls.config). RocketMQ's
    # default is permissive with a test-mode certificate; None: no TLS switch on the ports at all
    # (bench/tls.py's reference). Not a BrokerConfig property in Java, so GET_BROKER_CONFIG does
    # not list it.
    tls: TlsConfig | None = field(default=DEFAULT_TLS,
                                  metadata={"java_key": "tls.*", "property": False})

    def namesrv_addrs(self) -> list[str]:
        """``namesrvAddr`` split on ``;`` as RocketMQ does (empty list if unset)."""
        if not self.namesrv_addr:
            return []
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    def advertised_ip(self, listen_host: str) -> str:
        """The address clients are told to connect to: ``brokerIP1`` or the listening host."""
        if self.broker_ip1:
            return self.broker_ip1
        if listen_host in ("", "0.0.0.0", "::"):
            # Listening on all interfaces: loopback is the one address certainly reachable.
            return "127.0.0.1"
        return listen_host

    def broker_addr(self, listen_host: str) -> str:
        """``ip:port`` the broker registers with the name server."""
        return f"{self.advertised_ip(listen_host)}:{self.listen_port}"

    def to_store_config(self, listen_host: str = "127.0.0.1") -> Any:
        """Build the store's ``MessageStoreConfig`` from the same-named settings here.

        Fields are matched by name, with the store's spelling ``commitlog`` also matching
        RocketMQ's ``commit_log``; fields the store has and this class lacks keep their defaults.
        ``store_host`` (written into records) is the advertised ``ip:port``.
        """
        from rocketmq_emu.broker.store_config import MessageStoreConfig

        mine = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(MessageStoreConfig):
            if not f.init:
                continue
            for candidate in (f.name, f.name.replace("commitlog", "commit_log")):
                if candidate in mine:
                    kwargs[f.name] = mine[candidate]
                    break
        if "store_host" in {f.name for f in dataclasses.fields(MessageStoreConfig)}:
            kwargs["store_host"] = self.broker_addr(listen_host)
        return MessageStoreConfig(**kwargs)


def camel_to_snake(name: str) -> str:
    """``mappedFileSizeCommitLog`` → ``mapped_file_size_commit_log``; ``brokerIP1`` → ``broker_ip1``."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def snake_to_camel(name: str) -> str:
    """``flush_disk_type`` → ``flushDiskType`` (the Java key of a field without ``java_key``)."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def java_key(f: dataclasses.Field) -> str:
    """The ``broker.conf`` key of a :class:`BrokerConfig` field."""
    return f.metadata.get("java_key") or snake_to_camel(f.name)


#: broker.conf keys read into a field (``tls.*`` stands for the keys broker.tls.config reads).
_FIELDS_BY_JAVA_KEY: dict[str, dataclasses.Field] = {
    java_key(f): f for f in dataclasses.fields(BrokerConfig) if "*" not in java_key(f)
}

# RocketMQ keys that a real broker.conf often carries and the emulator accepts without effect
# (thread pools, HA, netty tuning): logged at INFO rather than warned about as unknown.
IGNORED_KEYS = frozenset(
    """
    haListenPort haMasterAddress sendMessageThreadPoolNums pullMessageThreadPoolNums
    queryMessageThreadPoolNums adminBrokerThreadPoolNums clientManageThreadPoolNums
    consumerManageThreadPoolNums heartbeatThreadPoolNums endTransactionThreadPoolNums
    useReentrantLockWhenPutMessage waitTimeMillsInSendQueue serverWorkerThreads
    serverCallbackExecutorThreads serverSelectorThreads serverSocketSndBufSize
    serverSocketRcvBufSize serverPooledByteBufAllocatorEnable useEpollNativeSelector
    transientStorePoolEnable transientStorePoolSize fastFailIfNoBufferInStorePool
    enablePropertyFilter filterSupportRetry enableCalcFilterBitMap
    storePathConsumeQueue storePathIndex storeCheckpoint abortFile
    slaveReadEnable duplicationEnable isEnableBatchPush
    """.split()
)

#: Every key ``broker.conf`` accepts, for "did you mean" on an unknown one.
KNOWN_KEYS = frozenset(_FIELDS_BY_JAVA_KEY) | IGNORED_KEYS | TLS_KEYS


def _convert(raw: str, f: dataclasses.Field, where: str) -> Any:
    """Convert a property string to the field's type as ``MixAll.properties2Object`` does."""
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if kind.startswith("bool"):
        value = raw.strip()
        if value.lower() not in ("true", "false"):
            # Java's Boolean.parseBoolean: anything but "true" is false; say so.
            log.warning("%s: %r is not true/false; RocketMQ reads it as false", where, raw)
        return value.lower() == "true"
    if kind.startswith("int"):
        try:
            return int(raw.strip())
        except ValueError:
            raise ConfigError(f"{where}: {raw!r} is not an integer") from None
    if raw == "" and "None" in kind:
        return None
    return raw


@dataclass
class LoadedConfig:
    """A parsed ``broker.conf``: the config plus which keys the file set explicitly."""

    config: BrokerConfig
    explicit: set[str] = field(default_factory=set)
    unknown: list[str] = field(default_factory=list)


def config_from_properties(
    properties: dict[str, str] | list, source: str = "broker.conf"
) -> LoadedConfig:
    """Apply ``key=value`` properties (a dict, or entries from :func:`parse_properties`)."""
    if isinstance(properties, dict):
        items = [(k, v, None) for k, v in properties.items()]
    else:
        items = [(e.key, e.value, e.line) for e in properties]
    cfg = BrokerConfig()
    loaded = LoadedConfig(cfg)
    #: ``file:line key`` of the entry that set each field (the last one wins, as in Java).
    wheres: dict[str, str] = {}
    tls_entries: list[tuple[str, str, str]] = []
    for key, raw, line in items:
        where = f"{source}:{line} {key}" if line else f"{source} {key}"
        if key in TLS_KEYS:
            tls_entries.append((key, raw, where))
            continue
        f = _FIELDS_BY_JAVA_KEY.get(key)
        if f is None:
            if key in IGNORED_KEYS:
                log.info("%s: accepted, has no effect in the emulator", where)
            else:
                log.warning("%s: unknown key ignored%s", where, did_you_mean(key, KNOWN_KEYS))
                loaded.unknown.append(key)
            continue
        setattr(cfg, f.name, _convert(raw, f, where))
        loaded.explicit.add(f.name)
        wheres[f.name] = where
    _validate(cfg, lambda name, key: wheres.get(name, f"{source} {key}"))
    if tls_entries:
        try:
            cfg.tls = parse_tls(tls_entries)
        except TlsConfigError as e:
            raise ConfigError(str(e)) from None
        loaded.explicit.add("tls")
    return loaded


def _validate(cfg: BrokerConfig, where: Any) -> None:
    """Reject values RocketMQ's broker could not start with; ``where(field, key)`` names the
    ``file:line key`` that set the field."""
    if cfg.flush_disk_type not in ("ASYNC_FLUSH", "SYNC_FLUSH"):
        raise ConfigError(f"{where('flush_disk_type', 'flushDiskType')}: "
                          f"{cfg.flush_disk_type!r} must be ASYNC_FLUSH or SYNC_FLUSH")
    if not 0 <= cfg.listen_port <= MAX_PORT:
        # 0 binds a free port, as Java's NettyRemotingServer does (it reads the port back).
        raise ConfigError(f"{where('listen_port', 'listenPort')}: "
                          f"{cfg.listen_port} is out of range (0-{MAX_PORT}; 0 picks a free port)")
    if cfg.namesrv_addr:
        problem = namesrv_addr_problem(cfg.namesrv_addr)
        if problem is not None:
            raise ConfigError(f"{where('namesrv_addr', 'namesrvAddr')}: {problem}")
    hours = cfg.delete_when.split(";")
    if not all(h.strip().isdigit() and int(h) < 24 for h in hours):
        # UtilAll.isItTimeToDo parses each part with Integer.parseInt at every clean run: a
        # part that is not an hour of the day would never let retention run at its hour.
        raise ConfigError(f"{where('delete_when', 'deleteWhen')}: {cfg.delete_when!r} must "
                          "be hours of the day (0-23), ';'-separated, e.g. 04 or 04;16")
    try:
        parse_delay_levels(cfg.message_delay_level)
    except DelayLevelError as e:
        raise ConfigError(f"{where('message_delay_level', 'messageDelayLevel')}: {e}") from None


def namesrv_addr_problem(value: str) -> str | None:
    """What is wrong with a ``namesrvAddr`` value (``host:port``, ``;``-separated, as
    ``RemotingHelper.string2SocketAddress`` reads each), or None if it can be used."""
    for addr in (a.strip() for a in value.split(";")):
        if not addr:
            continue
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit():
            return f"{addr!r} is not host:port"
        if not 0 < int(port) <= MAX_PORT:
            return f"{addr!r}: port {int(port)} is out of range (1-{MAX_PORT})"
    return None


def parse_broker_conf(text: str, source: str = "broker.conf") -> LoadedConfig:
    """Parse the text of a ``broker.conf``; a malformed line is a :class:`ConfigError` too."""
    try:
        entries = parse_properties(text)
    except PropertiesError as e:
        raise ConfigError(f"{source} {e}") from None
    return config_from_properties(entries, source)


def load_broker_conf(path: str | os.PathLike) -> LoadedConfig:
    """Read and parse a ``broker.conf`` file (ISO-8859-1 tolerated, UTF-8 preferred)."""
    p = Path(path)
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # Properties.load(InputStream) reads ISO-8859-1.
        text = data.decode("latin-1")
    return parse_broker_conf(text, str(p))
