"""A consumer subscribed before its topic exists looks for the route again on a doubling backoff
(``client.route_watch``), on a fake clock: no sockets, no real time."""

from __future__ import annotations

import pytest
from twisted.internet import defer, task

from rocketmq_emu.client import api
from rocketmq_emu.client.message import MessageQueue
from rocketmq_emu.client.push_consumer import PushConsumer
from rocketmq_emu.client.route import BrokerData, QueueData, TopicRouteData
from rocketmq_emu.client.route_watch import FIRST_DELAY, MissingRouteWatch, backoff_delays


class Lookups:
    """A name server stub: records the clock time of each lookup; the route exists from
    ``appears_at`` (None: never)."""

    def __init__(self, clock: task.Clock, appears_at: float | None = None) -> None:
        self.clock = clock
        self.appears_at = appears_at
        self.times: list[float] = []
        self.found: list[str] = []

    def lookup(self, topic: str) -> bool:
        self.times.append(round(self.clock.seconds(), 6))
        return self.appears_at is not None and self.clock.seconds() >= self.appears_at


def watch(period: float = 2.0, appears_at: float | None = None) -> tuple[MissingRouteWatch, Lookups, task.Clock]:
    clock = task.Clock()
    stub = Lookups(clock, appears_at)
    return MissingRouteWatch(clock, stub.lookup, stub.found.append, period), stub, clock


def run_out(clock: task.Clock, seconds: float) -> None:
    """Advance ``seconds``, stopping at every pending call on the way (each fires on time)."""
    end = clock.seconds() + seconds
    while True:
        due = [c.getTime() for c in clock.getDelayedCalls() if c.getTime() <= end]
        if not due:
            break
        clock.advance(max(0.0, min(due) - clock.seconds()))
    clock.advance(end - clock.seconds())


def test_the_backoff_starts_at_10_ms_and_doubles_while_under_the_period():
    assert FIRST_DELAY == 0.01
    assert list(backoff_delays(2.0)) == [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28]


def test_a_period_not_above_the_first_delay_means_no_backoff():
    assert list(backoff_delays(0.01)) == []


def test_the_route_is_looked_up_at_10_30_and_70_ms_until_it_appears():
    w, stub, clock = watch(appears_at=0.05)
    w.watch("T")
    run_out(clock, 1.0)
    assert stub.times == [0.01, 0.03, 0.07]
    assert stub.found == ["T"]
    assert w.watching == set() and clock.getDelayedCalls() == []


def test_a_topic_that_never_appears_is_left_to_the_periodic_rebalance_after_8_lookups():
    w, stub, clock = watch(period=2.0)
    w.watch("T")
    run_out(clock, 10.0)
    assert len(stub.times) == 8
    assert stub.times[-1] == pytest.approx(2.55)
    assert clock.getDelayedCalls() == [] and stub.found == []


def test_a_backoff_that_ran_out_is_not_started_again_by_the_next_rebalance():
    w, stub, clock = watch(period=2.0)
    w.watch("T")
    run_out(clock, 3.0)
    w.watch("T")
    run_out(clock, 3.0)
    assert len(stub.times) == 8


def test_watching_a_watched_topic_again_adds_no_second_timer():
    w, stub, clock = watch()
    w.watch("T")
    w.watch("T")
    assert len(clock.getDelayedCalls()) == 1


def test_stop_cancels_the_pending_lookups():
    w, stub, clock = watch()
    w.watch("T")
    w.watch("U")
    w.stop()
    run_out(clock, 3.0)
    assert stub.times == [] and clock.getDelayedCalls() == []


def test_a_lookup_answering_after_stop_reports_nothing():
    clock = task.Clock()
    answer: defer.Deferred = defer.Deferred()
    found: list[str] = []
    w = MissingRouteWatch(clock, lambda topic: answer, found.append, 2.0)
    w.watch("T")
    clock.advance(0.01)
    w.stop()
    answer.callback(True)
    assert found == []


def test_a_failed_lookup_counts_as_still_missing():
    clock = task.Clock()
    calls: list[float] = []

    def lookup(topic: str) -> bool:
        calls.append(clock.seconds())
        raise ConnectionError("name server down")

    w = MissingRouteWatch(clock, lookup, lambda topic: None, 2.0)
    w.watch("T")
    run_out(clock, 0.1)
    assert len(calls) == 3 and len(clock.getDelayedCalls()) == 1


def test_look_now_looks_at_once_and_the_backoff_goes_on_where_it_was():
    w, stub, clock = watch()
    w.watch("T")
    run_out(clock, 0.02)  # looked at 0.01; the next look is due at 0.03
    w.look_now()
    assert stub.times == [0.01, 0.02]
    run_out(clock, 0.05)
    assert stub.times == [0.01, 0.02, 0.06]  # then 40 ms later, as the third look would be


def test_look_now_finds_a_route_that_appeared_after_the_backoff_ran_out():
    w, stub, clock = watch(period=2.0)
    w.watch("T")
    run_out(clock, 10.0)
    stub.appears_at = 10.0
    w.look_now()
    assert stub.found == ["T"] and len(stub.times) == 9


def test_look_now_asks_once_for_a_topic_whose_backoff_ran_out():
    w, stub, clock = watch(period=2.0)
    w.watch("T")
    run_out(clock, 10.0)
    w.look_now()
    run_out(clock, 10.0)
    assert len(stub.times) == 9 and clock.getDelayedCalls() == []


def test_look_now_leaves_a_lookup_in_flight_alone():
    clock = task.Clock()
    answers: list[defer.Deferred] = []

    def lookup(topic: str) -> defer.Deferred:
        answers.append(defer.Deferred())
        return answers[-1]

    w = MissingRouteWatch(clock, lookup, lambda topic: None, 2.0)
    w.watch("T")
    clock.advance(0.01)
    w.look_now()
    assert len(answers) == 1


# --- the push consumer ------------------------------------------------------------------------
ROUTE = TopicRouteData([QueueData("broker-a", 4, 4, 6)],
                       [BrokerData("broker-a", "DefaultCluster", {0: "127.0.0.1:1"})])


@pytest.fixture
def name_server(monkeypatch):
    """Stubs: topics in ``state["topics"]`` have ROUTE; the group's only member is the asking
    client; nothing stored; pulls never answer. Route queries are counted."""
    state = {"topics": set(), "route_queries": []}

    async def consumer_ids(instance, group, addr):
        return [instance.client_id]

    async def query(instance, group, mq):
        return -1

    async def update_offset(*a, **kw):
        return None

    def pull(*a, **kw):
        return defer.Deferred()

    monkeypatch.setattr(api, "consumer_ids", consumer_ids)
    monkeypatch.setattr(api, "query_consumer_offset", query)
    monkeypatch.setattr(api, "update_consumer_offset", update_offset)
    monkeypatch.setattr(api, "pull", pull)
    return state


def stop(c: PushConsumer) -> None:
    assert c.shutdown().called, "shutdown() needs no answer from the network here"


def started_consumer(name_server: dict, clock: task.Clock, **kw) -> PushConsumer:
    c = PushConsumer("g", "127.0.0.1:1", lambda m, ctx: True, reactor=clock,
                     consume_from_where="CONSUME_FROM_FIRST_OFFSET", **kw)

    async def fetch_route(topic):
        name_server["route_queries"].append((topic, clock.seconds()))
        return ROUTE if topic in name_server["topics"] else None

    async def no_broker(*a, **kw):
        return None

    c.instance.fetch_route = fetch_route
    c.instance.send_heartbeat_to_all_brokers = no_broker
    c.instance.unregister = no_broker
    c.subscribe("Orders")
    d = c.start()
    assert d.called, "start() needs no answer from the network here"
    return c


def test_a_consumer_started_before_its_topic_takes_its_queues_10_ms_after_it_appears(name_server):
    clock = task.Clock()
    c = started_consumer(name_server, clock, rebalance_interval=20.0)
    assert c.assigned_queues == []
    name_server["topics"].add("Orders")  # the first send created it
    clock.advance(0.01)
    assert [mq for mq in c.assigned_queues if mq.topic == "Orders"] == [
        MessageQueue("Orders", "broker-a", i) for i in range(4)]
    stop(c)


def test_a_consumer_whose_topic_never_appears_asks_11_more_times_then_once_a_rebalance(name_server):
    clock = task.Clock()
    c = started_consumer(name_server, clock, rebalance_interval=20.0)
    at_start = sum(1 for t, _ in name_server["route_queries"] if t == "Orders")
    run_out(clock, 60.0)
    later = [s for t, s in name_server["route_queries"] if t == "Orders"][at_start:]
    assert len(later) == len(list(backoff_delays(20.0))) + 3 == 14
    assert [s for s in later if s > 30] == [40.0, 60.0]
    stop(c)


def test_shutdown_stops_looking_for_missing_routes(name_server):
    clock = task.Clock()
    c = started_consumer(name_server, clock, rebalance_interval=20.0)
    stop(c)
    before = len(name_server["route_queries"])
    run_out(clock, 3.0)
    assert len(name_server["route_queries"]) == before


def test_look_up_missing_routes_takes_the_queues_of_a_topic_that_appeared_at_once(name_server):
    clock = task.Clock()
    c = started_consumer(name_server, clock, rebalance_interval=20.0)
    name_server["topics"].add("Orders")
    c.look_up_missing_routes()
    assert len([mq for mq in c.assigned_queues if mq.topic == "Orders"]) == 4
    assert clock.seconds() == 0
    stop(c)
