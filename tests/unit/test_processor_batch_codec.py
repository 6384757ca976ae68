"""The SEND_BATCH_MESSAGE body codec: struct fast path held to the construct spec."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.processors.batch_codec import (
    BATCH_BLOCK,
    BATCH_BODY,
    BatchFormatError,
    BatchMessage,
    decode_batch,
    encode_batch,
)

messages = st.lists(
    st.builds(
        BatchMessage,
        flag=st.integers(-(2**31), 2**31 - 1),
        body=st.binary(max_size=64),
        properties=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20),
    ),
    max_size=5,
)


def test_one_block_has_rocketmqs_layout():
    """A block is TOTALSIZE, MAGIC 0, CRC 0, FLAG, BODYLENGTH, BODY, PROPERTIESLENGTH, PROPS."""
    raw = encode_batch([BatchMessage(7, b"hi", "K\u0001Y")])
    assert raw == bytes.fromhex("0000001b000000000000000000000007000000026869") + \
        b"\x00\x03K\x01Y"
    parsed = BATCH_BLOCK.parse(raw)
    assert (parsed.totalSize, parsed.flag, parsed.body, parsed.properties) == (
        27, 7, b"hi", b"K\x01Y")


@given(messages)
def test_struct_encoding_equals_the_construct_spec(msgs):
    """encode_batch writes exactly what the construct declaration builds."""
    spec = BATCH_BODY.build([
        {"totalSize": 22 + len(m.body) + len(m.properties.encode()), "magicCode": 0,
         "bodyCRC": 0, "flag": m.flag, "body": m.body, "properties": m.properties.encode()}
        for m in msgs])
    assert encode_batch(msgs) == spec


@given(messages)
def test_decode_inverts_encode(msgs):
    """decode_batch(encode_batch(m)) == m."""
    assert decode_batch(encode_batch(msgs)) == msgs


@pytest.mark.parametrize("cut", [3, 10, 21, 23, 26])
def test_truncated_body_names_the_block_and_offset(cut):
    """A truncated body raises BatchFormatError naming block and byte offset."""
    raw = encode_batch([BatchMessage(0, b"ab", ""), BatchMessage(0, b"hi", "K\u0001Y")])
    with pytest.raises(BatchFormatError, match=r"batch block 1 at byte 24"):
        decode_batch(raw[: 24 + cut])


def test_wrong_total_size_is_refused():
    """A TOTALSIZE that disagrees with the fields is refused rather than guessed around."""
    raw = bytearray(encode_batch([BatchMessage(0, b"ab", "")]))
    raw[3] += 1
    with pytest.raises(BatchFormatError, match="TOTALSIZE"):
        decode_batch(bytes(raw))
