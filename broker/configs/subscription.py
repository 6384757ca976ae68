"""``config/subscriptionGroup.json`` (RocketMQ ``broker/subscription/SubscriptionGroupManager.java``).

File shape (``SubscriptionGroupWrapper``)::

    {"dataVersion": {"counter": 1, "timestamp": 1700000000000},
     "subscriptionGroupTable": {"group_a": {"brokerId": 0, "consumeBroadcastEnable": true,
        "consumeEnable": true, "consumeFromMinEnable": true, "groupName": "group_a",
        "notifyConsumerIdsChangedEnable": true, "retryMaxTimes": 16, "retryQueueNums": 1,
        "whichBrokerWhenConsumeSlowly": 1}}}

RocketMQ 5's ``consumeMessageOrderly``, ``groupRetryPolicy`` and ``attributes`` are first-class
(:attr:`SubscriptionGroupConfig.consume_message_orderly`, :attr:`~SubscriptionGroupConfig.group_retry_policy`,
:attr:`~SubscriptionGroupConfig.attributes`) and always written, as 5.x's fastjson writes them::

    "attributes": {}, "consumeMessageOrderly": false, "groupRetryPolicy": {"type": "CUSTOMIZED"}
    "groupRetryPolicy": {"exponentialRetryPolicy": {"initial": 5000, "max": 7200000,
                         "multiplier": 2}, "type": "EXPONENTIAL"}
    "groupRetryPolicy": {"customizedRetryPolicy": {"next": [1000, 5000]}, "type": "CUSTOMIZED"}

(``remoting/protocol/subscription/{SubscriptionGroupConfig,GroupRetryPolicy,
ExponentialRetryPolicy,CustomizedRetryPolicy}.java``: a null policy object is not written, the
enum is written by name, ``getRetryPolicy`` is not serialized.) A 4.x broker reading such a file
ignores these keys. Other fields (5.x ``groupSysFlag``, ``consumeTimeoutMinute``,
``subscriptionDataSet``, ...) are kept as they were read, in :attr:`SubscriptionGroupConfig.extra`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.configs.base import ConfigManager, DataVersion, clock_millis, is_blank
from rocketmq_emu.broker.topic_attributes import Attribute, alter_current_attributes

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
    "consumeMessageOrderly": ("consume_message_orderly", False),
    "notifyConsumerIdsChangedEnable": ("notify_consumer_ids_changed_enable", True),
    "retryMaxTimes": ("retry_max_times", 16),
    "retryQueueNums": ("retry_queue_nums", 1),
    "whichBrokerWhenConsumeSlowly": ("which_broker_when_consume_slowly", 1),
}
#: JSON names parsed into objects of their own (not plain scalars).
_OBJECT_FIELDS = ("groupName", "groupRetryPolicy", "attributes")

#: ``common/SubscriptionGroupAttributes.ALL``: empty in RocketMQ 5, so every ``+k=v`` / ``-k``
#: a request carries is refused (``unsupported key: k``) and a group keeps the attributes it has.
SUBSCRIPTION_GROUP_ATTRIBUTES: dict[str, Attribute] = {}

# GroupRetryPolicyType, in declaration order (fastjson also reads an enum by ordinal).
RETRY_POLICY_EXPONENTIAL = "EXPONENTIAL"
RETRY_POLICY_CUSTOMIZED = "CUSTOMIZED"
_RETRY_POLICY_TYPES = (RETRY_POLICY_EXPONENTIAL, RETRY_POLICY_CUSTOMIZED)

_SECOND_MS = 1000
_MINUTE_MS = 60 * _SECOND_MS
#: ``CustomizedRetryPolicy``'s default ``next``: 1s 5s 10s 30s 1m..10m 20m 30m 1h 2h (the
#: 4.x ``messageDelayLevel`` table in milliseconds).
DEFAULT_CUSTOMIZED_NEXT_MS: tuple[int, ...] = (
    1 * _SECOND_MS, 5 * _SECOND_MS, 10 * _SECOND_MS, 30 * _SECOND_MS,
    *(m * _MINUTE_MS for m in range(1, 11)), 20 * _MINUTE_MS, 30 * _MINUTE_MS,
    60 * _MINUTE_MS, 120 * _MINUTE_MS,
)


def _java_bool(value: Any) -> bool:
    """A JSON boolean as fastjson reads one (also ``"true"``/``"false"`` and 0/1)."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _scalar(default: Any, value: Any) -> Any:
    """Convert a JSON value to the type of ``default`` (bool or int)."""
    return _java_bool(value) if isinstance(default, bool) else int(value)


@dataclass
class CustomizedRetryPolicy:
    """``CustomizedRetryPolicy``: a fixed backoff table in milliseconds (``{"next": [...]}``)."""

    next: list[int] = field(default_factory=lambda: list(DEFAULT_CUSTOMIZED_NEXT_MS))
    extra: dict[str, Any] = field(default_factory=dict)

    def next_delay_ms(self, reconsume_times: int) -> int:
        """``nextDelayDuration``: ``next[reconsumeTimes + 2]`` (the old delay levels start at 3),
        clamped to the table's last entry; negative times count as 0."""
        index = min(max(reconsume_times, 0) + 2, len(self.next) - 1)
        return self.next[index]

    def to_json(self) -> dict[str, Any]:
        """``{"next": [ms, ...]}``."""
        return {**self.extra, "next": list(self.next)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> CustomizedRetryPolicy:
        """Parse one policy; a missing or null ``next`` keeps the default table."""
        if not isinstance(doc, dict):
            raise TypeError(f"customizedRetryPolicy must be an object, got {type(doc).__name__}")
        policy = cls(extra={k: v for k, v in doc.items() if k != "next"})
        if doc.get("next") is not None:
            policy.next = [int(v) for v in doc["next"]]
        return policy

    def java_str(self) -> str:
        """``toString()`` (Guava ``toStringHelper``, the array printed by value)."""
        return f"CustomizedRetryPolicy{{next=[{', '.join(str(v) for v in self.next)}]}}"


@dataclass
class ExponentialRetryPolicy:
    """``ExponentialRetryPolicy``: ``min(max, initial * multiplier ** reconsumeTimes)`` ms."""

    initial: int = 5 * _SECOND_MS
    max: int = 120 * _MINUTE_MS
    multiplier: int = 2
    extra: dict[str, Any] = field(default_factory=dict)

    def next_delay_ms(self, reconsume_times: int) -> int:
        """``nextDelayDuration``: reconsume times clamped to ``[0, 32]``."""
        times = min(max(reconsume_times, 0), 32)
        return min(self.max, self.initial * self.multiplier ** times)

    def to_json(self) -> dict[str, Any]:
        """``{"initial": ms, "max": ms, "multiplier": n}``."""
        return {**self.extra, "initial": self.initial, "max": self.max,
                "multiplier": self.multiplier}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ExponentialRetryPolicy:
        """Parse one policy; missing fields take the defaults (5 s, 2 h, 2)."""
        if not isinstance(doc, dict):
            raise TypeError(f"exponentialRetryPolicy must be an object, got {type(doc).__name__}")
        policy = cls(extra={k: v for k, v in doc.items()
                            if k not in ("initial", "max", "multiplier")})
        for name in ("initial", "max", "multiplier"):
            if doc.get(name) is not None:
                setattr(policy, name, int(doc[name]))
        return policy

    def java_str(self) -> str:
        """``toString()``."""
        return (f"ExponentialRetryPolicy{{initial={self.initial}, max={self.max}, "
                f"multiplier={self.multiplier}}}")


RetryPolicy = CustomizedRetryPolicy | ExponentialRetryPolicy


@dataclass
class GroupRetryPolicy:
    """``GroupRetryPolicy``: which backoff a group's retries use.

    ``type`` is ``"CUSTOMIZED"`` (default) or ``"EXPONENTIAL"``, or None when the JSON named
    neither (fastjson reads an unknown enum name as null and then does not write it). The policy
    objects are None unless set; :meth:`retry_policy` gives the one in effect.
    """

    type: str | None = RETRY_POLICY_CUSTOMIZED
    exponential_retry_policy: ExponentialRetryPolicy | None = None
    customized_retry_policy: CustomizedRetryPolicy | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def retry_policy(self) -> RetryPolicy:
        """``getRetryPolicy()`` (and the proxy's choice for the gRPC Settings' backoff): the
        exponential policy for EXPONENTIAL, else the customized one; a default policy of that
        kind when the object is not set (a default customized one for an unknown type)."""
        if self.type == RETRY_POLICY_EXPONENTIAL:
            return self.exponential_retry_policy or ExponentialRetryPolicy()
        return self.customized_retry_policy or CustomizedRetryPolicy()

    def to_json(self) -> dict[str, Any]:
        """The fastjson shape: null members are left out."""
        doc = dict(self.extra)
        if self.customized_retry_policy is not None:
            doc["customizedRetryPolicy"] = self.customized_retry_policy.to_json()
        if self.exponential_retry_policy is not None:
            doc["exponentialRetryPolicy"] = self.exponential_retry_policy.to_json()
        if self.type is not None:
            doc["type"] = self.type
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> GroupRetryPolicy:
        """Parse ``groupRetryPolicy`` (``-p`` of mqadmin ``updateSubGroup`` takes the same JSON).

        A missing ``type`` is CUSTOMIZED (the field's initial value); an explicit null or an
        unknown name is None; an integer is the enum's ordinal."""
        if not isinstance(doc, dict):
            raise TypeError(f"groupRetryPolicy must be an object, got {type(doc).__name__}")
        known = ("type", "exponentialRetryPolicy", "customizedRetryPolicy")
        policy = cls(extra={k: v for k, v in doc.items() if k not in known})
        if "type" in doc:
            policy.type = _retry_policy_type(doc["type"])
        if doc.get("exponentialRetryPolicy") is not None:
            policy.exponential_retry_policy = ExponentialRetryPolicy.from_json(
                doc["exponentialRetryPolicy"])
        if doc.get("customizedRetryPolicy") is not None:
            policy.customized_retry_policy = CustomizedRetryPolicy.from_json(
                doc["customizedRetryPolicy"])
        return policy

    def java_str(self) -> str:
        """``toString()`` (null members printed as ``null``)."""
        def member(p: RetryPolicy | None) -> str:
            return "null" if p is None else p.java_str()
        return (f"GroupRetryPolicy{{type={self.type}, "
                f"exponentialRetryPolicy={member(self.exponential_retry_policy)}, "
                f"customizedRetryPolicy={member(self.customized_retry_policy)}}}")


def _retry_policy_type(value: Any) -> str | None:
    """A ``GroupRetryPolicyType`` from JSON: its name, or its ordinal; anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return _RETRY_POLICY_TYPES[value] if 0 <= value < len(_RETRY_POLICY_TYPES) else None
    if isinstance(value, str) and value in _RETRY_POLICY_TYPES:
        return value
    return None


@dataclass(frozen=True)
class RetryBackoff:
    """The backoff a group's retry policy gives, as RocketMQ 5's proxy puts it in the gRPC
    ``Settings.backoff_policy`` (``GrpcClientSettingsManager``): ``max_attempts`` is
    ``retryMaxTimes + 1``; exactly one of ``customized_next_ms`` (CustomizedBackoff.next) or
    ``exponential`` (ExponentialBackoff ``(initial_ms, max_ms, multiplier)``) is set."""

    max_attempts: int
    customized_next_ms: tuple[int, ...] | None = None
    exponential: tuple[int, int, int] | None = None


def is_sys_consumer_group(group: str) -> bool:
    """``MixAll.isSysConsumerGroup``."""
    return group.startswith(CID_RMQ_SYS_PREFIX)


@dataclass
class SubscriptionGroupConfig:
    """``SubscriptionGroupConfig`` (``remoting/protocol/subscription`` in RocketMQ 5) with its
    defaults."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    group_retry_policy: GroupRetryPolicy = field(default_factory=GroupRetryPolicy)
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    attributes: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def retry_backoff(self) -> RetryBackoff:
        """The group's retry backoff for the 5.x Settings (see :class:`RetryBackoff`)."""
        policy = self.group_retry_policy.retry_policy()
        if isinstance(policy, ExponentialRetryPolicy):
            return RetryBackoff(self.retry_max_times + 1,
                                exponential=(policy.initial, policy.max, policy.multiplier))
        return RetryBackoff(self.retry_max_times + 1, customized_next_ms=tuple(policy.next))

    def to_json(self) -> dict[str, Any]:
        """The fastjson shape (RocketMQ 5's, ``attributes`` and ``groupRetryPolicy`` always)."""
        doc = dict(self.extra)
        doc["groupName"] = self.group_name
        for json_name, (attr, _default) in _FIELDS.items():
            doc[json_name] = getattr(self, attr)
        doc["groupRetryPolicy"] = self.group_retry_policy.to_json()
        doc["attributes"] = dict(self.attributes)
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any], name: str | None = None) -> SubscriptionGroupConfig:
        """Parse one config; missing fields take RocketMQ's defaults (a null
        ``groupRetryPolicy`` or ``attributes`` too)."""
        if not isinstance(doc, dict):
            raise TypeError(f"subscription group must be an object, got {type(doc).__name__}")
        group = doc.get("groupName", name)
        if is_blank(group):
            raise ValueError("subscription group without groupName")
        cfg = cls(str(group))
        for json_name, (attr, default) in _FIELDS.items():
            if doc.get(json_name) is not None:
                setattr(cfg, attr, _scalar(default, doc[json_name]))
        if doc.get("groupRetryPolicy") is not None:
            cfg.group_retry_policy = GroupRetryPolicy.from_json(doc["groupRetryPolicy"])
        attributes = doc.get("attributes")
        if attributes is not None:
            if not isinstance(attributes, dict):
                raise TypeError(f"attributes must be an object, got {type(attributes).__name__}")
            cfg.attributes = {str(k): "" if v is None else str(v) for k, v in attributes.items()}
        cfg.extra = {k: v for k, v in doc.items() if k not in _FIELDS and k not in _OBJECT_FIELDS}
        return cfg

    def java_str(self) -> str:
        """``toString()``, as mqadmin ``updateSubGroup`` prints the config it sent; 5.x fields
        kept in :attr:`extra` print their JSON value, or the Java default when absent."""
        def flag(value: bool) -> str:
            return "true" if value else "false"

        def extra(name: str, default: str) -> str:
            value = self.extra.get(name)
            if value is None:
                return default
            return flag(value) if isinstance(value, bool) else str(value)

        attributes = "{" + ", ".join(f"{k}={v}" for k, v in self.attributes.items()) + "}"
        return (
            f"SubscriptionGroupConfig{{groupName={self.group_name}, "
            f"consumeEnable={flag(self.consume_enable)}, "
            f"consumeFromMinEnable={flag(self.consume_from_min_enable)}, "
            f"consumeBroadcastEnable={flag(self.consume_broadcast_enable)}, "
            f"consumeMessageOrderly={flag(self.consume_message_orderly)}, "
            f"retryQueueNums={self.retry_queue_nums}, retryMaxTimes={self.retry_max_times}, "
            f"groupRetryPolicy={self.group_retry_policy.java_str()}, brokerId={self.broker_id}, "
            f"whichBrokerWhenConsumeSlowly={self.which_broker_when_consume_slowly}, "
            f"notifyConsumerIdsChangedEnable={flag(self.notify_consumer_ids_changed_enable)}, "
            f"groupSysFlag={extra('groupSysFlag', '0')}, "
            f"consumeTimeoutMinute={extra('consumeTimeoutMinute', '15')}, "
            f"subscriptionDataSet={extra('subscriptionDataSet', 'null')}, "
            f"attributes={attributes}}}"
        )


def alter_group_attributes(create: bool, current: Mapping[str, str],
                           modification: Mapping[str, str]) -> dict[str, str]:
    """A group's attributes after a request's ``attributes`` (a ``+k=v`` / ``-k`` modification,
    as mqadmin's ``--attributes`` sends it) is applied (``SubscriptionGroupManager.
    updateSubscriptionGroupConfigWithoutPersist``). With RocketMQ 5's empty
    :data:`SUBSCRIPTION_GROUP_ATTRIBUTES` an empty modification keeps ``current`` and any key is
    refused; raises :class:`~rocketmq_emu.broker.topic_attributes.AttributeRequestError`."""
    return alter_current_attributes(create, current, modification, SUBSCRIPTION_GROUP_ATTRIBUTES)


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

        ``cfg.attributes`` is the request's modification (``+k=v`` / ``-k``): the stored
        group gets :func:`alter_group_attributes` of it over the old group's attributes, as
        RocketMQ 5 does. Raises ValueError for a blank name (it could not be loaded again) and
        :class:`~rocketmq_emu.broker.topic_attributes.AttributeRequestError` (a ValueError) for a
        refused modification; nothing changes then."""
        if is_blank(cfg.group_name):
            raise ValueError("the specified group is blank")
        old = self.subscription_group_table.get(cfg.group_name)
        cfg.attributes = alter_group_attributes(
            old is None, old.attributes if old is not None else {}, cfg.attributes)
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
