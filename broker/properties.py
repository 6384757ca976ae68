"""Java ``.properties`` reading (the format of RocketMQ's ``broker.conf``), with line numbers.

The parsing is ``javaproperties``' (``java.util.Properties.load`` rules: ``#``/``!`` comments,
``=``, ``:`` or whitespace separators, backslash continuations, ``\\uXXXX`` escapes). What this
module adds is the (1-based) physical line each entry starts on, counted from the raw text of
the elements before it, so that a bad value can be named ``file:line key``.
Pure: text in, ordered ``(key, value, line_number)`` entries out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rocketmq_emu.broker.lazy import lazy_import

#: Loaded on first use: its import (with xml.etree for its XML reader) costs ~9 ms of start,
#: and ``rmq-emu up`` without ``-c`` reads no ``.properties`` text at all.
javaproperties = lazy_import("javaproperties")
#: ``Properties.LineReader``'s line terminators.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class PropertiesError(ValueError):
    """A malformed ``.properties`` text (e.g. a bad ``\\u`` escape); names the line."""


@dataclass(frozen=True)
class Entry:
    """One ``key=value`` pair and the (1-based) physical line it started on."""

    key: str
    value: str
    line: int


def parse_properties(text: str) -> list[Entry]:
    """Parse ``.properties`` text into entries, in file order (later duplicates win on lookup)."""
    entries = []
    line = 1
    try:
        for element in javaproperties.parse(text):
            if isinstance(element, javaproperties.KeyValue):
                entries.append(Entry(element.key, element.value, line))
            line += len(_LINE_BREAK.findall(element.source))
    except ValueError as exc:  # javaproperties.InvalidUEscapeError
        # The element that failed starts where the last one parsed ended.
        raise PropertiesError(f"line {line}: malformed \\uxxxx escape ({exc})") from None
    return entries


def load_properties(text: str) -> dict[str, str]:
    """Parse ``.properties`` text into a dict (the last occurrence of a key wins, as in Java)."""
    return {e.key: e.value for e in parse_properties(text)}


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """``"; did you mean brokerName?"`` when an unknown ``key`` is close to one of ``known`` (a
    misspelling), else "": the tail of a config file's "unknown key ignored" warning."""
    import difflib  # only when a file has an unknown key

    close = difflib.get_close_matches(key, list(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""
