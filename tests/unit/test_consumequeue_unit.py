"""Specification of the 20-byte consume-queue unit (protocol.md §5.2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.consumequeue.unit import (
    CQ_STORE_UNIT_SIZE,
    CQ_UNIT,
    PRE_BLANK_BYTES,
    decode_unit,
    encode_unit,
    is_pre_blank,
    is_valid_unit,
)
from rocketmq_emu.broker.message import tags_code

INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)


def test_unit_layout_golden_bytes():
    """Offset int64, size int32, tagsCode int64, big-endian, in that order."""
    data = encode_unit(0x0102030405060708, 0x0A0B0C0D, 0x1112131415161718)
    assert data.hex() == "0102030405060708" "0a0b0c0d" "1112131415161718"


def test_unit_is_twenty_bytes():
    """CQ_STORE_UNIT_SIZE is 20."""
    assert CQ_STORE_UNIT_SIZE == 20
    assert len(encode_unit(1, 2, 3)) == 20


def test_negative_tags_code_is_sign_extended():
    """A negative String.hashCode is stored sign-extended to int64."""
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE in Java.
    code = tags_code("polygenelubricants")
    assert code == -(2**31)
    data = encode_unit(4096, 180, code)
    assert data.hex() == "0000000000001000" "000000b4" "ffffffff80000000"


def test_pre_blank_unit_bytes():
    """fillPreBlank writes (0, Integer.MAX_VALUE, 0)."""
    assert PRE_BLANK_BYTES.hex() == "0000000000000000" "7fffffff" "0000000000000000"
    assert is_pre_blank(*decode_unit(PRE_BLANK_BYTES))


def test_construct_spec_matches_golden_bytes():
    """The construct declaration builds the same bytes as the hand-written golden value."""
    built = CQ_UNIT.build({"commitlog_offset": 4096, "size": 180, "tags_code": -(2**31)})
    assert built.hex() == "0000000000001000" "000000b4" "ffffffff80000000"


@given(INT64, INT32, INT64)
def test_struct_and_construct_agree(offset, size, code):
    """Fast path and construct spec produce identical bytes and decode back."""
    fast = encode_unit(offset, size, code)
    spec = CQ_UNIT.build({"commitlog_offset": offset, "size": size, "tags_code": code})
    assert fast == spec
    assert tuple(decode_unit(fast)) == (offset, size, code)
    parsed = CQ_UNIT.parse(fast)
    assert (parsed.commitlog_offset, parsed.size, parsed.tags_code) == (offset, size, code)


def test_decode_short_buffer_names_shortfall():
    """Decoding fewer than 20 bytes raises with the bytes needed and left."""
    with pytest.raises(ValueError, match="needs 20 bytes at 4, 15 left"):
        decode_unit(b"\0" * 19, 4)


def test_validity_rule_of_recovery():
    """A unit is valid when offset >= 0 and size > 0; an all-zero unit is not."""
    assert is_valid_unit(0, 100)
    assert not is_valid_unit(0, 0)
    assert not is_valid_unit(-1, 10)
