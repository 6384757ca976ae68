"""The recall handle codec (RocketMQ 5.3 ``RecallMessageHandle``): golden vectors produced by
Java's ``HandleV1.buildHandle`` (``Base64.getUrlEncoder``), and ``decodeHandle``'s refusals."""

from __future__ import annotations

import base64

import pytest

from rocketmq_emu.broker.recall_handle import (
    INVALID,
    RecallHandleError,
    RecallHandleV1,
    build_handle,
    decode_handle,
)

#: (topic, brokerName, timestamp, messageId) → what Java 17's buildHandle returns.
GOLDEN = [
    (("TopicTest", "broker-a", "1700000000001", "7F0000010A2F18B4AAC25B2E5F3D0000"),
     "djEgVG9waWNUZXN0IGJyb2tlci1hIDE3MDAwMDAwMDAwMDEgN0YwMDAwMDEwQTJGMThCNEFBQzI1QjJFNUYzRDAwMDA="),
    (("S5Delay_x", "broker-b", "1735689600000", "AC110002000A2A9F0000000001"),
     "djEgUzVEZWxheV94IGJyb2tlci1iIDE3MzU2ODk2MDAwMDAgQUMxMTAwMDIwMDBBMkE5RjAwMDAwMDAwMDE="),
    (("t", "b", "1", "m?"), "djEgdCBiIDEgbT8="),
    (("主题", "broker-a", "42", "ID>>>"), "djEg5Li76aKYIGJyb2tlci1hIDQyIElEPj4-"),
]


@pytest.mark.parametrize(("fields", "encoded"), GOLDEN)
def test_build_handle_matches_java(fields, encoded):
    """buildHandle: "v1 topic broker timestamp id", URL-safe Base64 with padding."""
    assert build_handle(*fields) == encoded


@pytest.mark.parametrize(("fields", "encoded"), GOLDEN)
def test_decode_handle_reads_java_handles(fields, encoded):
    """decodeHandle gives the four fields back, version v1."""
    assert decode_handle(encoded) == RecallHandleV1(*fields)


def test_decode_accepts_missing_padding_and_ignores_extra_fields():
    """getUrlDecoder does not require '='; fields past the fifth are ignored; trailing
    separators are dropped as String.split drops trailing empty strings."""
    assert decode_handle("djEgdCBiIDEgbT8") == RecallHandleV1("t", "b", "1", "m?")
    extra = base64.urlsafe_b64encode(b"v1 a b c d e f").decode()
    assert decode_handle(extra) == RecallHandleV1("a", "b", "c", "d")


def test_null_message_id_is_written_as_java_joins_it():
    """String.join writes a null id as "null"."""
    assert decode_handle(build_handle("t", "b", "1", None)).message_id == "null"


@pytest.mark.parametrize("handle", [
    "",
    None,
    base64.urlsafe_b64encode(b"v1 a b c").decode(),  # four fields
    base64.urlsafe_b64encode(b"v2 a b c d").decode(),  # another version
    base64.urlsafe_b64encode(b"v1 a b c d  ").decode()[:-1] + "!",  # outside the alphabet
    "v1 a b c d",  # not Base64 at all
    base64.b64encode(b"v1 a b c d??>").decode(),  # standard alphabet ('+', '/')
    "djEgdCBiIDEgbT8==",  # padding that does not fit
    "d",  # a lone 6-bit unit
])
def test_invalid_handles_are_refused_with_java_message(handle):
    """Every decoding failure is DecoderException("recall handle is invalid")."""
    with pytest.raises(RecallHandleError) as info:
        decode_handle(handle)
    assert str(info.value) == INVALID == "recall handle is invalid"
