"""Producer retries (``sendDefaultImpl``) with a stand-in client instance: no sockets."""

from __future__ import annotations

import pytest
import pytest_twisted

from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RemotingTimeoutError
from rocketmq_emu.client.message import (
    Message,
    MessageQueue,
    MQBrokerError,
    MQClientError,
    SendStatus,
)
from rocketmq_emu.client.producer import Producer
from rocketmq_emu.client.route import TopicPublishInfo

ADDRS = {"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911"}


class FakeInstance:
    """Answers sends per broker address with a scripted outcome."""

    client_id = "127.0.0.1@test"

    def __init__(self, outcomes: dict[str, list]) -> None:
        self.outcomes = outcomes
        self.calls: list[tuple[str, RemotingCommand]] = []
        self.route_listeners: list = []
        self.producer_groups: set[str] = set()

    def master_addr(self, name: str) -> str | None:
        return ADDRS.get(name)

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout=None) -> RemotingCommand:
        self.calls.append((addr, cmd))
        outcome = self.outcomes[addr].pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return cmd.response(outcome, ext_fields={"msgId": "OFF", "queueId": str(cmd.ext_fields["e"]),
                                                 "queueOffset": "0"})

    async def update_route(self, topic):
        return None


def producer(outcomes, **kw) -> tuple[Producer, FakeInstance]:
    inst = FakeInstance(outcomes)
    p = Producer("pg", "unused:1", instance=inst, **kw)
    p.publish_info["T"] = TopicPublishInfo(
        "T", [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-b", 0)])
    return p, inst


@pytest_twisted.ensureDeferred
async def test_retry_goes_to_the_other_broker():
    """A timeout on broker-a is retried on broker-b."""
    p, inst = producer({ADDRS["broker-a"]: [RemotingTimeoutError("slow")], ADDRS["broker-b"]: [0]})
    result = await p.send(Message("T", b"x"))
    assert result.status is SendStatus.SEND_OK
    assert [a for a, _ in inst.calls] == [ADDRS["broker-a"], ADDRS["broker-b"]]
    assert result.message_queue.broker_name == "broker-b"


@pytest_twisted.ensureDeferred
async def test_retryable_code_is_retried_and_others_are_not():
    """SYSTEM_ERROR (1) is retried; SYSTEM_BUSY (2) is raised at once."""
    p, inst = producer({ADDRS["broker-a"]: [1], ADDRS["broker-b"]: [0]})
    assert (await p.send(Message("T", b"x"))).status is SendStatus.SEND_OK
    p, inst = producer({ADDRS["broker-a"]: [2], ADDRS["broker-b"]: [0]})
    with pytest.raises(MQBrokerError):
        await p.send(Message("T", b"x"))
    assert len(inst.calls) == 1


@pytest_twisted.ensureDeferred
async def test_all_attempts_failing_raises_client_error():
    """retry_times=2: three attempts, then MQClientError."""
    err = RemotingTimeoutError("slow")
    p, inst = producer({ADDRS["broker-a"]: [err, err], ADDRS["broker-b"]: [err]})
    with pytest.raises(MQClientError):
        await p.send(Message("T", b"x"))
    assert len(inst.calls) == 3


@pytest_twisted.ensureDeferred
async def test_selector_sends_are_not_retried():
    """An orderly (selector) send fails on the first error: its queue must not change."""
    p, inst = producer({ADDRS["broker-a"]: [RemotingTimeoutError("slow")], ADDRS["broker-b"]: [0]})
    with pytest.raises(MQClientError):
        await p.send(Message("T", b"x"), selector=lambda qs, m, a: qs[0])
    assert len(inst.calls) == 1


@pytest_twisted.ensureDeferred
async def test_send_header_is_send_message_v2():
    """The request is code 310 with the abbreviated header, UNIQ_KEY and TBW102 default topic."""
    p, inst = producer({ADDRS["broker-a"]: [0], ADDRS["broker-b"]: [0]})
    result = await p.send(Message("T", b"x", tags="t"))
    _, cmd = inst.calls[0]
    assert cmd.code == 310
    h = cmd.ext_fields
    assert (h["a"], h["b"], h["c"], h["d"], h["m"]) == ("pg", "T", "TBW102", "4", "false")
    assert f"UNIQ_KEY\x01{result.msg_id}" in h["i"] and "TAGS\x01t" in h["i"]
