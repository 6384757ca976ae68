"""REGISTER_BROKER body (Java ``RegisterBrokerBody``): plain JSON or the compressed form.

Plain (``compressed=false``, the broker default): ``{"filterServerList":[..],
"topicConfigSerializeWrapper":{"dataVersion":{..},"topicConfigTable":{name:TopicConfig}}}``.

Compressed (``compressedRegister=true``): a zlib (``DeflaterOutputStream``) stream of
:func:`compressed_body`; each topic config is ``TopicConfig.encode()`` text,
``"name read write perm filterType[ attributesJson]"``; ``topicSysFlag`` and ``order`` are not
carried (they decode as 0 / false, as in Java).
"""

from __future__ import annotations

import functools
import zlib
from typing import Any

from rocketmq_emu.broker import jsonutil


@functools.cache
def compressed_body() -> Any:
    """construct declaration of the inflated stream (Java ``DataOutputStream`` ints are
    big-endian); built on first use, as only a ``compressedRegister`` broker sends it."""
    from construct import GreedyBytes, Int32sb, PascalString, PrefixedArray, Struct

    return Struct(
        "data_version" / PascalString(Int32sb, "utf8"),
        "topic_configs" / PrefixedArray(Int32sb, PascalString(Int32sb, "utf8")),
        "filter_server_list" / PascalString(Int32sb, "utf8"),
        "rest" / GreedyBytes,
    )


class RegisterBodyError(ValueError):
    """A REGISTER_BROKER body that cannot be decoded."""


def _topic_config_from_text(text: str) -> dict[str, Any]:
    parts = text.split(" ")
    if len(parts) < 5:
        raise RegisterBodyError(f"bad compressed TopicConfig {text!r}")
    cfg: dict[str, Any] = {
        "order": False,
        "perm": int(parts[3]),
        "readQueueNums": int(parts[1]),
        "topicFilterType": parts[4],
        "topicName": parts[0],
        "topicSysFlag": 0,
        "writeQueueNums": int(parts[2]),
    }
    if len(parts) > 5:
        cfg["attributes"] = jsonutil.loads(" ".join(parts[5:]))
    return cfg


def decode_register_body(body: bytes, compressed: bool) -> dict[str, Any]:
    """Return ``{"filterServerList": [...], "topicConfigSerializeWrapper": {...}}``."""
    if not body:
        # No body: Java registers with an empty wrapper and DataVersion(counter 0, timestamp 0).
        return {
            "filterServerList": [],
            "topicConfigSerializeWrapper": {
                "dataVersion": {"counter": 0, "timestamp": 0},
                "topicConfigTable": {},
            },
        }
    try:
        if not compressed:
            obj = jsonutil.loads(body)
            if not isinstance(obj, dict):
                raise RegisterBodyError("RegisterBrokerBody is not a JSON object")
            obj.setdefault("filterServerList", [])
            wrapper = obj.setdefault("topicConfigSerializeWrapper", {})
            wrapper.setdefault("dataVersion", {"counter": 0, "timestamp": 0})
            wrapper.setdefault("topicConfigTable", {})
            return obj
        from construct import ConstructError

        try:
            parsed = compressed_body().parse(zlib.decompress(body))
        except ConstructError as exc:
            raise RegisterBodyError(f"Failed to decode RegisterBrokerBody: {exc}") from None
        table = {}
        for text in parsed.topic_configs:
            cfg = _topic_config_from_text(text)
            table[cfg["topicName"]] = cfg
        try:
            filters = jsonutil.loads(parsed.filter_server_list) or []
        except ValueError:
            filters = []  # Java logs and keeps an empty list
        return {
            "filterServerList": filters,
            "topicConfigSerializeWrapper": {
                "dataVersion": jsonutil.loads(parsed.data_version),
                "topicConfigTable": table,
            },
        }
    except RegisterBodyError:
        raise
    except (ValueError, zlib.error, UnicodeDecodeError) as exc:
        raise RegisterBodyError(f"Failed to decode RegisterBrokerBody: {exc}") from None


def encode_register_body(
    topic_configs: dict[str, dict[str, Any]],
    data_version: dict[str, Any],
    filter_server_list: list[str] | None = None,
    compressed: bool = False,
) -> bytes:
    """Build a REGISTER_BROKER body as the Java broker does (for the broker side and tests)."""
    filters = list(filter_server_list or [])
    if not compressed:
        return jsonutil.dumps(
            {
                "filterServerList": filters,
                "topicConfigSerializeWrapper": {
                    "dataVersion": data_version,
                    "topicConfigTable": topic_configs,
                },
            }
        )
    texts = []
    for name, cfg in topic_configs.items():
        text = (
            f"{name} {cfg.get('readQueueNums', 0)} {cfg.get('writeQueueNums', 0)} "
            f"{cfg.get('perm', 6)} {cfg.get('topicFilterType', 'SINGLE_TAG')}"
        )
        if cfg.get("attributes"):
            text += " " + jsonutil.dumps(cfg["attributes"]).decode()
        texts.append(text)
    raw = compressed_body().build(
        dict(
            data_version=jsonutil.dumps(data_version).decode(),
            topic_configs=texts,
            filter_server_list=jsonutil.dumps(filters).decode(),
            rest=b"",
        )
    )
    return zlib.compress(raw)
