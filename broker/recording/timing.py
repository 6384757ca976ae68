"""Telling timing from behaviour in a replay's differences. Pure: outcomes in, verdicts set.

Some answers depend on when they were sampled across connections, not on what the server does:

* **pulls** (PULL_MESSAGE, LITE_PULL_MESSAGE) that follow oneway sends or long polls: a oneway
  request has no answer to wait for, so a request on another connection can overtake it, and a
  pull may then find one message fewer now and one more later, or the same messages batched
  otherwise. What must agree is what the consumer received over the session: per consumer
  group, topic and queue, the multiset of messages in all the pulls' answers (each message's
  shape, as :func:`~.compare.message_shapes` makes it). When it agrees, a pull that differed is
  ``timing``;
* **routes and memberships** sampled around a change (GET_ROUTEINFO_BY_TOPIC around a topic's
  creation, GET_BROKER_CLUSTER_INFO around a broker's registration, GET_CONSUMER_LIST_BY_GROUP
  around a rebalance): the server may learn of the change sooner or later. What must agree is
  the final answer: when the session's last such query (same code and topic, or group) matched,
  an earlier one that differed is ``timing``.

Anything else that differs, or any of these when what must agree does not, stays a difference
in behaviour. A request without an answer (a timeout, a closed connection) is never timing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from rocketmq_emu.broker.recording.compare import canonical, message_shapes
from rocketmq_emu.broker.remoting.codes import RequestCode

__all__ = ["PULL_CODES", "SAMPLED_CODES", "classify"]

#: Requests whose answers are judged over the session, per group, topic and queue.
PULL_CODES = frozenset({RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE})
#: Queries judged by their last answer in the session, with the header field naming the subject.
SAMPLED_CODES = {RequestCode.GET_ROUTEINFO_BY_TOPIC: "topic",
                 RequestCode.GET_BROKER_CLUSTER_INFO: None,
                 RequestCode.GET_CONSUMER_LIST_BY_GROUP: "consumerGroup"}


def classify(outcomes: Iterable[Any]) -> None:
    """Set ``outcome.timing`` (a reason) on each differing outcome that differs by timing only.

    ``outcomes`` are replay outcomes in plan order: ``.exchange`` (its ``.request`` and
    recorded ``.response``), ``.replayed``, ``.reason``, ``.differences``, ``.timing``."""
    outcomes = list(outcomes)
    _pulls(outcomes)
    _sampled(outcomes)


def _pulls(outcomes: list[Any]) -> None:
    sessions: dict[tuple[str, str, str], list[Any]] = {}
    for outcome in outcomes:
        request = outcome.exchange.request
        if request.code in PULL_CODES:
            ext = request.ext_fields
            key = (ext.get("consumerGroup", ""), ext.get("topic", ""), ext.get("queueId", ""))
            sessions.setdefault(key, []).append(outcome)
    for (group, topic, queue), pulls in sessions.items():
        if not any(_differs(o) for o in pulls):
            continue
        if any(o.reason is not None for o in pulls):
            continue  # an unanswered pull: what the session received is unknown
        recorded = _received(o.exchange.response for o in pulls)
        replayed = _received(o.replayed for o in pulls)
        if recorded is None or recorded != replayed:
            continue
        count = sum(recorded.values())
        for outcome in pulls:
            if _differs(outcome):
                outcome.timing = (f"the same {count} message(s) of queue {queue} of {topic} for "
                                  f"{group} over the session, pulled in other batches or at "
                                  f"other moments")


def _received(answers: Iterable[Any]) -> Counter | None:
    """The multiset of message shapes in pull answers (None if one is not a run of records)."""
    out: Counter = Counter()
    for answer in answers:
        body = answer.body if answer is not None else None
        if not body:
            continue
        shapes = message_shapes(body)
        if shapes is None:
            return None
        out.update(canonical(s) for s in shapes)
    return out


def _sampled(outcomes: list[Any]) -> None:
    last: dict[tuple[int, str], Any] = {}
    for outcome in outcomes:
        key = _sampled_key(outcome)
        if key is not None:
            last[key] = outcome
    for outcome in outcomes:
        key = _sampled_key(outcome)
        if key is None or not _differs(outcome) or outcome.reason is not None:
            continue
        final = last[key]
        if final is outcome or not final.matched:
            continue
        subject = f" of {key[1]}" if key[1] else ""
        outcome.timing = (f"sampled at another moment: the session's last "
                          f"{RequestCode(key[0]).name}{subject} (request "
                          f"{final.exchange.number}) agrees")


def _sampled_key(outcome: Any) -> tuple[int, str] | None:
    code = outcome.exchange.request.code
    if code not in SAMPLED_CODES:
        return None
    field = SAMPLED_CODES[code]
    return code, outcome.exchange.request.ext_fields.get(field, "") if field else ""


def _differs(outcome: Any) -> bool:
    return bool(outcome.differences) and outcome.reason is None
