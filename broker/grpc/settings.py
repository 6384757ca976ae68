"""Client settings of the 5.x SDKs (``GrpcClientSettingsManager``).

A client sends its ``Settings`` on the Telemetry stream; the server keeps them by client id and
answers with them merged with its own: for a producer the retry policy and publishing limits of
``ProxyConfig``, for a consumer its group's ``SubscriptionGroupConfig`` (FIFO, retry policy,
maxAttempts = retryMaxTimes + 1) and the long-polling settings.
"""

from __future__ import annotations

from typing import Any

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.convert import set_duration_ms
from rocketmq_emu.broker.grpc.validate import (
    LONG_POLLING_BATCH_SIZE,
    MAX_LONG_POLLING_MS,
    MAX_MESSAGE_SIZE,
)

# ProxyConfig producer defaults.
PRODUCER_MAX_ATTEMPTS = 3
PRODUCER_BACKOFF_INITIAL_MS = 10
PRODUCER_BACKOFF_MAX_MS = 1000
PRODUCER_BACKOFF_MULTIPLIER = 2
#: ``CustomizedRetryPolicy``'s default ``next``: 1s 5s 10s 30s 1m .. 10m 20m 30m 1h 2h.
DEFAULT_RETRY_NEXT_MS = (
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000,
    420_000, 480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
)
DEFAULT_RETRY_MAX_TIMES = 16


def _group_value(group_config: Any, attr: str, json_name: str, default: Any) -> Any:
    if group_config is None:
        return default
    if hasattr(group_config, attr):
        return getattr(group_config, attr)
    return getattr(group_config, "extra", {}).get(json_name, default)


def is_fifo_group(group_config: Any) -> bool:
    """``SubscriptionGroupConfig.isConsumeMessageOrderly``."""
    return bool(_group_value(group_config, "consume_message_orderly", "consumeMessageOrderly",
                             False))


def _retry_policy(group_config: Any) -> dict[str, Any]:
    policy = _group_value(group_config, "group_retry_policy", "groupRetryPolicy", None)
    if hasattr(policy, "to_json"):
        policy = policy.to_json()
    return policy if isinstance(policy, dict) else {"type": "CUSTOMIZED"}


class ClientSettingsManager:
    """Settings by client id; ``group_config(name)`` finds a subscription group's config
    (None if there is none)."""

    def __init__(self, group_config: Any) -> None:
        self._group_config = group_config
        self._settings: dict[str, Any] = {}

    def update(self, client_id: str, settings: Any) -> None:
        """``updateClientSettings``: keep what the client sent (a consumer's on top of the
        defaults of a group without config)."""
        if settings.HasField("subscription"):
            base = messages.message_class("Settings")()
            merge_subscription(base, None)
            base.MergeFrom(settings)
            settings = base
        self._settings[client_id] = settings

    def raw(self, client_id: str) -> Any:
        """What the client sent, or None."""
        return self._settings.get(client_id)

    def get(self, client_id: str) -> Any:
        """``getClientSettings``: the client's settings merged with the server's, or None."""
        raw = self._settings.get(client_id)
        return None if raw is None else self._merged(raw)

    def remove(self, client_id: str) -> Any:
        """``removeAndGetClientSettings``."""
        raw = self._settings.pop(client_id, None)
        return None if raw is None else self._merged(raw)

    def clients(self) -> list[str]:
        """Client ids with settings."""
        return list(self._settings)

    def _merged(self, raw: Any) -> Any:
        settings = messages.message_class("Settings")()
        settings.CopyFrom(raw)
        if settings.HasField("publishing"):
            merge_producer(settings)
        elif settings.HasField("subscription"):
            group = settings.subscription.group.name
            config = self._group_config(group)
            if config is not None:
                merge_subscription(settings, config)
        settings.metric.on = False
        return settings


def merge_producer(settings: Any) -> None:
    """``mergeProducerData``: ProxyConfig's retry policy and publishing limits."""
    backoff = settings.backoff_policy
    backoff.max_attempts = PRODUCER_MAX_ATTEMPTS
    exp = backoff.exponential_backoff
    set_duration_ms(exp.initial, PRODUCER_BACKOFF_INITIAL_MS)
    set_duration_ms(exp.max, PRODUCER_BACKOFF_MAX_MS)
    exp.multiplier = PRODUCER_BACKOFF_MULTIPLIER
    settings.publishing.validate_message_type = True
    settings.publishing.max_body_size = MAX_MESSAGE_SIZE


def merge_subscription(settings: Any, group_config: Any) -> None:
    """``mergeSubscriptionData``: the group's FIFO flag and retry policy (None: a default
    ``SubscriptionGroupConfig``) and the long-polling settings."""
    sub = settings.subscription
    sub.receive_batch_size = LONG_POLLING_BATCH_SIZE
    set_duration_ms(sub.long_polling_timeout, MAX_LONG_POLLING_MS)
    sub.fifo = is_fifo_group(group_config)
    retry_max = int(_group_value(group_config, "retry_max_times", "retryMaxTimes",
                                 DEFAULT_RETRY_MAX_TIMES))
    backoff = settings.backoff_policy
    backoff.max_attempts = retry_max + 1
    policy = _retry_policy(group_config)
    if policy.get("type") == "EXPONENTIAL":
        exp_doc = policy.get("exponentialRetryPolicy") or {}
        exp = backoff.exponential_backoff
        set_duration_ms(exp.initial, int(exp_doc.get("initial", 5000)))
        set_duration_ms(exp.max, int(exp_doc.get("max", 7_200_000)))
        exp.multiplier = float(exp_doc.get("multiplier", 2))
    else:
        custom = policy.get("customizedRetryPolicy") or {}
        nexts = custom.get("next") or DEFAULT_RETRY_NEXT_MS
        backoff.customized_backoff.ClearField("next")
        for ms in nexts:
            set_duration_ms(backoff.customized_backoff.next.add(), int(ms))
