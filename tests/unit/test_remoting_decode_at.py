"""``decode_frame_at``: a frame decoded where it lies in a read holding several frames, the same
command as :func:`decode_frame` of its own bytes (the protocol no longer copies each frame out
of the read before decoding it)."""

from __future__ import annotations

import pytest

from rocketmq_emu.broker.remoting.codes import SERIALIZE_ROCKETMQ
from rocketmq_emu.broker.remoting.command import (
    FRAME_LENGTH,
    RemotingCommand,
    RemotingCommandError,
    decode_frame,
    decode_frame_at,
)


def _frames() -> list[bytes]:
    return [
        RemotingCommand.request(310, {"b": "TopicA", "e": "1"}, b"body-1", opaque=1).encode(),
        RemotingCommand.request(11, {"topic": "TopicA"}, opaque=2,
                                serialize_type=SERIALIZE_ROCKETMQ).encode(),
        RemotingCommand.request(310, {"b": "TopicB"}, b"x" * 300, opaque=3).encode(),
    ]


def _spans(read: bytes) -> list[tuple[int, int]]:
    spans, pos = [], 0
    while pos < len(read):
        (length,) = FRAME_LENGTH.unpack_from(read, pos)
        spans.append((pos + FRAME_LENGTH.size, pos + FRAME_LENGTH.size + length))
        pos += FRAME_LENGTH.size + length
    return spans


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_each_frame_of_a_read_decodes_as_its_own_bytes_would(kind) -> None:
    read = b"".join(_frames())
    buf = kind(read)
    for start, end in _spans(read):
        cmd = decode_frame_at(buf, start, end)
        assert cmd == decode_frame(read[start:end])
        assert type(cmd.body) is bytes


def test_a_header_longer_than_its_frame_names_the_field() -> None:
    read = b"".join(_frames())
    start, end = _spans(read)[0]
    with pytest.raises(RemotingCommandError, match="truncated header"):
        decode_frame_at(read, start, start + 20)  # the next frame's bytes are not this one's
    assert decode_frame_at(read, start, end).opaque == 1
