"""RequestDispatcher.register_on_first_use: a handler loaded at the first request of its code."""

from __future__ import annotations

from twisted.internet.task import Clock

from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.dispatcher import RequestDispatcher


def test_the_first_request_loads_the_handler_once_and_every_request_goes_to_it():
    """load() runs at the first request only; that request and the next are the handler's."""
    dispatcher = RequestDispatcher(Clock())
    loads, seen = [], []

    def handler(cmd, conn):
        seen.append(cmd.opaque)
        return cmd.response(ResponseCode.SUCCESS)

    def load():
        loads.append(1)
        dispatcher.register(7, handler)

    dispatcher.register_on_first_use(7, load)
    first = RemotingCommand.request(7, {})
    second = RemotingCommand.request(7, {})
    assert dispatcher.dispatch(first, None).code == ResponseCode.SUCCESS
    assert dispatcher.dispatch(second, None).code == ResponseCode.SUCCESS
    assert (loads, seen) == ([1], [first.opaque, second.opaque])
    assert dispatcher.handler_for(7) is handler


def test_a_load_that_fails_is_answered_system_error_and_tried_again():
    """An exception while loading is a handler failure (SYSTEM_ERROR); the next request retries."""
    dispatcher = RequestDispatcher(Clock())

    def load():
        raise ImportError("no module named x")

    dispatcher.register_on_first_use(7, load)
    resp = dispatcher.dispatch(RemotingCommand.request(7, {}), None)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "ImportError: no module named x")
    assert dispatcher.handler_for(7) is not None
