"""The harness's hook on its name server: a broker's REGISTER_BROKER makes the consumers the
harness made look up their missing routes at once (``client.testing_tools.RegistrationHints``).
A real request dispatcher, fake consumers, a fake clock."""

from __future__ import annotations

from twisted.internet import task

from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.dispatcher import RequestDispatcher
from rocketmq_emu.client.testing_tools import RegistrationHints


class Consumer:
    def __init__(self) -> None:
        self.looks = 0

    def look_up_missing_routes(self) -> None:
        self.looks += 1


class Blocking:
    """What the harness keeps: a blocking wrapper around the Twisted consumer."""

    def __init__(self, target: Consumer) -> None:
        self._target = target


def hooked(clients: list) -> tuple[RequestDispatcher, RegistrationHints, task.Clock]:
    clock = task.Clock()
    dispatcher = RequestDispatcher(clock)
    hints = RegistrationHints(clock, clients)
    hints.attach("namesrv", dispatcher)
    return dispatcher, hints, clock


def request(code: int) -> RemotingCommand:
    return RemotingCommand.request(code, {"brokerName": "broker-a"})


def test_a_broker_registering_makes_every_consumer_look_once_the_registration_is_handled():
    consumer, wrapped = Consumer(), Consumer()
    dispatcher, _, clock = hooked([consumer, Blocking(wrapped), object()])
    dispatcher.dispatch(request(RequestCode.REGISTER_BROKER), None)
    assert consumer.looks == 0  # not before the name server has the topics
    clock.advance(0)
    assert (consumer.looks, wrapped.looks) == (1, 1)


def test_other_name_server_requests_are_no_hint():
    consumer = Consumer()
    dispatcher, _, clock = hooked([consumer])
    dispatcher.dispatch(request(RequestCode.GET_ROUTEINFO_BY_TOPIC), None)
    clock.advance(0)
    assert consumer.looks == 0


def test_only_the_name_server_is_watched():
    consumer = Consumer()
    clock = task.Clock()
    broker = RequestDispatcher(clock)
    RegistrationHints(clock, [consumer]).attach("broker", broker, "broker-a")
    broker.dispatch(request(RequestCode.REGISTER_BROKER), None)
    clock.advance(0)
    assert consumer.looks == 0


def test_no_hint_once_the_name_server_is_detached():
    consumer = Consumer()
    dispatcher, hints, clock = hooked([consumer])
    hints.detach("namesrv")
    dispatcher.dispatch(request(RequestCode.REGISTER_BROKER), None)
    clock.advance(0)
    assert consumer.looks == 0


def test_consumers_made_later_are_hinted_too():
    clients: list = []
    dispatcher, _, clock = hooked(clients)
    consumer = Consumer()
    clients.append(consumer)
    dispatcher.dispatch(request(RequestCode.REGISTER_BROKER), None)
    clock.advance(0)
    assert consumer.looks == 1
