"""Replay tells timing from behaviour (broker/recording/timing.py, issue 28 item 2): pulls whose
answers differ only in batching or moment while the session received the same messages, and
routes sampled before a topic existed whose session-final answer agrees, are ``timing``;
anything else stays ``differed``. Synthetic recorded and replayed answers, no reactor."""

from __future__ import annotations

from rocketmq_emu.broker.commitlog.record import MessageRecord, encode_record
from rocketmq_emu.broker.recording.cli_replay import summary
from rocketmq_emu.broker.recording.compare import compare
from rocketmq_emu.broker.recording.plan import Exchange
from rocketmq_emu.broker.recording.replay import Outcome, Result
from rocketmq_emu.broker.recording.timing import classify
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

FOUND, NOT_FOUND = ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND


def records(*bodies: bytes, topic: str = "T") -> bytes:
    return b"".join(encode_record(MessageRecord(topic, body, 0, properties={"TAGS": "a"}))
                    for body in bodies)


def answer(code: int, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand(code=code, flag=1, body=body)


def outcome(number: int, request: RemotingCommand, recorded: RemotingCommand,
            replayed: RemotingCommand | None, reason: str | None = None) -> Outcome:
    ex = Exchange(number, 1, 10911, number, request.encode(), request, 0, number,
                  response=recorded, answered_ms=1)
    out = Outcome(ex, "127.0.0.1:10911", replayed, reason=reason)
    if replayed is not None:
        out.differences = compare(recorded, replayed, request.code)
    return out


def pull(group: str = "G", topic: str = "T", queue: int = 0) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": group, "topic": topic, "queueId": str(queue), "queueOffset": "0",
        "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0"})


def route(topic: str = "T") -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


ROUTE_BODY = b'{"brokerDatas":[{"brokerName":"broker-a"}],"queueDatas":[]}'


def classified(*outcomes: Outcome) -> Result:
    classify(outcomes)
    return Result(list(outcomes))


def test_pulls_that_batch_the_same_messages_otherwise_are_timing():
    """A oneway message stored after the first pull in the recording, before it on replay."""
    result = classified(
        outcome(1, pull(), answer(FOUND, records(b"m1")), answer(FOUND, records(b"m1", b"m2"))),
        outcome(2, pull(), answer(FOUND, records(b"m2", b"m3")), answer(FOUND, records(b"m3"))))
    assert [o.verdict for o in result.outcomes] == ["timing", "timing"]
    assert "the same 3 message(s) of queue 0 of T for G" in result.outcomes[0].timing
    assert summary(result) == "replayed 2 requests: 0 matched, 2 timing, 0 differed"


def test_a_pull_that_finds_nothing_now_and_all_later_is_timing():
    result = classified(
        outcome(1, pull(), answer(NOT_FOUND), answer(FOUND, records(b"m1"))),
        outcome(2, pull(), answer(FOUND, records(b"m1")), answer(NOT_FOUND)))
    assert result.timing == 2 and result.differed == 0


def test_a_message_missing_over_the_session_is_a_difference():
    result = classified(
        outcome(1, pull(), answer(FOUND, records(b"m1")), answer(FOUND, records(b"m1", b"m2"))),
        outcome(2, pull(), answer(FOUND, records(b"m2", b"m3")), answer(NOT_FOUND)))
    assert [o.verdict for o in result.outcomes] == ["differed", "differed"]


def test_a_message_delivered_twice_is_a_difference():
    result = classified(
        outcome(1, pull(), answer(FOUND, records(b"m1")), answer(FOUND, records(b"m1", b"m1"))),
        outcome(2, pull(), answer(NOT_FOUND), answer(NOT_FOUND)))
    assert result.differed == 1


def test_an_unanswered_pull_leaves_the_session_undecided():
    result = classified(
        outcome(1, pull(), answer(FOUND, records(b"m1")), answer(NOT_FOUND)),
        outcome(2, pull(), answer(NOT_FOUND), None, reason="no answer"))
    assert [o.verdict for o in result.outcomes] == ["differed", "differed"]


def test_queues_and_groups_are_sessions_of_their_own():
    result = classified(
        outcome(1, pull(queue=0), answer(FOUND, records(b"m1")), answer(NOT_FOUND)),
        outcome(2, pull(queue=1), answer(NOT_FOUND), answer(FOUND, records(b"m1"))))
    assert result.differed == 2


def test_a_route_before_the_topic_existed_is_timing_when_the_last_route_agrees():
    """rocketmq-nodejs: TOPIC_NOT_EXIST in the recording, SUCCESS on a broker that registered
    the topic sooner; the session's last route query of the topic matches."""
    result = classified(
        outcome(1, route(), answer(ResponseCode.TOPIC_NOT_EXIST), answer(FOUND, ROUTE_BODY)),
        outcome(2, route("Other"), answer(FOUND, ROUTE_BODY), answer(FOUND, ROUTE_BODY)),
        outcome(3, route(), answer(FOUND, ROUTE_BODY), answer(FOUND, ROUTE_BODY)))
    assert [o.verdict for o in result.outcomes] == ["timing", "matched", "matched"]
    assert "last GET_ROUTEINFO_BY_TOPIC of T (request 3) agrees" in result.outcomes[0].timing


def test_a_route_whose_last_answer_differs_is_a_difference():
    result = classified(
        outcome(1, route(), answer(ResponseCode.TOPIC_NOT_EXIST), answer(FOUND, ROUTE_BODY)),
        outcome(2, route(), answer(ResponseCode.TOPIC_NOT_EXIST), answer(FOUND, ROUTE_BODY)))
    assert result.differed == 2 and result.timing == 0


def test_other_requests_are_never_timing():
    send = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "T"})
    result = classified(outcome(1, send, answer(FOUND), answer(ResponseCode.TOPIC_NOT_EXIST)),
                        outcome(2, send, answer(FOUND), answer(FOUND)))
    assert [o.verdict for o in result.outcomes] == ["differed", "matched"]
