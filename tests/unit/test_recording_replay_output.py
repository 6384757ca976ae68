"""What ``rmq-emu replay`` sends and prints, without a reactor: recorded frames re-sent byte for
byte, the wait for an answer, the summary line and the block of a differing request."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.recording.cli_replay import check_addr, describe, report, summary
from rocketmq_emu.broker.recording.compare import compare
from rocketmq_emu.broker.recording.plan import Exchange
from rocketmq_emu.broker.recording.replay import (
    Outcome,
    RecordedRequest,
    ReplayError,
    Result,
    timeout_for,
)
from rocketmq_emu.broker.remoting.codes import SERIALIZE_ROCKETMQ, RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


def exchange(frame: bytes, sent: int = 0, answered: int | None = None,
             response: RemotingCommand | None = None) -> Exchange:
    """An exchange of a recorded frame."""
    return Exchange(1, 3, 10911, 5, frame, RemotingCommand.decode(frame), sent, 1,
                    response=response, answered_ms=answered)


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=4),
       st.binary(max_size=32), st.sampled_from([0, SERIALIZE_ROCKETMQ]))
def test_recorded_request_encodes_to_the_recorded_bytes(ext, body, serialize_type):
    """Whatever the header, the frame sent is the recorded one, byte for byte."""
    frame = RemotingCommand.request(310, ext, body, serialize_type=serialize_type).encode()
    assert RecordedRequest.of(exchange(frame)).encode() == frame


def test_json_header_with_its_own_spacing_is_sent_as_recorded():
    """A client's JSON header (key order, spaces) is not re-encoded."""
    header = b'{ "code" : 34, "opaque": 9, "flag": 0, "language": "CPP", "version": 1 }'
    frame = (4 + len(header)).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header
    assert RecordedRequest.of(exchange(frame)).encode() == frame


def test_renumbered_request_is_encoded_afresh():
    """Given another opaque, the request is encoded with it."""
    r = RecordedRequest.of(exchange(RemotingCommand.request(10, {"a": "b"}).encode()))
    r.opaque = 77
    again = RemotingCommand.decode(r.encode())
    assert (again.opaque, again.ext_fields) == (77, {"a": "b"})


def test_wait_is_the_recorded_one_plus_margin_capped():
    """An answer is waited for its recorded time plus the margin, never longer than the cap."""
    frame = RemotingCommand.request(11, {}).encode()
    assert timeout_for(exchange(frame, 1000, 1500), margin=5, cap=60) == 5.5
    assert timeout_for(exchange(frame, 1000, 901000), margin=5, cap=60) == 60


def outcome(recorded: int, replayed: int) -> Outcome:
    """A compared send whose answers had these codes."""
    req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"topic": "T"})
    a, b = req.response(recorded), req.response(replayed)
    o = Outcome(exchange(req.encode(), response=a), "127.0.0.1:30911", b)
    o.differences = compare(a, b, req.code)
    return o


def test_report_shows_differing_blocks_and_ends_with_the_summary():
    """Only differing requests get a block; the last line is the summary."""
    out = io.StringIO()
    report(Result([outcome(0, 0), outcome(0, 17)]), use_json=False, out=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "differed: request 1 (connection 3, port 10911 -> 127.0.0.1:30911, frame 5): " \
                       "SEND_MESSAGE_V2 (310)"
    assert lines[1] == "  code: recorded 0 SUCCESS, replayed 17 TOPIC_NOT_EXIST"
    assert lines[-1] == "replayed 2 requests: 1 matched, 0 timing, 1 differed"


def test_unanswered_request_is_a_difference_with_its_reason():
    """A request without a replayed answer differs and its block says why."""
    o = Outcome(outcome(0, 0).exchange, None, reason="no broker at the target for port 1")
    assert not o.matched and describe(o)[1] == "  no broker at the target for port 1"
    assert summary(Result([o])) == "replayed 1 requests: 0 matched, 0 timing, 1 differed"


@pytest.mark.parametrize("addr", ["localhost", "h:", ":9876", "h:99999", "h:x"])
def test_namesrv_must_be_host_and_port(addr):
    """--namesrv is HOST:PORT with a port in range."""
    with pytest.raises(ReplayError, match="expected HOST:PORT"):
        check_addr(addr)
