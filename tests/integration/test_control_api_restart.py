"""``POST /broker/restart`` of the HTTP control API: a producer's UNREGISTER_CLIENT with
``consumerGroup=""`` no longer breaks the restart, and a restart that does fail answers 503 with
a JSON error naming the broker and the cause."""

from __future__ import annotations

import os
import shutil
from functools import partial

import pytest
from control_api_support import call as control_call

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.blocking import run_blocking

pytestmark = pytest.mark.rocketmq(control_port=0)


#: A restart reopens the store: more time than the other calls.
call = partial(control_call, timeout=20)


def unregister_like_a_cpp_producer(cluster) -> int:
    """UNREGISTER_CLIENT as librocketmq's producer sends it at shutdown: consumerGroup=""."""
    from twisted.internet import defer, reactor

    from rocketmq_emu.broker.remoting.client import RemotingClient

    ext = {"clientID": "127.0.0.1@1234", "producerGroup": "PID_cpp", "consumerGroup": ""}

    async def go() -> int:
        client = RemotingClient(reactor)
        try:
            resp = await client.invoke(
                cluster.broker_addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, ext))
            return resp.code
        finally:
            await client.close()

    return run_blocking(lambda: defer.ensureDeferred(go()))


def test_restart_after_a_cpp_producer_unregistered(rocketmq):
    """UNREGISTER_CLIENT with consumerGroup="" then POST /broker/restart: the broker is back."""
    assert unregister_like_a_cpp_producer(rocketmq) == ResponseCode.SUCCESS
    assert call(rocketmq, "POST", "/broker/restart") == (200, {"ok": True})
    assert call(rocketmq, "GET", "/health")[1]["broker_running"] is True
    groups = rocketmq.broker_store().subscription_groups.subscription_group_table
    assert "" not in groups


def test_a_failed_restart_answers_503_naming_the_file(rocketmq):
    """With subscriptionGroup.json and its .bak unreadable, /broker/restart answers 503 and a
    one-line error naming the broker and the file; /broker/start works once they are fixed."""
    path = rocketmq.broker_store().subscription_groups.path
    for p in (path, path + ".bak"):
        if os.path.exists(p):
            os.remove(p)
        os.makedirs(p)  # a directory where the file should be: unreadable, unwritable
    try:
        status, body = call(rocketmq, "POST", "/broker/restart")
        assert status == 503, body
        assert body["error"].startswith("restart of broker 'broker-a' failed, it is stopped: "
                                        f"config file {path} is unusable")
        assert "\n" not in body["error"]
        assert call(rocketmq, "GET", "/health")[1]["broker_running"] is False
    finally:
        for p in (path, path + ".bak"):
            shutil.rmtree(p, ignore_errors=True)
    assert call(rocketmq, "POST", "/broker/start") == (200, {"ok": True})


def test_openapi_lists_the_failed_start_answer(rocketmq):
    """/openapi.json documents the 503 answer of /broker/start and /broker/restart."""
    spec = call(rocketmq, "GET", "/openapi.json")[1]
    for path in ("/broker/start", "/broker/restart"):
        assert "503" in spec["paths"][path]["post"]["responses"]
