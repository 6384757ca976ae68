"""The replay plan of a recording: the clients' requests, in order, each with its recorded answer.

Pure (no reactor): :func:`build_plan` reads a recording's bytes (:mod:`.format`) and returns a
:class:`Plan` that :mod:`.replay` sends and :mod:`.compare` judges.

What is replayed, per recorded connection:

* every client-to-server *request* frame, in the order the recording holds them, with the
  server-to-client *response* of the same opaque as its recorded answer. A oneway request (flag
  0x2) has no answer: it is sent, not compared. A request the recording holds no answer for (the
  connection ended first, e.g. a long-polling pull still suspended at shutdown) is sent, not
  compared either;
* not the responses the client wrote to requests the server pushed to it
  (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED...): the target pushes its own;
* not the connections the recorded broker itself opened to the name server (any connection
  carrying REGISTER_BROKER 103, UNREGISTER_BROKER 104 or QUERY_DATA_VERSION 322): that is no
  client's traffic. Their REGISTER_BROKER headers still tell which recorded port is which broker
  (:attr:`Plan.brokers`).

Ordering. Requests go out in recorded order; request *j* waits for the answers of the earlier
requests whose recorded answer came before *j* was sent (by entry order in the file, which is the
order the server saw things happen). A request the recording shows still outstanding when *j*
was sent (a suspended long-polling pull woken by a later send on another connection, pipelined
async sends) does not hold *j* back. :attr:`Exchange.after` lists only the answers that arrived
since the previous request was sent; the earlier ones were awaited before that request.

The name server port is the port that received name-server requests (103, 104, 105, 106, 322);
the other ports are brokers (or a broker's VIP channel, its port minus 2).

A damaged recording (:class:`~.format.RecordingError`, or a frame that does not decode) ends the
plan there: :attr:`Plan.damage` names the entry, its byte offset and the frame number, and the
requests before it are kept (what the CLI does with them is its call, see :mod:`.cli_replay`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.recording.format import (
    CLIENT_TO_SERVER,
    ENTRY_STRUCT,
    HEADER_STRUCT,
    Entry,
    RecordingError,
    frames,
    read_entries,
)
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand, RemotingCommandError

#: Requests only a broker sends to the name server: their connection is no client's.
BROKER_ONLY_CODES = frozenset({RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER,
                               RequestCode.QUERY_DATA_VERSION})
#: Requests only a name server answers: the port that received one is a name server's.
NAMESRV_CODES = BROKER_ONLY_CODES | {RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                     RequestCode.GET_BROKER_CLUSTER_INFO}
#: The VIP channel listens this far below the broker port (``listenPort - 2``).
VIP_PORT_OFFSET = 2


@dataclass(frozen=True, slots=True)
class BrokerRef:
    """Which broker a recorded port was: its name and id (0 master)."""

    name: str
    broker_id: int = 0


@dataclass(slots=True)
class Exchange:
    """One recorded request and, if any, its recorded answer."""

    #: Position in the plan (1-based): the request's number in the output.
    number: int
    connection: int
    port: int
    #: The request's frame number in the recording (1-based, over all frames).
    frame_number: int
    #: The recorded request frame, length prefix included, byte for byte.
    frame: bytes
    request: RemotingCommand
    sent_ms: int
    #: The entry number that completed the request frame (the file's order of events).
    sent_entry: int
    response: RemotingCommand | None = None
    answered_ms: int | None = None
    answered_entry: int | None = None
    #: Numbers of earlier exchanges whose answer must have arrived before this one is sent.
    after: tuple[int, ...] = ()

    @property
    def oneway(self) -> bool:
        """A oneway request: nothing to wait for or compare."""
        return self.request.is_oneway

    @property
    def compared(self) -> bool:
        """It has a recorded answer to compare with."""
        return self.response is not None

    @property
    def recorded_wait_ms(self) -> int | None:
        """How long the recorded server took to answer."""
        return None if self.answered_ms is None else self.answered_ms - self.sent_ms


@dataclass(frozen=True, slots=True)
class Damage:
    """Where a recording stops being readable."""

    entry: int
    offset: int
    #: The frame the damage falls in (1-based: one more than the whole frames before it).
    frame: int
    message: str

    def __str__(self) -> str:
        return f"entry {self.entry} at byte {self.offset} (frame {self.frame}): {self.message}"


@dataclass(slots=True)
class Plan:
    """What :func:`build_plan` found."""

    exchanges: list[Exchange] = field(default_factory=list)
    namesrv_ports: set[int] = field(default_factory=set)
    #: Recorded broker port -> broker, from the recorded registrations and route answers.
    brokers: dict[int, BrokerRef] = field(default_factory=dict)
    #: Connections skipped as the recorded broker's own (to the name server).
    broker_connections: set[int] = field(default_factory=set)
    #: Client answers to server-pushed requests, not replayed.
    skipped_answers: int = 0
    frames: int = 0
    damage: Damage | None = None
    start_ms: int | None = None

    @property
    def compared(self) -> list[Exchange]:
        """The exchanges with a recorded answer."""
        return [e for e in self.exchanges if e.compared]


def numbered_entries(data: bytes, position: list[int]) -> Iterator[Entry]:
    """:func:`read_entries`, keeping ``position`` = [entry number, byte offset] of the entry
    last yielded (the entry :func:`frames` is completing a frame with)."""
    offset = HEADER_STRUCT.size
    for number, entry in enumerate(read_entries(data), 1):
        position[0], position[1] = number, offset
        yield entry
        offset += ENTRY_STRUCT.size + len(entry.payload)


def build_plan(data: bytes) -> Plan:
    """The replay plan of a recording's bytes. A header that is no recording's raises
    :class:`RecordingError` (nothing to replay); later damage ends the plan (``damage``)."""
    plan = Plan()
    if len(data) >= HEADER_STRUCT.size:
        plan.start_ms = HEADER_STRUCT.unpack_from(data, 0)[2]
    position = [0, HEADER_STRUCT.size]
    # Per connection: requests by opaque (waiting for their answer), every exchange in order.
    pending: dict[tuple[int, int], Exchange] = {}
    by_connection: dict[int, list[Exchange]] = {}
    pushed: set[tuple[int, int]] = set()  # (connection, opaque) of server-pushed requests
    answers: list[tuple[int, RemotingCommand]] = []  # (request code, answer) for broker names
    order: list[Exchange] = []
    try:
        for entry, frame in frames(numbered_entries(data, position)):
            number = plan.frames + 1
            try:
                cmd = RemotingCommand.decode(frame)
            except RemotingCommandError as exc:
                plan.damage = Damage(position[0], position[1], number,
                                     f"frame does not decode: {exc}")
                break
            plan.frames = number
            key = (entry.connection, cmd.opaque)
            if entry.direction == CLIENT_TO_SERVER:
                if cmd.is_response:
                    pushed.discard(key)
                    plan.skipped_answers += 1
                    continue
                ex = Exchange(0, entry.connection, entry.port, number, frame, cmd,
                              entry.timestamp_ms, position[0])
                order.append(ex)
                by_connection.setdefault(entry.connection, []).append(ex)
                if cmd.code in NAMESRV_CODES:
                    plan.namesrv_ports.add(entry.port)
                if cmd.code in BROKER_ONLY_CODES:
                    plan.broker_connections.add(entry.connection)
                if not cmd.is_oneway:
                    pending[key] = ex
            elif cmd.is_response:
                ex = pending.pop(key, None)
                if ex is not None:
                    ex.response, ex.answered_ms, ex.answered_entry = \
                        cmd, entry.timestamp_ms, position[0]
                    answers.append((ex.request.code, cmd))
            else:
                pushed.add(key)
    except RecordingError as exc:
        plan.damage = Damage(exc.entry, exc.offset, plan.frames + 1,
                             str(exc).split(": ", 1)[-1])
        if exc.entry == 0:
            raise
    for ex in order:
        if ex.connection in plan.broker_connections:
            _learn_registration(plan, ex.request)
    plan.exchanges = [ex for ex in order if ex.connection not in plan.broker_connections]
    for code, answer in answers:
        _learn_route(plan, code, answer)
    _number(plan.exchanges)
    return plan


def _number(exchanges: list[Exchange]) -> None:
    """Number the exchanges and set what each waits for (see the module docstring)."""
    for i, ex in enumerate(exchanges):
        ex.number = i + 1
    answered = sorted((e.answered_entry, e.number) for e in exchanges
                      if e.answered_entry is not None)
    keys = [entry for entry, _ in answered]
    previous_sent = 0
    for ex in exchanges:
        lo, hi = bisect_left(keys, previous_sent), bisect_left(keys, ex.sent_entry)
        ex.after = tuple(sorted(number for _, number in answered[lo:hi]))
        previous_sent = ex.sent_entry


def _port_of(addr: str) -> int | None:
    """The port of ``host:port``, or None."""
    try:
        return int(str(addr).rsplit(":", 1)[1])
    except (IndexError, ValueError):
        return None


def _learn(plan: Plan, addr: str, name: str, broker_id: int) -> None:
    port = _port_of(addr)
    if port is not None and name and port not in plan.brokers:
        plan.brokers[port] = BrokerRef(str(name), int(broker_id))


def _learn_registration(plan: Plan, cmd: RemotingCommand) -> None:
    """A REGISTER_BROKER header names the broker's address, name and id."""
    if cmd.code != RequestCode.REGISTER_BROKER:
        return
    ext = cmd.ext_fields
    try:
        _learn(plan, ext.get("brokerAddr", ""), ext.get("brokerName", ""),
               int(ext.get("brokerId", "0")))
    except ValueError:
        pass


def _learn_route(plan: Plan, code: int, answer: RemotingCommand) -> None:
    """Route and cluster-info answers name brokers and their addresses."""
    if code not in (RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO) \
            or answer.code != 0 or not answer.body:
        return
    for name, broker_id, addr in broker_addresses(answer.body):
        _learn(plan, addr, name, broker_id)


def broker_addresses(body: bytes) -> list[tuple[str, int, str]]:
    """(brokerName, brokerId, address) of a route body (``brokerDatas``) or a cluster-info body
    (``brokerAddrTable``); an unreadable body names none."""
    try:
        data = jsonutil.loads(body)
    except (ValueError, TypeError):
        return []
    if not isinstance(data, dict):
        return []
    datas = data.get("brokerDatas")
    if not isinstance(datas, list):
        table = data.get("brokerAddrTable")
        datas = list(table.values()) if isinstance(table, dict) else []
    out = []
    for item in datas:
        if not isinstance(item, dict) or not isinstance(item.get("brokerAddrs"), dict):
            continue
        for broker_id, addr in item["brokerAddrs"].items():
            try:
                out.append((str(item.get("brokerName", "")), int(broker_id), str(addr)))
            except ValueError:
                continue
    return out


def resolve_targets(plan: Plan, namesrv: str, target_brokers: list[tuple[str, int, str]]
                    ) -> dict[int, str | None]:
    """Recorded server port -> the target address to replay its connections against (None:
    no such broker there). Name server ports go to ``namesrv``; a broker port to the target
    broker of the same name and id (its VIP channel, port - 2, likewise); a broker port the
    recording never named goes to the target's only master when there is exactly one."""
    by_ref = {BrokerRef(name, bid): addr for name, bid, addr in target_brokers}
    masters = [addr for name, bid, addr in target_brokers if bid == 0]
    out: dict[int, str | None] = {}
    for port in sorted({ex.port for ex in plan.exchanges}):
        if port in plan.namesrv_ports:
            out[port] = namesrv
            continue
        vip = port not in plan.brokers and port + VIP_PORT_OFFSET in plan.brokers
        ref = plan.brokers.get(port + VIP_PORT_OFFSET if vip else port)
        addr = by_ref.get(ref) if ref is not None else None
        if addr is None and len(masters) == 1 and len(set(by_ref.values())) == 1 \
                and len(plan.brokers) <= 1:
            addr = masters[0]
        if addr is not None and vip:
            target_port = _port_of(addr)
            addr = None if target_port is None else \
                f"{addr.rsplit(':', 1)[0]}:{target_port - VIP_PORT_OFFSET}"
        out[port] = addr
    return out
