"""The gRPC server's HPACK decoder (broker/grpc/hpack_decode.py) against RFC 7541 and hpack.

Appendix C's examples (C.3 and C.4 requests, without and with Huffman; C.5 and C.6 responses in
a 256-octet table, which evict), round trips of hpack's Encoder over random header lists and
table sizes, and every malformed block is a HeaderBlockError, which the connection answers with
GOAWAY(COMPRESSION_ERROR) (RFC 9113 4.3).
"""

from __future__ import annotations

from typing import Any

import pytest
from hpack import Decoder, Encoder
from hpack.exceptions import HPACKDecodingError
from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
from hpack.huffman_table import decode_huffman as hpack_decode_huffman
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.grpc.hpack_decode import (
    STATIC_TABLE,
    HeaderBlockError,
    HeaderDecoder,
    decode_huffman,
)
from rocketmq_emu.broker.grpc.http2 import H2ServerConnection
from rocketmq_emu.broker.grpc.http2_frames import (
    CONNECTION_PREFACE,
    END_HEADERS,
    END_STREAM,
    HEADER,
    ErrorCode,
    FrameType,
    frame,
)
from rocketmq_emu.broker.grpc.http2_frames import settings as settings_frame

Fields = list[tuple[bytes, bytes]]


def _fields(*pairs: tuple[str, str]) -> Fields:
    return [(n.encode(), v.encode()) for n, v in pairs]


_REQ1 = _fields((":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"))
_REQ2 = [*_REQ1, (b"cache-control", b"no-cache")]
_REQ3 = _fields((":method", "GET"), (":scheme", "https"), (":path", "/index.html"),
                (":authority", "www.example.com"), ("custom-key", "custom-value"))
_RESP1 = _fields((":status", "302"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                 ("location", "https://www.example.com"))
_RESP2 = [(b":status", b"307"), *_RESP1[1:]]
_RESP3 = _fields((":status", "200"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                 ("location", "https://www.example.com"), ("content-encoding", "gzip"),
                 ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"))

#: RFC 7541 C.3 (requests without Huffman): block, fields, dynamic table after (newest first), size.
C3 = [
    ("828684410f7777772e6578616d706c652e636f6d", _REQ1,
     _fields((":authority", "www.example.com")), 57),
    ("828684be58086e6f2d6361636865", _REQ2,
     _fields(("cache-control", "no-cache"), (":authority", "www.example.com")), 110),
    ("828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565", _REQ3,
     _fields(("custom-key", "custom-value"), ("cache-control", "no-cache"), (":authority", "www.example.com")), 164),
]
#: C.4: the same requests, Huffman-coded; same tables.
C4 = [
    ("828684418cf1e3c2e5f23a6ba0ab90f4ff", *C3[0][1:]),
    ("828684be5886a8eb10649cbf", *C3[1][1:]),
    ("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf", *C3[2][1:]),
]
_TABLE_1 = _fields(("location", "https://www.example.com"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                   ("cache-control", "private"), (":status", "302"))
_TABLE_2 = [(b":status", b"307"), *_TABLE_1[:3]]  # C.5.2: ":status: 302" evicted
_TABLE_3 = _fields(("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
                   ("content-encoding", "gzip"), ("date", "Mon, 21 Oct 2013 20:13:22 GMT"))
#: C.5 (responses without Huffman, SETTINGS_HEADER_TABLE_SIZE 256: entries are evicted).
C5 = [
    ("4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d54"
     "6e1768747470733a2f2f7777772e6578616d706c652e636f6d", _RESP1, _TABLE_1, 222),
    ("4803333037c1c0bf", _RESP2, _TABLE_2, 222),
    ("88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d"
     "4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b20766572"
     "73696f6e3d31", _RESP3, _TABLE_3, 215),
]
#: C.6: the same responses, Huffman-coded.
C6 = [
    ("488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b"
     "97c8e9ae82ae43d3", *C5[0][1:]),
    ("4883640effc1c0bf", *C5[1][1:]),
    ("88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdf"
     "cd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007", *C5[2][1:]),
]


def _run_examples(examples: list[tuple[str, Fields, Fields, int]], table_size: int) -> None:
    decoder = HeaderDecoder()
    if table_size != 4096:
        decoder.decode(_size_update(table_size))  # the table of C.5/C.6 (an empty block)
    reference = Decoder()
    reference.header_table_size = table_size
    for block_hex, fields, table, size in examples:
        block = bytes.fromhex(block_hex)
        assert decoder.decode(block) == fields
        assert decoder.entries == table
        assert decoder.size == size
        assert [tuple(f) for f in reference.decode(block, raw=True)] == fields  # the vectors hold


@pytest.mark.parametrize("examples", [C3, C4], ids=["C.3", "C.4"])
def test_rfc7541_request_examples(examples: list[tuple[str, Fields, Fields, int]]) -> None:
    _run_examples(examples, 4096)


@pytest.mark.parametrize("examples", [C5, C6], ids=["C.5", "C.6"])
def test_rfc7541_response_examples_evict(examples: list[tuple[str, Fields, Fields, int]]) -> None:
    _run_examples(examples, 256)


def test_static_table_is_appendix_a() -> None:
    """Spot checks of Appendix A through the decoder: indices 1, 2, 8, 23, 61."""
    assert len(STATIC_TABLE) == 61
    block = bytes([0x80 | 1, 0x80 | 2, 0x80 | 8, 0x80 | 23, 0x80 | 61])
    assert HeaderDecoder().decode(block) == [(b":authority", b""), (b":method", b"GET"), (b":status", b"200"),
                                             (b"authorization", b""), (b"www-authenticate", b"")]


def test_literal_representations() -> None:
    """6.2.1-6.2.3 with literal and indexed names; only 6.2.1 adds to the table; C.2.1-C.2.4."""
    decoder = HeaderDecoder()
    # C.2.1: incremental indexing, literal name.
    assert decoder.decode(bytes.fromhex("400a637573746f6d2d6b65790d637573746f6d2d686561646572")) == [
        (b"custom-key", b"custom-header")]
    assert decoder.size == 55
    # C.2.2: without indexing, indexed name (:path).
    assert decoder.decode(bytes.fromhex("040c2f73616d706c652f70617468")) == [(b":path", b"/sample/path")]
    # C.2.3: never indexed, literal name.
    assert decoder.decode(bytes.fromhex("100870617373776f726406736563726574")) == [(b"password", b"secret")]
    # C.2.4: indexed field; and a name taken from the dynamic table (index 62), never indexed.
    assert decoder.decode(bytes.fromhex("82") + b"\x1f\x2f\x01v") == [(b":method", b"GET"), (b"custom-key", b"v")]
    assert decoder.entries == [(b"custom-key", b"custom-header")]


def _integer(value: int, prefix_bits: int, first: int) -> bytes:
    """5.1 (the test's own encoder)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _size_update(size: int) -> bytes:
    return _integer(size, 5, 0x20)


def test_integers_with_prefixes() -> None:
    """C.1: 1337 in a 5-bit prefix (a size update here); long indices and lengths."""
    decoder = HeaderDecoder(max_table_size=2000)
    assert decoder.decode(b"\x3f\x9a\x0a") == [] and decoder.table_size == 1337
    name = b"n" * 300
    value = b"v" * 20000
    block = b"\x40" + _integer(len(name), 7, 0) + name + _integer(len(value), 7, 0) + value
    assert HeaderDecoder().decode(block) == [(name, value)]
    decoder = HeaderDecoder()
    for i in range(1, 125):  # 124 entries of 33 octets: indices up to 185, over the 7-bit prefix
        decoder.decode(b"\x40\x01" + bytes([i]) + b"\x00")
    assert decoder.size == 124 * 33
    assert decoder.decode(_integer(185, 7, 0x80) + _integer(127, 7, 0x80)) == [(b"\x01", b""), (b"\x3b", b"")]  # 62 is entry 124


def test_size_updates_evict_and_an_oversized_entry_empties_the_table() -> None:
    """4.3: a smaller size evicts the oldest; 4.4: an entry over the size empties the table."""
    decoder = HeaderDecoder()
    decoder.decode(b"\x40\x01a\x01b" + b"\x40\x01c\x01d")  # two entries of 34
    assert decoder.size == 68
    decoder.decode(_size_update(40))
    assert decoder.entries == [(b"c", b"d")] and decoder.size == 34
    decoder.decode(b"\x40\x01e" + _integer(20, 7, 0) + b"f" * 20)  # 53 > 40
    assert decoder.entries == [] and decoder.size == 0
    decoder.decode(_size_update(0) + _size_update(4096) + b"\x40\x01g\x01h")  # two updates (4.2)
    assert decoder.entries == [(b"g", b"h")] and decoder.table_size == 4096


_HEADER_NAMES = st.sampled_from([b":path", b"content-type", b"te", b"authorization", b"x-mq-request-id",
                                 b"x-mq-date-time", b"grpc-timeout", b"user-agent", b"accept"])
_HEADER = st.tuples(_HEADER_NAMES | st.binary(min_size=1, max_size=40),
                    st.binary(max_size=300))


@settings(max_examples=200, deadline=None)
@given(blocks=st.lists(st.lists(st.tuples(_HEADER, st.booleans()), max_size=12), min_size=1, max_size=6),
       table_sizes=st.lists(st.integers(0, 4096), min_size=1, max_size=6),
       huffman=st.booleans())
def test_round_trips_hpacks_encoder(blocks: list[list[tuple[tuple[bytes, bytes], bool]]],
                                    table_sizes: list[int], huffman: bool) -> None:
    """Several blocks in sequence from hpack's Encoder (indexing, never-indexed fields, its size
    updates as the table size changes) decode to the lists encoded, with the same table."""
    from hpack import NeverIndexedHeaderTuple

    encoder = Encoder()
    decoder = HeaderDecoder()
    reference = Decoder()
    for i, block_fields in enumerate(blocks):
        encoder.header_table_size = table_sizes[i % len(table_sizes)]
        fields = [(name, value) for (name, value), _ in block_fields]
        sent: list[Any] = [NeverIndexedHeaderTuple(n, v) if never else (n, v)
                           for (n, v), never in block_fields]
        block = encoder.encode(sent, huffman=huffman)
        assert decoder.decode(block) == fields
        assert [tuple(f) for f in reference.decode(block, raw=True)] == fields
        assert decoder.entries == list(reference.header_table.dynamic_entries)
        assert decoder.table_size == reference.header_table_size


def test_sdk_like_blocks_in_sequence() -> None:
    """The 5.x SDKs' shape: constant headers indexed, a fresh request id, date and signature
    per call as Huffman literals with incremental indexing; the table keeps turning over."""
    import uuid

    encoder = Encoder()
    decoder = HeaderDecoder()
    for i in range(300):
        fields = [(b":method", b"POST"), (b":path", b"/apache.rocketmq.v2.MessagingService/SendMessage"),
                  (b"x-mq-client-id", b"host@1"), (b"x-mq-request-id", str(uuid.uuid4()).encode()),
                  (b"x-mq-date-time", b"20240101T1200%02dZ" % (i % 60)),
                  (b"authorization", b"MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=x-mq-date-time, Signature="
                   + uuid.uuid4().hex.upper().encode())]
        assert decoder.decode(encoder.encode(fields)) == fields
        assert decoder.size <= 4096


_HUFFMAN = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_huffman_round_trips_every_octet_string(text: bytes) -> None:
    """Appendix B: any octets, Huffman-coded by hpack, decode back."""
    assert decode_huffman(_HUFFMAN.encode(text)) == text


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=12) | st.binary(max_size=12).map(lambda b: _HUFFMAN.encode(b)[:-1] + b"\xff"))
def test_huffman_agrees_with_hpacks_on_any_input(data: bytes) -> None:
    """Octet steps composed from hpack's nibble steps: same strings, same refusals (5.2)."""
    try:
        expected: bytes | None = hpack_decode_huffman(data)
    except HPACKDecodingError:
        expected = None
    if expected is None:
        with pytest.raises(HeaderBlockError):
            decode_huffman(data)
    else:
        assert decode_huffman(data) == expected


@pytest.mark.parametrize("data", [b"\x00", b"\xff" * 4, b"\xfe", b"\x1f\xff\xff", b"\xff\xff\xff\xfc"])
def test_huffman_refusals(data: bytes) -> None:
    """5.2: padding not all 1s or over 7 bits, and the EOS code, are errors."""
    with pytest.raises(HPACKDecodingError):
        hpack_decode_huffman(data)
    with pytest.raises(HeaderBlockError):
        decode_huffman(data)


_BAD_BLOCKS = {
    "index 0": b"\x80",
    "index past the tables": b"\xbe",
    "name index past the tables": b"\x7e\x01a",
    "integer over the limit": b"\xff\xff\xff\xff\xff\xff\x01",
    "truncated integer": b"\xff\x80",
    "truncated name": b"\x40\x05ab",
    "truncated value": b"\x41\x05abc",
    "value missing": b"\x82\x41",
    "size update over our limit": _size_update(4097),
    "size update after a field": b"\x82\x20",
    "bad Huffman padding": b"\x00\x81\x00\x00",
    "Huffman EOS": b"\x00\x84\xff\xff\xff\xff\x00",
}


@pytest.mark.parametrize("block", list(_BAD_BLOCKS.values()), ids=list(_BAD_BLOCKS))
def test_malformed_blocks_raise(block: bytes) -> None:
    with pytest.raises(HeaderBlockError):
        HeaderDecoder().decode(block)


def test_header_list_over_the_limit_raises() -> None:
    """RFC 9113 6.5.2: name, value and 32 octets a field count towards the limit."""
    block = b"\x00\x01a" + _integer(100, 7, 0) + b"v" * 100
    assert HeaderDecoder(max_header_list_size=133).decode(block) == [(b"a", b"v" * 100)]
    with pytest.raises(HeaderBlockError):
        HeaderDecoder(max_header_list_size=132).decode(block)


def test_indexed_fields_count_towards_the_limit() -> None:
    """Indexed fields (static and dynamic) add their entry's size, looked up, not computed."""
    decoder = HeaderDecoder(max_header_list_size=200)
    decoder.decode(b"\x40\x01a" + _integer(100, 7, 0) + b"v" * 100)  # indexed as 62: 133 octets
    assert decoder.decode(b"\xbe\x83") == [(b"a", b"v" * 100), (b":method", b"POST")]  # 133 + 42
    with pytest.raises(HeaderBlockError):
        decoder.decode(b"\xbe\xbe")  # 266


def test_a_lowered_limit_needs_a_size_update() -> None:
    """4.2: once our limit shrinks, a block that does not shrink the table to it is an error."""
    decoder = HeaderDecoder()
    decoder.max_table_size = 100
    with pytest.raises(HeaderBlockError):
        decoder.decode(b"\x82")
    assert decoder.decode(_size_update(100) + b"\x82") == [(b":method", b"GET")]


def test_the_error_is_hpacks_decoding_error() -> None:
    """Code catching hpack's errors keeps working."""
    assert issubclass(HeaderBlockError, HPACKDecodingError)


@pytest.mark.parametrize("block", list(_BAD_BLOCKS.values()), ids=list(_BAD_BLOCKS))
def test_the_connection_answers_compression_error(block: bytes) -> None:
    """RFC 9113 4.3: a header block that does not decode is a connection error."""
    conn = H2ServerConnection(_Listener())
    conn.initiate()
    conn.data_to_send()
    conn.receive(CONNECTION_PREFACE + settings_frame({}) + frame(FrameType.HEADERS, END_HEADERS | END_STREAM, 1, block))
    assert conn.error is not None and "COMPRESSION_ERROR" in conn.error
    out = conn.data_to_send()
    at = 0
    last: tuple[int, bytes] = (0, b"")
    while at < len(out):  # the last frame is GOAWAY(COMPRESSION_ERROR)
        length_type, _, _ = HEADER.unpack_from(out, at)
        length = length_type >> 8
        last = (length_type & 0xFF, out[at + HEADER.size:at + HEADER.size + length])
        at += HEADER.size + length
    assert last[0] == FrameType.GOAWAY and last[1][4:8] == ErrorCode.COMPRESSION_ERROR.to_bytes(4, "big")


class _Listener:
    """A listener that must not be told of any request."""

    def on_request(self, stream_id: int, headers: Fields, end_stream: bool) -> None:
        raise AssertionError("no request from a bad block")

    def on_data(self, stream_id: int, data: bytes, end_stream: bool) -> None:
        raise AssertionError("no data")

    def on_reset(self, stream_id: int, error_code: int) -> None:
        pass

    def on_goaway(self, error_code: int, debug: bytes) -> None:
        pass


def test_blocks_that_leave_the_table_are_remembered_until_it_changes() -> None:
    """A repeated block of indexed fields and literals without indexing (grpc C-core's) is
    remembered; one that adds to the table is decoded each time; a change forgets the others."""
    decoder = HeaderDecoder()
    decoder.decode(b"\x40\x01a\x01v")  # a: v at 62
    plain = b"\xbe\x83\x00\x01x\x01y"  # 62, :method POST, x: y without indexing
    first = decoder.decode(plain)
    assert first == [(b"a", b"v"), (b":method", b"POST"), (b"x", b"y")]
    again = decoder.decode(plain)
    assert again == first and again is not first  # a list of its own for each caller
    adding = b"\x40\x01b\x01w"
    decoder.decode(adding)
    decoder.decode(adding)  # the table moves each time: b: w twice, then a: v
    assert decoder.entries == [(b"b", b"w"), (b"b", b"w"), (b"a", b"v")]
    assert decoder.decode(plain)[0] == (b"b", b"w")  # 62 now names the newest entry
    decoder.decode(b"\x20")  # a size update empties the table
    with pytest.raises(HeaderBlockError):
        decoder.decode(plain)
