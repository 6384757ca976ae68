"""The replay plan of a recording (broker/recording/plan.py): which requests are replayed, with
which recorded answer, in which order, waiting for what; where the brokers were; damage."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.recording.format import (
    Entry,
    RecordingError,
    encode_entry,
    encode_header,
)
from rocketmq_emu.broker.recording.plan import BrokerRef, build_plan, resolve_targets
from rocketmq_emu.broker.remoting.codes import FLAG_ONEWAY, RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

NS, BROKER = 9876, 10911


def recording(*events: tuple[int, int, int, RemotingCommand | bytes]) -> bytes:
    """A recording of (connection, port, direction, command or raw bytes), one entry each, the
    entry time its position."""
    out = [encode_header(1000)]
    for i, (conn, port, direction, what) in enumerate(events):
        payload = what if isinstance(what, bytes) else what.encode()
        out.append(encode_entry(Entry(1000 + i, conn, port, direction, payload)))
    return b"".join(out)


def req(code: int, opaque: int, ext: dict | None = None, oneway: bool = False) -> RemotingCommand:
    """A request with a given opaque."""
    return RemotingCommand.request(code, ext or {}, opaque=opaque, oneway=oneway)


def ans(request: RemotingCommand, code: int = 0, body: bytes = b"") -> RemotingCommand:
    """Its answer."""
    return request.response(code, body=body)


def route_body(name: str, addr: str) -> bytes:
    """A GET_ROUTEINFO_BY_TOPIC body naming one broker."""
    return jsonutil.dumps({"brokerDatas": [{"brokerName": name, "brokerAddrs": {0: addr}}],
                           "queueDatas": []})


def test_request_is_paired_with_its_answer_by_opaque():
    """Two requests on a connection are answered in the other order: each gets its own."""
    a, b = req(10, 1), req(11, 2)
    plan = build_plan(recording((1, BROKER, 0, a), (1, BROKER, 0, b),
                                (1, BROKER, 1, ans(b, 19)), (1, BROKER, 1, ans(a, 0))))
    assert [(e.request.code, e.response.code) for e in plan.exchanges] == [(10, 0), (11, 19)]


def test_oneway_request_is_sent_not_compared():
    """A oneway request has no answer to compare."""
    plan = build_plan(recording((1, BROKER, 0, req(15, 1, oneway=True))))
    (ex,) = plan.exchanges
    assert ex.oneway and not ex.compared and ex.request.flag & FLAG_ONEWAY


def test_client_answer_to_a_pushed_request_is_not_replayed():
    """The client's answer to NOTIFY_CONSUMER_IDS_CHANGED is the client's, not a request."""
    push = req(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 7)
    plan = build_plan(recording((1, BROKER, 1, push), (1, BROKER, 0, ans(push))))
    assert plan.exchanges == [] and plan.skipped_answers == 1


def test_broker_connection_to_the_name_server_is_skipped():
    """The recorded broker's own REGISTER_BROKER connection is no client traffic, but names
    the broker behind its port."""
    reg = req(RequestCode.REGISTER_BROKER, 1, {"brokerAddr": "127.0.0.1:10911",
                                               "brokerName": "broker-a", "brokerId": "0"})
    route = req(RequestCode.GET_ROUTEINFO_BY_TOPIC, 1, {"topic": "T"})
    plan = build_plan(recording((1, NS, 0, reg), (1, NS, 1, ans(reg)),
                                (2, NS, 0, route), (2, NS, 1, ans(route))))
    assert [e.connection for e in plan.exchanges] == [2]
    assert plan.broker_connections == {1} and plan.namesrv_ports == {NS}
    assert plan.brokers == {BROKER: BrokerRef("broker-a", 0)}


def test_route_answer_names_the_brokers():
    """Without a registration, the recorded route answers map ports to broker names."""
    route = req(RequestCode.GET_ROUTEINFO_BY_TOPIC, 1, {"topic": "T"})
    plan = build_plan(recording((1, NS, 0, route),
                                (1, NS, 1, ans(route, body=route_body("b", "10.0.0.1:20911")))))
    assert plan.brokers == {20911: BrokerRef("b", 0)}


def test_request_waits_only_for_answers_recorded_before_it_was_sent():
    """A pull still suspended when a send went out does not hold the send back; the request
    after the send's answer waits for that answer."""
    pull, send, later = req(11, 1), req(310, 1), req(14, 2)
    plan = build_plan(recording(
        (1, BROKER, 0, pull), (2, BROKER, 0, send), (2, BROKER, 1, ans(send)),
        (1, BROKER, 1, ans(pull)), (2, BROKER, 0, later), (2, BROKER, 1, ans(later))))
    assert [(e.request.code, e.after) for e in plan.exchanges] == [(11, ()), (310, ()),
                                                                    (14, (1, 2))]


@given(st.lists(st.tuples(st.integers(1, 3), st.booleans()), max_size=12))
def test_every_wait_is_for_an_earlier_answered_request(steps):
    """Whatever the interleaving, a request waits only for earlier requests' answers, and each
    answer is waited for at most once."""
    events, pending, opaque = [], {}, 0
    for conn, answer in steps:
        if answer and pending.get(conn):
            events.append((conn, BROKER, 1, ans(pending[conn].pop(0))))
        else:
            opaque += 1
            r = req(10, opaque)
            pending.setdefault(conn, []).append(r)
            events.append((conn, BROKER, 0, r))
    plan = build_plan(recording(*events))
    seen: list[int] = []
    for ex in plan.exchanges:
        assert all(n < ex.number and plan.exchanges[n - 1].compared for n in ex.after)
        seen += ex.after
    assert len(seen) == len(set(seen))


def test_torn_recording_keeps_what_came_before():
    """A torn last entry ends the plan: the entry, byte offset and frame number are named."""
    r = req(10, 1)
    data = recording((1, BROKER, 0, r), (1, BROKER, 1, ans(r)), (1, BROKER, 0, req(11, 2)))
    plan = build_plan(data[:-3])
    assert len(plan.exchanges) == 1 and plan.exchanges[0].compared
    assert plan.damage is not None and plan.damage.entry == 3 and plan.damage.frame == 3
    assert plan.damage.offset == len(data) - len(encode_entry(Entry(0, 1, 1, 0,
                                                                     req(11, 2).encode())))
    assert "truncated" in str(plan.damage) and "frame 3" in str(plan.damage)


def test_undecodable_frame_is_damage_not_a_crash():
    """A whole frame whose header is garbage is reported as damage at its entry."""
    r = req(10, 1)
    garbage = b"\x00\x00\x00\x08\x00\x00\x00\x04{{{{"
    plan = build_plan(recording((1, BROKER, 0, r), (1, BROKER, 1, ans(r)),
                                (1, BROKER, 0, garbage)))
    assert plan.damage is not None and plan.damage.entry == 3 and plan.damage.frame == 3
    assert "does not decode" in plan.damage.message and len(plan.exchanges) == 1


def test_not_a_recording_is_refused():
    """A file that is no recording raises at entry 0, byte 0: nothing to replay."""
    with pytest.raises(RecordingError, match="entry 0 at byte 0"):
        build_plan(b"hello world, not a recording")


def test_targets_by_broker_name_and_vip_channel():
    """Recorded ports go to the target broker of the same name; port - 2 to its VIP port;
    the name server port to the target name server."""
    reg = req(RequestCode.REGISTER_BROKER, 1, {"brokerAddr": "127.0.0.1:10911",
                                               "brokerName": "broker-a", "brokerId": "0"})
    plan = build_plan(recording((1, NS, 0, reg), (2, NS, 0, req(105, 1)),
                                (3, BROKER, 0, req(10, 1)), (4, BROKER - 2, 0, req(10, 1))))
    got = resolve_targets(plan, "h:1", [("broker-a", 0, "h:30911"), ("broker-b", 0, "h:40911")])
    assert got == {NS: "h:1", BROKER: "h:30911", BROKER - 2: "h:30909"}


def test_unknown_port_goes_to_the_only_broker():
    """A recording that never named its broker replays against a target with one broker."""
    plan = build_plan(recording((1, BROKER, 0, req(10, 1))))
    assert resolve_targets(plan, "h:1", [("x", 0, "h:2")]) == {BROKER: "h:2"}
    assert resolve_targets(plan, "h:1", [("x", 0, "h:2"), ("y", 0, "h:3")]) == {BROKER: None}
