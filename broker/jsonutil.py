"""JSON as RocketMQ's Java side writes and reads it.

Java RocketMQ serialises with fastjson 1.x, which writes non-string map keys unquoted
(``{"offsetTable":{"T@g":{0:12}}}``, apache/rocketmq#1445, #3369). We always *write* quoted,
compact JSON (every client accepts it) and *read* both forms.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import orjson

# A bare integer used as an object key: after "{" or "," (optionally with whitespace), digits,
# optional whitespace, then ":".  Strings are skipped by the alternation so digits inside a quoted
# value such as "a,1:b" are never touched.
_BARE_INT_KEY = re.compile(r'("(?:[^"\\]|\\.)*")|([{,]\s*)(-?\d+)(\s*:)')


def _quote_key(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return match.group(1)
    return f'{match.group(2)}"{match.group(3)}"{match.group(4)}'


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON, tolerating fastjson's unquoted integer map keys."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        text = bytes(data).decode("utf-8") if not isinstance(data, str) else data
        return orjson.loads(_BARE_INT_KEY.sub(_quote_key, text))


def dumps(value: Any) -> bytes:
    """Serialise to compact JSON with quoted keys (non-string keys are stringified)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def dumps_object_keyed(items: Iterable[tuple[Any, Any]]) -> bytes:
    """A map with object keys as fastjson writes one (a ``Map<MessageQueue, V>``):
    ``{{"brokerName":"b","queueId":0,"topic":"T"}:value,...}``, each key and value through
    :func:`dumps`. Not standard JSON: the Java side reads it with fastjson, ours with
    :func:`loads_lenient`."""
    return b"{" + b",".join(dumps(k) + b":" + dumps(v) for k, v in items) + b"}"


def dumps_pretty(value: Any) -> bytes:
    """Serialise for the config files a person reads (sorted keys, indented)."""
    return orjson.dumps(
        value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
    )


# --- fastjson's object keys, read back ----------------------------------------------------------
class _Lenient:
    """JSON with fastjson's extensions: object or unquoted-number keys."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()

    def ws(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in " \t\r\n":
            pos += 1
        return pos

    def value(self, pos: int) -> tuple[Any, int]:
        pos = self.ws(pos)
        ch = self.text[pos:pos + 1]
        if ch == "{":
            return self.obj(pos + 1)
        if ch == "[":
            return self.arr(pos + 1)
        return self.decoder.raw_decode(self.text, pos)

    def obj(self, pos: int) -> tuple[dict[Any, Any], int]:
        out: dict[Any, Any] = {}
        pos = self.ws(pos)
        if self.text[pos:pos + 1] == "}":
            return out, pos + 1
        while True:
            key, pos = self.value(pos)
            if isinstance(key, dict):
                key = tuple(sorted(key.items()))
            pos = self.ws(pos)
            if self.text[pos:pos + 1] != ":":
                raise ValueError(f"expected ':' at {pos}")
            val, pos = self.value(pos + 1)
            out[key] = val
            pos = self.ws(pos)
            ch = self.text[pos:pos + 1]
            if ch == "}":
                return out, pos + 1
            if ch != ",":
                raise ValueError(f"expected ',' or '}}' at {pos}")
            pos += 1

    def arr(self, pos: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        pos = self.ws(pos)
        if self.text[pos:pos + 1] == "]":
            return out, pos + 1
        while True:
            val, pos = self.value(pos)
            out.append(val)
            pos = self.ws(pos)
            ch = self.text[pos:pos + 1]
            if ch == "]":
                return out, pos + 1
            if ch != ",":
                raise ValueError(f"expected ',' or ']' at {pos}")
            pos += 1


def loads_lenient(data: bytes | str) -> Any:
    """Parse JSON that may use objects as map keys (they become sorted item tuples)."""
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    value, pos = _Lenient(text).value(0)
    return value
