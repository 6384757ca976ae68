"""What every dashboard endpoint needs: query parameters checked into values (a bad one is a
400 with one line), the broker a request names, and how a topic name reads."""

from __future__ import annotations

from typing import Any

from rocketmq_emu.broker.message import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketmq_emu.client.api_errors import ApiError, int_arg, query  # noqa: F401 (re-exported)


def body_object(body: Any) -> dict[str, Any]:
    """A request body that must be a JSON object."""
    if not isinstance(body, dict):
        raise ApiError(400, "expected a JSON object")
    return body


def controller(cluster: Any, name: str | None) -> Any:
    """The running broker ``name`` (the first when None): 404 if the cluster has no such broker
    or it is stopped (as the control API has always answered)."""
    if name is not None and name not in cluster.broker_addrs:
        raise ApiError(404, f"no broker {name!r}")
    slot = cluster.slot(name)
    if slot.controller is None or not slot.running:
        raise ApiError(404, f"broker {slot.name!r} is stopped")
    return slot.controller


def topic_kind(ctx: Any, topic: str) -> tuple[str, str | None]:
    """``(kind, group)``: ``retry``/``dlq`` with the group whose retries or dead letters the
    topic holds, ``system`` for ``TopicValidator.isSystemTopic`` topics (and the broker's own
    cluster-name and broker-name topics), else ``user``."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "retry", topic[len(RETRY_GROUP_TOPIC_PREFIX):]
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return "dlq", topic[len(DLQ_GROUP_TOPIC_PREFIX):]
    if ctx.topic_config.is_system_topic(topic):
        return "system", None
    return "user", None
