"""Name-server routing state (Java ``namesrv/routeinfo/RouteInfoManager``, Apache RocketMQ 4.9.8).

Pure state plus a clock: brokers by cluster / name / id, per-topic queue data, and the live-broker
table stamped at every registration. A broker that has not registered for
``broker_expire_seconds`` (120 s, ``BROKER_CHANNEL_EXPIRED_TIME``) is dropped by
:meth:`RouteInfoManager.scan_not_active_broker`, which :meth:`start_scanning` runs every 10 s
(``NamesrvController``: initial delay 5 s, period 10 s) on an ``IReactorTime``.

JSON bodies are written with quoted keys and fastjson's alphabetical key order (docs/protocol.md
§3.8, §3.9): every client accepts the standard form.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall

from rocketmq_emu.broker import jsonutil

log = logging.getLogger(__name__)

MASTER_ID = 0
BROKER_CHANNEL_EXPIRED_SECONDS = 120.0
SCAN_INITIAL_DELAY_SECONDS = 5.0
SCAN_PERIOD_SECONDS = 10.0

# PermName / TopicSysFlag bits.
PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1
FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2


@dataclass(slots=True)
class QueueData:
    """One broker's queues of a topic (``QueueData``)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    def to_json(self) -> dict[str, Any]:
        """fastjson field order; ``topicSysFlag`` spelling of 4.9.0+."""
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> QueueData:
        """Read a QueueData object (accepts the pre-4.9 ``topicSynFlag`` spelling)."""
        return cls(
            broker_name=str(obj["brokerName"]),
            read_queue_nums=int(obj.get("readQueueNums", 0)),
            write_queue_nums=int(obj.get("writeQueueNums", 0)),
            perm=int(obj.get("perm", PERM_READ | PERM_WRITE)),
            topic_sys_flag=int(obj.get("topicSysFlag", obj.get("topicSynFlag", 0)) or 0),
        )


@dataclass(slots=True)
class BrokerData:
    """A broker group: name, cluster, and addresses by broker id (0 = master)."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{"brokerAddrs":{"0":"ip:port"},"brokerName":..,"cluster":..}`` with quoted ids."""
        return {
            "brokerAddrs": {str(k): self.broker_addrs[k] for k in sorted(self.broker_addrs)},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }


@dataclass(slots=True)
class BrokerLiveInfo:
    """Last registration of one broker address (``BrokerLiveInfo``)."""

    last_update_seconds: float
    data_version: dict[str, Any]
    ha_server_addr: str
    conn: Any = None


@dataclass(slots=True)
class RegisterBrokerResult:
    """What REGISTER_BROKER answers: HA and master address for a slave."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


def _same_version(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """``DataVersion.equals``: same counter and timestamp."""
    if a is None or b is None:
        return False
    return int(a.get("counter", 0)) == int(b.get("counter", 0)) and int(
        a.get("timestamp", 0)
    ) == int(b.get("timestamp", 0))


class RouteInfoManager:
    """Topic routes and broker liveness for one name server."""

    def __init__(
        self, clock: IReactorTime, broker_expire_seconds: float = BROKER_CHANNEL_EXPIRED_SECONDS
    ) -> None:
        self.clock = clock
        self.broker_expire_seconds = broker_expire_seconds
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}
        self._scan: LoopingCall | None = None
        self._scan_start: Any = None

    # --- registration ----------------------------------------------------------------------
    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: dict[str, Any] | None,
        filter_server_list: list[str] | None = None,
        conn: Any = None,
    ) -> RegisterBrokerResult:
        """Record a broker registration; returns HA/master addresses for slaves."""
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)
        register_first = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            register_first = True
            broker_data = BrokerData(cluster_name, broker_name)
            self.broker_addr_table[broker_name] = broker_data
        # A slave switched to master: drop <1, ip:port> before adding <0, ip:port>.
        for other_id in [i for i, a in broker_data.broker_addrs.items() if a == broker_addr]:
            if other_id != broker_id:
                del broker_data.broker_addrs[other_id]
        old_addr = broker_data.broker_addrs.get(broker_id)
        broker_data.broker_addrs[broker_id] = broker_addr
        register_first = register_first or old_addr is None

        data_version = (topic_config_wrapper or {}).get("dataVersion") or {}
        if topic_config_wrapper is not None and broker_id == MASTER_ID:
            if register_first or self.is_broker_topic_config_changed(broker_addr, data_version):
                table = topic_config_wrapper.get("topicConfigTable") or {}
                for topic_config in table.values():
                    self._create_and_update_queue_data(broker_name, topic_config)

        prev = self.broker_live_table.get(broker_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(
            self.clock.seconds(), data_version, ha_server_addr, conn
        )
        if prev is None:
            log.info("new broker registered, %s HAServer: %s", broker_addr, ha_server_addr)
        if filter_server_list:
            self.filter_server_table[broker_addr] = list(filter_server_list)
        else:
            self.filter_server_table.pop(broker_addr, None)

        result = RegisterBrokerResult()
        if broker_id != MASTER_ID:
            master_addr = broker_data.broker_addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = self.broker_live_table.get(master_addr)
                if master_live is not None:
                    result.ha_server_addr = master_live.ha_server_addr
                    result.master_addr = master_addr
        return result

    def _create_and_update_queue_data(self, broker_name: str, topic_config: dict[str, Any]) -> None:
        topic = topic_config.get("topicName")
        if not topic:
            return
        qd = QueueData(
            broker_name=broker_name,
            read_queue_nums=int(topic_config.get("readQueueNums", 0)),
            write_queue_nums=int(topic_config.get("writeQueueNums", 0)),
            perm=int(topic_config.get("perm", PERM_READ | PERM_WRITE)),
            topic_sys_flag=int(topic_config.get("topicSysFlag", 0) or 0),
        )
        by_broker = self.topic_queue_table.setdefault(topic, {})
        if by_broker.get(broker_name) != qd:
            if broker_name in by_broker:
                log.info("topic changed, %s OLD: %s NEW: %s", topic, by_broker[broker_name], qd)
            by_broker[broker_name] = qd

    def register_topic(self, topic: str, queue_datas: list[QueueData]) -> None:
        """REGISTER_TOPIC_IN_NAMESRV: add queue data of brokers this name server knows."""
        for qd in queue_datas:
            if qd.broker_name in self.broker_addr_table:
                self.topic_queue_table.setdefault(topic, {})[qd.broker_name] = qd

    def is_broker_topic_config_changed(
        self, broker_addr: str, data_version: dict[str, Any]
    ) -> bool:
        """True unless the live entry holds the same DataVersion."""
        live = self.broker_live_table.get(broker_addr)
        return live is None or not _same_version(live.data_version, data_version)

    def query_broker_data_version(self, broker_addr: str) -> dict[str, Any] | None:
        """DataVersion the broker last registered with (None if not live)."""
        live = self.broker_live_table.get(broker_addr)
        return None if live is None else live.data_version

    def update_broker_info_update_timestamp(self, broker_addr: str) -> None:
        """Refresh a live broker's timestamp (QUERY_DATA_VERSION with no change)."""
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update_seconds = self.clock.seconds()

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """Forget one broker address (UNREGISTER_BROKER)."""
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return
        broker_data.broker_addrs.pop(broker_id, None)
        if not broker_data.broker_addrs:
            del self.broker_addr_table[broker_name]
            names = self.cluster_addr_table.get(cluster_name)
            if names is not None:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster_name]
            self._remove_topics_of_broker(broker_name)

    def _remove_topics_of_broker(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            by_broker = self.topic_queue_table[topic]
            if by_broker.pop(broker_name, None) is not None and not by_broker:
                del self.topic_queue_table[topic]

    def _remove_broker_addr(self, broker_addr: str) -> None:
        """``onChannelDestroy``: drop every trace of one broker address."""
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        for broker_name in list(self.broker_addr_table):
            data = self.broker_addr_table[broker_name]
            for bid in [i for i, a in data.broker_addrs.items() if a == broker_addr]:
                del data.broker_addrs[bid]
            if data.broker_addrs:
                continue
            del self.broker_addr_table[broker_name]
            for cluster in list(self.cluster_addr_table):
                names = self.cluster_addr_table[cluster]
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster]
            self._remove_topics_of_broker(broker_name)

    def on_channel_destroy(self, conn: Any) -> None:
        """A connection closed: drop the broker that registered over it (if any)."""
        for addr, live in list(self.broker_live_table.items()):
            if live.conn is conn:
                log.info(
                    "broker channel %s closed, removing %s", getattr(conn, "peer_addr", conn), addr
                )
                self._remove_broker_addr(addr)

    # --- expiry -----------------------------------------------------------------------------
    def scan_not_active_broker(self) -> list[str]:
        """Drop brokers silent for more than ``broker_expire_seconds``; returns their addrs."""
        now = self.clock.seconds()
        expired = [
            addr
            for addr, live in self.broker_live_table.items()
            if live.last_update_seconds + self.broker_expire_seconds < now
        ]
        for addr in expired:
            live = self.broker_live_table[addr]
            log.warning("The broker channel expired, %s %.0f s", addr, self.broker_expire_seconds)
            if live.conn is not None and hasattr(live.conn, "close"):
                live.conn.close()
            self._remove_broker_addr(addr)
        return expired

    def start_scanning(
        self, initial_delay: float = SCAN_INITIAL_DELAY_SECONDS, period: float = SCAN_PERIOD_SECONDS
    ) -> None:
        """Run :meth:`scan_not_active_broker` every ``period`` s after ``initial_delay``."""
        self.stop_scanning()
        self._scan = LoopingCall(self._scan_safely)
        self._scan.clock = self.clock
        self._scan_start = self.clock.callLater(initial_delay, self._scan.start, period, True)

    def _scan_safely(self) -> None:
        try:
            self.scan_not_active_broker()
        except Exception:
            log.exception("scanNotActiveBroker failed")

    def stop_scanning(self) -> None:
        """Stop the periodic scan (idempotent)."""
        if self._scan_start is not None and self._scan_start.active():
            self._scan_start.cancel()
        self._scan_start = None
        if self._scan is not None and self._scan.running:
            self._scan.stop()
        self._scan = None

    # --- queries ----------------------------------------------------------------------------
    def pickup_topic_route_data(self, topic: str) -> dict[str, Any] | None:
        """TopicRouteData as a JSON-ready dict, or None if the topic has no route."""
        by_broker = self.topic_queue_table.get(topic)
        if not by_broker:
            return None
        broker_datas = []
        filter_servers: dict[str, list[str]] = {}
        for name in sorted(by_broker):
            data = self.broker_addr_table.get(name)
            if data is None:
                continue
            broker_datas.append(data.to_json())
            for addr in data.broker_addrs.values():
                servers = self.filter_server_table.get(addr)
                if servers:
                    filter_servers[addr] = list(servers)
        if not broker_datas:
            return None
        return {
            "brokerDatas": broker_datas,
            "filterServerTable": filter_servers,
            "queueDatas": [by_broker[name].to_json() for name in sorted(by_broker)],
        }

    def cluster_info(self) -> dict[str, Any]:
        """ClusterInfo: brokerAddrTable and clusterAddrTable."""
        return {
            "brokerAddrTable": {
                name: self.broker_addr_table[name].to_json()
                for name in sorted(self.broker_addr_table)
            },
            "clusterAddrTable": {
                cluster: sorted(names) for cluster, names in sorted(self.cluster_addr_table.items())
            },
        }

    def all_topics(self) -> list[str]:
        """Every topic with a route."""
        return sorted(self.topic_queue_table)

    def delete_topic(self, topic: str) -> None:
        """DELETE_TOPIC_IN_NAMESRV."""
        self.topic_queue_table.pop(topic, None)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        """Topics with a queue on any broker of ``cluster``."""
        names = self.cluster_addr_table.get(cluster, set())
        return sorted(
            t for t, by_broker in self.topic_queue_table.items() if names & by_broker.keys()
        )

    def system_topic_list(self) -> dict[str, Any]:
        """GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and broker names, plus one broker address."""
        topics: set[str] = set()
        for cluster, names in self.cluster_addr_table.items():
            topics.add(cluster)
            topics.update(names)
        body: dict[str, Any] = {}
        for name in sorted(self.broker_addr_table):
            addrs = self.broker_addr_table[name].broker_addrs
            if addrs:
                body["brokerAddr"] = addrs[min(addrs)]
                break
        body["topicList"] = sorted(topics)
        return body

    def unit_topics(self, want_unit: bool | None, want_unit_sub: bool | None) -> list[str]:
        """Topics filtered by the unit flags of their first queue data (None: don't care)."""
        out = []
        for topic, by_broker in self.topic_queue_table.items():
            if not by_broker:
                continue
            flag = next(iter(by_broker.values())).topic_sys_flag
            if want_unit is not None and bool(flag & FLAG_UNIT) != want_unit:
                continue
            if want_unit_sub is not None and bool(flag & FLAG_UNIT_SUB) != want_unit_sub:
                continue
            out.append(topic)
        return sorted(out)

    def operate_write_perm_of_broker(self, broker_name: str, add: bool) -> int:
        """Wipe (add=False) or restore (add=True) PERM_WRITE on a broker's topics; returns count."""
        count = 0
        for by_broker in self.topic_queue_table.values():
            qd = by_broker.get(broker_name)
            if qd is None:
                continue
            qd.perm = (qd.perm | PERM_WRITE) if add else (qd.perm & ~PERM_WRITE)
            count += 1
        return count


def topic_list_body(topics: list[str], broker_addr: str | None = None) -> bytes:
    """TopicList JSON: ``{"brokerAddr":..,"topicList":[..]}`` (brokerAddr omitted when None)."""
    body: dict[str, Any] = {}
    if broker_addr is not None:
        body["brokerAddr"] = broker_addr
    body["topicList"] = topics
    return jsonutil.dumps(body)
