"""``config/subscriptionGroup.json`` (RocketMQ ``broker/subscription/SubscriptionGroupManager.java``).

File shape (``SubscriptionGroupWrapper``)::

    {"dataVersion": {"counter": 1, "timestamp": 1700000000000},
     "subscriptionGroupTable": {"group_a": {"brokerId": 0, "consumeBroadcastEnable": true,
        "consumeEnable": true, "consumeFromMinEnable": true, "groupName": "group_a",
        "notifyConsumerIdsChangedEnable": true, "retryMaxTimes": 16, "retryQueueNums": 1,
        "whichBrokerWhenConsumeSlowly": 1}}}

Fields of other RocketMQ versions (5.x ``groupSysFlag``, ``consumeTimeoutMinute``, ...) are kept.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.configs.base import ConfigManager, DataVersion, clock_millis, is_blank

log = logging.getLogger(__name__)

# common/MixAll.java
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
FILTERSRV_CONSUMER_GROUP = "FILTERSRV_CONSUMER"
SELF_TEST_CONSUMER_GROUP = "SELF_TEST_C_GROUP"
ONS_HTTP_PROXY_GROUP = "CID_ONS-HTTP-PROXY"
CID_ONSAPI_PULL_GROUP = "CID_ONSAPI_PULL"
CID_ONSAPI_PERMISSION_GROUP = "CID_ONSAPI_PERMISSION"
CID_ONSAPI_OWNER_GROUP = "CID_ONSAPI_OWNER"
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"

_FIELDS = {
    # JSON name: (attribute, default)
    "brokerId": ("broker_id", 0),
    "consumeBroadcastEnable": ("consume_broadcast_enable", True),
    "consumeEnable": ("consume_enable", True),
    "consumeFromMinEnable": ("consume_from_min_enable", True),
    "notifyConsumerIdsChangedEnable": ("notify_consumer_ids_changed_enable", True),
    "retryMaxTimes": ("retry_max_times", 16),
    "retryQueueNums": ("retry_queue_nums", 1),
    "whichBrokerWhenConsumeSlowly": ("which_broker_when_consume_slowly", 1),
}


def is_sys_consumer_group(group: str) -> bool:
    """``MixAll.isSysConsumerGroup``."""
    return group.startswith(CID_RMQ_SYS_PREFIX)


@dataclass
class SubscriptionGroupConfig:
    """``common/subscription/SubscriptionGroupConfig.java`` with its defaults."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The fastjson shape."""
        doc = dict(self.extra)
        doc["groupName"] = self.group_name
        for json_name, (attr, _default) in _FIELDS.items():
            doc[json_name] = getattr(self, attr)
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any], name: str | None = None) -> SubscriptionGroupConfig:
        """Parse one config; missing fields take RocketMQ's defaults."""
        if not isinstance(doc, dict):
            raise TypeError(f"subscription group must be an object, got {type(doc).__name__}")
        group = doc.get("groupName", name)
        if is_blank(group):
            raise ValueError("subscription group without groupName")
        cfg = cls(str(group))
        for json_name, (attr, default) in _FIELDS.items():
            if json_name in doc:
                setattr(cfg, attr, type(default)(doc[json_name]))
        cfg.extra = {k: v for k, v in doc.items() if k not in _FIELDS and k != "groupName"}
        return cfg


class SubscriptionGroupManager(ConfigManager):
    """Consumer group settings (retry queues, max retries, enable flags)."""

    def __init__(self, path: str, clock=None, *, auto_create_subscription_group: bool = True):
        super().__init__(path)
        self.auto_create_subscription_group = auto_create_subscription_group
        self.data_version = DataVersion(clock_millis(clock))
        self.subscription_group_table: dict[str, SubscriptionGroupConfig] = {}
        # SubscriptionGroupManager.init(): built-in groups.
        for group in (TOOLS_CONSUMER_GROUP, FILTERSRV_CONSUMER_GROUP, SELF_TEST_CONSUMER_GROUP):
            self.subscription_group_table[group] = SubscriptionGroupConfig(group)
        for group in (ONS_HTTP_PROXY_GROUP, CID_ONSAPI_PULL_GROUP, CID_ONSAPI_PERMISSION_GROUP,
                      CID_ONSAPI_OWNER_GROUP):
            self.subscription_group_table[group] = SubscriptionGroupConfig(
                group, consume_broadcast_enable=True
            )

    def encode(self) -> dict[str, Any]:
        """``SubscriptionGroupWrapper``."""
        return {
            "dataVersion": self.data_version.to_json(),
            "subscriptionGroupTable": {
                n: c.to_json() for n, c in self.subscription_group_table.items()
            },
        }

    def decode(self, doc: Any) -> None:
        """Merge the file's groups over the built-in ones and take its data version; a group
        without a name (RocketMQ 4.9.8 itself persists ``""``, see
        :meth:`find_subscription_group_config`) or with a malformed field is skipped."""
        self.subscription_group_table.update(self.decode_named_table(
            doc.get("subscriptionGroupTable"), "subscription group",
            SubscriptionGroupConfig.from_json))
        self.assign_data_version(self.data_version, doc.get("dataVersion"))

    def find_subscription_group_config(self, group: str | None) -> SubscriptionGroupConfig | None:
        """The group's config; created with defaults (and persisted) when auto-creation is on or
        the group is a ``CID_RMQ_SYS_`` system group, else None.

        A blank name never creates a group. 4.9.8's ``SubscriptionGroupManager`` would create and
        persist ``""`` (the C++ producers' UNREGISTER_CLIENT carries ``consumerGroup=""``); later
        RocketMQ versions check ``TopicValidator.validateGroup`` first and answer null, as here.
        Other names are not checked: 4.9.8 accepts any, and clients that skip
        ``Validators.checkGroup`` (the C++ ones) rely on it.
        """
        if is_blank(group):
            return None
        cfg = self.subscription_group_table.get(group)
        if cfg is None and (self.auto_create_subscription_group or is_sys_consumer_group(group)):
            cfg = SubscriptionGroupConfig(group)
            self.subscription_group_table[group] = cfg
            log.info("auto create a subscription group %s", cfg)
            self.data_version.next_version()
            self.persist()
        return cfg

    def update_subscription_group_config(self, cfg: SubscriptionGroupConfig) -> None:
        """Create or replace a group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) and persist.

        Raises ValueError for a blank name (it could not be loaded again)."""
        if is_blank(cfg.group_name):
            raise ValueError("the specified group is blank")
        old = self.subscription_group_table.get(cfg.group_name)
        self.subscription_group_table[cfg.group_name] = cfg
        log.info("%s subscription group %s", "update" if old else "create", cfg)
        self.data_version.next_version()
        self.persist()

    def disable_consume(self, group: str) -> None:
        """Set ``consumeEnable`` false (not persisted, as in Java)."""
        cfg = self.subscription_group_table.get(group)
        if cfg is not None:
            cfg.consume_enable = False
            self.data_version.next_version()

    def delete_subscription_group_config(self, group: str) -> bool:
        """Remove a group and persist; False if it did not exist."""
        old = self.subscription_group_table.pop(group, None)
        if old is None:
            log.warning("delete subscription group failed: %s does not exist", group)
            return False
        self.data_version.next_version()
        self.persist()
        return True
