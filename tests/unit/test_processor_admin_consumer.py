"""Requests relayed to one consumer: running info and direct consumption."""

from __future__ import annotations

import pytest
from processor_support import STORE_HOST, FakeConn, heartbeat_cmd, send_v2
from twisted.internet import defer

from rocketmq_emu.broker.message import create_offset_msg_id
from rocketmq_emu.broker.processors.admin_consumer import AdminConsumerProcessor
from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.send import SendMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand


class ConsumerConn(FakeConn):
    """A consumer connection answering forwarded requests with a fixed body."""

    def __init__(self, port=7000):
        super().__init__(port)
        self.requests = []

    def send_request(self, cmd, timeout=3.0):
        self.requests.append(cmd)
        return defer.succeed(cmd.response(ResponseCode.SUCCESS, body=b'{"running":true}'))


@pytest.fixture
def member(ctx):
    conn = ConsumerConn()
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("c1", "G", "R"), conn)
    return conn


def result(value):
    if isinstance(value, defer.Deferred):
        got = []
        value.addCallback(got.append)
        return got[0]
    return value


def test_running_info_is_relayed_from_the_consumer(ctx, member):
    """GET_CONSUMER_RUNNING_INFO is forwarded to the client and its answer relayed."""
    cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO,
                                  {"consumerGroup": "G", "clientId": "c1"})
    resp = result(AdminConsumerProcessor(ctx).get_consumer_running_info(cmd, FakeConn()))
    assert resp.code == ResponseCode.SUCCESS and resp.body == b'{"running":true}'
    assert resp.opaque == cmd.opaque and member.requests[0].code == 307


def test_running_info_of_an_offline_client(ctx, member):
    """An unknown client id answers 'not online'."""
    cmd = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO,
                                  {"consumerGroup": "G", "clientId": "nobody"})
    resp = result(AdminConsumerProcessor(ctx).get_consumer_running_info(cmd, FakeConn()))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "The Consumer <G> <nobody> not online"


def test_consume_directly_sends_the_stored_record(ctx, member):
    """CONSUME_MESSAGE_DIRECTLY forwards the record named by the offset msgId."""
    SendMessageProcessor(ctx).process_send(send_v2("R", b"direct"), FakeConn())
    cmd = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, {
        "consumerGroup": "G", "clientId": "c1",
        "msgId": create_offset_msg_id(*STORE_HOST, 0)})
    result(AdminConsumerProcessor(ctx).consume_message_directly(cmd, FakeConn()))
    (forwarded,) = member.requests
    assert forwarded.body == ctx.store.read_raw(0)
    assert forwarded.ext_fields["brokerName"] == ctx.broker_name

