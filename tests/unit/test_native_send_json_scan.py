"""The C header reader's string scanner (``send_json.h``: eight bytes per step, a fast path for
``\\u00XX`` escapes) reads every JSON string exactly as orjson does and declines the same ones,
wherever its quotes, backslashes, control and multi-byte characters fall against the 8-byte
step; the C SEND_MESSAGE_V2 path answers and stores what the Python path does for them."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_native_send import _PREFIX, Pair, frame, json_object, native, needs_native
from test_send_fused import BASE, plain_frame

pytestmark = needs_native

# --- strings of 0..40 characters, mostly plain runs, anything JSON can carry -----------------

PLAIN = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
SPECIAL = st.one_of(
    st.sampled_from('"\\/\x01\x02\x00\x1f\x7f'),
    st.characters(max_codepoint=0x1F),  # control characters: always written escaped
    st.characters(min_codepoint=0x80, max_codepoint=0x7FF),  # two UTF-8 bytes
    st.characters(min_codepoint=0x800, max_codepoint=0xFFFF,
                  blacklist_categories=("Cs",)),  # three
    st.characters(min_codepoint=0x10000),  # four, or a surrogate pair when escaped
)
TEXT = st.one_of(
    st.text(PLAIN, max_size=40),
    st.text(st.one_of(PLAIN, PLAIN, PLAIN, SPECIAL), max_size=40),
    st.text(st.one_of(PLAIN, SPECIAL), max_size=40),
)
PROPS = st.lists(
    st.tuples(st.one_of(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY"]), TEXT), TEXT),
    max_size=4,
).map(lambda pairs: "\x02".join(f"{k}\x01{v}" for k, v in pairs))


@st.composite
def scan_header(draw) -> dict:
    """A SEND_MESSAGE_V2 header (as a dict) whose string values are random texts."""
    ext = dict(BASE)
    ext["i"] = draw(st.one_of(PROPS, TEXT))
    for letter in draw(st.lists(st.sampled_from("acgk"), max_size=2, unique=True)):
        ext[letter] = draw(TEXT)
    if draw(st.integers(0, 5)) == 0:
        ext["b"] = draw(TEXT)  # a topic name the checks refuse (or, rarely, accept)
    for key in draw(st.lists(TEXT, max_size=2)):
        ext["x" + key] = draw(TEXT)  # not a letter we read: skipped by the reader
    top = {"code": 310, "extFields": ext, "flag": 0,
           "language": draw(st.one_of(st.just("JAVA"), TEXT)),
           "opaque": draw(st.integers(0, 2**31 - 1)), "version": 409}
    for key in draw(st.lists(TEXT, max_size=2)):
        top["x" + key] = draw(TEXT)
    return top


@st.composite
def scan_frame(draw) -> bytes:
    """``scan_header`` written with random escapes and key order, with a small body."""
    text = draw(json_object(draw(scan_header())))
    return frame(text.encode("utf-8"), draw(st.binary(max_size=20)))


def _header(data: bytes) -> bytes:
    return data[8 : 8 + _PREFIX.unpack_from(data)[1]]


def _c_view(obj: dict) -> dict:
    """What parse_header reports for a header orjson read as ``obj`` (strings everywhere)."""
    ext = obj["extFields"]
    return {"code": obj["code"], "flag": obj["flag"], "opaque": obj["opaque"],
            "version": obj["version"], "language": obj["language"],
            "extFields": {k: v for k, v in ext.items() if len(k) == 1 and "a" <= k <= "m"}}


@settings(max_examples=300, deadline=None)
@given(scan_frame())
def test_every_string_read_as_orjson_reads_it(data):
    """A valid header of random strings is accepted, and each string the reader keeps is
    decoded to what orjson decodes it to."""
    header = _header(data)
    assert native.parse_header(header) == _c_view(orjson.loads(header))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(scan_frame(), min_size=1, max_size=6))
def test_random_strings_same_outcome(tmp_path_factory, frames):
    """Frames whose header strings are random texts: C and Python answer and store alike."""
    pair = Pair(tmp_path_factory.mktemp("s"))
    pair.feed(plain_frame(opaque=1))  # T1 exists: plain frames take the fast paths
    pair.feed(b"".join(frames))
    c, py = pair.outcomes()
    assert c == py


# --- every length 0..40, every position of the one character that stops the scan -----------

STOPS = ['"', "\\", "\x01", "\x02", "\n", "\x1f", "/", "\x7f", "\x80", "\u00e9", "\u20ac",
         "\U0001f600"]
LENGTHS = range(41)


def _at(n: int, k: int, ch: str) -> str:
    """n characters: k plain ones, ``ch``, then plain ones again."""
    return "".join(chr(0x61 + i % 26) for i in range(k)) + ch + "Z" * (n - k - 1)


def _escaped(ch: str, upper: bool) -> str:
    """``ch`` as \\uXXXX escapes (a surrogate pair beyond the BMP)."""
    data = ch.encode("utf-16-be")
    units = (f"{int.from_bytes(data[i : i + 2], 'big'):04x}" for i in range(0, len(data), 2))
    return "".join("\\u" + (u.upper() if upper else u) for u in units)


def _cases(mode: int):
    """(text, JSON literal) for every n <= 40, offset k < n and stop character: written as
    orjson writes it (mode 0), or with the stop character as a \\u escape in lower (1) or
    upper (2) case hex between the plain runs."""
    for n in LENGTHS:
        for k in range(n):
            for ch in STOPS:
                text = _at(n, k, ch)
                if mode == 0:
                    yield text, orjson.dumps(text).decode()
                else:
                    yield text, '"' + _at(n, k, _escaped(ch, mode == 2)) + '"'


@pytest.mark.parametrize("where", ["i", "b", "language", "skipped", "key"])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_stop_at_every_offset_read_as_orjson_reads_it(where, mode):
    """A string of n <= 40 characters with one quote, backslash, control or multi-byte
    character at offset k, as a value we read, a value we skip or a key: read as orjson reads
    it, for every (n, k) and each way of writing it."""
    for _text, written in _cases(mode):
        ext = {"b": '"T1"', "i": '"x"'}
        if where in ext:
            ext[where] = written
        elif where == "skipped":
            ext["x"] = written
        fields = ",".join(f'"{k}":{v}' for k, v in ext.items())
        if where == "key":
            fields += f',{written}:"v"'
        lang = written if where == "language" else '"JAVA"'
        header = (f'{{"code":310,"flag":0,"opaque":5,"version":409,"extFields":{{{fields}}},'
                  f'"language":{lang}}}').encode()
        obj = orjson.loads(header)
        assert native.parse_header(header) == _c_view(obj), written


@pytest.mark.parametrize("bad", ["\x00", "\x01", "\x1f", "\n"])
def test_raw_control_character_at_every_offset_declined(bad):
    """A control character written raw (invalid JSON) anywhere in a string of n <= 40
    characters, tail bytes included: declined, as orjson refuses the header."""
    for n in LENGTHS:
        for k in range(n):
            value = _at(n, k, bad)
            for header in (f'{{"code":310,"extFields":{{"b":"{value}"}}}}',
                           f'{{"code":310,"extFields":{{"b":"T1"}},"x":"{value}"}}'):
                with pytest.raises(orjson.JSONDecodeError):
                    orjson.loads(header)
                assert native.parse_header(header.encode()) is None, (n, k)


@pytest.mark.parametrize("bad", ["\\u00g1", "\\u00", "\\u0", "\\u00e", "\\u0\\u00", "\\x01",
                                 "\\ud800", "\\udc00", "\\u00\u00e9"])
def test_broken_escape_at_every_offset_declined(bad):
    """A malformed \\u escape (or a lone surrogate) after a plain run of any length: declined,
    as orjson refuses it."""
    for n in LENGTHS:
        value = "a" * n + bad
        header = f'{{"code":310,"extFields":{{"b":"T1","i":"{value}"}}}}'
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(header)
        assert native.parse_header(header.encode()) is None, n


def test_stop_at_every_offset_same_outcome(tmp_path):
    """Properties with one stop character at each offset of every length: C and Python
    answer and store alike, and every frame is stored."""
    pair = Pair(tmp_path)
    pair.feed(plain_frame(opaque=1))
    frames = []
    for n in range(0, 41, 3):
        for k in range(n):
            for ch in STOPS:
                props = "TAGS\x01" + _at(n, k, ch) + "\x02KEYS\x01" + _at(n, n - 1 - k, ch)
                ext = dict(BASE, i=props)
                frames.append(frame(orjson.dumps({"code": 310, "extFields": ext, "flag": 0,
                                                  "language": "JAVA", "opaque": len(frames),
                                                  "version": 409})))
    pair.feed(b"".join(frames))
    c, py = pair.outcomes()
    assert c == py
    assert c[0].count(b'"code":0,') == 1 + len(frames)
