"""The OpenAPI description of the dashboard's endpoints (:mod:`rocketmq_emu.client.dashboard`),
merged into the control API's document by :mod:`rocketmq_emu.client.control_spec`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_NOT_FOUND = "no such broker (or it is stopped), topic, group or message; {\"error\": \"...\"}"
_BAD = "a parameter is missing, malformed, out of range or a time range runs backwards"


def _path(name: str, desc: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"},
            "description": desc}


def dashboard_paths(op: Callable[..., dict], q: Callable[..., dict]) -> dict[str, Any]:
    """The paths, built with the control API's operation (``op``) and query-parameter (``q``)
    helpers."""
    broker = q("broker", "string", "broker name (default: the first)")
    limit = q("max", "integer", "at most this many results (1..1000)")
    errors = {"400": _BAD, "404": _NOT_FOUND}
    group = _path("group", "consumer group")
    msg = _path("msgId", "offset message id, or client message id (UNIQ_KEY)")
    return {
        "/cluster": {"get": op(
            "Name server, gRPC endpoint, recording, clock and each broker: address, version, "
            "TLS mode, ACL, store path, disk use, put/get totals and tps [{t, put, get}] "
            "(sampled when asked, at most once a second, the last 10 minutes)")},
        "/recording": {"get": op("Whether --record is on, its file and its size in bytes")},
        "/groups": {"get": op(
            "Consumer groups (configured, online or holding offsets): kind (user or system), "
            "online, members, consumeType, messageModel, topics, total lag, POP messages in "
            "flight", params=[broker])},
        "/groups/{group}": {"get": {**op(
            "One group: members (clientId, language, version, clientAddr), subscriptions, "
            "per-queue brokerOffset, consumerOffset, lag and lastTimestamp, POP messages in "
            "flight with invisibleUntil", params=[broker], errors=errors),
            "parameters": [group, broker]}},
        "/groups/{group}/reset-offset": {"post": {**op(
            "Reset the group's offsets on a topic to a store time (INVOKE_BROKER_TO_RESET_OFFSET, "
            "forced; stored even when no consumer is online)",
            {"type": "object", "required": ["topic", "timestamp"], "properties": {
                "topic": {"type": "string"},
                "timestamp": {"type": "integer", "description": "ms; -1: the queues' ends"}}},
            errors={**errors, "409": "the broker refused"}), "parameters": [group]}},
        "/producers": {"get": op("Producer groups and their connections", params=[broker])},
        "/messages/search": {"get": op(
            "Find messages: id= (offset or client id), or topic= with key= (a KEYS token) or "
            "with begin= and end= (store time, ms); {messages: [summary], truncated}",
            params=[q("id", "string", "message id"), q("topic", "string", "topic"),
                    q("key", "string", "a KEYS token"), q("begin", "integer", "ms"),
                    q("end", "integer", "ms"), limit, broker], errors=errors)},
        "/messages/{msgId}": {"get": {**op(
            "One message: properties, body (text, or hex when not UTF-8 text; null with "
            "bodyError above 256 KiB), store and born host, consumedBy [{group, status: "
            "CONSUMED, CONSUMED_BUT_FILTERED, NOT_CONSUME_YET, NOT_ONLINE, PULL, "
            "CONSUME_BROADCASTING}]", errors=errors),
            "parameters": [msg, q("topic", "string", "where to look up a client id")]}},
        "/messages/{msgId}/body": {"get": {**op(
            "The body alone (text or hex)",
            errors={**errors, "413": "the body is larger than the dashboard shows (256 KiB)"}),
            "parameters": [msg]}},
        "/messages/{msgId}/resend": {"post": {**op(
            "Hand the message to one online consumer of a group (CONSUME_MESSAGE_DIRECTLY)",
            {"type": "object", "required": ["group"], "properties": {
                "group": {"type": "string"}, "clientId": {"type": "string"}}},
            errors={**errors, "409": "the group has no online consumer, or it refused",
                    "502": "the consumer did not answer"}), "parameters": [msg]}},
        "/dlq/{group}": {"get": {**op(
            "The group's dead letters (%DLQ%group), earliest first", params=[limit, broker]),
            "parameters": [group, limit, broker]}},
        "/traces/{msgId}": {"get": {**op(
            "The message's trace records from the trace topic (RMQ_SYS_TRACE_TOPIC): traceType "
            "Pub, SubBefore, SubAfter, EndTransaction, with timestamps, hosts, cost and status"),
            "parameters": [msg]}},
        "/scheduled": {"get": op(
            "Delay-level and timer messages not delivered yet, by due time: {messages: [{kind, "
            "due, level, topic, msgId, ...}], truncated}", params=[limit, broker],
            errors=errors)},
        "/dashboard/{file}": {"get": {
            "summary": "The dashboard's static files (index.html, core.js, views-*.js, main.js, style.css); no "
                       "token needed: they hold no data",
            "security": [{}],
            "responses": {"200": {"description": "the file"}, "404": {"description": "none"}},
            "parameters": [_path("file", "file name")]}},
    }
