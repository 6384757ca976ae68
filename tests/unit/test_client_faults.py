"""Fault rules and the request log, on a RequestDispatcher without sockets."""

from __future__ import annotations

import pytest
from twisted.internet import task

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RequestDispatcher
from rocketmq_emu.client.faults import FaultInjector


class Conn:
    """A stand-in connection."""

    def __init__(self) -> None:
        self.peer = ("127.0.0.1", 5555)
        self.peer_addr = "127.0.0.1:5555"
        self.closed = False

    def close(self) -> None:
        self.closed = True


def setup():
    clock = task.Clock()
    dispatcher = RequestDispatcher(clock)
    handled = []

    def handler(cmd, conn):
        handled.append(cmd.code)
        return cmd.response(ResponseCode.SUCCESS, ext_fields={"msgId": "X"})

    dispatcher.register(RequestCode.SEND_MESSAGE_V2, handler)
    dispatcher.register(RequestCode.HEART_BEAT, handler)
    faults = FaultInjector(clock)
    faults.attach("broker", dispatcher)
    return clock, dispatcher, faults, handled


def send(dispatcher, code=RequestCode.SEND_MESSAGE_V2, conn=None):
    """Dispatch one request; returns the immediate result or the Deferred's result list."""
    result = dispatcher.dispatch(RemotingCommand.request(code, {"b": "T"}), conn or Conn())
    out = []
    if hasattr(result, "addBoth"):
        result.addBoth(out.append)
        return out
    return [result]


def test_without_rules_requests_pass_and_are_recorded():
    """No rule: the handler answers; the log has code, header, peer and response code."""
    clock, dispatcher, faults, handled = setup()
    (resp,) = send(dispatcher)
    assert resp.code == ResponseCode.SUCCESS and handled == [310]
    (rec,) = faults.records()
    assert (rec.code, rec.name, rec.ext_fields, rec.peer, rec.response_code) == (
        310, "SEND_MESSAGE_V2", {"b": "T"}, "127.0.0.1:5555", 0)


def test_without_rules_a_later_answer_is_stamped_when_it_comes():
    """No rule, a handler answering later (a parked pull): the record gets its response code
    when the answer comes, and the dispatcher hands that answer on."""
    from twisted.internet import defer

    clock, dispatcher, faults, _ = setup()
    later: defer.Deferred = defer.Deferred()
    dispatcher.register(RequestCode.PULL_MESSAGE, lambda cmd, conn: later)
    out = send(dispatcher, RequestCode.PULL_MESSAGE)
    (rec,) = faults.records()
    assert out == [] and rec.response_code is None
    later.callback(RemotingCommand.request(RequestCode.PULL_MESSAGE).response(
        ResponseCode.PULL_NOT_FOUND))
    assert out[0].code == ResponseCode.PULL_NOT_FOUND
    assert rec.response_code == ResponseCode.PULL_NOT_FOUND and rec.latency_ms is not None


def test_error_rule_answers_without_processing():
    """An error rule answers SYSTEM_BUSY and the handler never runs."""
    clock, dispatcher, faults, handled = setup()
    faults.error([310], "SYSTEM_BUSY")
    (resp,) = send(dispatcher)
    assert resp.code == ResponseCode.SYSTEM_BUSY and handled == []
    assert faults.records()[0].fault == "error"


def test_rule_matches_only_its_codes():
    """A rule for 310 leaves HEART_BEAT alone."""
    clock, dispatcher, faults, handled = setup()
    faults.error("SEND_MESSAGE_V2", ResponseCode.FLUSH_DISK_TIMEOUT)
    (resp,) = send(dispatcher, RequestCode.HEART_BEAT)
    assert resp.code == 0 and handled == [34]


def test_times_limits_the_hits():
    """times=1 faults only the first matching request."""
    clock, dispatcher, faults, handled = setup()
    rule = faults.error(310, times=1)
    assert send(dispatcher)[0].code == ResponseCode.SYSTEM_BUSY
    assert send(dispatcher)[0].code == ResponseCode.SUCCESS
    assert rule.hits == 1


def test_drop_swallows_the_request():
    """drop: not processed, no answer."""
    clock, dispatcher, faults, handled = setup()
    faults.drop(310)
    assert send(dispatcher) == [None] and handled == []


def test_drop_response_processes_but_does_not_answer():
    """drop_response: the handler runs (the message is stored) but nothing is answered."""
    clock, dispatcher, faults, handled = setup()
    faults.drop_response(310)
    out = send(dispatcher)
    assert handled == [310]
    assert out == [None]  # nothing to write back


def test_delay_answers_late():
    """delay: the answer comes after the delay, in the injector's reactor time."""
    clock, dispatcher, faults, handled = setup()
    faults.delay(310, 2.0)
    out = send(dispatcher)
    assert out == [] and handled == [310]
    clock.advance(1.9)
    assert out == []
    clock.advance(0.2)
    assert out[0].code == 0


def test_close_closes_the_connection():
    """close: the connection is closed and the handler not run."""
    clock, dispatcher, faults, handled = setup()
    faults.close_connection(None)
    conn = Conn()
    send(dispatcher, conn=conn)
    assert conn.closed and handled == []


def test_remove_and_reset():
    """Removing a rule restores normal service; reset forgets records."""
    clock, dispatcher, faults, handled = setup()
    rule = faults.error(310)
    assert faults.remove(rule.id) and not faults.remove(rule.id)
    assert send(dispatcher)[0].code == 0
    faults.reset()
    assert faults.records() == [] and faults.rules() == []


def test_namesrv_rules_do_not_touch_the_broker():
    """A rule targeted at the name server ignores broker requests."""
    clock, dispatcher, faults, handled = setup()
    faults.error(310, target="namesrv")
    assert send(dispatcher)[0].code == 0


def test_bad_rules_are_refused():
    """Unknown actions, codes and a zero delay raise ValueError."""
    faults = FaultInjector(task.Clock())
    for kw in ({"action": "explode"}, {"action": "drop", "codes": ["NOPE"]},
               {"action": "delay", "codes": [310]}):
        with pytest.raises(ValueError):
            faults.add_rule(**kw)


def test_a_limited_read_of_the_log_gives_the_newest_records_oldest_first():
    """records(since, limit): the newest ``limit`` records after ``since``, in log order."""
    clock, dispatcher, faults, handled = setup()
    for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.HEART_BEAT) * 3:
        send(dispatcher, code)
    assert [r.seq for r in faults.records(limit=2)] == [5, 6]
    assert [r.seq for r in faults.records(since=4, limit=10)] == [5, 6]
    assert [r.seq for r in faults.records(limit=2, keep=lambda r: r.code == 310)] == [3, 5]
    assert faults.records(since=6, limit=5) == []
