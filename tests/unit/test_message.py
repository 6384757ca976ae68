"""Message vocabulary: properties string, tags hash, offset msgId and UNIQ_KEY."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.message import (
    UniqIdGenerator,
    create_offset_msg_id,
    decode_offset_msg_id,
    java_string_hash,
    properties_to_string,
    string_to_properties,
    tags_code,
)


def test_java_string_hash_matches_known_java_values():
    """String.hashCode values computed by Java: "TagA" and a non-ASCII tag."""
    assert java_string_hash("TagA") == 2598919
    assert java_string_hash("hello world") == 1794106052
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00  # surrogate pair hashed as two UTF-16 units


def test_tags_code_is_zero_without_a_tag():
    """A message with no tag has tagsCode 0."""
    assert tags_code(None) == 0 and tags_code("") == 0


def test_properties_string_has_no_trailing_separator():
    """Properties encode as name\\x01value joined by \\x02."""
    assert properties_to_string({"A": "1", "B": "2"}) == "A\x011\x02B\x012"


def test_properties_parser_drops_pieces_without_key_or_value():
    """Pieces with an empty key or empty value are dropped, as Java drops them."""
    assert string_to_properties("A\x011\x02\x01x\x02B\x01\x02C\x013") == {"A": "1", "C": "3"}


@given(st.dictionaries(st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1),
                       st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1)))
def test_properties_round_trip(props):
    """Any map without separators round-trips."""
    assert string_to_properties(properties_to_string(props)) == props


def test_offset_msg_id_is_uppercase_hex_of_host_port_offset():
    """Offset msgId = IPv4 + port + commitlog offset in uppercase hex (32 chars)."""
    msg_id = create_offset_msg_id("10.0.0.5", 10911, 1024)
    assert msg_id == "0A00000500002A9F0000000000000400"
    assert decode_offset_msg_id(msg_id) == ("10.0.0.5", 10911, 1024)


def test_offset_msg_id_ipv6_is_56_chars():
    """An IPv6 store host gives a 56-character offset msgId."""
    msg_id = create_offset_msg_id("::1", 1, 2)
    assert len(msg_id) == 56 and decode_offset_msg_id(msg_id) == ("::1", 1, 2)


def test_uniq_ids_are_unique_32_char_uppercase_hex():
    """UNIQ_KEY ids are 32 uppercase hex characters and differ by counter."""
    gen = UniqIdGenerator("192.168.1.2")
    a, b = gen.next(), gen.next()
    assert a != b and len(a) == 32 and a == a.upper() and a.startswith("C0A80102")


def test_json_reader_accepts_fastjson_unquoted_integer_keys():
    """fastjson's {0:12} maps parse; digits inside strings are untouched."""
    assert jsonutil.loads(b'{"offsetTable":{"T@g":{0:12,1:5}},"s":"a,1:b"}') == {
        "offsetTable": {"T@g": {"0": 12, "1": 5}}, "s": "a,1:b"}


def test_json_writer_quotes_integer_keys_compactly():
    """We always write quoted keys and no whitespace."""
    assert jsonutil.dumps({"brokerAddrs": {0: "h:1"}}) == b'{"brokerAddrs":{"0":"h:1"}}'
