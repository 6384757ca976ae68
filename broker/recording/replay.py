"""Replaying a :class:`~.plan.Plan` against a name server and its brokers (the Twisted edge).

:func:`replay` asks the target name server for its brokers (GET_BROKER_CLUSTER_INFO, as an admin
client would), maps every recorded server port to a target address
(:func:`~.plan.resolve_targets`), then sends the recorded requests:

* one remoting connection per recorded connection (a consumer's heartbeat registers the channel
  it came on), opened when its first request goes out, all closed at the end; a connection the
  target closes is reopened by the next request of that recorded connection; what the target
  pushes to it (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE...) is answered quietly as
  a client without producers or consumers answers (:mod:`.pushed`);
* the request frames byte for byte as recorded; the opaque stays the recorded one (a
  connection never has two requests waiting with the same opaque; should it, the request is
  re-encoded with a fresh opaque);
* in recorded order, each once the answers it waits for have arrived (:attr:`Exchange.after`)
  and not earlier than its recorded time after the first request (``pace``: delayed messages,
  suspended pulls and rebalancing see the times they saw), without waiting for its own answer;
* each waits for its answer at most the recorded wait plus ``margin`` seconds, capped at ``cap``
  seconds: a pull the recording shows suspended may legitimately be held that long, and the
  replay never hangs. No answer, a refused or closed connection, a recorded port without a
  target broker are each an outcome with a reason (a difference), never an exception.

Once all are in, differences that are of timing only (pulls around oneway sends, routes around a
topic's creation...) are told from differences in behaviour (:mod:`.timing`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer, task

from rocketmq_emu.broker.recording.compare import Difference, compare
from rocketmq_emu.broker.recording.plan import (
    Exchange,
    Plan,
    broker_addresses,
    resolve_targets,
)
from rocketmq_emu.broker.recording.pushed import replaying_dispatcher
from rocketmq_emu.broker.recording.timing import classify
from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RemotingConnectionError, RemotingTimeoutError

#: Seconds added to a request's recorded wait before it counts as unanswered.
DEFAULT_MARGIN = 5.0
#: The longest a request is waited for, whatever the recording says (seconds).
DEFAULT_CAP = 60.0
#: How long the target name server has to name its brokers (seconds).
NAMESRV_TIMEOUT = 5.0


class ReplayError(Exception):
    """The replay cannot start (the target name server does not answer)."""


@dataclass(slots=True, eq=False)
class RecordedRequest(RemotingCommand):
    """A decoded request that encodes to its recorded frame while its opaque is the recorded
    one (the decoded header would re-encode to other bytes: key order, a client's spacing)."""

    frame: bytes = b""
    recorded_opaque: int = 0

    def encode_prefix_and_header(self) -> bytes:
        """The recorded frame minus the body, or a fresh encoding if the opaque changed."""
        if self.frame and self.opaque == self.recorded_opaque:
            return self.frame[:len(self.frame) - len(self.body)]
        return RemotingCommand.encode_prefix_and_header(self)

    @classmethod
    def of(cls, exchange: Exchange) -> RecordedRequest:
        """The request of ``exchange``, ready to send."""
        r = exchange.request
        return cls(r.code, r.language, r.version, r.opaque, r.flag, r.remark,
                   dict(r.ext_fields), r.body, r.serialize_type, frame=exchange.frame,
                   recorded_opaque=r.opaque)


@dataclass(slots=True)
class Outcome:
    """What became of one compared request."""

    exchange: Exchange
    target: str | None
    replayed: RemotingCommand | None = None
    differences: list[Difference] = field(default_factory=list)
    #: Why there is no answer to compare (no target, timeout, closed connection).
    reason: str | None = None
    #: Why the differences are of timing, not behaviour (:mod:`.timing`), if they are.
    timing: str | None = None

    @property
    def matched(self) -> bool:
        """Answered, and the answer has the recorded shape."""
        return self.reason is None and not self.differences

    @property
    def verdict(self) -> str:
        """``matched``, ``timing`` or ``differed``."""
        return "matched" if self.matched else "timing" if self.timing else "differed"


@dataclass(slots=True)
class Result:
    """A replay's outcomes and what was sent without comparison."""

    outcomes: list[Outcome] = field(default_factory=list)
    oneway: int = 0
    unanswered_in_recording: int = 0
    targets: dict[int, str | None] = field(default_factory=dict)

    @property
    def matched(self) -> int:
        """How many answers matched."""
        return sum(o.matched for o in self.outcomes)

    @property
    def timing(self) -> int:
        """How many differed by timing only (:mod:`.timing`)."""
        return sum(o.timing is not None and not o.matched for o in self.outcomes)

    @property
    def differed(self) -> int:
        """How many differed in behaviour."""
        return len(self.outcomes) - self.matched - self.timing


def timeout_for(exchange: Exchange, margin: float = DEFAULT_MARGIN,
                cap: float = DEFAULT_CAP) -> float:
    """How long to wait for the answer to ``exchange``."""
    waited = (exchange.recorded_wait_ms or 0) / 1000.0
    return min(cap, max(0.0, waited) + margin)


async def cluster_brokers(client: RemotingClient, namesrv: str) -> list[tuple[str, int, str]]:
    """(brokerName, brokerId, address) of every broker the name server knows."""
    try:
        answer = await client.invoke(
            namesrv, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO),
            NAMESRV_TIMEOUT)
    except (RemotingConnectionError, RemotingTimeoutError) as exc:
        raise ReplayError(f"name server {namesrv} unreachable: {exc}") from None
    if answer.code != 0:
        raise ReplayError(f"name server {namesrv} refused GET_BROKER_CLUSTER_INFO: code "
                          f"{answer.code} {answer.remark or ''}".rstrip())
    return broker_addresses(answer.body or b"")


async def replay(reactor: Any, plan: Plan, namesrv: str, *, pace: bool = True,
                 margin: float = DEFAULT_MARGIN, cap: float = DEFAULT_CAP,
                 tls: Any = None) -> Result:
    """Send ``plan``'s requests to ``namesrv`` and its brokers; the outcomes, in plan order.
    ``tls`` (an ``IOpenSSLClientConnectionCreator``) opens every connection with TLS, for
    targets whose ports are ``enforcing``."""
    admin = RemotingClient(reactor, tls=tls)
    try:
        brokers = await cluster_brokers(admin, namesrv)
    finally:
        await admin.close()
    result = Result(targets=resolve_targets(plan, namesrv, brokers))
    clients: dict[int, RemotingClient] = {}
    answered: dict[int, defer.Deferred] = {}
    waits: list[defer.Deferred] = []
    first_ms = plan.exchanges[0].sent_ms if plan.exchanges else 0
    start = reactor.seconds()
    try:
        for ex in plan.exchanges:
            for number in ex.after:
                if number in answered:
                    await answered[number]
            if pace:
                delay = start + (ex.sent_ms - first_ms) / 1000.0 - reactor.seconds()
                if delay > 0:
                    await task.deferLater(reactor, delay, lambda: None)
            target = result.targets.get(ex.port)
            if ex.oneway:
                result.oneway += 1
            elif not ex.compared:
                result.unanswered_in_recording += 1
            if target is None:
                if ex.compared:
                    result.outcomes.append(Outcome(
                        ex, None, reason=f"no broker at the target for recorded port {ex.port}"
                                         f"{_broker_of(plan, ex.port)}"))
                continue
            client = clients.get(ex.connection)
            if client is None:
                client = clients[ex.connection] = RemotingClient(
                    reactor, replaying_dispatcher(reactor), tls=tls)
            if ex.oneway:
                await _quietly(client.invoke_oneway(target, RecordedRequest.of(ex)))
                continue
            if not ex.compared:
                client.invoke(target, RecordedRequest.of(ex), cap).addErrback(lambda _: None)
                continue
            outcome = Outcome(ex, target)
            result.outcomes.append(outcome)
            d = client.invoke(target, RecordedRequest.of(ex), timeout_for(ex, margin, cap))
            d.addCallbacks(_judge, _failed, callbackArgs=(outcome,), errbackArgs=(outcome,))
            answered[ex.number] = d
            waits.append(d)
        await defer.DeferredList(waits)
    finally:
        await defer.DeferredList([c.close() for c in clients.values()])
    classify(result.outcomes)
    return result


def _judge(answer: RemotingCommand, outcome: Outcome) -> None:
    outcome.replayed = answer
    recorded = outcome.exchange.response
    assert recorded is not None
    outcome.differences = compare(recorded, answer, outcome.exchange.request.code)


def _failed(failure: Any, outcome: Outcome) -> None:
    exc = failure.value
    if isinstance(exc, RemotingTimeoutError):
        wait = outcome.exchange.recorded_wait_ms
        outcome.reason = f"no answer ({exc}); the recorded one came after {wait} ms"
    elif isinstance(exc, RemotingConnectionError):
        outcome.reason = f"connection closed or refused by the target: {exc}"
    else:
        outcome.reason = f"{type(exc).__name__}: {exc}"


async def _quietly(d: defer.Deferred) -> None:
    """Await ``d``; a failure (the target closed the connection) is the next request's news."""
    try:
        await d
    except (RemotingConnectionError, RemotingTimeoutError):
        pass


def _broker_of(plan: Plan, port: int) -> str:
    ref = plan.brokers.get(port) or plan.brokers.get(port + 2)
    return f" (broker {ref.name}, id {ref.broker_id})" if ref is not None else ""
