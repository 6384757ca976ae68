"""Who is connected: consumer groups, producer groups and orderly-consumer queue locks.

Mirrors RocketMQ 4.9's ``broker/client/ConsumerManager.java``, ``ConsumerGroupInfo.java``,
``ProducerManager.java`` (queue locks: :mod:`rocketmq_emu.broker.rebalance_lock`).

State only: a "channel" is any hashable connection object (a ``RemotingProtocol`` in the broker),
time comes from an ``IReactorTime`` clock, and membership changes are reported through a callback
(the controller turns them into NOTIFY_CONSUMER_IDS_CHANGED requests). No sockets, no timers:
the controller calls :meth:`ConsumerManager.scan_not_active_channel` every 10 s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emu.broker.message import java_string_hash

log = logging.getLogger(__name__)

#: ``ClientHousekeepingService``/``ConsumerManager.CHANNEL_EXPIRED_TIMEOUT``: 120 s.
CHANNEL_EXPIRED_TIMEOUT_MS = 120_000

#: ``SubscriptionData.SUB_ALL``.
SUB_ALL = "*"
EXPRESSION_TYPE_TAG = "TAG"

# Enum ordinals as fastjson reads an integer into a Java enum (the C++ clients send integers;
# their enums have the same order: rocketmq-client-cpp include/ConsumeType.h).
CONSUME_TYPES = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP")
MESSAGE_MODELS = ("BROADCASTING", "CLUSTERING")
CONSUME_FROM_WHERE = (
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
)


def enum_name(value: Any, names: tuple[str, ...], default: str | None = None) -> str | None:
    """An enum given by name (Java, ali-ons) or by ordinal (C++ clients) as its name."""
    if value is None:
        return default
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return names[value] if 0 <= value < len(names) else default
    text = str(value)
    if text.lstrip("-").isdigit():
        return enum_name(int(text), names, default)
    return text


def _now_ms(clock: Any) -> int:
    return int(clock.seconds() * 1000)


# --- subscriptions ------------------------------------------------------------------------------
@dataclass
class SubscriptionData:
    """``common/protocol/heartbeat/SubscriptionData.java``."""

    topic: str
    sub_string: str = SUB_ALL
    tags_set: list[str] = field(default_factory=list)
    code_set: set[int] = field(default_factory=set)
    sub_version: int = 0
    expression_type: str = EXPRESSION_TYPE_TAG
    class_filter_mode: bool = False

    @classmethod
    def build(
        cls, topic: str, sub_string: str | None, expression_type: str | None = None,
        sub_version: int = 0,
    ) -> SubscriptionData:
        """``FilterAPI.build``: ``"*"``/empty subscribes to all, else tags split on ``||``."""
        expression_type = expression_type or EXPRESSION_TYPE_TAG
        sub = cls(topic=topic, sub_version=sub_version, expression_type=expression_type)
        if expression_type != EXPRESSION_TYPE_TAG:
            sub.sub_string = sub_string or ""
            return sub
        if not sub_string or sub_string.strip() == SUB_ALL:
            sub.sub_string = SUB_ALL
            return sub
        sub.sub_string = sub_string
        for tag in sub_string.split("||"):
            tag = tag.strip()
            if tag:
                sub.tags_set.append(tag)
                sub.code_set.add(java_string_hash(tag))
        return sub

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SubscriptionData:
        """Parse a heartbeat's SubscriptionData; a missing codeSet is computed from tagsSet."""
        tags = [str(t) for t in doc.get("tagsSet") or []]
        codes = doc.get("codeSet")
        code_set = {int(c) for c in codes} if codes else {java_string_hash(t) for t in tags}
        return cls(
            topic=str(doc.get("topic") or ""),
            sub_string=str(doc.get("subString") if doc.get("subString") is not None else SUB_ALL),
            tags_set=tags,
            code_set=code_set,
            sub_version=int(doc.get("subVersion") or 0),
            expression_type=str(doc.get("expressionType") or EXPRESSION_TYPE_TAG),
            class_filter_mode=bool(doc.get("classFilterMode") or False),
        )

    def to_json(self) -> dict[str, Any]:
        """fastjson shape (keys alphabetical)."""
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": sorted(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": list(self.tags_set),
            "topic": self.topic,
        }

    def matches_tags_code(self, tags_code: int | None) -> bool:
        """``ExpressionMessageFilter.isMatchedByConsumeQueue`` for TAG subscriptions.

        SQL92 and class filters are not evaluated by the emulator: they match everything.
        """
        if self.class_filter_mode or self.expression_type != EXPRESSION_TYPE_TAG:
            return True
        if tags_code is None or self.sub_string == SUB_ALL:
            return True
        return tags_code in self.code_set


# --- channels -----------------------------------------------------------------------------------
@dataclass(eq=False)
class ClientChannelInfo:
    """``ClientChannelInfo``: one client connection and when it last sent a heartbeat."""

    channel: Any
    client_id: str
    language: str = "JAVA"
    version: int = 0
    last_update_ms: int = 0

    @property
    def addr(self) -> str:
        """``host:port`` of the connection."""
        return getattr(self.channel, "peer_addr", str(self.channel))


ChangeListener = Callable[[str, str, list[Any]], None]
"""``fn(event, group, channels)``; event is ``"CHANGE"``, ``"REGISTER"`` or ``"UNREGISTER"``."""


@dataclass
class ConsumerGroupInfo:
    """``ConsumerGroupInfo``: a group's channels and subscriptions."""

    group_name: str
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    channel_info_table: dict[Any, ClientChannelInfo] = field(default_factory=dict)
    last_update_ms: int = 0

    def all_channels(self) -> list[Any]:
        """Every connection of the group."""
        return list(self.channel_info_table)

    def all_client_ids(self) -> list[str]:
        """Client ids in registration order."""
        return [info.client_id for info in self.channel_info_table.values()]

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        """The channel info of ``client_id``."""
        for info in self.channel_info_table.values():
            if info.client_id == client_id:
                return info
        return None

    def update_channel(
        self, info: ClientChannelInfo, consume_type: str | None, message_model: str | None,
        consume_from_where: str | None, now_ms: int,
    ) -> bool:
        """``updateChannel``: True when the connection is new to the group."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        updated = False
        old = self.channel_info_table.get(info.channel)
        if old is None:
            self.channel_info_table[info.channel] = info
            log.info("new consumer connected, group %s %s %s channel %s client %s",
                     self.group_name, consume_type, message_model, info.addr, info.client_id)
            updated = True
            old = info
        elif old.client_id != info.client_id:
            log.error("consumer channel exists in broker, but clientId differs: group %s "
                      "old %s new %s channel %s", self.group_name, old.client_id,
                      info.client_id, info.addr)
            self.channel_info_table[info.channel] = info
            old = info
        self.last_update_ms = now_ms
        old.last_update_ms = now_ms
        return updated

    def update_subscription(self, subs: Iterable[SubscriptionData], now_ms: int) -> bool:
        """``updateSubscription``: True when a topic was added or removed.

        A newer ``subVersion`` of an existing topic replaces it without counting as a change,
        exactly as ``ConsumerGroupInfo.updateSubscription`` does.
        """
        subs = list(subs)
        updated = False
        for sub in subs:
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                log.info("subscription changed, add new topic, group %s %s",
                         self.group_name, sub.topic)
                updated = True
            elif sub.sub_version > old.sub_version:
                if self.consume_type == "CONSUME_PASSIVELY":
                    log.info("subscription changed, group %s OLD %s NEW %s",
                             self.group_name, old.sub_string, sub.sub_string)
                self.subscription_table[sub.topic] = sub
        wanted = {sub.topic for sub in subs}
        for topic in [t for t in self.subscription_table if t not in wanted]:
            log.warning("subscription changed, group %s remove topic %s", self.group_name, topic)
            del self.subscription_table[topic]
            updated = True
        self.last_update_ms = now_ms
        return updated

    def unregister_channel(self, channel: Any) -> bool:
        """Remove a connection (UNREGISTER_CLIENT); True if it was there."""
        info = self.channel_info_table.pop(channel, None)
        if info is not None:
            log.info("unregister a consumer %s from consumerGroupInfo %s",
                     info.client_id, self.group_name)
        return info is not None


class ConsumerManager:
    """Consumer groups by name (``ConsumerManager``)."""

    def __init__(
        self,
        clock: Any,
        listener: ChangeListener | None = None,
        channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS,
    ) -> None:
        self.clock = clock
        self.listener = listener
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}

    def _fire(self, event: str, group: str, channels: list[Any]) -> None:
        if self.listener is None:
            return
        try:
            self.listener(event, group, channels)
        except Exception:
            log.exception("consumer ids change listener failed for %s %s", event, group)

    def get_consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        """The group's info or None."""
        return self.consumer_table.get(group)

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        """The group's subscription to ``topic`` (from heartbeats) or None."""
        info = self.consumer_table.get(group)
        return info.subscription_table.get(topic) if info else None

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        """The channel info of one client of a group."""
        info = self.consumer_table.get(group)
        return info.find_channel(client_id) if info else None

    def register_consumer(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: str | None,
        message_model: str | None,
        consume_from_where: str | None,
        subscriptions: Iterable[SubscriptionData],
        notify: bool = True,
    ) -> bool:
        """``registerConsumer``: True (and a CHANGE to every channel when ``notify``) when the
        group gained a connection or a topic changed."""
        now = _now_ms(self.clock)
        group_info = self.consumer_table.get(group)
        if group_info is None:
            group_info = ConsumerGroupInfo(group, consume_type, message_model, consume_from_where)
            self.consumer_table[group] = group_info
        r1 = group_info.update_channel(info, consume_type, message_model, consume_from_where, now)
        r2 = group_info.update_subscription(subscriptions, now)
        if (r1 or r2) and notify:
            self._fire("CHANGE", group, group_info.all_channels())
        self._fire("REGISTER", group, [])
        return r1 or r2

    def unregister_consumer(self, group: str, channel: Any, notify: bool = True) -> None:
        """``unregisterConsumer`` (UNREGISTER_CLIENT)."""
        group_info = self.consumer_table.get(group)
        if group_info is None:
            return
        group_info.unregister_channel(channel)
        if not group_info.channel_info_table:
            self.consumer_table.pop(group, None)
            log.info("unregister consumer ok, no any connection, and remove consumer group, %s",
                     group)
            self._fire("UNREGISTER", group, [])
        if notify:
            self._fire("CHANGE", group, group_info.all_channels())

    def do_channel_close_event(self, channel: Any) -> list[str]:
        """A connection closed: drop it from every group; returns the groups it left."""
        left = []
        for group, group_info in list(self.consumer_table.items()):
            info = group_info.channel_info_table.pop(channel, None)
            if info is None:
                continue
            log.info("NETTY EVENT: remove channel %s %s from ConsumerGroupInfo %s",
                     info.addr, info.client_id, group)
            left.append(group)
            if not group_info.channel_info_table:
                self.consumer_table.pop(group, None)
                log.info("unregister consumer ok, no any connection, and remove consumer "
                         "group, %s", group)
                self._fire("UNREGISTER", group, [])
            self._fire("CHANGE", group, group_info.all_channels())
        return left

    def scan_not_active_channel(self) -> list[ClientChannelInfo]:
        """Drop connections without a heartbeat for 120 s (``scanNotActiveChannel``).

        Returns the expired channel infos; the caller closes their connections. Unlike 4.9.8
        (which removes the channel silently, so its close event finds nothing to announce) the
        remaining members are told at once, so they rebalance without waiting 20 s.
        """
        now = _now_ms(self.clock)
        expired: list[ClientChannelInfo] = []
        for group, group_info in list(self.consumer_table.items()):
            gone = [
                info for info in group_info.channel_info_table.values()
                if now - info.last_update_ms > self.channel_expired_timeout_ms
            ]
            if not gone:
                continue
            for info in gone:
                log.warning("SCAN: remove expired channel from ConsumerManager consumerTable. "
                            "channel=%s, consumerGroup=%s client=%s", info.addr, group,
                            info.client_id)
                del group_info.channel_info_table[info.channel]
                expired.append(info)
            if not group_info.channel_info_table:
                log.warning("SCAN: remove expired channel from ConsumerManager consumerTable, "
                            "all clear, consumerGroup=%s", group)
                del self.consumer_table[group]
                self._fire("UNREGISTER", group, [])
            else:
                self._fire("CHANGE", group, group_info.all_channels())
        return expired

    def query_topic_consume_by_who(self, topic: str) -> set[str]:
        """Groups subscribed to ``topic`` (``queryTopicConsumeByWho``)."""
        return {g for g, info in self.consumer_table.items() if topic in info.subscription_table}


class ProducerManager:
    """Producer groups by name (``ProducerManager``): needed to reach a producer's connection."""

    def __init__(
        self, clock: Any, channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS
    ) -> None:
        self.clock = clock
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        self.group_channel_table: dict[str, dict[Any, ClientChannelInfo]] = {}

    def register_producer(self, group: str, info: ClientChannelInfo) -> None:
        """``registerProducer``: add or refresh a connection of ``group``."""
        channels = self.group_channel_table.setdefault(group, {})
        old = channels.get(info.channel)
        if old is None:
            channels[info.channel] = info
            log.info("new producer connected, group %s channel %s", group, info.addr)
            old = info
        old.last_update_ms = _now_ms(self.clock)

    def unregister_producer(self, group: str, channel: Any) -> None:
        """``unregisterProducer``."""
        channels = self.group_channel_table.get(group)
        if channels is None:
            return
        if channels.pop(channel, None) is not None:
            log.info("unregister a producer %s from groupChannelTable", group)
        if not channels:
            del self.group_channel_table[group]

    def do_channel_close_event(self, channel: Any) -> None:
        """A connection closed: forget it in every group."""
        for group in list(self.group_channel_table):
            self.unregister_producer(group, channel)

    def scan_not_active_channel(self) -> list[ClientChannelInfo]:
        """Drop connections without a heartbeat for 120 s; returns them."""
        now = _now_ms(self.clock)
        expired = []
        for group, channels in list(self.group_channel_table.items()):
            for channel, info in list(channels.items()):
                if now - info.last_update_ms > self.channel_expired_timeout_ms:
                    log.warning("SCAN: remove expired channel[%s] from ProducerManager "
                                "groupChannelTable, producer group name: %s", info.addr, group)
                    del channels[channel]
                    expired.append(info)
            if not channels:
                del self.group_channel_table[group]
        return expired

    def get_available_channel(self, group: str) -> Any | None:
        """A live connection of ``group`` (for broker→producer requests) or None."""
        for channel in self.group_channel_table.get(group, {}):
            if not getattr(channel, "closed", False):
                return channel
        return None

    def find_channel(self, client_id: str) -> Any | None:
        """The connection of a producer by client id (request-reply)."""
        for channels in self.group_channel_table.values():
            for channel, info in channels.items():
                if info.client_id == client_id and not getattr(channel, "closed", False):
                    return channel
        return None


# Re-exported: the lock table lives in broker.rebalance_lock.
from rocketmq_emu.broker.rebalance_lock import (  # noqa: E402
    REBALANCE_LOCK_MAX_LIVE_TIME_MS,
    LockEntry,
    MessageQueueKey,
    RebalanceLockManager,
    mq_from_json,
    mq_to_json,
)

__all__ = [
    "CHANNEL_EXPIRED_TIMEOUT_MS", "REBALANCE_LOCK_MAX_LIVE_TIME_MS", "ClientChannelInfo",
    "ConsumerGroupInfo", "ConsumerManager", "LockEntry", "MessageQueueKey", "ProducerManager",
    "RebalanceLockManager", "SubscriptionData", "enum_name", "mq_from_json", "mq_to_json",
]
