"""A replayed consumer's connection gets what the target broker pushes to clients (issue 25:
``rmq-emu replay`` printed ``WARNING ... request type 40 not supported``). It answers quietly,
as Apache's ``ClientRemotingProcessor`` answers for a group its client does not have; loopback,
against a stand-in broker that pushes every such request when the replayed heartbeat arrives."""

from __future__ import annotations

import logging

import pytest_twisted
from test_recording_replay import fake_namesrv
from twisted.internet import defer, reactor

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.recording.format import (
    CLIENT_TO_SERVER,
    SERVER_TO_CLIENT,
    Entry,
    encode_entry,
    encode_header,
)
from rocketmq_emu.broker.recording.plan import build_plan
from rocketmq_emu.broker.recording.replay import replay
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RemotingServerFactory, RequestDispatcher

GROUP = "ReplayedGroup"
#: What the broker pushes to a client oneway: nothing comes back.
ONEWAY = (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, RequestCode.CHECK_TRANSACTION_STATE,
          RequestCode.RESET_CONSUMER_CLIENT_OFFSET)
#: What it asks and waits for, with the answer a client without the group gives.
ASKED = {
    RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: (ResponseCode.SUCCESS, None),
    RequestCode.GET_CONSUMER_RUNNING_INFO: (
        ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{GROUP}> not exist in this consumer"),
    RequestCode.CONSUME_MESSAGE_DIRECTLY: (
        ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{GROUP}> not exist in this consumer"),
    RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT: (ResponseCode.SUCCESS, None),
    # No client handles it: REQUEST_CODE_NOT_SUPPORTED, as NettyRemotingAbstract answers.
    RequestCode.GET_BROKER_RUNTIME_INFO: (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        f" request type {int(RequestCode.GET_BROKER_RUNTIME_INFO)} not supported"),
}


def heartbeat_recording(port: int) -> bytes:
    """A recorded consumer connection: one HEART_BEAT to the broker at ``port``, answered."""
    request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, jsonutil.dumps({
        "clientID": "127.0.0.1@replayed", "consumerDataSet": [{"groupName": GROUP}],
        "producerDataSet": []}), opaque=7)
    entries = [Entry(1000, 1, port, CLIENT_TO_SERVER, request.encode()),
               Entry(1001, 1, port, SERVER_TO_CLIENT, request.response(0).encode())]
    return encode_header(1000) + b"".join(encode_entry(e) for e in entries)


class PushingBroker:
    """Answers a heartbeat after pushing every request a broker pushes to clients on its
    connection; keeps the answers the client gave."""

    def __init__(self) -> None:
        self.answers: dict[int, RemotingCommand] = {}

    async def heartbeat(self, cmd: RemotingCommand, conn) -> RemotingCommand:
        ext = {"consumerGroup": GROUP, "group": GROUP, "topic": "T", "producerGroup": "P"}
        for code in ONEWAY:
            conn.send_oneway(RemotingCommand.request(code, dict(ext)))
        for code in ASKED:
            self.answers[code] = await conn.send_request(
                RemotingCommand.request(code, dict(ext)), 5.0)
        return cmd.response(ResponseCode.SUCCESS)


async def pushing_cluster(broker: PushingBroker):
    """A name server naming one master ``broker-a``, served by ``broker``; the listening
    ports and the name server's address."""
    broker_dispatcher = RequestDispatcher(reactor)
    broker_dispatcher.register(RequestCode.HEART_BEAT,
                               lambda cmd, conn: defer.ensureDeferred(broker.heartbeat(cmd, conn)))
    broker_port = reactor.listenTCP(0, RemotingServerFactory(broker_dispatcher, reactor),
                                    interface="127.0.0.1")
    ns = fake_namesrv(broker_port.getHost().port)
    return [broker_port, ns], f"127.0.0.1:{ns.getHost().port}"


@pytest_twisted.ensureDeferred
async def test_pushed_requests_are_answered_quietly_as_a_client_without_the_group(caplog):
    """Every push is taken without a warning; the ones the broker waits for get the Java
    client's answer for an unknown group, and the replayed heartbeat matches."""
    caplog.set_level(logging.DEBUG, logger="rocketmq_emu")
    broker = PushingBroker()
    ports, ns = await pushing_cluster(broker)
    try:
        result = await replay(reactor, build_plan(heartbeat_recording(10911)), ns, pace=False)
    finally:
        for port in ports:
            await port.stopListening()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == []
    assert result.matched == 1 and result.differed == 0
    got = {code: (answer.code, answer.remark) for code, answer in broker.answers.items()}
    assert got == ASKED
    status = jsonutil.loads(broker.answers[RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT].body)
    assert status == {"consumerTable": {}, "messageQueueTable": {}}
