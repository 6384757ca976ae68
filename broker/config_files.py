"""RocketMQ's JSON config files under ``{storePathRootDir}/config/`` (protocol.md §5.1, §3.8).

One import point for the store facade and the processors; the code lives in ``broker/configs/``:

* ``topics.json``            -> :class:`TopicConfigManager` (``TopicConfigSerializeWrapper``)
* ``consumerOffset.json``    -> :class:`ConsumerOffsetManager` (``{"offsetTable":{"topic@group":{qid:offset}}}``)
* ``delayOffset.json``       -> :class:`DelayOffsetManager` (``{"offsetTable":{level:offset}}``)
* ``subscriptionGroup.json`` -> :class:`SubscriptionGroupManager` (``SubscriptionGroupWrapper``)

Every manager has ``load() -> bool`` (falls back to ``<file>.bak`` when the file is corrupt; skips
a bad entry with a warning) and
``persist() -> bool`` (tmp + fsync + rename, previous content kept in ``.bak``).
"""

from __future__ import annotations

from rocketmq_emu.broker.configs.base import (
    CONSUMER_OFFSET_JSON,
    DELAY_OFFSET_JSON,
    SUBSCRIPTION_GROUP_JSON,
    TOPICS_JSON,
    ConfigFileError,
    ConfigManager,
    DataVersion,
    config_file_path,
)
from rocketmq_emu.broker.configs.offsets import (
    TOPIC_GROUP_SEPARATOR,
    ConsumerOffsetManager,
    DelayOffsetManager,
)
from rocketmq_emu.broker.configs.subscription import (
    SubscriptionGroupConfig,
    SubscriptionGroupManager,
    is_sys_consumer_group,
)
from rocketmq_emu.broker.configs.topics import (
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_WRITE,
    TopicConfig,
    TopicConfigManager,
    dlq_topic,
    is_inherited,
    is_readable,
    is_writeable,
    retry_topic,
)

__all__ = [
    "CONSUMER_OFFSET_JSON", "DELAY_OFFSET_JSON", "SUBSCRIPTION_GROUP_JSON", "TOPICS_JSON",
    "ConfigFileError", "ConfigManager", "DataVersion", "config_file_path",
    "TOPIC_GROUP_SEPARATOR", "ConsumerOffsetManager", "DelayOffsetManager",
    "SubscriptionGroupConfig", "SubscriptionGroupManager", "is_sys_consumer_group",
    "PERM_INHERIT", "PERM_PRIORITY", "PERM_READ", "PERM_WRITE", "TopicConfig",
    "TopicConfigManager", "dlq_topic", "is_inherited", "is_readable", "is_writeable",
    "retry_topic", "open_config_managers", "TOPIC_OPTION_NAMES",
]


#: BrokerConfig attributes (same names) that shape the built-in topics and groups.
TOPIC_OPTION_NAMES = (
    "broker_name", "broker_cluster_name", "auto_create_topic_enable", "default_topic_queue_nums",
    "cluster_topic_enable", "broker_topic_enable", "trace_topic_enable", "msg_trace_topic_name",
)


def open_config_managers(
    store_root: str, clock=None, broker_config=None, **topic_options
) -> dict[str, ConfigManager]:
    """Create and load the four managers of a store.

    ``broker_config`` (a :class:`rocketmq_emu.broker.config.BrokerConfig`, optional) supplies the
    :data:`TOPIC_OPTION_NAMES` settings and ``auto_create_subscription_group``; explicit
    ``topic_options`` override it.

    Returns ``{"topic_config", "consumer_offsets", "delay_offsets", "subscription_groups"}``;
    raises :class:`ConfigFileError` (one line naming the file and why) when a file and its backup
    are both unusable. A bad entry inside a file is skipped with a warning, not an error.
    """
    options = {}
    if broker_config is not None:
        options = {n: getattr(broker_config, n) for n in TOPIC_OPTION_NAMES
                   if hasattr(broker_config, n)}
    options.update(topic_options)
    auto_sub = getattr(broker_config, "auto_create_subscription_group", True)
    managers: dict[str, ConfigManager] = {
        "topic_config": TopicConfigManager(
            config_file_path(store_root, TOPICS_JSON), clock, **options
        ),
        "consumer_offsets": ConsumerOffsetManager(
            config_file_path(store_root, CONSUMER_OFFSET_JSON)
        ),
        "delay_offsets": DelayOffsetManager(config_file_path(store_root, DELAY_OFFSET_JSON)),
        "subscription_groups": SubscriptionGroupManager(
            config_file_path(store_root, SUBSCRIPTION_GROUP_JSON), clock,
            auto_create_subscription_group=auto_sub,
        ),
    }
    for m in managers.values():
        if not m.load():
            raise ConfigFileError(m.load_error
                                  or f"{m.path}: neither the file nor {m.bak_path} can be loaded")
    return managers
