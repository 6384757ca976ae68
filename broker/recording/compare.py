"""Comparing a replayed answer with the recorded one: the *shape* of a response, volatile parts
masked, and the differences between two shapes. Pure.

A replay runs against any name server and broker (this emulator with a fresh store, a real
RocketMQ holding other data), so what may legitimately change between runs is masked, keeping
only its kind (``<number>``, ``<text>``, ``<empty>``) so that presence and type still count:

* the response **code** is compared as is;
* the **remark**: addresses (``host:port``), 13-digit millisecond times and 32-hex message ids
  inside it are masked;
* **extFields**: every key is compared; the value is masked when the key names something
  volatile (:data:`VOLATILE_KEY`: offsets, ``msgId``/``offsetMsgId``, ``transactionId``,
  times and timestamps, addresses and hosts, ``brokerId``/``suggestWhichBrokerId``, pop
  check-point and revive fields), otherwise compared after the remark masking. Offsets are
  masked although a fresh store reproduces them: against a real broker that already holds
  messages they differ, and which store is behind the target is not the replay's business;
* a **JSON body** (fastjson's unquoted keys tolerated) is compared by structure: keys, and
  leaves masked as above (a leaf, or a flat map or list of leaves, under a volatile key keeps
  its kind only; a deeper table under such a key, ``brokerAddrTable`` keyed by broker name, is
  compared as any other, its addresses masked as text); lists are compared
  as multisets (sorted by their shape: Java hash-map and set order is no contract); numbers
  that look like millisecond times (:data:`MS_TIME_RANGE`) are masked anywhere;
* a **message body** (a pull, query or view answer: concatenated stored records) is compared
  per message: topic, queueId, flag, sysFlag, reconsumeTimes, the body bytes (as text when
  short), and the properties whose names are not volatile (:data:`VOLATILE_PROPERTY`: the
  offsets, times and message ids the broker adds, pop check points); born and store hosts,
  timestamps, queue and commitlog offsets are left out;
* any **other body** counts only by its length.

The language and version a server stamps on its answers are not compared (a real broker says
JAVA and its own version).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.commitlog.record import iter_records
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

#: extFields keys and JSON keys whose values change between runs.
VOLATILE_KEY = re.compile(
    r"(?i)offset|msgid|messageid|transactionid|time|addr|host|brokerid|revive|checkpoint|"
    r"^ck$|^pop")
#: Message properties the broker sets from its own state (offsets, times, ids, check points).
VOLATILE_PROPERTY = re.compile(r"(?i)offset|time|msgid|message_id|transaction|pop_ck")
#: ``host:port`` (IPv4) and ``[v6]:port`` addresses inside text.
_ADDRESS = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b|\[[0-9a-fA-F:.]+\](?::\d+)?")
_MS_TIME = re.compile(r"\b1\d{12}\b")
_HEX_ID = re.compile(r"\b[0-9A-Fa-f]{32}\b")
#: Integers in this range are millisecond times (2001-09-09 .. 2286-11-20).
MS_TIME_RANGE = (10**12, 10**13)
#: Requests whose answer body is stored message records.
MESSAGE_BODY_CODES = frozenset({RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE,
                                RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID})
#: A message body shorter than this is shown as text in the shape.
SHORT_BODY = 256


def kind(value: Any) -> str:
    """What is left of a masked value: its kind."""
    if value is None or value == "" or value == [] or value == {}:
        return "<empty>"
    if isinstance(value, bool):
        return "<bool>"
    if isinstance(value, int | float):
        return "<number>"
    if isinstance(value, str):
        return "<number>" if re.fullmatch(r"-?\d+", value) else "<text>"
    return "<list>" if isinstance(value, list) else "<object>"


def mask_text(text: str) -> str:
    """``text`` with addresses, millisecond times and 32-hex ids replaced by their kind."""
    text = _ADDRESS.sub("<addr>", text)
    text = _HEX_ID.sub("<id>", text)
    return _MS_TIME.sub("<time>", text)


def mask_tree(value: Any) -> Any:
    """A value under a volatile key: the structure kept, every leaf its kind."""
    if isinstance(value, dict):
        return {mask_text(str(k)): mask_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return _multiset([mask_tree(v) for v in value])
    return kind(value)


def _flat(value: Any) -> bool:
    """A leaf, or a map or list of leaves only (``brokerAddrs``, ``msgOffsetInfo``)."""
    items = value.values() if isinstance(value, dict) else value \
        if isinstance(value, list | tuple) else None
    return items is None or not any(isinstance(v, dict | list | tuple) for v in items)


def json_shape(value: Any) -> Any:
    """A JSON value's shape (see the module docstring)."""
    if isinstance(value, dict):
        return {mask_text(str(k)): mask_tree(v) if VOLATILE_KEY.search(str(k)) and _flat(v)
                else json_shape(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return _multiset([json_shape(v) for v in value])
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and MS_TIME_RANGE[0] <= value < MS_TIME_RANGE[1]:
        return "<time>"
    if isinstance(value, str):
        return mask_text(value)
    return value


def canonical(value: Any) -> str:
    """``value`` as JSON with sorted keys: one text per equal value, to sort and compare by."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


def _multiset(items: list[Any]) -> list[Any]:
    return sorted(items, key=canonical)


def ext_shape(ext: dict[str, str]) -> dict[str, str]:
    """extFields with volatile values masked."""
    return {k: kind(v) if VOLATILE_KEY.search(k) else mask_text(v) for k, v in ext.items()}


def message_shapes(body: bytes) -> list[dict[str, Any]] | None:
    """The shapes of the stored records in ``body``, or None if it is not a run of records."""
    try:
        records = [rec for _, rec in iter_records(body)]
    except Exception:  # noqa: BLE001 (any decoding failure: not records)
        return None
    out = []
    for rec in records:
        payload = bytes(rec.body)
        try:
            text = payload.decode("utf-8") if len(payload) < SHORT_BODY else None
        except UnicodeDecodeError:
            text = None
        out.append({
            "topic": rec.topic, "queueId": rec.queue_id, "flag": rec.flag,
            "sysFlag": rec.sys_flag, "reconsumeTimes": rec.reconsume_times,
            "body": text if text is not None else f"<{len(payload)} bytes crc {rec.body_crc}>",
            "properties": {k: kind(v) if VOLATILE_PROPERTY.search(k) else mask_text(v)
                           for k, v in sorted(rec.properties.items())},
        })
    return out


def body_shape(body: bytes, request_code: int) -> Any:
    """A response body's shape: JSON structure, messages, or its length."""
    if not body:
        return None
    if request_code in MESSAGE_BODY_CODES:
        messages = message_shapes(body)
        if messages is not None:
            return {"messages": messages}
    if body[:1] in (b"{", b"["):
        try:
            return {"json": json_shape(jsonutil.loads(body))}
        except (ValueError, TypeError):
            try:
                return {"json": json_shape(_plain(jsonutil.loads_lenient(body)))}
            except (ValueError, TypeError, IndexError):
                pass
    return {"bytes": len(body)}


def _plain(value: Any) -> Any:
    """A leniently parsed value (object keys as item tuples) as plain JSON (keys as text)."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else canonical(_plain(k)): _plain(v)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def shape(response: RemotingCommand, request_code: int) -> dict[str, Any]:
    """The comparable shape of an answer to a request of ``request_code``."""
    return {"code": response.code,
            "remark": mask_text(response.remark) if response.remark else None,
            "extFields": ext_shape(response.ext_fields),
            "body": body_shape(response.body or b"", request_code)}


@dataclass(frozen=True, slots=True)
class Difference:
    """One place where the shapes differ: a path and both sides (``ABSENT`` when missing)."""

    path: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        return f"{self.path}: recorded {_show(self.recorded, self.path)}, " \
               f"replayed {_show(self.replayed, self.path)}"


#: A side that has nothing at a path.
ABSENT = "(absent)"


def _show(value: Any, path: str) -> str:
    if value is ABSENT:
        return ABSENT
    if path == "code" and isinstance(value, int):
        try:
            return f"{value} {ResponseCode(value).name}"
        except ValueError:
            return str(value)
    text = value if isinstance(value, str) and value.startswith("<") else canonical(value)
    return text if len(text) <= 200 else text[:197] + "..."


def differences(recorded: Any, replayed: Any, path: str = "") -> list[Difference]:
    """Where two shapes differ, outermost first (a list of another length is one difference)."""
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        out = []
        for key in sorted(set(recorded) | set(replayed), key=str):
            sub = f"{path}.{key}" if path else str(key)
            out += differences(recorded.get(key, ABSENT), replayed.get(key, ABSENT), sub)
        return out
    if isinstance(recorded, list) and isinstance(replayed, list) \
            and len(recorded) == len(replayed):
        out = []
        for i, (a, b) in enumerate(zip(recorded, replayed, strict=True)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    if isinstance(recorded, list) and isinstance(replayed, list):
        return [Difference(path, f"<{len(recorded)} items>", f"<{len(replayed)} items>")]
    return [] if recorded == replayed else [Difference(path, recorded, replayed)]


def compare(recorded: RemotingCommand, replayed: RemotingCommand, request_code: int
            ) -> list[Difference]:
    """The differences between a recorded and a replayed answer (empty: they match)."""
    return differences(shape(recorded, request_code), shape(replayed, request_code))
