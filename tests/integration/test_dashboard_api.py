"""The dashboard's JSON endpoints on an in-process cluster (``EmbeddedCluster(control_port=0)``):
what each view reads and does, and the 4xx every bad parameter gets."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from control_api_support import call

from rocketmq_emu.client.blocking import run_blocking
from rocketmq_emu.client.message import Message
from rocketmq_emu.client.testing import unique, wait_until

pytestmark = pytest.mark.rocketmq(control_port=0)


def get_raw(cluster, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """GET ``path``: status, headers, body (from a worker thread: the reactor keeps serving)."""
    from twisted.internet import threads

    def do():
        req = urllib.request.Request(f"http://127.0.0.1:{cluster.control_port}{path}",
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    return run_blocking(threads.deferToThread, do)


def send(cluster, topic: str, bodies: list[bytes], **kw) -> list:
    producer = cluster.producer()
    return [producer.send(Message(topic, body, tags="TagA", keys=f"k{i}", **kw))
            for i, body in enumerate(bodies)]


# --- the page ---------------------------------------------------------------------------------
def test_the_page_is_served_with_a_strict_content_security_policy(rocketmq):
    status, headers, page = get_raw(rocketmq, "/", {"Accept": "text/html"})
    assert status == 200 and b"/dashboard/core.js" in page
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, script = get_raw(rocketmq, "/dashboard/core.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript") and script


def test_a_file_the_dashboard_does_not_ship_is_not_served(rocketmq):
    assert get_raw(rocketmq, "/dashboard/../control_api.py")[0] == 404
    assert get_raw(rocketmq, "/dashboard/secret.txt")[0] == 404


@pytest.mark.rocketmq(control_port=None)
def test_the_fixture_serves_the_dashboard_when_asked(rocketmq):
    url = rocketmq.dashboard_url
    assert url == f"http://127.0.0.1:{rocketmq.control_port}/"
    assert get_raw(rocketmq, "/", {"Accept": "text/html"})[0] == 200


# --- cluster ----------------------------------------------------------------------------------
def test_cluster_lists_the_broker_and_its_rates_once_sampled_twice(rocketmq):
    _, first = call(rocketmq, "GET", "/cluster")
    [broker] = first["brokers"]
    assert broker["name"] == "broker-a" and broker["running"] and broker["version"] == "V4_9_8"
    assert broker["tls"] == "permissive" and broker["acl"] is False
    assert broker["disk"]["storeBytes"] > 0 and first["recording"] == {
        "enabled": False, "file": None, "bytes": None}
    send(rocketmq, unique("Rate"), [b"x"] * 3)
    wait_until(lambda: call(rocketmq, "GET", "/cluster")[1]["brokers"][0]["tps"],
               what="a second sample", timeout=10)
    _, later = call(rocketmq, "GET", "/cluster")
    assert later["brokers"][0]["putTotal"] >= 3


def test_a_stopped_broker_shows_as_stopped(rocketmq):
    rocketmq.stop_broker()
    try:
        _, doc = call(rocketmq, "GET", "/cluster")
        assert doc["brokers"][0]["running"] is False and doc["brokers"][0]["putTotal"] is None
        status, err = call(rocketmq, "GET", "/topics")
        assert status == 404 and "stopped" in err["error"]
    finally:
        rocketmq.start_broker()


# --- topics -----------------------------------------------------------------------------------
def test_topics_are_listed_by_kind_and_type(rocketmq):
    topic = unique("Fifo")
    status, created = call(rocketmq, "POST", "/topics", {"topic": topic, "queues": 2,
                                                          "type": "FIFO"})
    assert status == 200 and created["brokers"] == ["broker-a"]
    _, topics = call(rocketmq, "GET", "/topics")
    by_name = {t["topic"]: t for t in topics}
    assert by_name[topic]["kind"] == "user" and by_name[topic]["type"] == "FIFO"
    assert by_name[topic]["readQueueNums"] == 2 and by_name[topic]["messages"] == 0
    assert by_name["TBW102"]["kind"] == "system"


def test_a_topic_shows_its_queues_last_store_time_route_and_groups(rocketmq):
    topic = unique("Detail")
    rocketmq.create_topic(topic, 2)
    results = send(rocketmq, topic, [b"a", b"b", b"c"])
    _, doc = call(rocketmq, "GET", f"/topics/{topic}")
    assert sum(q["maxOffset"] for q in doc["queues"]) == 3
    assert all(q["lastUpdateTimestamp"] > 0 for q in doc["queues"] if q["maxOffset"])
    assert doc["route"] == [{"broker": "broker-a", "addr": rocketmq.broker_addr,
                             "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}]
    assert len(results) == 3 and doc["groups"] == []


def test_a_deleted_topic_is_gone_from_broker_and_name_server(rocketmq):
    topic = unique("Gone")
    rocketmq.create_topic(topic, 1)
    assert call(rocketmq, "DELETE", f"/topics/{topic}")[1]["deleted"] == ["broker-a"]
    assert call(rocketmq, "GET", f"/topics/{topic}")[0] == 404
    assert call(rocketmq, "DELETE", f"/topics/{topic}")[0] == 404


@pytest.mark.parametrize(("body", "expected"), [
    ({"topic": "bad topic!"}, "contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
    ({"topic": "T" * 128}, "is longer than topic max length"),
    ({"topic": "T", "queues": 0}, "between 1 and 1024"),
    ({"topic": "T", "queues": "many"}, "integer"),
    ({"topic": "T", "type": "LIFO"}, "type is one of"),
    ({"topic": "T", "perm": 7}, "perm is"),
    ({"queues": 2}, "topic's name"),
])
def test_a_bad_topic_request_is_refused_in_one_line(rocketmq, body, expected):
    status, err = call(rocketmq, "POST", "/topics", body)
    assert status == 400 and expected in err["error"] and "\n" not in err["error"]


# --- messages ---------------------------------------------------------------------------------
def test_messages_are_found_by_key_by_time_and_by_either_id(rocketmq):
    topic = unique("Find")
    rocketmq.create_topic(topic, 2)
    results = send(rocketmq, topic, [b"one", b"two", b"three"])
    _, by_key = call(rocketmq, "GET", f"/messages/search?topic={topic}&key=k1")
    assert [m["keys"] for m in by_key["messages"]] == [["k1"]]
    _, by_time = call(rocketmq, "GET", f"/messages/search?topic={topic}&begin=0&max=2")
    assert len(by_time["messages"]) == 2 and by_time["truncated"] is True
    for msg_id in (results[2].msg_id, results[2].offset_msg_id):
        _, by_id = call(rocketmq, "GET", f"/messages/search?id={msg_id}")
        assert [m["keys"] for m in by_id["messages"]] == [["k2"]]


def test_a_message_shows_its_body_properties_and_who_consumed_it(rocketmq):
    topic, group = unique("Show"), unique("ShowGroup")
    rocketmq.create_topic(topic, 1)
    [result] = send(rocketmq, topic, [b"<script>alert(1)</script>"])
    inbox = rocketmq.collector(topic, group)
    inbox.wait_for(1)
    wait_until(lambda: call(rocketmq, "GET", f"/messages/{result.offset_msg_id}")[1]
               ["consumedBy"] == [{"group": group, "status": "CONSUMED"}],
               what="the group's committed offset to pass the message", timeout=20)
    _, doc = call(rocketmq, "GET", f"/messages/{result.offset_msg_id}")
    assert doc["body"] == "<script>alert(1)</script>" and doc["bodyEncoding"] == "text"
    assert doc["properties"]["KEYS"] == "k0" and doc["storeHost"] == rocketmq.broker_addr


def test_a_binary_body_is_shown_as_hex(rocketmq):
    topic = unique("Binary")
    [result] = send(rocketmq, topic, [b"\x00\x01\xff"])
    _, doc = call(rocketmq, "GET", f"/messages/{result.offset_msg_id}")
    assert doc["body"] == "00 01 ff" and doc["bodyEncoding"] == "hex"


@pytest.mark.rocketmq(control_port=0, broker_config={"max_message_size": 1024 * 1024})
def test_a_body_too_large_to_show_is_named_not_shown(rocketmq):
    topic = unique("Large")
    [result] = send(rocketmq, topic, [b"x" * (300 * 1024)])
    _, doc = call(rocketmq, "GET", f"/messages/{result.offset_msg_id}")
    assert doc["body"] is None and "307,200 bytes" in doc["bodyError"]
    status, err = call(rocketmq, "GET", f"/messages/{result.offset_msg_id}/body")
    assert status == 413 and "307,200 bytes" in err["error"]


@pytest.mark.parametrize(("query", "status", "expected"), [
    ("topic=NoSuchTopic&begin=0", 404, "no topic 'NoSuchTopic'"),
    ("topic=TBW102&begin=10&end=5", 400, "runs backwards"),
    ("topic=TBW102&begin=yesterday", 400, "begin must be an integer"),
    ("topic=TBW102&max=0", 400, "max must be between 1 and 1000"),
    ("key=k1", 400, "give a topic"),
])
def test_a_bad_search_is_refused_in_one_line(rocketmq, query, status, expected):
    got, err = call(rocketmq, "GET", f"/messages/search?{query}")
    assert got == status and expected in err["error"]


def test_an_unknown_message_is_a_404(rocketmq):
    assert call(rocketmq, "GET", "/messages/7F0000010000271100000000DEADBEEF")[0] == 404
    assert call(rocketmq, "GET", "/messages/not-an-id")[0] == 404


# --- groups and producers -----------------------------------------------------------------------
def test_a_groups_lag_reaches_zero_once_it_consumed(rocketmq):
    topic, group = unique("Lag"), unique("LagGroup")
    rocketmq.create_topic(topic, 2)
    send(rocketmq, topic, [b"1", b"2", b"3", b"4"])
    inbox = rocketmq.collector(topic, group)
    inbox.wait_for(4)
    doc = wait_until(lambda: (d := call(rocketmq, "GET", f"/groups/{group}")[1])["lag"] == 0
                     and sum(q["consumerOffset"] for q in d["queues"]) == 4 and d,
                     what="the committed offsets", timeout=20)
    assert doc["online"] and doc["members"][0]["language"] == "JAVA"
    assert sorted(s["topic"] for s in doc["subscriptions"]) == sorted([topic, f"%RETRY%{group}"])
    _, groups = call(rocketmq, "GET", "/groups")
    [row] = [g for g in groups if g["group"] == group]
    assert row["online"] and row["lag"] == 0 and row["kind"] == "user"


def test_a_group_reset_to_the_start_has_its_lag_back(rocketmq):
    topic, group = unique("Reset"), unique("ResetGroup")
    rocketmq.create_topic(topic, 1)
    send(rocketmq, topic, [b"1", b"2"])
    rocketmq.collector(topic, group).wait_for(2)
    wait_until(lambda: call(rocketmq, "GET", f"/groups/{group}")[1]["lag"] == 0,
               what="lag 0", timeout=20)
    status, doc = call(rocketmq, "POST", f"/groups/{group}/reset-offset",
                       {"topic": topic, "timestamp": 0})
    assert status == 200 and doc["offsets"] == [{"broker": "broker-a", "queueId": 0, "offset": 0}]


def test_a_bad_reset_is_refused(rocketmq):
    assert call(rocketmq, "POST", "/groups/G/reset-offset", {"topic": "T"})[0] == 400
    assert call(rocketmq, "POST", "/groups/G/reset-offset",
                {"topic": "NoSuchTopic", "timestamp": 0})[0] == 404
    assert call(rocketmq, "GET", "/groups/NoSuchGroup")[0] == 404


def test_producers_are_listed_with_their_connections(rocketmq):
    producer = rocketmq.producer(group="PG_listed", heartbeat_interval=0.5)
    producer.send(Message(unique("Prod"), b"x"))

    def listed():
        return [p for p in call(rocketmq, "GET", "/producers")[1] if p["group"] == "PG_listed"]

    [row] = wait_until(listed, what="the producer's heartbeat", timeout=40)
    assert row["connections"][0]["language"] == "JAVA"


# --- scheduled, DLQ, traces, recording ---------------------------------------------------------
@pytest.mark.rocketmq(control_port=0, clock="manual")
def test_a_delayed_message_is_listed_until_it_is_due(rocketmq):
    topic = unique("Later")
    rocketmq.create_topic(topic, 1)
    send(rocketmq, topic, [b"later"], delay_level=3)
    _, doc = call(rocketmq, "GET", "/scheduled")
    [pending] = [m for m in doc["messages"] if m["topic"] == topic]
    assert pending["kind"] == "delayLevel" and pending["level"] == 3
    assert pending["due"] - doc["now_ms"] == pytest.approx(10_000, abs=1000)
    call(rocketmq, "POST", "/clock/advance", {"seconds": 10})
    wait_until(lambda: not [m for m in call(rocketmq, "GET", "/scheduled")[1]["messages"]
                            if m["topic"] == topic], what="the delivery", timeout=10)


def test_a_group_without_dead_letters_has_an_empty_dlq(rocketmq):
    _, doc = call(rocketmq, "GET", "/dlq/NoDeadLetters")
    assert doc == {"group": "NoDeadLetters", "topic": "%DLQ%NoDeadLetters", "messages": [],
                   "truncated": False}


def test_a_message_without_traces_has_none(rocketmq):
    assert call(rocketmq, "GET", "/traces/0A0B0C")[1] == {"msgId": "0A0B0C", "traces": []}


def test_recording_is_off_unless_asked(rocketmq):
    assert call(rocketmq, "GET", "/recording")[1]["enabled"] is False


def test_a_messages_trace_records_are_read_from_the_trace_topic(rocketmq):
    """A Pub record as AsyncTraceDispatcher sends it (keyed by the traced message's id)."""
    topic = unique("Traced")
    [result] = send(rocketmq, topic, [b"traced"])
    fields = ["Pub", "1700000000000", "DefaultRegion", "PG_traced", topic, result.msg_id,
              "TagA", "k0", rocketmq.broker_addr, "6", "3", "0", result.offset_msg_id, "true"]
    body = ("\u0001".join(fields) + "\u0002").encode()
    rocketmq.producer().send(Message("RMQ_SYS_TRACE_TOPIC", body, keys=f"{result.msg_id} k0"))
    _, doc = call(rocketmq, "GET", f"/traces/{result.msg_id}")
    [trace] = doc["traces"]
    assert (trace["traceType"], trace["groupName"], trace["topic"], trace["costTime"],
            trace["success"]) == ("Pub", "PG_traced", topic, 3, True)


def test_a_message_resent_to_an_online_group_is_consumed_again(rocketmq):
    """CONSUME_MESSAGE_DIRECTLY through the broker to one of the group's consumers."""
    topic, group = unique("Again"), unique("AgainGroup")
    rocketmq.create_topic(topic, 1)
    [result] = send(rocketmq, topic, [b"again"])
    inbox = rocketmq.collector(topic, group)
    inbox.wait_for(1)
    status, doc = call(rocketmq, "POST", f"/messages/{result.offset_msg_id}/resend",
                       {"group": group}, timeout=30)
    assert status == 200, doc
    assert doc["group"] == group and doc["result"]["consumeResult"] == "CR_SUCCESS"


def test_a_message_resent_to_an_offline_group_is_refused(rocketmq):
    topic = unique("Nobody")
    [result] = send(rocketmq, topic, [b"x"])
    status, err = call(rocketmq, "POST", f"/messages/{result.offset_msg_id}/resend",
                       {"group": "NobodyHome"})
    assert status == 409 and "no online consumer" in err["error"]


@pytest.mark.rocketmq(control_port=0, clock="manual")
def test_popped_messages_are_in_flight_until_they_are_visible_again(rocketmq):
    """POP_MESSAGE (RocketMQ 5 over remoting): the group's messages in flight, with the time
    they become visible again on the business clock."""
    from twisted.internet import defer, reactor

    from rocketmq_emu.broker.remoting.client import RemotingClient
    from rocketmq_emu.broker.remoting.codes import RequestCode
    from rocketmq_emu.broker.remoting.command import RemotingCommand

    topic, group = unique("Popped"), unique("PopGroup")
    rocketmq.create_topic(topic, 1)
    send(rocketmq, topic, [b"a", b"b"])
    now_ms = int(rocketmq.clock.seconds() * 1000)

    async def pop() -> int:
        client = RemotingClient(reactor)
        try:
            resp = await client.invoke(rocketmq.broker_addr, RemotingCommand.request(
                RequestCode.POP_MESSAGE, {
                    "consumerGroup": group, "topic": topic, "queueId": "-1",
                    "maxMsgNums": "32", "invisibleTime": "60000", "pollTime": "0",
                    "bornTime": str(now_ms), "initMode": "0", "order": "false"}))
            return resp.code
        finally:
            await client.close()

    assert run_blocking(lambda: defer.ensureDeferred(pop())) == 0
    _, doc = call(rocketmq, "GET", f"/groups/{group}")
    assert [(m["topic"], m["offset"], m["invisibleUntil"]) for m in doc["inflight"]] == [
        (topic, 0, now_ms + 60_000), (topic, 1, now_ms + 60_000)]
    [row] = [g for g in call(rocketmq, "GET", "/groups")[1] if g["group"] == group]
    assert row["inflight"] == 2


# --- other web sites, unreachable brokers, loose types ------------------------------------------
@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Host": "evil.example"},
])
def test_a_request_from_another_web_site_is_refused(rocketmq, headers):
    status, _, body = get_raw(rocketmq, "/cluster", headers)
    assert status == 403 and (b"refused" in body or b"not a loopback name" in body)


def test_the_pages_own_requests_and_tools_are_served(rocketmq):
    own = {"Origin": f"http://127.0.0.1:{rocketmq.control_port}", "Sec-Fetch-Site": "same-origin"}
    assert get_raw(rocketmq, "/cluster", own)[0] == 200
    assert get_raw(rocketmq, "/cluster", {"Host": f"localhost:{rocketmq.control_port}"})[0] == 200


def test_a_change_sent_to_an_unreachable_broker_is_a_502(rocketmq):
    call(rocketmq, "POST", "/broker/unreachable")
    try:
        status, err = call(rocketmq, "POST", "/topics", {"topic": unique("Far"), "queues": 1},
                           timeout=30)
        assert status == 502 and "did not answer" in err["error"]
    finally:
        call(rocketmq, "POST", "/broker/reachable")


def test_a_topic_on_a_stopped_broker_is_a_404(rocketmq):
    rocketmq.stop_broker()
    try:
        status, err = call(rocketmq, "POST", "/topics",
                           {"topic": "T", "queues": 1, "broker": "broker-a"})
        assert status == 404 and "stopped" in err["error"]
    finally:
        rocketmq.start_broker()


@pytest.mark.parametrize("body", [{"topic": "T", "queues": True}, {"topic": "T", "queues": "4"},
                                  {"topic": "T", "perm": 4.0}, {"topic": "T", "broker": ["a"]}])
def test_a_topic_request_of_the_wrong_json_type_is_a_400(rocketmq, body):
    assert call(rocketmq, "POST", "/topics", body)[0] == 400


def test_a_bad_request_log_parameter_is_a_400_naming_it(rocketmq):
    status, err = call(rocketmq, "GET", "/requests?since=yesterday")
    assert status == 400 and err["error"] == "since must be an integer, not 'yesterday'"


@pytest.mark.parametrize(("method", "path"), [("PUT", "/topics/T"), ("GET", "/groups/G/reset-offset"),
                                              ("DELETE", "/cluster")])
def test_a_method_a_path_does_not_take_is_a_405(rocketmq, method, path):
    assert call(rocketmq, method, path)[0] == 405
