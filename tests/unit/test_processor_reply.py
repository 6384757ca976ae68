"""ReplyMessageProcessor: reply pushed to the requester's connection, then stored."""

from __future__ import annotations

import pytest
from processor_support import FakeConn, heartbeat_cmd, make_context, send_v2
from twisted.internet import defer

from rocketmq_emu.broker.processors.client_manage import ClientManageProcessor
from rocketmq_emu.broker.processors.reply import ReplyMessageProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode


class RequesterConn(FakeConn):
    """A requester's connection that answers PUSH_REPLY_MESSAGE_TO_CLIENT with ``code``."""

    def __init__(self, code=ResponseCode.SUCCESS):
        super().__init__(6000)
        self.code = code
        self.pushed = []

    def send_request(self, cmd, timeout=3.0):
        self.pushed.append(cmd)
        return defer.succeed(cmd.response(self.code))


@pytest.fixture
def ctx(tmp_path):
    c = make_context(tmp_path)
    yield c
    c.store.shutdown()


def reply_cmd(client_id="req-1", topic="DefaultCluster_REPLY_TOPIC"):
    props = {"REPLY_TO_CLIENT": client_id, "CORRELATION_ID": "corr-9", "MSG_TYPE": "reply"}
    return send_v2(topic, b"answer", props=props, code=RequestCode.SEND_REPLY_MESSAGE_V2)


def result(d):
    got = []
    d.addCallback(got.append)
    return got[0]


def test_reply_is_pushed_to_the_requesting_client(ctx):
    """The reply goes to the requester's connection as PUSH_REPLY_MESSAGE_TO_CLIENT."""
    requester = RequesterConn()
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("req-1", "", "x", producer="PG"),
                                          requester)
    resp = result(ReplyMessageProcessor(ctx).process_reply(reply_cmd(), FakeConn()))
    assert resp.code == ResponseCode.SUCCESS
    (push,) = requester.pushed
    assert push.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT and push.body == b"answer"
    assert "CORRELATION_ID\u0001corr-9" in push.ext_fields["properties"]
    assert "PUSH_REPLY_TIME" in push.ext_fields["properties"]
    # ReplyMessageProcessor.pushReplyMessage: "ip:port", no "/" (the requester parses it).
    assert push.ext_fields["storeHost"] == "10.0.0.5:10911"
    assert not push.ext_fields["bornHost"].startswith("/")


def test_reply_is_also_stored_on_the_reply_topic(ctx):
    """The reply message is stored and the response carries its offset msgId."""
    requester = RequesterConn()
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("req-1", "", "x", producer="PG"),
                                          requester)
    resp = result(ReplyMessageProcessor(ctx).process_reply(reply_cmd(), FakeConn()))
    assert ctx.store.get_max_offset_in_queue("DefaultCluster_REPLY_TOPIC", 0) == 1
    assert len(resp.ext_fields["msgId"]) == 32


def test_reply_to_an_unknown_client_is_system_error(ctx):
    """Without a connection for REPLY_TO_CLIENT the replier gets SYSTEM_ERROR."""
    resp = result(ReplyMessageProcessor(ctx).process_reply(reply_cmd("ghost"), FakeConn()))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "push reply message fail, channel of <ghost> not found."


def test_reply_refused_by_the_requester_is_system_error(ctx):
    """A requester answering the push with an error makes the reply fail."""
    requester = RequesterConn(ResponseCode.SYSTEM_ERROR)
    ClientManageProcessor(ctx).heart_beat(heartbeat_cmd("req-1", "", "x", producer="PG"),
                                          requester)
    resp = result(ReplyMessageProcessor(ctx).process_reply(reply_cmd(), FakeConn()))
    assert resp.code == ResponseCode.SYSTEM_ERROR
