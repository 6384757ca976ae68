"""Shared helpers for the scripts driving PyPI ``rocketmq-python-client`` 5.x (the gRPC SDK):
the JSON config from argv, the client configuration, and messages/errors as JSON-able dicts."""

from __future__ import annotations

import json
import sys
import time


def config() -> dict:
    """The one JSON argument: ``{"endpoint": "127.0.0.1:8081", "topic": ..., ...}``."""
    return json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}


def client_configuration(cfg: dict):
    """A plaintext ClientConfiguration for ``cfg["endpoint"]`` (no credentials, no namespace)."""
    from rocketmq import ClientConfiguration, Credentials

    return ClientConfiguration(cfg["endpoint"], Credentials(), cfg.get("namespace", ""),
                               request_timeout=cfg.get("request_timeout", 3))


def message_event(msg) -> dict:
    """What the tests look at in a received message (rocketmq.v5.model.Message)."""
    body = msg.body.decode("utf-8", errors="replace") if msg.body else ""
    return {"message_id": msg.message_id, "body": body, "topic": msg.topic, "tag": msg.tag,
            "keys": sorted(msg.keys or ()), "properties": dict(msg.properties or {}),
            "group": msg.message_group, "delivery_attempt": msg.delivery_attempt,
            "delivery_timestamp": msg.delivery_timestamp, "born_timestamp": msg.born_timestamp,
            "receipt_handle": msg.receipt_handle, "corrupted": msg.corrupted,
            "message_type": msg.message_type, "received_ms": int(time.time() * 1000)}


def error_event(exc: BaseException) -> dict:
    """An SDK exception: its class, its status code (ClientException.code) and text."""
    return {"error": str(exc), "type": type(exc).__name__, "code": getattr(exc, "code", None)}
