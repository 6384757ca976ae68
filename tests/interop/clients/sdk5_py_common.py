"""Shared helpers for the scripts driving PyPI ``rocketmq-python-client`` 5.x (the gRPC SDK):
the JSON config from argv, the client configuration, and messages/errors as JSON-able dicts."""

from __future__ import annotations

import json
import sys
import time


def config() -> dict:
    """The one JSON argument: ``{"endpoint": "127.0.0.1:8081", "topic": ..., ...}``; every script
    also takes ``access_key`` / ``secret_key`` (ACL: the SDK signs each call) and ``tls`` (the
    clients' ``tls_enable``: gRPC over TLS, trusting gRPC core's default roots)."""
    return json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}


def client_configuration(cfg: dict):
    """The ClientConfiguration for ``cfg["endpoint"]``: ``Credentials(access_key, secret_key)``
    (both empty unless given: no signature checked), ``namespace``, ``request_timeout``."""
    from rocketmq import ClientConfiguration, Credentials

    credentials = Credentials(cfg.get("access_key", ""), cfg.get("secret_key", ""))
    return ClientConfiguration(cfg["endpoint"], credentials, cfg.get("namespace", ""),
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
    """An SDK exception: its class, its status code and text. ``code`` is ClientException.code
    (the broker's Code), or for a gRPC error the SDK passes on (grpc.RpcError, whose ``code``
    is a method) the gRPC status name, e.g. ``PERMISSION_DENIED``."""
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            code = code()
        except Exception:  # noqa: BLE001 - an RpcError without a status yet
            code = None
        code = getattr(code, "name", code)
    return {"error": str(exc), "type": type(exc).__name__, "code": code}
