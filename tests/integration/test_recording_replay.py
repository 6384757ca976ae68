"""``rmq-emu replay FILE --namesrv HOST:PORT``: a session of the project's Python client
(topic creation, sync sends, a batch, a delayed message, pulls, an offset commit) recorded with
``rmq-emu up --record`` (ClusterSpec.record) is replayed against other emulators over loopback.

The session is recorded once per module; each test replays it (or a damaged copy of it)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor, task
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.utils import getProcessOutputAndValue

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.cluster import Cluster, ClusterSpec
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.recording.cli_replay import describe
from rocketmq_emu.broker.recording.plan import build_plan
from rocketmq_emu.broker.recording.replay import replay
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RemotingServerFactory, RequestDispatcher
from rocketmq_emu.broker.tls.config import TlsConfig, TlsMode
from rocketmq_emu.client.admin import Admin
from rocketmq_emu.client.message import Message, MessageQueue
from rocketmq_emu.client.producer import Producer
from rocketmq_emu.client.pull_consumer import PullConsumer
from rocketmq_emu.client.push_consumer import PushConsumer
from rocketmq_emu.client.testing import TEST_BROKER_SETTINGS, free_broker_port

TOPIC = "ReplayTopic"
GROUP = "ReplayGroup"


def cluster(store, name: str = "broker-a", record: str | None = None) -> Cluster:
    """A name server and one broker on free ports, a fresh store."""
    cfg = BrokerConfig(broker_name=name, listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(store), **TEST_BROKER_SETTINGS)
    return Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0, record=record), reactor)


def namesrv_addr(c: Cluster) -> str:
    """``127.0.0.1:port`` of the cluster's name server."""
    return f"127.0.0.1:{c.namesrv.port}"


async def create_topic(ns: str, topic: str, queues: int) -> None:
    """Create ``topic`` with ``queues`` queues through an admin client of name server ``ns``."""
    admin = Admin(ns)
    await admin.start()
    await admin.create_topic(topic, queues)
    await admin.shutdown()


@contextlib.asynccontextmanager
async def running(c: Cluster) -> AsyncIterator[Cluster]:
    """``c`` started, and stopped when the block ends."""
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


async def session(ns: str) -> None:
    """What the recorded client does."""
    await create_topic(ns, TOPIC, 2)
    producer = Producer("ReplayProducer", ns)
    await producer.start()
    queue = MessageQueue(TOPIC, "broker-a", 0)
    for i in range(3):
        await producer.send(Message(TOPIC, f"m{i}".encode(), tags="A", keys=f"k{i}"), queue=queue)
    await producer.send_batch([Message(TOPIC, f"b{i}".encode()) for i in range(3)], queue=queue)
    await producer.send(Message(TOPIC, b"later", delay_level=1), queue=queue)
    await producer.send_oneway(Message(TOPIC, b"oneway"), queue=queue)
    await producer.shutdown()
    consumer = PullConsumer(GROUP, ns)
    await consumer.start()
    result = await consumer.pull(queue, "*", 0, 32)
    await consumer.update_offset(queue, result.next_begin_offset)
    await task.deferLater(reactor, 1.6, lambda: None)  # level 1 is 1 s
    await consumer.pull(queue, "*", result.next_begin_offset, 32)
    await consumer.fetch_offset(queue)
    await consumer.shutdown()


async def record(tmp, name: str, client_session) -> Path:
    """``tmp/<name>.rec``: ``client_session(namesrv)`` recorded against a fresh emulator."""
    path = tmp / f"{name}.rec"
    c = cluster(tmp / f"{name}-recorded", record=str(path))
    await c.start()
    try:
        await client_session(namesrv_addr(c))
    finally:
        await c.stop()
    return path


@pytest_twisted.async_fixture(scope="module")
async def recorded(tmp_path_factory):
    """The recording of :func:`session` against a recorded emulator."""
    return await record(tmp_path_factory.mktemp("replay"), "session", session)


@pytest_twisted.async_yield_fixture
async def fresh(tmp_path):
    """A fresh emulator (another store, other ports) to replay against."""
    async with running(cluster(tmp_path / "fresh")) as c:
        yield c


@pytest_twisted.async_yield_fixture
async def recording_target(tmp_path):
    """A fresh emulator that records what the replay sends it: (cluster, recording path)."""
    path = tmp_path / "target.rec"
    async with running(cluster(tmp_path / "target", record=str(path))) as c:
        yield c, path


@pytest_twisted.async_yield_fixture
async def renamed(tmp_path):
    """An emulator whose broker has another name: its route answers differ."""
    async with running(cluster(tmp_path / "renamed", name="broker-z")) as c:
        yield c


async def rmq_emu(*args: str) -> tuple[str, str, int]:
    """``rmq-emu ARGS`` as a child process while the test's reactor runs the target."""
    out, err, code = await getProcessOutputAndValue(
        sys.executable, ["-m", "rocketmq_emu.broker.cli", *args], reactor=reactor)
    return out.decode(), err.decode(), code


@pytest_twisted.ensureDeferred
async def test_replay_against_a_fresh_emulator_matches(recorded, fresh):
    """Every recorded answer has the replayed answer's shape: 0 differed."""
    plan = build_plan(recorded.read_bytes())
    assert plan.damage is None and len(plan.compared) >= 10
    result = await replay(reactor, plan, namesrv_addr(fresh))
    blocks = "\n".join(line for o in result.outcomes if not o.matched for line in describe(o))
    assert result.differed == 0, blocks
    assert result.matched == len(plan.compared)


@pytest_twisted.ensureDeferred
async def test_replay_sends_the_recorded_frames_at_their_times(recorded, recording_target):
    """Recorded in turn, the replay is the recorded client connections, each with the same
    request frames byte for byte (oneway ones included) in the same order, spread over the
    recorded time at least; plus the one GET_BROKER_CLUSTER_INFO that resolved the broker."""
    target, target_path = recording_target
    plan = build_plan(recorded.read_bytes())
    result = await replay(reactor, plan, namesrv_addr(target))
    assert result.differed == 0 and result.oneway >= 1
    again = build_plan(target_path.read_bytes())

    def connections(p):
        by: dict[int, list[bytes]] = {}
        for ex in p.exchanges:
            by.setdefault(ex.connection, []).append(ex.frame)
        return sorted(by.values())

    original, replayed = connections(plan), connections(again)
    (extra,) = [c for c in replayed if c not in original]
    assert sorted([*original, extra]) == replayed
    assert [RemotingCommand.decode(f).code for f in extra] == [
        RequestCode.GET_BROKER_CLUSTER_INFO]
    span = plan.exchanges[-1].sent_ms - plan.exchanges[0].sent_ms
    mine = [ex for ex in again.exchanges if ex.frame != extra[0]]
    assert mine[-1].sent_ms - mine[0].sent_ms >= span - 50


@pytest_twisted.ensureDeferred
async def test_cli_json_prints_one_object_per_compared_request(recorded, fresh):
    """``--json``: one JSON object per compared request, then the summary line."""
    out, err, code = await rmq_emu("replay", str(recorded), "--namesrv", namesrv_addr(fresh),
                                   "--json")
    lines = out.splitlines()
    rows = [json.loads(line) for line in lines[:-1]]
    assert len(rows) == len(build_plan(recorded.read_bytes()).compared), err
    assert all(r["matched"] for r in rows) and {"request", "name", "frame"} <= set(rows[0])
    assert lines[-1].endswith(" 0 differed") and code == 0


@pytest_twisted.ensureDeferred
async def test_cli_prints_the_summary_and_exits_0(recorded, fresh):
    """``rmq-emu replay`` ends with the summary line and exits 0 when nothing differs."""
    out, err, code = await rmq_emu("replay", str(recorded), "--namesrv", namesrv_addr(fresh))
    n = len(build_plan(recorded.read_bytes()).compared)
    assert out.splitlines()[-1] == f"replayed {n} requests: {n} matched, 0 timing, 0 differed", err
    assert code == 0


@pytest_twisted.ensureDeferred
async def test_differing_broker_is_reported_and_exits_1(recorded, renamed):
    """Against a broker of another name the route answers differ: blocks name the request and
    the field, D > 0, exit status 1; ``--report-only`` exits 0 with the same report."""
    out, err, code = await rmq_emu("replay", str(recorded), "--namesrv", namesrv_addr(renamed))
    assert code == 1, err
    assert "GET_ROUTEINFO_BY_TOPIC (105)" in out and "brokerName: recorded" in out
    last = out.splitlines()[-1]
    assert last.startswith("replayed ") and not last.endswith(" 0 differed")
    out2, _, code2 = await rmq_emu("replay", str(recorded), "--namesrv", namesrv_addr(renamed),
                                   "--report-only", "--no-pace")
    assert code2 == 0 and out2.splitlines()[-1].startswith("replayed ")


@pytest_twisted.ensureDeferred
async def test_truncated_recording_replays_up_to_the_damage(recorded, fresh, tmp_path):
    """A torn recording: the requests before the tear are replayed, stderr names the entry,
    byte offset and frame, exit status 1, no traceback."""
    torn = tmp_path / "torn.rec"
    data = recorded.read_bytes()
    torn.write_bytes(data[:len(data) * 2 // 3])
    plan = build_plan(torn.read_bytes())
    out, err, code = await rmq_emu("replay", str(torn), "--namesrv", namesrv_addr(fresh),
                                   "--no-pace")
    assert code == 1 and "Traceback" not in err
    d = plan.damage
    assert f"entry {d.entry} at byte {d.offset} (frame {d.frame}): truncated" in err
    assert out.splitlines()[-1].startswith(f"replayed {len(plan.compared)} requests")


@pytest_twisted.ensureDeferred
async def test_corrupted_recording_names_the_damaged_entry(recorded, fresh, tmp_path):
    """A flipped byte in an entry's payload: its checksum fails, reported with the entry
    number, byte offset and frame number; exit 1, no traceback."""
    bad = tmp_path / "bad.rec"
    data = bytearray(recorded.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    d = build_plan(bytes(data)).damage
    assert d is not None
    out, err, code = await rmq_emu("replay", str(bad), "--namesrv", namesrv_addr(fresh),
                                   "--no-pace")
    assert code == 1 and "Traceback" not in err
    assert f"entry {d.entry} at byte {d.offset} (frame {d.frame})" in err
    assert out.splitlines()[-1].startswith("replayed ")


@pytest.mark.parametrize("args, words", [
    (["/no/such/file.rec", "--namesrv", "127.0.0.1:9"], "No such file"),
    (["{rec}", "--namesrv", "nonsense"], "expected HOST:PORT"),
    (["{rec}", "--namesrv", "127.0.0.1:1"], "unreachable"),
])
@pytest_twisted.ensureDeferred
async def test_expected_failures_are_one_line_exit_2(recorded, args, words):
    """A missing file, a bad --namesrv, an unreachable name server: one line, exit 2."""
    args = [a.replace("{rec}", str(recorded)) for a in args]
    out, err, code = await rmq_emu("replay", *args)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


class Hangup(Protocol):
    """A broker that closes every connection at its first byte."""

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted API)
        self.transport.loseConnection()


class Silent(Protocol):
    """A broker that reads and never answers."""


async def fake_cluster(broker_protocol: type[Protocol]):
    """A name server that knows one broker ``broker-a`` served by ``broker_protocol``; the
    listening ports and the name server address."""
    broker = reactor.listenTCP(0, Factory.forProtocol(broker_protocol), interface="127.0.0.1")
    ns = fake_namesrv(broker.getHost().port)
    return [broker, ns], f"127.0.0.1:{ns.getHost().port}"


def fake_namesrv(broker_port: int):
    """A listening name server whose cluster info names one broker ``broker-a`` on
    ``127.0.0.1:broker_port``."""
    info = jsonutil.dumps({"brokerAddrTable": {"broker-a": {
        "cluster": "DefaultCluster", "brokerName": "broker-a",
        "brokerAddrs": {0: f"127.0.0.1:{broker_port}"}}}, "clusterAddrTable": {}})
    dispatcher = RequestDispatcher(reactor)
    dispatcher.register(RequestCode.GET_BROKER_CLUSTER_INFO,
                        lambda cmd, conn: cmd.response(0, body=info))
    return reactor.listenTCP(0, RemotingServerFactory(dispatcher, reactor), interface="127.0.0.1")


@pytest.mark.parametrize("protocol, reason", [
    (Hangup, "connection closed or refused by the target"),
    (Silent, "no answer"),
])
@pytest_twisted.ensureDeferred
async def test_broker_that_hangs_up_or_stays_silent_differs_with_a_reason(
        recorded, protocol, reason):
    """Requests a broker never answers are differences naming why, the replay ends (each
    waits at most --cap seconds), no exception."""
    ports, ns = await fake_cluster(protocol)
    try:
        plan = build_plan(recorded.read_bytes())
        result = await replay(reactor, plan, ns, pace=False, margin=0.2, cap=0.5)
    finally:
        for port in ports:
            await port.stopListening()
    to_broker = [o for o in result.outcomes if o.exchange.port not in plan.namesrv_ports]
    assert to_broker and all(reason in (o.reason or "") for o in to_broker)
    assert result.differed == len(result.outcomes)


async def push_session(ns: str) -> int:
    """A push consumer waiting in a long-polling pull while a producer sends: the pulls the
    sends wake; how many messages were consumed."""
    await create_topic(ns, "PushReplayTopic", 1)
    got: list = []
    consumer = PushConsumer("PushReplayGroup", ns, lambda msgs, ctx: got.extend(msgs) or None,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET", suspend_ms=3000,
                            rebalance_interval=1.0)
    consumer.subscribe("PushReplayTopic")
    await consumer.start()
    producer = Producer("PushReplayProducer", ns)
    await producer.start()
    await task.deferLater(reactor, 1.0, lambda: None)  # the consumer's pull is suspended
    for i in range(3):
        await producer.send(Message("PushReplayTopic", f"p{i}".encode()))
        await task.deferLater(reactor, 0.3, lambda: None)
    await task.deferLater(reactor, 1.0, lambda: None)
    await producer.shutdown()
    await consumer.shutdown()
    return len(got)


@pytest_twisted.ensureDeferred
async def test_push_consumer_session_replays_with_long_polling(tmp_path, fresh):
    """A push consumer's suspended pulls, woken by sends recorded after them, replay: the sends
    are not held back by the suspended pull, 0 differed."""
    path = tmp_path / "push.rec"
    c = cluster(tmp_path / "push", record=str(path))
    await c.start()
    try:
        assert await push_session(namesrv_addr(c)) == 3
    finally:
        await c.stop()
    plan = build_plan(path.read_bytes())
    woken = [ex for ex in plan.compared if ex.request.code == RequestCode.PULL_MESSAGE
             and any(later.number > ex.number and later.sent_entry < ex.answered_entry
                     for later in plan.exchanges)]
    assert woken, "no pull was outstanding while later requests went out"
    result = await replay(reactor, plan, namesrv_addr(fresh))
    blocks = "\n".join(line for o in result.outcomes if not o.matched for line in describe(o))
    assert result.differed == 0, blocks


@pytest_twisted.async_yield_fixture
async def enforcing(tmp_path):
    """A fresh emulator whose name server and broker ports take TLS only."""
    cfg = BrokerConfig(broker_name="broker-a", listen_port=free_broker_port("127.0.0.1"),
                       store_path_root_dir=str(tmp_path / "tls"), **TEST_BROKER_SETTINGS)
    cfg.tls = TlsConfig(mode=TlsMode("enforcing"))
    async with running(Cluster(ClusterSpec(brokers=[cfg], namesrv_port=0), reactor)) as c:
        yield c


@pytest_twisted.ensureDeferred
async def test_replay_with_tls_against_an_enforcing_emulator_matches(recorded, enforcing):
    """--tls replays the plain recording over TLS with 0 differed; without it the enforcing
    name server refuses the connection: one line, exit 2."""
    out, err, code = await rmq_emu("replay", str(recorded), "--namesrv",
                                   namesrv_addr(enforcing), "--tls")
    assert code == 0 and out.rstrip().endswith("0 differed"), out + err
    out, err, code = await rmq_emu("replay", str(recorded), "--namesrv",
                                   namesrv_addr(enforcing), "--no-pace")
    assert code == 2 and len(err.strip().splitlines()) == 1, out + err


ROUTE_TOPIC = "CreatedBySend"


async def route_session(ns: str) -> None:
    """A producer sends to a topic that does not exist yet: its first route query is answered
    TOPIC_NOT_EXIST, the send creates the topic from TBW102, the next query finds it."""
    producer = Producer("RouteProducer", ns)
    await producer.start()
    await producer.send(Message(ROUTE_TOPIC, b"first"))
    await producer.shutdown()
    admin = Admin(ns)
    await admin.start()
    for _ in range(50):  # until the broker has registered the new topic (a route is found)
        try:
            await admin.route(ROUTE_TOPIC)
            break
        except Exception:  # noqa: BLE001 - TOPIC_NOT_EXIST until then
            await task.deferLater(reactor, 0.1, lambda: None)
    await admin.shutdown()


@pytest_twisted.ensureDeferred
async def test_a_route_the_target_knew_sooner_is_timing_not_a_difference(tmp_path, fresh):
    """Replayed against a broker that already has the topic (as a real broker that registered
    it with its name server sooner): the first route query differs, the session's last agrees,
    so it is timing and the replay passes (0 differed)."""
    path = await record(tmp_path, "route", route_session)
    plan = build_plan(path.read_bytes())
    routes = [ex for ex in plan.compared if ex.request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC
              and ex.request.ext_fields.get("topic") == ROUTE_TOPIC]
    assert routes[0].response.code == 17 and routes[-1].response.code == 0  # TOPIC_NOT_EXIST
    await create_topic(namesrv_addr(fresh), ROUTE_TOPIC, 4)
    result = await replay(reactor, plan, namesrv_addr(fresh))
    blocks = "\n".join(line for o in result.outcomes if not o.matched for line in describe(o))
    assert result.differed == 0, blocks
    assert result.timing >= 1, blocks
    assert all(o.verdict != "differed" for o in result.outcomes)


ONEWAY_TOPIC = "OnewayTiming"


async def oneway_session(ns: str) -> None:
    """A oneway send on the producer's connection, then two pulls of the queue on the
    consumer's: the first finds the message, the second (from the next offset) nothing."""
    await create_topic(ns, ONEWAY_TOPIC, 2)
    producer = Producer("OnewayProducer", ns)
    await producer.start()
    queue = MessageQueue(ONEWAY_TOPIC, "broker-a", 0)
    # A sync send to the other queue first: the producer learns the route.
    await producer.send(Message(ONEWAY_TOPIC, b"route"), queue=MessageQueue(ONEWAY_TOPIC,
                                                                            "broker-a", 1))
    await producer.send_oneway(Message(ONEWAY_TOPIC, b"fire-and-forget"), queue=queue)
    await task.deferLater(reactor, 0.3, lambda: None)
    consumer = PullConsumer("OnewayGroup", ns)
    await consumer.start()
    first = await consumer.pull(queue, "*", 0, 32)
    await consumer.pull(queue, "*", first.next_begin_offset, 32)
    await producer.shutdown()
    await consumer.shutdown()


def overtaken(data: bytes) -> bytes:
    """The recording as if the pull had overtaken the oneway send on the recorded server: the
    two pulls' answers traded (the first found nothing, the second the message), each keeping
    its own opaque."""
    from rocketmq_emu.broker.recording.format import (
        SERVER_TO_CLIENT,
        Entry,
        encode_entry,
        encode_header,
        read_entries,
    )

    entries = list(read_entries(data))
    pulls = {cmd.opaque for e in entries if e.direction == 0
             for cmd in [RemotingCommand.decode(e.payload)] if cmd.code == RequestCode.PULL_MESSAGE}
    answers = [i for i, e in enumerate(entries) if e.direction == SERVER_TO_CLIENT
               and RemotingCommand.decode(e.payload).opaque in pulls]
    assert len(answers) == 2, "one write per pull answer expected"
    first, second = (RemotingCommand.decode(entries[i].payload) for i in answers)
    first.opaque, second.opaque = second.opaque, first.opaque
    swapped = dict(zip(answers, (second.encode(), first.encode()), strict=True))
    out = bytearray(encode_header(entries[0].timestamp_ms))
    for i, e in enumerate(entries):
        payload = swapped.get(i, e.payload)
        out += encode_entry(Entry(e.timestamp_ms, e.connection, e.port, e.direction, payload))
    return bytes(out)


@pytest_twisted.ensureDeferred
async def test_pulls_around_a_oneway_send_that_overtook_are_timing(tmp_path, fresh):
    """The recorded server saw the first pull before the oneway send (its answers say: nothing,
    then the message); the replay's target saw them in order (the message, then nothing). The
    consumer received the same message over the session: both pulls are timing, 0 differed,
    and the CLI exits 0."""
    path = await record(tmp_path, "oneway", oneway_session)
    path.write_bytes(overtaken(path.read_bytes()))
    out, err, code = await rmq_emu("replay", str(path), "--namesrv", namesrv_addr(fresh))
    plan = build_plan(path.read_bytes())
    n = len(plan.compared)
    assert out.splitlines()[-1] == f"replayed {n} requests: {n - 2} matched, 2 timing, 0 differed", \
        out + err
    assert code == 0
    assert "the same 1 message(s) of queue 0 of OnewayTiming for OnewayGroup" in out
