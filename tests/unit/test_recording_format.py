"""The recording file of ``rmq-emu up --record`` (broker/recording/format.py): entries round
trip, frames are reassembled per connection and direction, damage is reported with the entry
number and byte offset."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.recording.format import (
    CLIENT_TO_SERVER,
    HEADER_STRUCT,
    SERVER_TO_CLIENT,
    Entry,
    RecordingError,
    encode_entry,
    encode_header,
    frames,
    read_entries,
)
from rocketmq_emu.broker.remoting.command import RemotingCommand

entries = st.builds(Entry, st.integers(0, 2**62), st.integers(0, 2**32 - 1),
                    st.integers(0, 65535), st.sampled_from([CLIENT_TO_SERVER, SERVER_TO_CLIENT]),
                    st.binary(max_size=64))


@given(st.lists(entries, max_size=8))
def test_entries_round_trip(items: list[Entry]) -> None:
    """What is written is read back, in order."""
    data = encode_header(1) + b"".join(encode_entry(e) for e in items)
    assert list(read_entries(data)) == items


def test_frames_are_cut_per_connection_and_direction() -> None:
    """A frame split over two reads, interleaved with another connection, comes out whole."""
    a = RemotingCommand.request(105, {"topic": "T"}).encode()
    b = RemotingCommand.request(34, {}).encode()
    items = [Entry(1, 1, 9876, CLIENT_TO_SERVER, a[:7]), Entry(2, 2, 9876, CLIENT_TO_SERVER, b),
             Entry(3, 1, 9876, CLIENT_TO_SERVER, a[7:])]
    got = [(e.connection, RemotingCommand.decode(f).code) for e, f in frames(iter(items))]
    assert got == [(2, 34), (1, 105)]


def test_truncated_entry_names_its_number_and_offset() -> None:
    """A crash mid-write leaves a torn last entry: reported, the entries before it read."""
    data = encode_header(1) + encode_entry(Entry(1, 1, 1, 0, b"abc")) \
        + encode_entry(Entry(2, 1, 1, 0, b"defgh"))[:-2]
    second = HEADER_STRUCT.size + len(encode_entry(Entry(1, 1, 1, 0, b"abc")))
    it = read_entries(data)
    assert next(it).payload == b"abc"
    with pytest.raises(RecordingError) as err:
        next(it)
    assert err.value.entry == 2 and err.value.offset == second
    assert "truncated" in str(err.value)


@pytest.mark.parametrize("data, words", [
    (b"", "no recording header"),
    (b"NOTAREC!" + bytes(10), "not a recording"),
    (encode_header(1)[:8] + b"\x00\x09" + bytes(8), "version 9"),
])
def test_not_a_recording_is_one_error(data: bytes, words: str) -> None:
    """A file that is no recording (or a newer one) is refused at entry 0, byte 0."""
    with pytest.raises(RecordingError, match=words):
        list(read_entries(data))


def test_damaged_payload_fails_its_checksum() -> None:
    """A flipped payload byte is caught by the entry's crc32c."""
    data = bytearray(encode_header(1) + encode_entry(Entry(1, 1, 1, 0, b"abc")))
    data[-1] ^= 0xFF
    with pytest.raises(RecordingError, match="checksum"):
        list(read_entries(bytes(data)))
