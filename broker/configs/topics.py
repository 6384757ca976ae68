"""``config/topics.json``: topic configs (RocketMQ ``broker/topic/TopicConfigManager.java``).

File shape (``TopicConfigSerializeWrapper``, protocol.md §3.8)::

    {"dataVersion": {"counter": 3, "timestamp": 1700000000000},
     "topicConfigTable": {"TopicTest": {"order": false, "perm": 6, "readQueueNums": 4,
                                        "topicFilterType": "SINGLE_TAG", "topicName": "TopicTest",
                                        "topicSysFlag": 0, "writeQueueNums": 4}, ...}}

RocketMQ 5's ``attributes`` map (``{"message.type": "FIFO"}``, see
:mod:`rocketmq_emu.broker.topic_attributes`) is a field of every topic and is always written,
``{}`` when empty, as 5.x writes it; other fields of other versions are kept verbatim.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.configs.base import ConfigManager, DataVersion, clock_millis, is_blank
from rocketmq_emu.broker.message import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_SCHEDULE_TOPIC,
)
from rocketmq_emu.broker.topic_attributes import alter_current_attributes

log = logging.getLogger(__name__)

# common/constant/PermName.java
PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1

# common/topic/TopicValidator.java, MixAll.java
RMQ_SYS_SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
RMQ_SYS_BENCHMARK_TOPIC = "BenchmarkTest"
RMQ_SYS_OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
#: ``TopicConfigManager.SCHEDULE_TOPIC_QUEUE_NUM``.
SCHEDULE_TOPIC_QUEUE_NUM = 18
#: ``TopicConfig.defaultReadQueueNums`` / ``defaultWriteQueueNums``.
DEFAULT_TOPIC_CONFIG_QUEUE_NUMS = 16
#: ``BrokerConfig.defaultTopicQueueNums``.
DEFAULT_TOPIC_QUEUE_NUMS = 8
#: ``SendMessageProcessor.DLQ_NUMS_PER_GROUP``.
DLQ_NUMS_PER_GROUP = 1

SINGLE_TAG = "SINGLE_TAG"
MULTI_TAG = "MULTI_TAG"

_KNOWN_FIELDS = frozenset(
    ("attributes", "order", "perm", "readQueueNums", "topicFilterType", "topicName", "topicSysFlag",
     "writeQueueNums")
)


def is_readable(perm: int) -> bool:
    """``PermName.isReadable``."""
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    """``PermName.isWriteable``."""
    return bool(perm & PERM_WRITE)


def is_inherited(perm: int) -> bool:
    """``PermName.isInherited``."""
    return bool(perm & PERM_INHERIT)


def retry_topic(group: str) -> str:
    """``MixAll.getRetryTopic``: ``%RETRY%<group>``."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``MixAll.getDLQTopic``: ``%DLQ%<group>``."""
    return DLQ_GROUP_TOPIC_PREFIX + group


@dataclass
class TopicConfig:
    """``common/TopicConfig.java`` (defaults: 16 queues, perm RW, SINGLE_TAG)."""

    topic_name: str
    read_queue_nums: int = DEFAULT_TOPIC_CONFIG_QUEUE_NUMS
    write_queue_nums: int = DEFAULT_TOPIC_CONFIG_QUEUE_NUMS
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False
    #: Fields of other RocketMQ versions, written back unchanged.
    extra: dict[str, Any] = field(default_factory=dict)
    #: RocketMQ 5 topic attributes (real keys, e.g. ``message.type``), ``attributes`` in JSON.
    attributes: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The fastjson shape (camelCase keys; 5.x writes ``attributes`` even when empty)."""
        doc = dict(self.extra)
        doc.update(
            attributes=dict(self.attributes), order=self.order, perm=self.perm, readQueueNums=self.read_queue_nums,
            topicFilterType=self.topic_filter_type, topicName=self.topic_name,
            topicSysFlag=self.topic_sys_flag, writeQueueNums=self.write_queue_nums,
        )
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any], name: str | None = None) -> TopicConfig:
        """Parse a TopicConfig object; ``name`` (the table key) is used if topicName is absent."""
        if not isinstance(doc, dict):
            raise TypeError(f"topic config must be an object, got {type(doc).__name__}")
        topic = doc.get("topicName", name)
        if is_blank(topic):
            raise ValueError("topic config without topicName")
        return cls(
            topic_name=str(topic),
            read_queue_nums=int(doc.get("readQueueNums", DEFAULT_TOPIC_CONFIG_QUEUE_NUMS)),
            write_queue_nums=int(doc.get("writeQueueNums", DEFAULT_TOPIC_CONFIG_QUEUE_NUMS)),
            perm=int(doc.get("perm", PERM_READ | PERM_WRITE)),
            topic_filter_type=str(doc.get("topicFilterType", SINGLE_TAG)),
            topic_sys_flag=int(doc.get("topicSysFlag", 0)),
            order=bool(doc.get("order", False)),
            extra={k: v for k, v in doc.items() if k not in _KNOWN_FIELDS},
            attributes=_attributes_from_json(doc.get("attributes")),
        )


def _attributes_from_json(value: Any) -> dict[str, str]:
    """``Map<String, String>`` as fastjson reads it: null is empty, a non-string value becomes
    its JSON text; anything but an object is a bad entry (TypeError)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"topic attributes must be an object, got {type(value).__name__}")
    return {str(k): v if isinstance(v, str) else jsonutil.dumps(v).decode()
            for k, v in value.items() if v is not None}


class TopicConfigManager(ConfigManager):
    """Topic configs with RocketMQ's built-in system topics and auto-creation rules."""

    def __init__(
        self,
        path: str,
        clock=None,
        *,
        broker_name: str | None = None,
        broker_cluster_name: str = "DefaultCluster",
        auto_create_topic_enable: bool = True,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        cluster_topic_enable: bool = True,
        broker_topic_enable: bool = True,
        trace_topic_enable: bool = False,
        msg_trace_topic_name: str = RMQ_SYS_TRACE_TOPIC,
    ) -> None:
        """Defaults equal ``BrokerConfig``'s; ``broker_name`` defaults to the host name."""
        super().__init__(path)
        self.auto_create_topic_enable = auto_create_topic_enable
        self.data_version = DataVersion(clock_millis(clock))
        self.topic_config_table: dict[str, TopicConfig] = {}
        self.system_topics: set[str] = set()
        self._listeners: list[Callable[[TopicConfig], None]] = []
        broker_name = broker_name or socket.gethostname()

        def system(topic: str, queues: int | None = None, perm: int | None = None) -> None:
            tc = TopicConfig(topic)
            if queues is not None:
                tc.read_queue_nums = tc.write_queue_nums = queues
            if perm is not None:
                tc.perm = perm
            self.system_topics.add(topic)
            self.topic_config_table[topic] = tc

        # Same set and order as the TopicConfigManager(BrokerController) constructor in 4.9.
        system(RMQ_SYS_SELF_TEST_TOPIC, 1)
        if auto_create_topic_enable:
            system(AUTO_CREATE_TOPIC_KEY_TOPIC, default_topic_queue_nums,
                   PERM_INHERIT | PERM_READ | PERM_WRITE)
        system(RMQ_SYS_BENCHMARK_TOPIC, 1024)
        system(broker_cluster_name, None,
               PERM_INHERIT | (PERM_READ | PERM_WRITE if cluster_topic_enable else 0))
        system(broker_name, 1,
               PERM_INHERIT | (PERM_READ | PERM_WRITE if broker_topic_enable else 0))
        system(RMQ_SYS_OFFSET_MOVED_EVENT, 1)
        system(RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM)
        if trace_topic_enable:
            system(msg_trace_topic_name, 1)
        system(f"{broker_cluster_name}_{REPLY_TOPIC_POSTFIX}", 1)

    # --- JSON -------------------------------------------------------------------------------
    def encode(self) -> dict[str, Any]:
        """``TopicConfigSerializeWrapper``."""
        return self.build_topic_config_serialize_wrapper()

    def decode(self, doc: Any) -> None:
        """Merge the file's topics over the built-in ones and take its data version; a topic
        without a name or with a malformed field is skipped."""
        self.topic_config_table.update(
            self.decode_named_table(doc.get("topicConfigTable"), "topic", TopicConfig.from_json))
        self.assign_data_version(self.data_version, doc.get("dataVersion"))

    def build_topic_config_serialize_wrapper(self) -> dict[str, Any]:
        """The body of GET_ALL_TOPIC_CONFIG / the wrapper inside REGISTER_BROKER."""
        return {
            "dataVersion": self.data_version.to_json(),
            "topicConfigTable": {n: tc.to_json() for n, tc in self.topic_config_table.items()},
        }

    # --- change notification ----------------------------------------------------------------
    def add_change_listener(self, fn: Callable[[TopicConfig], None]) -> None:
        """Call ``fn(topic_config)`` after a topic is auto-created (Java re-registers the broker
        with the name servers at that point: ``registerBrokerAll``)."""
        self._listeners.append(fn)

    def _created(self, tc: TopicConfig) -> None:
        self.topic_config_table[tc.topic_name] = tc
        self.data_version.next_version()
        self.persist()
        for fn in list(self._listeners):
            try:
                fn(tc)
            except Exception:  # a listener's bug must not undo the creation
                log.exception("topic change listener failed for %s", tc.topic_name)

    # --- queries ----------------------------------------------------------------------------
    def select_topic_config(self, topic: str) -> TopicConfig | None:
        """The topic's config, or None."""
        return self.topic_config_table.get(topic)

    def is_order_topic(self, topic: str) -> bool:
        """``isOrderTopic``."""
        tc = self.topic_config_table.get(topic)
        return bool(tc and tc.order)

    def is_system_topic(self, topic: str) -> bool:
        """``TopicValidator.isSystemTopic``: a built-in topic or the ``rmq_sys_`` prefix."""
        return topic in self.system_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)

    # --- creation ---------------------------------------------------------------------------
    def create_topic_in_send_message_method(
        self,
        topic: str,
        default_topic: str,
        client_default_topic_queue_nums: int,
        topic_sys_flag: int = 0,
        remote_address: str = "",
    ) -> TopicConfig | None:
        """Auto-create ``topic`` from ``default_topic`` on first send (``createTopicInSendMessageMethod``).

        Needs the default topic to carry PERM_INHERIT; the new topic gets
        ``min(client_default_topic_queue_nums, default.writeQueueNums)`` queues and the default's
        perm without INHERIT. Returns None (logged) when creation is not allowed.
        """
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        default = self.topic_config_table.get(default_topic)
        if default is None:
            log.warning("create new topic %s failed: default topic %s does not exist "
                        "(producer %s)", topic, default_topic, remote_address)
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self.auto_create_topic_enable:
            # Java resets TBW102's perm to RW here, which drops INHERIT and so forbids creation.
            default.perm = PERM_READ | PERM_WRITE
        if not is_inherited(default.perm):
            log.warning("create new topic %s failed: default topic %s has perm %d without "
                        "INHERIT (producer %s)", topic, default_topic, default.perm,
                        remote_address)
            return None
        queue_nums = max(min(client_default_topic_queue_nums, default.write_queue_nums), 0)
        tc = TopicConfig(
            topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums,
            perm=default.perm & ~PERM_INHERIT, topic_filter_type=default.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("create new topic %s by default topic %s for producer %s: %s",
                 topic, default_topic, remote_address, tc)
        self._created(tc)
        return tc

    def create_topic_in_send_message_back_method(
        self, topic: str, client_default_topic_queue_nums: int, perm: int, topic_sys_flag: int = 0
    ) -> TopicConfig:
        """Create ``topic`` with the given queues and perm unless it exists
        (``createTopicInSendMessageBackMethod``; retry, DLQ and transaction half topics)."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        tc = TopicConfig(
            topic, read_queue_nums=client_default_topic_queue_nums,
            write_queue_nums=client_default_topic_queue_nums, perm=perm,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("create new topic %s", tc)
        self._created(tc)
        return tc

    def create_topic_of_retry(
        self, group: str, retry_queue_nums: int = 1, topic_sys_flag: int = 0
    ) -> TopicConfig:
        """``%RETRY%<group>`` with ``retryQueueNums`` queues (default 1), perm RW."""
        return self.create_topic_in_send_message_back_method(
            retry_topic(group), retry_queue_nums, PERM_READ | PERM_WRITE, topic_sys_flag
        )

    def create_topic_of_dlq(self, group: str, perm: int = PERM_WRITE) -> TopicConfig:
        """``%DLQ%<group>``, 1 queue; 4.9 creates it write-only (5.x: ``PERM_WRITE | PERM_READ``)."""
        return self.create_topic_in_send_message_back_method(
            dlq_topic(group), DLQ_NUMS_PER_GROUP, perm, 0
        )

    def create_topic_of_tran_check_max_time(self, queue_nums: int, perm: int) -> TopicConfig:
        """``TRANS_CHECK_MAX_TIME_TOPIC`` (``createTopicOfTranCheckMaxTime``)."""
        return self.create_topic_in_send_message_back_method(
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, queue_nums, perm, 0
        )

    # --- admin ------------------------------------------------------------------------------
    def update_topic_config(self, tc: TopicConfig,
                            modification: Mapping[str, str] | None = None) -> None:
        """Create or replace a topic (UPDATE_AND_CREATE_TOPIC) and persist.

        As 5.x ``updateTopicConfig``: ``tc.attributes`` becomes the current attributes (none for
        a new topic) with ``modification`` (``parse_to_map`` of ``+k=v,-k``) applied, so an
        update without one keeps them. Raises
        :class:`~rocketmq_emu.broker.topic_attributes.AttributeRequestError`, changing nothing,
        if the modification is refused.
        """
        old = self.topic_config_table.get(tc.topic_name)
        tc.attributes = alter_current_attributes(
            old is None, old.attributes if old is not None else {}, modification or {})
        self.topic_config_table[tc.topic_name] = tc
        log.info("%s topic config %s", "update" if old else "create", tc)
        self.data_version.next_version()
        self.persist()

    def delete_topic_config(self, topic: str) -> bool:
        """Remove a topic and persist; False if it did not exist."""
        old = self.topic_config_table.pop(topic, None)
        if old is None:
            log.warning("delete topic config failed: %s does not exist", topic)
            return False
        log.info("deleted topic config %s", old)
        self.data_version.next_version()
        self.persist()
        return True

    def update_order_topic_config(self, order_topics: set[str]) -> None:
        """Set ``order`` from the name server's ORDER_TOPIC_CONFIG KV table
        (``updateOrderTopicConfig``)."""
        changed = False
        for name, tc in self.topic_config_table.items():
            want = name in order_topics
            if tc.order != want:
                tc.order = want
                changed = True
        if changed:
            self.data_version.next_version()
            self.persist()
