"""What every request processor shares: the broker's settings, store, registries and clock.

Java processors hold the ``BrokerController``; ours hold a :class:`BrokerContext`, which the
controller builds and unit tests build directly around a real store and a ``task.Clock``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.client_manager import (
    ConsumerManager,
    ProducerManager,
    RebalanceLockManager,
)
from rocketmq_emu.broker.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL, DelayLevels
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

log = logging.getLogger(__name__)


@dataclass
class BrokerStats:
    """Counters behind GET_BROKER_RUNTIME_INFO (``BrokerStatsManager`` / ``StoreStatsService``)."""

    put_total: int = 0
    get_total: int = 0
    put_size_total: int = 0
    put_by_topic: dict[str, int] = field(default_factory=dict)
    get_by_group_topic: dict[tuple[str, str], int] = field(default_factory=dict)

    def on_put(self, topic: str, count: int, size: int) -> None:
        """Count stored messages."""
        self.put_total += count
        self.put_size_total += size
        self.put_by_topic[topic] = self.put_by_topic.get(topic, 0) + count

    def on_get(self, group: str, topic: str, count: int) -> None:
        """Count messages returned to a pull."""
        self.get_total += count
        key = (group, topic)
        self.get_by_group_topic[key] = self.get_by_group_topic.get(key, 0) + count


class BrokerContext:
    """Shared state of the broker's processors.

    ``config`` is a :class:`rocketmq_emu.broker.config.BrokerConfig` (any object with its snake_case fields
    works); ``store`` the :class:`rocketmq_emu.broker.store.MessageStore`; ``clock`` an ``IReactorTime``.
    ``store_host`` is ``(brokerIP1, listenPort)``: written as STOREHOSTADDRESS and encoded in
    every offset msgId. The four config-file managers are taken from the store unless given.
    """

    def __init__(
        self,
        config: Any,
        store: Any,
        clock: Any,
        store_host: tuple[str, int],
        *,
        topic_config: Any = None,
        consumer_offsets: Any = None,
        subscription_groups: Any = None,
        delay_offsets: Any = None,
        liveness_clock: Any = None,
    ) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        #: Client channels and queue locks expire on this clock (defaults to ``clock``); the
        #: test harness keeps it on the reactor while business time is a controllable clock.
        self.liveness_clock = liveness_clock if liveness_clock is not None else clock
        self.store_host = store_host
        self.topic_config = topic_config if topic_config is not None else store.topic_config
        self.consumer_offsets = (
            consumer_offsets if consumer_offsets is not None else store.consumer_offsets
        )
        self.subscription_groups = (
            subscription_groups if subscription_groups is not None
            else store.subscription_groups
        )
        self.delay_offsets = (
            delay_offsets if delay_offsets is not None else getattr(store, "delay_offsets", None)
        )
        self.delay_levels = DelayLevels.parse(
            getattr(config, "message_delay_level", None) or DEFAULT_MESSAGE_DELAY_LEVEL
        )
        self.consumer_manager = ConsumerManager(self.liveness_clock, self._on_consumer_change)
        self.producer_manager = ProducerManager(self.liveness_clock)
        self.lock_manager = RebalanceLockManager(self.liveness_clock)
        self.stats = BrokerStats()
        #: Set by the controller: the pull long-polling service.
        self.hold_service: Any = None
        #: Set by the controller: the arbitrary-time timer service (or None).
        self.timer_service: Any = None
        #: Set by the admin stats processor: its ``BrokerStatsItems`` (the 10 s snapshots).
        self.stats_items: Any = None
        #: ``(client, field)`` pairs already warned about (header misreads).
        self.warned: set[tuple[str, str]] = set()
        #: Broker start time (ms) for GET_BROKER_RUNTIME_INFO ``bootTimestamp``.
        self.boot_timestamp = self.now_ms()
        #: Extra hooks run on consumer membership change: ``fn(event, group, channels)``.
        self.consumer_change_hooks: list[Callable[[str, str, list[Any]], None]] = []

    # --- identity --------------------------------------------------------------------------
    @property
    def broker_addr(self) -> str:
        """``brokerIP1:listenPort``."""
        return f"{self.store_host[0]}:{self.store_host[1]}"

    @property
    def broker_name(self) -> str:
        return getattr(self.config, "broker_name", "broker-a")

    @property
    def cluster_name(self) -> str:
        return getattr(self.config, "broker_cluster_name", "DefaultCluster")

    @property
    def broker_id(self) -> int:
        return int(getattr(self.config, "broker_id", 0))

    def now_ms(self) -> int:
        """The clock in ms (store timestamps use the same)."""
        return int(self.clock.seconds() * 1000)

    def setting(self, name: str, default: Any) -> Any:
        """A config value, tolerating config objects that lack it."""
        return getattr(self.config, name, default)

    # --- warnings --------------------------------------------------------------------------
    def warn_once(self, client: str, what: str, message: str, *args: Any) -> None:
        """Log a warning the first time ``client`` does ``what``."""
        key = (client, what)
        if key in self.warned:
            return
        self.warned.add(key)
        log.warning(message, *args)

    # --- consumer membership ---------------------------------------------------------------
    def _on_consumer_change(self, event: str, group: str, channels: list[Any]) -> None:
        # DefaultConsumerIdsChangeListener: CHANGE -> NOTIFY_CONSUMER_IDS_CHANGED to each channel.
        if event == "CHANGE" and self.setting("notify_consumer_ids_changed_enable", True):
            for channel in channels:
                notify_consumer_ids_changed(channel, group)
        for hook in list(self.consumer_change_hooks):
            try:
                hook(event, group, channels)
            except Exception:
                log.exception("consumer change hook failed")


def notify_consumer_ids_changed(channel: Any, group: str) -> None:
    """``Broker2Client.notifyConsumerIdsChanged``: a oneway request with header consumerGroup."""
    if getattr(channel, "closed", False):
        return
    cmd = RemotingCommand.request(
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}, oneway=True
    )
    try:
        channel.send_oneway(cmd)
    except Exception:
        log.exception("notifyConsumerIdsChanged to %s failed",
                      getattr(channel, "peer_addr", channel))
