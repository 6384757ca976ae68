"""Rules on a client's session with a broker: heartbeats, unregistering, offsets, long polling,
transaction check-backs.

A pure state machine: the monitor feeds it what a broker connection sends (and the checks the
broker pushes to it) with the time in milliseconds, and it returns
:class:`~rocketmq_emu.broker.conformance.findings.Observation` s. The reference is the Java
client 4.9.8 (``ClientConfig``, ``MQClientInstance``, ``DefaultMQPushConsumerImpl``) and how the
4.9.8 broker treats a session (``ClientHousekeepingService``, ``ConsumerManager``,
``PullMessageProcessor``, ``TransactionalMessageCheckService``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING, Observation
from rocketmq_emu.broker.remoting.codes import RequestCode

#: ``ClientConfig.heartbeatBrokerInterval``.
HEARTBEAT_INTERVAL_MS = 30_000
#: ``ConsumerManager.CHANNEL_EXPIRED_TIMEOUT`` / ``ProducerManager``: a client whose last
#: heartbeat is older is dropped by ``ClientHousekeepingService``.
CHANNEL_EXPIRED_MS = 120_000
#: A connection with client traffic and no heartbeat for this long differs from Java, whose
#: heartbeat task starts 1 s after ``MQClientInstance.start`` and repeats every 30 s.
NO_HEARTBEAT_MS = HEARTBEAT_INTERVAL_MS + 5_000
#: ``DefaultMQPushConsumerImpl.CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND``: the Java client's own
#: timeout for a suspended pull, which it keeps above the suspend time it asks for (15 s push,
#: 20 s pull and lite-pull consumers). ``PullMessageProcessor`` holds a pull as long as asked.
MAX_SUSPEND_MS = 30_000
#: A check-back unanswered for this long (``TransactionalMessageCheckService`` checks again
#: every ``transactionCheckInterval``, 60 s).
CHECK_ANSWER_MS = 60_000

#: ``PullSysFlag`` bits.
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2

_CLIENT_CODES = frozenset({
    RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.PULL_MESSAGE, RequestCode.QUERY_CONSUMER_OFFSET,
    RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.CONSUMER_SEND_MSG_BACK,
    RequestCode.END_TRANSACTION, RequestCode.LOCK_BATCH_MQ, RequestCode.SEND_REPLY_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE_V2,
})

MaxOffset = Callable[[str, int], "int | None"]


@dataclass
class _Session:
    """What one broker connection has done so far."""

    opened_ms: int
    first_client_ms: int | None = None
    last_heartbeat_ms: int | None = None
    heartbeats: int = 0
    no_heartbeat_noted: bool = False
    consumer_groups: set[str] = field(default_factory=set)
    checks: dict[str, int] = field(default_factory=dict)


#: The enums of a heartbeat's ``ConsumerData``, in ordinal order (4.9.8).
HEARTBEAT_ENUMS = {
    "consumeType": ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY"),
    "messageModel": ("BROADCASTING", "CLUSTERING"),
    "consumeFromWhere": ("CONSUME_FROM_LAST_OFFSET",
                         "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
                         "CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET",
                         "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"),
}
_CONSUMER_DATA = "org.apache.rocketmq.common.protocol.heartbeat.ConsumerData"


def _heartbeat_enums(consumer: Mapping[str, object]) -> list[Observation]:
    """A ``ConsumerData``'s enums: the Java client writes their names; fastjson also reads an
    ordinal (the C++ clients send numbers, in the same order), but nothing else."""
    found = []
    for key, names in HEARTBEAT_ENUMS.items():
        value = consumer.get(key)
        if value is None or value in names:
            continue
        if type(value) is int and 0 <= value < len(names):
            found.append(Observation(
                "body.heartbeat", INFO, RequestCode.HEART_BEAT, key, str(value), names[value],
                f"{key} sent as the ordinal {value}; the broker reads it as {names[value]}, the "
                "name the Java client writes", _CONSUMER_DATA))
        else:
            found.append(Observation(
                "body.heartbeat", ERROR, RequestCode.HEART_BEAT, key, str(value)[:40],
                " | ".join(names),
                f"{key} {str(value)[:40]!r} is no {key} the broker can read: the consumer's "
                "registration fails or takes no value", _CONSUMER_DATA))
    return found


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class SessionRules:
    """The session rules of one broker's connections, keyed by any hashable connection key."""

    def __init__(self) -> None:
        self._sessions: dict[object, _Session] = {}

    def _session(self, conn: object, now_ms: int) -> _Session:
        session = self._sessions.get(conn)
        if session is None:
            session = self._sessions[conn] = _Session(now_ms)
        return session

    def on_request(self, conn: object, code: int, ext: Mapping[str, str], body: bytes,
                   now_ms: int, max_offset: MaxOffset | None = None) -> list[Observation]:
        """A request the connection sent at ``now_ms``; ``max_offset(topic, queueId)`` is the
        queue's max offset (None: unknown)."""
        session = self._session(conn, now_ms)
        found: list[Observation] = []
        if code == RequestCode.HEART_BEAT:
            found += self._heartbeat(session, body, now_ms)
        elif code == RequestCode.UNREGISTER_CLIENT:
            group = ext.get("consumerGroup")
            if group:
                session.consumer_groups.discard(group)
        elif code == RequestCode.END_TRANSACTION:
            key = ext.get("commitLogOffset")
            if key is not None:
                session.checks.pop(key, None)
        if code in _CLIENT_CODES and session.first_client_ms is None:
            session.first_client_ms = now_ms
        if code == RequestCode.UPDATE_CONSUMER_OFFSET:
            found += self._commit(code, ext.get("topic"), ext.get("queueId"),
                                  ext.get("commitOffset"), max_offset)
        elif code == RequestCode.PULL_MESSAGE:
            found += self._pull(code, ext, max_offset)
        found += self._no_heartbeat(session, now_ms)
        return found

    def on_check_sent(self, conn: object, ext: Mapping[str, str], now_ms: int) -> None:
        """The broker pushed CHECK_TRANSACTION_STATE (39) to the connection."""
        key = ext.get("commitLogOffset")
        if key is not None:
            self._session(conn, now_ms).checks.setdefault(key, now_ms)

    def on_close(self, conn: object, now_ms: int) -> list[Observation]:
        """The connection closed: what it left undone."""
        session = self._sessions.pop(conn, None)
        if session is None:
            return []
        found = self._no_heartbeat(session, now_ms)
        for group in sorted(session.consumer_groups):
            found.append(Observation(
                "session.unregister", WARNING, RequestCode.UNREGISTER_CLIENT, "consumerGroup",
                group, "UNREGISTER_CLIENT before closing",
                f"the consumer of group {group} disconnected without UNREGISTER_CLIENT: the Java "
                "client unregisters at shutdown; the broker only learns at channel close and "
                "the group rebalances late", "org.apache.rocketmq.client.impl.factory."
                "MQClientInstance"))
        found += self._unanswered(session, now_ms, closing=True)
        return found

    def overdue(self, now_ms: int) -> list[tuple[object, Observation]]:
        """Findings that time alone makes (a heartbeat never sent, a check never answered)."""
        out: list[tuple[object, Observation]] = []
        for conn, session in list(self._sessions.items()):
            out += [(conn, o) for o in self._no_heartbeat(session, now_ms)]
            out += [(conn, o) for o in self._unanswered(session, now_ms, closing=False)]
        return out

    # --- rules -------------------------------------------------------------------------------
    def _heartbeat(self, session: _Session, body: bytes, now_ms: int) -> list[Observation]:
        found = []
        last = session.last_heartbeat_ms
        if last is not None:
            gap = now_ms - last
            if gap > CHANNEL_EXPIRED_MS:
                found.append(Observation(
                    "session.heartbeat", ERROR, RequestCode.HEART_BEAT, "interval",
                    f"> {CHANNEL_EXPIRED_MS // 1000} s", f"{HEARTBEAT_INTERVAL_MS // 1000} s",
                    f"{gap // 1000} s between heartbeats: the broker drops a client after "
                    f"{CHANNEL_EXPIRED_MS // 1000} s without one (its consumers leave the group)",
                    "org.apache.rocketmq.broker.client.ClientHousekeepingService"))
            elif gap > 2 * HEARTBEAT_INTERVAL_MS:
                found.append(Observation(
                    "session.heartbeat", WARNING, RequestCode.HEART_BEAT, "interval",
                    f"> {2 * HEARTBEAT_INTERVAL_MS // 1000} s", f"{HEARTBEAT_INTERVAL_MS // 1000} s",
                    f"{gap // 1000} s between heartbeats; the Java client sends one every "
                    f"{HEARTBEAT_INTERVAL_MS // 1000} s", "org.apache.rocketmq.client.ClientConfig"))
        session.last_heartbeat_ms = now_ms
        session.heartbeats += 1
        try:
            data = jsonutil.loads(body) if body else {}
        except Exception:  # a body the broker cannot read is the header/body rules' business
            data = {}
        for consumer in (data.get("consumerDataSet") or []) if isinstance(data, dict) else []:
            if isinstance(consumer, dict):
                if consumer.get("groupName"):
                    session.consumer_groups.add(str(consumer["groupName"]))
                found += _heartbeat_enums(consumer)
        return found

    def _no_heartbeat(self, session: _Session, now_ms: int) -> list[Observation]:
        start = session.first_client_ms
        if (session.heartbeats or session.no_heartbeat_noted or start is None
                or now_ms - start < NO_HEARTBEAT_MS):
            return []
        session.no_heartbeat_noted = True
        return [Observation(
            "session.heartbeat", WARNING, RequestCode.HEART_BEAT, "heartbeat", "none",
            f"a heartbeat within {NO_HEARTBEAT_MS // 1000} s",
            f"no HEART_BEAT for {(now_ms - start) // 1000} s of client traffic: the Java client "
            f"sends one every {HEARTBEAT_INTERVAL_MS // 1000} s, and the broker knows no "
            "producer or consumer of this connection without it",
            "org.apache.rocketmq.client.impl.factory.MQClientInstance")]

    def _commit(self, code: int, topic: str | None, queue_id: str | None,
                offset: str | None, max_offset: MaxOffset | None) -> list[Observation]:
        qid, value = _int(queue_id), _int(offset)
        if max_offset is None or topic is None or qid is None or value is None:
            return []
        top = max_offset(topic, qid)
        if top is None or value <= top:
            return []
        return [Observation(
            "session.offset", WARNING, code, "commitOffset", "> maxOffset", "<= maxOffset",
            f"offset {value} committed for {topic}:{qid} beyond the queue's max offset {top}: "
            "the broker stores it, and the group's next pull is answered OFFSET_OVERFLOW",
            "org.apache.rocketmq.broker.offset.ConsumerOffsetManager")]

    def _pull(self, code: int, ext: Mapping[str, str],
              max_offset: MaxOffset | None) -> list[Observation]:
        flags = _int(ext.get("sysFlag")) or 0
        found = []
        if flags & FLAG_COMMIT_OFFSET:
            found += self._commit(code, ext.get("topic"), ext.get("queueId"),
                                  ext.get("commitOffset"), max_offset)
        suspend = _int(ext.get("suspendTimeoutMillis"))
        if flags & FLAG_SUSPEND and suspend is not None and suspend > MAX_SUSPEND_MS:
            found.append(Observation(
                "session.suspend", WARNING, code, "suspendTimeoutMillis", f"> {MAX_SUSPEND_MS}",
                "15000 (push) or 20000 (pull)",
                f"a pull asks the broker to hold it {suspend} ms; the broker does, while the Java "
                f"client never asks for more than 20000 ms and waits {MAX_SUSPEND_MS} ms",
                "org.apache.rocketmq.broker.processor.PullMessageProcessor"))
        return found

    def _unanswered(self, session: _Session, now_ms: int, closing: bool) -> list[Observation]:
        late = [k for k, sent in session.checks.items()
                if closing or now_ms - sent >= CHECK_ANSWER_MS]
        for key in late:
            del session.checks[key]
        return [Observation(
            "session.check", WARNING, RequestCode.CHECK_TRANSACTION_STATE, "commitLogOffset",
            "no answer", "END_TRANSACTION with fromTransactionCheck=true",
            f"CHECK_TRANSACTION_STATE for the half message at commitLogOffset {key} was never "
            "answered: the broker checks again until transactionCheckMax, then discards it",
            "org.apache.rocketmq.broker.transaction.TransactionalMessageCheckService")
            for key in late]
