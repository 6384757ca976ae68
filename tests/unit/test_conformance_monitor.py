"""The conformance monitor as a dispatcher hook: what it watches and whom it names (issue 17)."""

from __future__ import annotations

from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from rocketmq_emu.broker.conformance.monitor import ConformanceMonitor
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.dispatcher import RequestDispatcher
from rocketmq_emu.broker.remoting.protocol import RemotingProtocol

CPP_BATCH = {"producerGroup": "g", "topic": "T", "defaultTopic": "TBW102",
             "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
             "bornTimestamp": "1700000000000", "flag": "0", "batch": "1"}


def watched(target: str = "broker") -> tuple[ConformanceMonitor, RequestDispatcher, Clock]:
    """A monitor attached to a dispatcher with no handlers (answers "not supported")."""
    clock = Clock()
    monitor = ConformanceMonitor(clock)
    dispatcher = RequestDispatcher(clock)
    monitor.attach(target, dispatcher, "broker-a")
    return monitor, dispatcher, clock


def connect(dispatcher: RequestDispatcher, clock: Clock) -> RemotingProtocol:
    """A remoting connection from 127.0.0.1:5000."""
    proto = RemotingProtocol(dispatcher, clock)
    proto.makeConnection(StringTransport(peerAddress=None))
    proto.peer = ("127.0.0.1", 5000)
    return proto


def cpp_send(proto: RemotingProtocol) -> None:
    """A C++ client's batch flag "1" on code 10."""
    proto.dataReceived(RemotingCommand.request(10, CPP_BATCH, b"x", language="CPP",
                                               version=63).encode())


def test_a_remoting_client_request_makes_a_finding_under_its_address() -> None:
    """The C++ batch flag on a remoting connection is an error of that client."""
    monitor, dispatcher, clock = watched()
    cpp_send(connect(dispatcher, clock))
    [finding] = monitor.snapshot()["findings"]
    assert (finding["clientId"], finding["language"], finding["field"], finding["severity"]) \
        == ("127.0.0.1:5000", "CPP", "batch", "error")


def test_requests_the_grpc_proxy_makes_are_not_the_clients() -> None:
    """A request dispatched on a client's gRPC channel (no remoting connection) is skipped."""
    monitor, dispatcher, _clock = watched()
    dispatcher.dispatch(RemotingCommand.request(200050, {}, b""), object())
    assert monitor.snapshot() == {"findings": [], "summary": {"error": 0, "warning": 0,
                                                              "info": 0}, "clients": []}


def test_detach_stops_watching() -> None:
    """After detach the dispatcher's requests are no longer checked."""
    monitor, dispatcher, clock = watched()
    monitor.detach("broker-a")
    cpp_send(connect(dispatcher, clock))
    assert monitor.snapshot()["findings"] == []


def test_findings_move_to_the_client_id_the_connection_learns() -> None:
    """Once the connection knows its clientID, earlier findings carry it."""
    monitor, dispatcher, clock = watched()
    proto = connect(dispatcher, clock)
    cpp_send(proto)
    proto.client_id = "10.0.0.1@42"
    cpp_send(proto)
    [finding] = monitor.snapshot()["findings"]
    assert (finding["clientId"], finding["count"]) == ("10.0.0.1@42", 2)


def test_name_server_ignores_the_brokers_registration() -> None:
    """REGISTER_BROKER on the name server is the broker's traffic, not a client's."""
    monitor, dispatcher, clock = watched("namesrv")
    connect(dispatcher, clock).dataReceived(RemotingCommand.request(103, {}).encode())
    assert monitor.snapshot()["clients"] == []
