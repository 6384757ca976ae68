"""RemotingCommand codec: golden frames from real clients, both serialize types, round trips."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.remoting.codes import (
    FLAG_RESPONSE,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    LanguageCode,
)
from rocketmq_emu.broker.remoting.command import (
    FRAME_PREFIX,
    ROCKETMQ_HEADER,
    RemotingCommand,
    RemotingCommandError,
    decode,
    decode_frame,
    encode_rocketmq_header,
)

FRAMES = json.loads((Path(__file__).parents[1] / "fixtures/frames/frames.json").read_text())
ROCKETMQ_FRAMES = [f for f in FRAMES if f["serialize"] == "ROCKETMQ"]


def _java_str(v):
    if v is True or v is False:
        return "true" if v else "false"
    return v if isinstance(v, str) else str(v)


@pytest.mark.parametrize("frame", FRAMES, ids=[f["name"] for f in FRAMES])
def test_golden_frame_decodes_to_captured_header(frame):
    """Every captured client frame decodes to the header the capture tool recorded."""
    cmd = decode(bytes.fromhex(frame["hex"]))
    hdr = frame["header"]
    assert cmd.code == hdr["code"]
    assert cmd.opaque == hdr["opaque"]
    assert cmd.flag == hdr["flag"]
    assert cmd.version == hdr["version"]
    assert cmd.language == hdr["language"]
    assert cmd.remark == hdr.get("remark")
    expected_ext = {k: _java_str(v) for k, v in (hdr.get("extFields") or {}).items()}
    assert cmd.ext_fields == expected_ext
    assert len(cmd.body) == frame["body_len"]
    assert cmd.serialize_type == (SERIALIZE_ROCKETMQ if frame["serialize"] == "ROCKETMQ" else 0)


@pytest.mark.parametrize("frame", ROCKETMQ_FRAMES, ids=[f["name"] for f in ROCKETMQ_FRAMES])
def test_rocketmq_golden_frame_reencodes_byte_exact(frame):
    """A ROCKETMQ binary frame from the Java client re-encodes to the identical bytes."""
    raw = bytes.fromhex(frame["hex"])
    assert decode(raw).encode() == raw


JAVA_JSON_FRAMES = [f for f in FRAMES if f["name"].startswith("java") and f["serialize"] == "JSON"
                    and "extFields" in f["header"]]


@pytest.mark.parametrize("frame", JAVA_JSON_FRAMES, ids=[f["name"] for f in JAVA_JSON_FRAMES])
def test_java_json_frame_reencodes_byte_exact(frame):
    """Our JSON header writer produces exactly the bytes Java's fastjson wrote (key order too)."""
    raw = bytes.fromhex(frame["hex"])
    assert decode(raw).encode() == raw


def test_java_heartbeat_without_ext_fields_gains_empty_ext_fields():
    """Java omits extFields on HEART_BEAT; we always write "extFields":{} (CPP/Java need it)."""
    frame = next(f for f in FRAMES if f["name"].startswith("java") and f["header"]["code"] == 34)
    assert "extFields" not in frame["header"]
    assert b'"extFields":{}' in decode(bytes.fromhex(frame["hex"])).encode()


@pytest.mark.parametrize("frame", ROCKETMQ_FRAMES, ids=[f["name"] for f in ROCKETMQ_FRAMES])
def test_construct_spec_parses_golden_rocketmq_header_like_fast_path(frame):
    """The construct ROCKETMQ_HEADER spec and the struct fast path agree on golden frames."""
    raw = bytes.fromhex(frame["hex"])
    prefix = FRAME_PREFIX.parse(raw)
    assert prefix.length == len(raw) - 4 and prefix.serialize_type == 1
    parsed = ROCKETMQ_HEADER.parse(raw[8 : 8 + prefix.header_length])
    cmd = decode(raw)
    assert (parsed.code, parsed.version, parsed.opaque, parsed.flag) == (
        cmd.code, cmd.version, cmd.opaque, cmd.flag)
    assert {e.key: e.value for e in parsed.ext_fields} == cmd.ext_fields


def test_ali_ons_numbers_and_booleans_become_java_strings():
    """ali-ons sends "d": 4 and "k": false; they decode as "4" and "false"."""
    frame = next(f for f in FRAMES if f["name"].startswith("ali-ons") and f["header"]["code"] == 310)
    ext = decode(bytes.fromhex(frame["hex"])).ext_fields
    assert ext["d"] == "4" and ext["k"] == "false"
    assert all(isinstance(v, str) for v in ext.values())


def test_null_ext_fields_decode_as_empty_dict():
    """rocketmq-nodejs sends "extFields": null on HEART_BEAT; it decodes as {}."""
    frame = next(f for f in FRAMES if f["name"].startswith("rocketmq-nodejs")
                 and f["header"]["code"] == 34)
    assert "extFields" in frame["header"] and frame["header"]["extFields"] is None
    assert decode(bytes.fromhex(frame["hex"])).ext_fields == {}


def test_json_header_is_compact_sorted_and_always_has_ext_fields():
    """A JSON response header has Java's key order, string values and an explicit extFields."""
    req = RemotingCommand(code=105, opaque=7)
    resp = req.response(0, ext_fields={"queueId": 3, "ok": True})
    header = resp.encode_header()
    assert header.startswith(b'{"code":0,"extFields":{"queueId":"3","ok":"true"},"flag":1,')
    assert RemotingCommand(code=1).encode_header().startswith(b'{"code":1,"extFields":{},')
    assert b" " not in header


def test_response_copies_opaque_and_serialize_type():
    """A response copies the request's opaque and serialize type and sets flag bit 0."""
    req = RemotingCommand.request(310, {"a": "g"}, serialize_type=SERIALIZE_ROCKETMQ)
    resp = req.response(0)
    assert resp.opaque == req.opaque and resp.serialize_type == SERIALIZE_ROCKETMQ
    assert resp.flag & FLAG_RESPONSE and resp.is_response and not req.is_response


def test_request_opaques_increase():
    """Each new request gets a fresh opaque."""
    a, b = RemotingCommand.request(105), RemotingCommand.request(105)
    assert b.opaque != a.opaque


def test_oneway_request_sets_flag_bit_1():
    """A oneway request carries flag 2."""
    assert RemotingCommand.request(15, oneway=True).flag == 2


def test_unquoted_int_keys_in_json_header_are_tolerated():
    """A fastjson-style header with unquoted integer keys still decodes."""
    header = b'{"code":0,"extFields":{1:"x"},"flag":1,"opaque":3}'
    payload = struct.pack(">I", len(header)) + header
    assert decode_frame(payload).ext_fields == {"1": "x"}


def test_frame_prefix_spec_matches_fast_path_bytes():
    """The construct FRAME_PREFIX builds the same 8 bytes the fast path writes."""
    for st_ in (SERIALIZE_JSON, SERIALIZE_ROCKETMQ):
        cmd = RemotingCommand(code=10, ext_fields={"a": "b"}, body=b"xyz", serialize_type=st_)
        frame = cmd.encode()
        header = cmd.encode_header()
        built = FRAME_PREFIX.build(dict(length=4 + len(header) + 3, serialize_type=st_,
                                        header_length=len(header)))
        assert frame[:8] == built


def test_rocketmq_header_spec_builds_same_bytes_as_fast_path():
    """The construct ROCKETMQ_HEADER spec builds the bytes encode_rocketmq_header writes."""
    cmd = RemotingCommand(code=35, language="GO", version=317, opaque=9, flag=2, remark="hé",
                          ext_fields={"clientID": "1.2.3.4@1", "producerGroup": "P"},
                          serialize_type=SERIALIZE_ROCKETMQ)
    built = ROCKETMQ_HEADER.build(dict(
        code=35, language=LanguageCode.GO, version=317, opaque=9, flag=2, remark="hé",
        ext_fields=[dict(key=k, value=v) for k, v in cmd.ext_fields.items()]))
    assert encode_rocketmq_header(cmd) == built


@pytest.mark.parametrize("raw, needle", [
    (b"\x00\x00\x00\x02\x00\x00", "frame length 2"),
    (b"\x00\x00\x00\x10\x00\x00\x00\x08{}", "truncated frame"),
    (b"\x00\x00\x00\x06\x00\x00\x00\x09{}", "truncated header: needs 9 bytes, 2 left"),
    (b"\x00\x00\x00\x06\x00\x00\x00\x02[]", "not an object"),
    (b"\x00\x00\x00\x06\x00\x00\x00\x02{}", "no 'code'"),
    (b"\x00\x00\x00\x07\x00\x00\x00\x03{x}", "undecodable JSON header"),
    (b"\x00\x00\x00\x06\x05\x00\x00\x02{}", "unknown serialize type 5"),
    (b"\x00\x00\x00\x08\x01\x00\x00\x04\x00\x01\x00\x00", "ROCKETMQ header fixed part"),
])
def test_malformed_frames_raise_a_named_error(raw, needle):
    """Malformed input raises RemotingCommandError naming the problem."""
    with pytest.raises(RemotingCommandError, match=needle):
        decode(raw)


def test_binary_header_lying_ext_length_is_not_trusted():
    """A ROCKETMQ header whose extFields length exceeds the header fails with sizes named."""
    hdr = struct.pack(">hBhiii", 105, 0, 409, 1, 0, 0) + struct.pack(">i", 1000) + b"\x00\x01"
    payload = struct.pack(">I", (1 << 24) | len(hdr)) + hdr
    with pytest.raises(RemotingCommandError, match="extFields: needs 1000 bytes, 2 left"):
        decode_frame(payload)


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_ext = st.dictionaries(_text.filter(bool), _text.filter(bool), max_size=6)


@settings(deadline=None)
@given(code=st.integers(-32768, 32767), lang=st.sampled_from([c.name for c in LanguageCode]),
       version=st.integers(-32768, 32767), opaque=st.integers(-2**31, 2**31 - 1),
       flag=st.integers(0, 3), remark=st.none() | _text.filter(bool), ext=_ext,
       body=st.binary(max_size=64), ser=st.sampled_from([SERIALIZE_JSON, SERIALIZE_ROCKETMQ]))
def test_round_trip_both_serialize_types(code, lang, version, opaque, flag, remark, ext, body, ser):
    """encode then decode gives back the same command for JSON and ROCKETMQ headers."""
    cmd = RemotingCommand(code=code, language=lang, version=version, opaque=opaque, flag=flag,
                          remark=remark, ext_fields=ext, body=body, serialize_type=ser)
    assert decode(cmd.encode()) == cmd


@settings(deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_never_raise_anything_but_remoting_error(data):
    """Arbitrary bytes either decode or raise RemotingCommandError, nothing else."""
    try:
        decode_frame(data)
    except RemotingCommandError:
        pass
