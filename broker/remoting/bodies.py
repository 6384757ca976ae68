"""Remoting bodies keyed by message queue, shared by the broker's handlers and the client.

``Map<MessageQueue, V>`` bodies are written the way fastjson writes them, the MessageQueue object
as the key (``{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}``), which Java
clients parse; :func:`rocketmq_emu.broker.jsonutil.loads_lenient` reads that shape back.
``ResetOffsetBody`` and ``ResetOffsetBodyForC`` (C++ admin requests: a list of
``{brokerName, offset, queueId, topic}``) are the offset tables of RESET_OFFSET (222).
"""

from __future__ import annotations

from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.jsonutil import loads_lenient

MQKey = tuple[str, str, int]
"""(topic, brokerName, queueId)."""


# --- fastjson Map<MessageQueue, V> -----------------------------------------------------------
def encode_mq_map(table: dict[MQKey, Any]) -> str:
    """``{ {mq}:value, ... }`` as fastjson writes a ``Map<MessageQueue, V>``."""
    return jsonutil.dumps_object_keyed(
        ({"brokerName": mq[1], "queueId": mq[2], "topic": mq[0]}, v) for mq, v in table.items()
    ).decode()


def encode_offset_table(table: dict[MQKey, int]) -> bytes:
    """``ResetOffsetBody``: ``{"offsetTable":{{mq}:offset,...}}``."""
    return ('{"offsetTable":' + encode_mq_map(table) + "}").encode("utf-8")


def encode_offset_table_for_c(table: dict[MQKey, int]) -> bytes:
    """``ResetOffsetBodyForC``: ``{"offsetTable":[{brokerName, offset, queueId, topic}]}``."""
    items = [{"brokerName": mq[1], "offset": off, "queueId": mq[2], "topic": mq[0]}
             for mq, off in table.items()]
    return jsonutil.dumps({"offsetTable": items})


def mq_key(key: Any) -> MQKey | None:
    """A MessageQueue map key (sorted item tuple or dict) as ``(topic, brokerName, queueId)``."""
    fields = dict(key) if isinstance(key, tuple | dict) else None
    if not fields or "topic" not in fields:
        return None
    return str(fields["topic"]), str(fields.get("brokerName", "")), int(fields.get("queueId", 0))


def decode_mq_map(raw: Any) -> dict[MQKey, Any]:
    """A parsed ``Map<MessageQueue, V>`` (from :func:`loads_lenient`) keyed by MQKey."""
    out: dict[MQKey, Any] = {}
    for key, value in (raw or {}).items():
        mq = mq_key(key)
        if mq is not None:
            out[mq] = value
    return out


def decode_offset_table(body: bytes) -> dict[MQKey, int]:
    """``ResetOffsetBody`` (or the C form) → ``{(topic, broker, qid): offset}``."""
    doc = loads_lenient(body)
    table = doc.get("offsetTable") if isinstance(doc, dict) else None
    if isinstance(table, list):
        return {(str(i["topic"]), str(i["brokerName"]), int(i["queueId"])): int(i["offset"])
                for i in table}
    return {mq: int(v) for mq, v in decode_mq_map(table).items()}
