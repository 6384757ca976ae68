"""Java ``.properties`` reader (the format of RocketMQ's ``broker.conf``).

Mirrors ``java.util.Properties.load(Reader)``: ``#``/``!`` comment lines, ``=``, ``:`` or
whitespace as the key/value separator, a trailing odd backslash continues the logical line
(leading whitespace of the continuation is dropped), and the escapes ``\\t \\n \\r \\f \\uXXXX``;
any other escaped character stands for itself (``\\=``, ``\\:``, ``\\ ``, ``\\\\``).
Pure: text in, ordered ``(key, value, line_number)`` entries out.
"""

from __future__ import annotations

from dataclasses import dataclass

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """A malformed ``.properties`` text (e.g. a bad ``\\u`` escape); names the line."""


@dataclass(frozen=True)
class Entry:
    """One ``key=value`` pair and the (1-based) physical line it started on."""

    key: str
    value: str
    line: int


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continuation lines; drop blank and comment lines (as ``Properties.LineReader``)."""
    out: list[tuple[int, str]] = []
    physical = text.splitlines()
    i = 0
    while i < len(physical):
        start = i
        line = physical[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_odd_backslash(line) and i < len(physical):
            line = line[:-1] + physical[i].lstrip(_WHITESPACE)
            i += 1
        if _ends_with_odd_backslash(line):
            # A continuation at end of input is dropped, as Java does.
            line = line[:-1]
        out.append((start + 1, line))
    return out


def _ends_with_odd_backslash(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _unescape(raw: str, line_no: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch != "\\" or i + 1 >= len(raw):
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == "u":
            digits = raw[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(f"line {line_no}: malformed \\uxxxx escape {raw[i:i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _split_key_value(line: str) -> tuple[str, str]:
    """Split at the first unescaped ``=``, ``:`` or whitespace (Java's rules)."""
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _WHITESPACE:
            break
        i += 1
    key = line[:i]
    rest = line[i:]
    rest = rest.lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def parse_properties(text: str) -> list[Entry]:
    """Parse ``.properties`` text into entries, in file order (later duplicates win on lookup)."""
    entries = []
    for line_no, line in _logical_lines(text):
        raw_key, raw_value = _split_key_value(line)
        entries.append(Entry(_unescape(raw_key, line_no), _unescape(raw_value, line_no), line_no))
    return entries


def load_properties(text: str) -> dict[str, str]:
    """Parse ``.properties`` text into a dict (the last occurrence of a key wins, as in Java)."""
    return {e.key: e.value for e in parse_properties(text)}
