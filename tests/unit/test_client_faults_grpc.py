"""Fault rules and the request log on gRPC calls (FaultInjector on a stand-in GrpcServerFactory,
no sockets), and the control API's code/RPC-name vocabulary."""

from __future__ import annotations

import pytest
from twisted.internet import defer, task

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.call import DROP
from rocketmq_emu.broker.grpc.status import Code
from rocketmq_emu.broker.grpc.wire import GrpcError, StatusCode
from rocketmq_emu.client.control_spec import parse_selectors
from rocketmq_emu.client.faults import FaultInjector

METHODS = {m.name: m for m in messages.service_methods()}


class Factory:
    """A GrpcServerFactory stand-in: handlers and the hooks added to it."""

    def __init__(self, handlers: dict) -> None:
        self.handlers = handlers
        self.interceptors: list = []
        self.observers: list = []

    def add_interceptor(self, fn):
        self.interceptors.append(fn)

    def add_observer(self, fn):
        self.observers.append(fn)

    def remove_interceptor(self, fn):
        self.interceptors.remove(fn)

    def remove_observer(self, fn):
        self.observers.remove(fn)


class Headers:
    """Request-Headers with the client's x-mq metadata."""

    metadata = (("x-mq-client-id", "c1"), ("x-mq-language", "JAVA"), ("user-agent-x", "u"))


class Connection:
    """The call's connection."""

    peer_addr = "127.0.0.1:4000"


class Call:
    """A ServerCall stand-in."""

    def __init__(self, rpc: str) -> None:
        self.method = METHODS[rpc]
        self.connection = Connection()
        self.stream_id = 7
        self.status = None
        self.cancelled = False
        self.finished = False


class Event:
    """A CallEvent stand-in."""

    def __init__(self, call: Call, request) -> None:
        self.time, self.rpc, self.peer = 5.0, call.method.name, ("127.0.0.1", 4000)
        self.metadata, self.request, self.call = Headers(), request, call


def setup():
    clock = task.Clock()
    handled = []

    def send_message(request, call):
        handled.append(request)
        resp = messages.message_class("SendMessageResponse")()
        resp.status.code = Code.OK
        return resp

    factory = Factory({"SendMessage": send_message})
    faults = FaultInjector(clock)
    faults.attach("grpc", factory)
    return clock, factory, faults, handled


def run(factory, rpc="SendMessage"):
    """Observe then intercept one call, as the transport does; (call, interceptor result)."""
    call = Call(rpc)
    request = METHODS[rpc].request()
    for fn in factory.observers:
        fn(Event(call, request))
    return call, factory.interceptors[0](call, request)


def test_rpc_names_in_codes_make_a_grpc_rule():
    """An RPC name among the codes goes to rpcs (case-insensitive) and the target defaults to grpc."""
    rule = FaultInjector(task.Clock()).error(["sendmessage"])
    assert (rule.rpcs, rule.codes, rule.target) == (frozenset({"SendMessage"}), None, "grpc")


def test_grpc_target_refuses_request_codes():
    """A grpc rule naming a remoting request code is refused."""
    with pytest.raises(ValueError, match="RPC name"):
        FaultInjector(task.Clock()).error(["SEND_MESSAGE"], target="grpc")


def test_unknown_rpc_is_refused():
    """rpcs must name MessagingService RPCs."""
    with pytest.raises(ValueError, match="unknown gRPC RPC"):
        FaultInjector(task.Clock()).drop(rpcs=["SendMessages"])


def test_empty_code_list_matches_nothing():
    """codes=[] matches no request (not every request)."""
    rule = FaultInjector(task.Clock()).drop([])
    assert not rule.matches("broker", 310) and not rule.matches_rpc("SendMessage")


def test_rule_without_codes_hits_grpc_only_with_target_grpc_or_any():
    """A code-less rule targeting broker leaves gRPC calls alone; grpc and any hit them."""
    faults = FaultInjector(task.Clock())
    assert not faults.drop(target="broker").matches_rpc("SendMessage")
    assert faults.drop(target="grpc").matches_rpc("SendMessage")
    assert faults.drop(target="any").matches_rpc("SendMessage")


def test_rpc_rule_leaves_remoting_requests_alone():
    """A rule naming SendMessage (target any) never matches a remoting request."""
    rule = FaultInjector(task.Clock()).drop(["SendMessage"], target="any")
    assert not rule.matches("broker", 310) and rule.matches_rpc("SendMessage")


def test_without_rules_calls_proceed_and_are_recorded():
    """No rule: the interceptor proceeds; the record has the RPC name, peer and client id."""
    _, factory, faults, _ = setup()
    _, result = run(factory)
    assert result is None
    (rec,) = faults.records()
    assert (rec.target, rec.rpc, rec.name, rec.code, rec.peer, rec.client_id, rec.opaque) == (
        "grpc", "SendMessage", "SendMessage", 0, "127.0.0.1:4000", "c1", 7)
    assert rec.ext_fields == {"x-mq-client-id": "c1", "x-mq-language": "JAVA"}


def test_record_reads_the_call_status_once_ended():
    """A record's grpc_status is None while the call runs and the status name once it ended."""
    _, factory, faults, _ = setup()
    call, _ = run(factory)
    assert faults.records()[0].grpc_status is None
    call.status = (StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
    assert faults.records()[0].grpc_status == "DEADLINE_EXCEEDED"


def test_records_filter_by_rpc_name():
    """records(code="SendMessage") lists gRPC calls of that RPC, records("SEND_MESSAGE") none."""
    _, factory, faults, _ = setup()
    run(factory)
    assert [r.rpc for r in faults.records("SendMessage")] == ["SendMessage"]
    assert faults.records("SEND_MESSAGE") == []


def test_error_with_grpc_status_fails_the_call():
    """grpc_status UNAVAILABLE: the interceptor answers a GrpcError; the handler never runs."""
    _, factory, faults, handled = setup()
    faults.error(["SendMessage"], grpc_status="UNAVAILABLE", remark="gone")
    _, result = run(factory)
    assert isinstance(result, GrpcError) and (result.code, result.message) == (StatusCode.UNAVAILABLE, "gone")
    assert handled == [] and faults.records()[0].fault == "error"


def test_error_with_status_code_answers_a_response_status():
    """status_code: an OK response whose Status carries the code (by name or number)."""
    _, factory, faults, _ = setup()
    faults.error(["SendMessage"], status_code="50001")
    _, result = run(factory)
    assert isinstance(result, METHODS["SendMessage"].response)
    assert result.status.code == Code.INTERNAL_SERVER_ERROR


def test_drop_leaves_the_call_unanswered():
    """drop: the interceptor answers DROP without running the handler."""
    _, factory, faults, handled = setup()
    faults.drop(["SendMessage"])
    _, result = run(factory)
    assert result is DROP and handled == []


def test_delay_processes_then_answers_late():
    """delay: the handler runs at once; the response comes delay seconds later (reactor time)."""
    clock, factory, faults, handled = setup()
    faults.delay(["SendMessage"], 2.0)
    _, result = run(factory)
    out = []
    assert isinstance(result, defer.Deferred) and len(handled) == 1
    result.addCallback(out.append)
    clock.advance(1.9)
    assert out == []
    clock.advance(0.2)
    assert out[0].status.code == Code.OK


def test_drop_response_processes_and_drops():
    """drop_response: the handler runs and the interceptor's answer is DROP."""
    _, factory, faults, handled = setup()
    faults.drop_response(["SendMessage"])
    _, result = run(factory)
    out = []
    result.addCallback(out.append)
    assert out == [DROP] and len(handled) == 1


def test_detach_removes_the_grpc_hooks():
    """detach("grpc") removes the interceptor and the observer."""
    _, factory, faults, _ = setup()
    faults.detach("grpc")
    assert factory.interceptors == [] and factory.observers == []


def test_selectors_split_codes_and_rpc_names():
    """parse_selectors splits request codes (with the SEND family) from RPC names."""
    assert parse_selectors("SEND,AckMessage") == (frozenset({10, 310, 320}), frozenset({"AckMessage"}))
    assert parse_selectors(["ReceiveMessage"]) == (None, frozenset({"ReceiveMessage"}))
    assert parse_selectors(None) == (None, None)
