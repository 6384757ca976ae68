"""JSON as RocketMQ's Java side writes and reads it.

Java RocketMQ serialises with fastjson 1.x, which writes non-string map keys unquoted
(``{"offsetTable":{"T@g":{0:12}}}``, apache/rocketmq#1445, #3369). We always *write* quoted,
compact JSON (every client accepts it) and *read* both forms.
"""

from __future__ import annotations

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
    ``rocketmq_emu.broker.processors.reset_offset.loads_lenient``."""
    return b"{" + b",".join(dumps(k) + b":" + dumps(v) for k, v in items) + b"}"


def dumps_pretty(value: Any) -> bytes:
    """Serialise for the config files a person reads (sorted keys, indented)."""
    return orjson.dumps(
        value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
    )
