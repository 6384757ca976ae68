"""gRPC over HTTP/2 codecs (broker/grpc/wire.py), against grpc's doc/PROTOCOL-HTTP2.md."""

from __future__ import annotations

import base64
import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.grpc import wire
from rocketmq_emu.broker.grpc.wire import GrpcError, MessageDecoder, RequestRejected, StatusCode

PATH = "/apache.rocketmq.v2.MessagingService/SendMessage"


def _request(**over):
    headers = {
        ":method": "POST", ":scheme": "http", ":path": PATH, ":authority": "127.0.0.1:8081",
        "te": "trailers", "content-type": "application/grpc", "grpc-timeout": "3S",
        "grpc-accept-encoding": "identity,deflate,gzip", "user-agent": "grpc-python/1.70",
        "x-mq-client-id": "host@1", "x-mq-language": "PYTHON",
        "authorization": "MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=x-mq-date-time, Signature=ab",
    }
    headers.update(over)
    return [(k, v) for k, v in headers.items() if v is not None]


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:], strict=False)]


# --- Length-Prefixed-Message ----------------------------------------------------------------------
def test_message_prefix_golden_bytes():
    """A message is flag 0, a 4-byte big-endian length, then the payload."""
    assert wire.encode_message(b"\x08\x96\x01") == b"\x00\x00\x00\x00\x03\x08\x96\x01"


def test_compressed_message_prefix_golden_bytes():
    """A compressed message has flag 1 in front of its length."""
    assert wire.encode_message(b"x" * 258, compressed=True)[:5] == b"\x01\x00\x00\x01\x02"


def test_encoding_matches_the_construct_declaration():
    """encode_message writes what the construct declaration builds."""
    built = wire.LENGTH_PREFIXED_MESSAGE.build({"compressed": 0, "message": b"hello"})
    assert wire.encode_message(b"hello") == built and wire.PREFIX_SIZE == 5


@given(st.lists(st.binary(max_size=300), max_size=8), st.lists(st.integers(0, 10_000), max_size=12))
def test_decoder_yields_whole_messages_for_any_chunking(messages, cuts):
    """Messages come out whole and in order however the DATA frames cut the stream."""
    stream = b"".join(wire.encode_message(m) for m in messages)
    decoder = MessageDecoder()
    out = [m for chunk in _chunks(stream, cuts) for m in decoder.feed(chunk)]
    assert out == messages and decoder.pending == 0


def test_decoder_returns_several_messages_from_one_chunk():
    """One chunk holding three messages gives all three."""
    stream = b"".join(wire.encode_message(m) for m in (b"a", b"", b"bc"))
    assert MessageDecoder().feed(stream) == [b"a", b"", b"bc"]


def test_decoder_holds_a_message_split_byte_by_byte():
    """A message fed one byte at a time comes out with its last byte."""
    data = wire.encode_message(b"payload")
    decoder = MessageDecoder()
    got = [decoder.feed(data[i:i + 1]) for i in range(len(data))]
    assert got[:-1] == [[]] * (len(data) - 1) and got[-1] == [b"payload"]


def test_decoder_reports_a_truncated_tail_as_pending():
    """Bytes of an unfinished message stay pending (a truncated request at EOS)."""
    decoder = MessageDecoder()
    assert decoder.feed(wire.encode_message(b"abcdef")[:-2]) == [] and decoder.pending == 9


def test_decoder_refuses_compressed_flag_without_grpc_encoding():
    """Compressed-Flag 1 without a grpc-encoding is INTERNAL, naming the flag."""
    with pytest.raises(GrpcError, match="Compressed-Flag is 1") as caught:
        MessageDecoder().feed(wire.encode_message(b"x", compressed=True))
    assert caught.value.code is StatusCode.INTERNAL


def test_decoder_refuses_compressed_flag_with_identity_encoding():
    """grpc-encoding identity counts as no encoding: flag 1 is refused."""
    with pytest.raises(GrpcError, match="no grpc-encoding"):
        MessageDecoder(encoding="identity").feed(wire.encode_message(b"x", compressed=True))


def test_decoder_refuses_a_flag_other_than_0_or_1():
    """A Compressed-Flag of 2 is INTERNAL."""
    with pytest.raises(GrpcError, match="must be 0 or 1"):
        MessageDecoder().feed(b"\x02\x00\x00\x00\x00")


def test_decoder_refuses_a_message_over_the_limit_from_its_prefix():
    """A length over max_size is RESOURCE_EXHAUSTED as soon as the prefix arrives."""
    with pytest.raises(GrpcError, match="100 bytes is over the limit of 99") as caught:
        MessageDecoder(max_size=99).feed(wire.encode_message(b"x" * 100)[:5])
    assert caught.value.code is StatusCode.RESOURCE_EXHAUSTED


def test_decoder_accepts_a_message_at_the_limit():
    """A message of exactly max_size bytes passes."""
    assert MessageDecoder(max_size=4).feed(wire.encode_message(b"abcd")) == [b"abcd"]


def test_decoder_inflates_gzip_messages():
    """With grpc-encoding gzip a flagged message is gunzipped."""
    data = wire.encode_message(gzip.compress(b"hello" * 10), compressed=True)
    assert MessageDecoder(encoding="gzip").feed(data) == [b"hello" * 10]


def test_decoder_inflates_deflate_messages():
    """With grpc-encoding deflate a flagged message is zlib-inflated; flag 0 passes as is."""
    data = wire.encode_message(zlib.compress(b"abc"), compressed=True) + wire.encode_message(b"raw")
    assert MessageDecoder(encoding="deflate").feed(data) == [b"abc", b"raw"]


def test_decoder_limits_the_decompressed_size():
    """A compressed message inflating past max_size is RESOURCE_EXHAUSTED."""
    data = wire.encode_message(gzip.compress(b"\x00" * 1000), compressed=True)
    with pytest.raises(GrpcError, match="decompressed") as caught:
        MessageDecoder(max_size=100, encoding="gzip").feed(data)
    assert caught.value.code is StatusCode.RESOURCE_EXHAUSTED


def test_decoder_refuses_a_message_that_does_not_inflate():
    """Garbage under grpc-encoding gzip is INTERNAL, naming the encoding."""
    with pytest.raises(GrpcError, match="does not decompress with gzip"):
        MessageDecoder(encoding="gzip").feed(wire.encode_message(b"not gzip", compressed=True))


def test_decoder_refuses_an_unknown_encoding():
    """A decoder for an encoding it cannot inflate is UNIMPLEMENTED."""
    with pytest.raises(GrpcError, match="snappy") as caught:
        MessageDecoder(encoding="snappy")
    assert caught.value.code is StatusCode.UNIMPLEMENTED


# --- Request-Headers ---------------------------------------------------------------------------------
def test_request_headers_parse_the_call_definition():
    """A well-formed request gives path, service, method, timeout and encodings."""
    req = wire.parse_request_headers(_request(), methods={PATH})
    assert (req.service, req.method, req.scheme, req.authority, req.timeout) == (
        "apache.rocketmq.v2.MessagingService", "SendMessage", "http", "127.0.0.1:8081", 3.0)
    assert req.encoding is None and req.accept_encodings == ("identity", "deflate", "gzip")


def test_request_headers_accept_bytes_pairs():
    """Header pairs given as bytes (h2's default) parse like str pairs."""
    raw = [(k.encode(), v.encode()) for k, v in _request()]
    assert wire.parse_request_headers(raw).path == PATH


def test_request_headers_keep_custom_metadata_and_auth():
    """authorization and x-mq-* are metadata; call-definition headers are not."""
    req = wire.parse_request_headers(_request())
    assert req.authorization.startswith("MQv2-HMAC-SHA1 Credential=ak")
    assert req.mq_headers == {"x-mq-client-id": "host@1", "x-mq-language": "PYTHON"}
    assert {k for k, _ in req.metadata} == {"x-mq-client-id", "x-mq-language", "authorization"}


def test_x_mq_headers_are_read_once_per_block_and_shared_by_each_calls_copy():
    """A connection parses a client's block once; each call's copy (its own grpc-timeout)
    shares the block's x-mq-* headers, which nobody can change in passing."""
    block = wire.parse_request_headers(_request())
    call = block.with_request_fields(2.5, block.metadata)
    assert call.timeout == 2.5 and call.mq_headers is block.mq_headers
    with pytest.raises(TypeError):
        call.mq_headers["x-mq-client-id"] = "someone-else"  # type: ignore[index]
    other = block.with_request_fields(None, (*block.metadata, ("x-mq-request-id", "r-1")))
    assert other.mq_headers == {"x-mq-client-id": "host@1", "x-mq-language": "PYTHON",
                                "x-mq-request-id": "r-1"}


def test_binary_metadata_is_base64_decoded_padded_or_not():
    """-bin values decode padded and unpadded, split on commas."""
    req = wire.parse_request_headers(_request(**{"trace-bin": "AQI=,AQID"}))
    assert [v for k, v in req.metadata if k == "trace-bin"] == [b"\x01\x02", b"\x01\x02\x03"]


def test_binary_metadata_that_is_not_base64_is_refused():
    """A -bin value that is not base64 is rejected, naming the header."""
    with pytest.raises(RequestRejected, match="trace-bin"):
        wire.parse_request_headers(_request(**{"trace-bin": "@@@"}))


def test_content_type_with_proto_suffix_is_accepted():
    """application/grpc+proto is a gRPC content-type."""
    req = wire.parse_request_headers(_request(**{"content-type": "application/grpc+proto"}))
    assert req.content_type == "application/grpc+proto"


def test_wrong_content_type_gets_http_415():
    """A content-type not starting with application/grpc is answered with HTTP 415."""
    with pytest.raises(RequestRejected) as caught:
        wire.parse_request_headers(_request(**{"content-type": "application/json"}))
    assert caught.value.http_status == 415 and caught.value.response()[0] == (":status", "415")


def test_missing_content_type_gets_http_415():
    """No content-type at all is answered with HTTP 415."""
    with pytest.raises(RequestRejected) as caught:
        wire.parse_request_headers(_request(**{"content-type": None}))
    assert caught.value.http_status == 415


def test_non_post_method_gets_http_405():
    """A GET is refused with HTTP 405."""
    with pytest.raises(RequestRejected, match="POST") as caught:
        wire.parse_request_headers(_request(**{":method": "GET"}))
    assert caught.value.http_status == 405


def test_missing_path_gets_http_400():
    """A request without :path is a malformed HTTP/2 request: HTTP 400."""
    with pytest.raises(RequestRejected, match=":path") as caught:
        wire.parse_request_headers(_request(**{":path": None}))
    assert caught.value.http_status == 400


def test_unknown_path_is_unimplemented_trailers_only():
    """A path not served is answered Trailers-Only with UNIMPLEMENTED."""
    with pytest.raises(RequestRejected) as caught:
        wire.parse_request_headers(_request(**{":path": "/x.Y/Z"}), methods={PATH})
    assert caught.value.response() == [
        (":status", "200"), ("content-type", "application/grpc"),
        ("grpc-status", "12"), ("grpc-message", "Method not found: /x.Y/Z")]


@pytest.mark.parametrize("path", ["/", "/only", "no/slash", "/a/b/c", "//m"])
def test_malformed_path_is_unimplemented(path):
    """A path not of the form /Service/Method is UNIMPLEMENTED."""
    with pytest.raises(RequestRejected) as caught:
        wire.parse_request_headers(_request(**{":path": path}))
    assert caught.value.code is StatusCode.UNIMPLEMENTED


def test_te_other_than_trailers_is_refused():
    """te present but not 'trailers' is INTERNAL."""
    with pytest.raises(RequestRejected, match="te is") as caught:
        wire.parse_request_headers(_request(te="gzip"))
    assert caught.value.code is StatusCode.INTERNAL and caught.value.http_status == 200


def test_missing_te_is_tolerated():
    """A request without te still parses."""
    assert wire.parse_request_headers(_request(te=None)).method == "SendMessage"


def test_missing_timeout_is_infinite():
    """Without grpc-timeout the timeout is None (infinite)."""
    assert wire.parse_request_headers(_request(**{"grpc-timeout": None})).timeout is None


def test_malformed_timeout_is_refused():
    """A grpc-timeout of 9 digits is refused, naming the value."""
    with pytest.raises(RequestRejected, match="123456789S"):
        wire.parse_request_headers(_request(**{"grpc-timeout": "123456789S"}))


def test_unsupported_encoding_is_unimplemented_with_accept_encoding():
    """An unsupported grpc-encoding is UNIMPLEMENTED and the answer lists what is accepted."""
    with pytest.raises(RequestRejected) as caught:
        wire.parse_request_headers(_request(**{"grpc-encoding": "snappy"}), encodings=("gzip",))
    assert caught.value.code is StatusCode.UNIMPLEMENTED
    assert ("grpc-accept-encoding", "gzip") in caught.value.response()


def test_supported_encoding_is_kept():
    """grpc-encoding gzip is parsed as the request's encoding."""
    assert wire.parse_request_headers(_request(**{"grpc-encoding": "gzip"})).encoding == "gzip"


# --- Responses -------------------------------------------------------------------------------------------
def test_status_codes_are_grpcs_seventeen():
    """StatusCode has gRPC's 17 codes, OK 0 to UNAUTHENTICATED 16."""
    assert [c.value for c in StatusCode] == list(range(17))
    assert StatusCode.UNIMPLEMENTED == 12 and StatusCode.UNAUTHENTICATED == 16


def test_response_headers_for_a_plain_call():
    """Response-Headers are :status 200 and content-type application/grpc."""
    assert wire.response_headers() == [(":status", "200"), ("content-type", "application/grpc")]


def test_response_headers_with_encoding_and_metadata():
    """grpc-encoding comes before content-type, metadata after it."""
    assert wire.response_headers("gzip", ("gzip", "identity"), [("x-mq-a", "1")]) == [
        (":status", "200"), ("grpc-encoding", "gzip"), ("grpc-accept-encoding", "gzip,identity"),
        ("content-type", "application/grpc"), ("x-mq-a", "1")]


def test_ok_trailers_carry_status_zero_only():
    """The OK trailers are grpc-status 0 and no message."""
    assert wire.trailers(StatusCode.OK) == [("grpc-status", "0")]


def test_error_trailers_carry_a_percent_encoded_message():
    """An error's message is percent-encoded in grpc-message."""
    assert wire.trailers(StatusCode.NOT_FOUND, "topic T 100% gone\n") == [
        ("grpc-status", "5"), ("grpc-message", "topic T 100%25 gone%0A")]


def test_error_trailers_carry_unpadded_status_details():
    """grpc-status-details-bin is base64 without padding."""
    pairs = wire.trailers(StatusCode.INTERNAL, "x", details=b"\x08\x0d")
    assert ("grpc-status-details-bin", "CA0") in pairs


def test_trailers_only_is_one_headers_block():
    """Trailers-Only is :status, content-type, then the trailers."""
    assert wire.trailers_only(StatusCode.UNAUTHENTICATED, "no") == [
        (":status", "200"), ("content-type", "application/grpc"),
        ("grpc-status", "16"), ("grpc-message", "no")]


def test_parse_status_reads_back_trailers():
    """parse_status decodes what trailers writes."""
    pairs = wire.trailers(StatusCode.ABORTED, "é%", details=b"\x00\xff")
    assert wire.parse_status(pairs) == (10, "é%", b"\x00\xff")


def test_parse_status_without_grpc_status_is_unknown():
    """Missing grpc-status reads as UNKNOWN."""
    assert wire.parse_status([(":status", "503")])[0] == StatusCode.UNKNOWN


def test_metadata_names_outside_the_grammar_are_refused():
    """A metadata name with a space is a ValueError."""
    with pytest.raises(ValueError, match="outside"):
        wire.encode_metadata([("bad name", "v")])


def test_binary_metadata_round_trips_through_request_parsing():
    """A -bin value written by encode_metadata is read back by parse_request_headers."""
    pairs = wire.encode_metadata([("k-bin", b"\x00\x01\x02\x03")])
    req = wire.parse_request_headers(_request() + pairs)
    assert req.get("k-bin") == b"\x00\x01\x02\x03"


# --- Status-Message percent-encoding ---------------------------------------------------------------------
@given(st.text())
def test_grpc_message_round_trips(message):
    """decode(encode(m)) == m for any text."""
    assert wire.decode_grpc_message(wire.encode_grpc_message(message)) == message


@given(st.text())
def test_encoded_grpc_message_uses_only_allowed_bytes(message):
    """An encoded message is printable ASCII, with % only in front of two hex digits."""
    encoded = wire.encode_grpc_message(message)
    assert all(0x20 <= ord(c) <= 0x7E for c in encoded)
    assert all(encoded[i + 1:i + 3].isalnum() for i, c in enumerate(encoded) if c == "%")


def test_grpc_message_keeps_printable_ascii_as_is():
    """Printable ASCII other than % is not escaped."""
    assert wire.encode_grpc_message("Method not found: /a.B/C") == "Method not found: /a.B/C"


def test_grpc_message_decoding_leaves_broken_escapes():
    """A broken %-escape is kept as it is, never an error."""
    assert wire.decode_grpc_message("50%zz%4") == "50%zz%4"


def test_grpc_message_decoding_accepts_lower_case_hex():
    """%c3%a9 decodes like %C3%A9."""
    assert wire.decode_grpc_message("%c3%a9") == "é"


def test_grpc_message_decoding_replaces_invalid_utf8():
    """Invalid UTF-8 after decoding becomes U+FFFD."""
    assert wire.decode_grpc_message("a%FFb") == "a\ufffdb"


# --- Timeout ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, seconds", [
    ("2H", 7200.0), ("3M", 180.0), ("5S", 5.0), ("250m", 0.25), ("10u", 1e-5), ("7n", 7e-9),
    ("99999999S", 99999999.0), ("0S", 0.0),
])
def test_timeout_units(value, seconds):
    """Each unit H M S m u n converts to seconds."""
    assert wire.parse_timeout(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "S", "1", "1s", "1.5S", "-1S", "123456789m", " 1S", "1SS"])
def test_malformed_timeouts_are_refused(value):
    """Values not 1-8 digits plus one unit are ValueError."""
    with pytest.raises(ValueError, match="grpc-timeout"):
        wire.parse_timeout(value)


def test_timeout_is_formatted_in_the_finest_unit_that_fits():
    """The finest unit whose value has at most 8 digits, rounded up."""
    assert wire.format_timeout(1.5) == "1500000u"
    assert wire.format_timeout(0.05) == "50000000n"
    assert wire.format_timeout(864000) == "864000S"
    assert wire.format_timeout(2e8) == "3333334M"


def test_huge_timeouts_are_capped():
    """A timeout beyond 99999999 hours is capped at 99999999H."""
    assert wire.format_timeout(float("inf")) == wire.format_timeout(1e20) == "99999999H"


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan")])
def test_non_positive_timeouts_cannot_be_formatted(seconds):
    """format_timeout refuses zero, negative and NaN."""
    with pytest.raises(ValueError, match="positive"):
        wire.format_timeout(seconds)


@given(st.floats(min_value=1e-9, max_value=3.5e11, allow_nan=False))
def test_timeout_round_trip_never_shortens_and_stays_close(seconds):
    """parse(format(s)) is >= s and at most 1e-5 of s (or 1 ns) above it: a value that had to
    move to a coarser unit still has at least 6 digits."""
    back = wire.parse_timeout(wire.format_timeout(seconds))
    assert back >= seconds * (1 - 1e-12)
    assert back - seconds <= max(seconds * 1e-5, 2e-9)


@given(st.integers(1, wire.MAX_TIMEOUT_VALUE), st.sampled_from("HMSmun"))
def test_timeout_values_round_trip_exactly(value, unit):
    """A spec value parses, formats and parses again to the very same seconds."""
    seconds = wire.parse_timeout(f"{value}{unit}")
    assert wire.parse_timeout(wire.format_timeout(seconds)) == seconds


def test_rocketmq_paths_are_served_paths():
    """The 17 MessagingService paths from messages.py are accepted as served methods."""
    messages = pytest.importorskip("rocketmq_emu.broker.grpc.messages")
    paths = {m.path for m in messages.service_methods()}
    assert PATH in paths
    assert wire.parse_request_headers(_request(), methods=paths).method == "SendMessage"


def test_binary_decoding_of_request_uses_standard_alphabet():
    """-bin values use the standard base64 alphabet (+ and /)."""
    value = base64.b64encode(b"\xfb\xff").decode().rstrip("=")
    assert wire.parse_request_headers(_request(**{"x-bin": value})).get("x-bin") == b"\xfb\xff"
