"""PyPI ``rocketmq==0.4.4`` (the C++ client, language CPP, version 63) against the emulator.

One module-scoped scenario drives the expensive part once: producers send in every mode to a
fresh topic, then a push consumer, an orderly push consumer and a pull consumer (three groups)
read it, and more messages are sent while they run (long polling must wake them); a batch goes
to a topic of its own. Each test then checks one behaviour of that run, the conformance findings
(``GET /conformance``) of all of it included.
"""

from __future__ import annotations

import re
import time
from collections import Counter

import pytest
from conformance_support import forget_findings, seen, settled_findings
from interop_support import ClientLauncher, unique, wait_consumers, wait_route

MODES = {"sync": 4, "async": 4, "oneway": 4, "orderly": 8}
LATE = 4
TOTAL = sum(MODES.values()) + LATE
QUEUES = 4  # the C++ producer's defaultTopicQueueNums: a topic auto-created from TBW102


def expected_messages() -> dict[str, tuple[str, str]]:
    """body -> (tags, keys) of everything the scenario sends."""
    out = {}
    for mode, n in MODES.items():
        for i in range(n):
            out[f"{mode}-{i}"] = (f"Tag{mode.capitalize()}", f"k{mode}-{i}")
    for i in range(LATE):
        out[f"late-{i}"] = ("TagLate", f"klate-{i}")
    return out


def _producer_args(topic: str, mode: str, count: int, name: str | None = None) -> list[str]:
    name = name or mode
    return ["--topic", topic, "--mode", mode, "--count", str(count), "--group", f"PID_{name}",
            "--tag", f"Tag{name.capitalize()}", "--key-prefix", f"k{name}",
            "--body-prefix", name]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, emulator, pypi_rocketmq):
    """Send in every mode, consume three ways, send more while consuming; return the clients
    and the conformance findings of the whole run."""
    launcher = ClientLauncher(tmp_path_factory.mktemp("pypi"), emulator, pypi_rocketmq, None)
    topic = unique("PyTopic")
    try:
        forget_findings(emulator)
        # The first send auto-creates the topic (from TBW102); the other modes run in parallel.
        first = launcher.run_python("py_producer.py", *_producer_args(topic, "sync", MODES["sync"]))
        others = [launcher.python("py_producer.py", *_producer_args(topic, m, n))
                  for m, n in MODES.items() if m != "sync"]
        batch = launcher.python("py_producer.py",
                                *_producer_args(unique("PyBatchTopic"), "batch", 3))
        for p in [*others, batch]:
            p.wait(60)
        assert batch.events("sent"), batch.diagnostics()
        producers = {"sync": first, **{p.out_path.name: p for p in others}}
        by_mode = {}
        for p in [first, *others]:
            for ev in p.events("sent") + p.events("send_error"):
                by_mode.setdefault(ev["mode"], []).append(ev)
        consumers = {
            "push": launcher.python("py_push_consumer.py", "--topic", topic, "--group",
                                    unique("GID_push"), "--expect", str(TOTAL), "--linger", "2"),
            "orderly": launcher.python("py_push_consumer.py", "--topic", topic, "--group",
                                       unique("GID_orderly"), "--orderly", "--expect",
                                       str(TOTAL), "--linger", "2"),
            "pull": launcher.python("py_pull_consumer.py", "--topic", topic, "--group",
                                    unique("GID_pull"), "--expect", str(TOTAL), "--drain"),
        }
        # Long polling: the push consumers have everything sent so far and wait in a held pull.
        initial = TOTAL - LATE
        for name in ("push", "orderly"):
            consumers[name].wait_for(lambda evs: sum(e["event"] == "msg" for e in evs) >= initial,
                                     45, f"the first {initial} messages ({name})")
        late = launcher.run_python("py_producer.py", *_producer_args(topic, "sync", LATE, "late"))
        for c in consumers.values():
            c.wait(60)
        yield {"topic": topic, "producers": producers, "by_mode": by_mode, "late": late,
               "consumers": consumers, "conformance": settled_findings(emulator)}
    finally:
        launcher.close()


def _received(client) -> list[dict]:
    return client.events("msg")


def _check_delivery(client, label: str) -> None:
    msgs = _received(client)
    expected = expected_messages()
    counts = Counter(m["body"] for m in msgs)
    missing = sorted(set(expected) - set(counts))
    dupes = sorted(b for b, n in counts.items() if n > 1)
    unknown = sorted(set(counts) - set(expected))
    assert not (missing or dupes or unknown), (
        f"{label}: missing {missing}, duplicated {dupes}, unexpected {unknown}\n"
        + client.diagnostics())
    for m in msgs:
        tags, keys = expected[m["body"]]
        assert (m["tags"], m["keys"]) == (tags, keys), (label, m)
    assert len(msgs) == TOTAL


def test_sync_send_returns_ok_with_distinct_msg_ids(scenario):
    """Sync sends succeed with distinct 32-hex-digit msgIds (0.4.4 reports its UNIQ_KEY)."""
    sent = scenario["by_mode"]["sync"]
    assert [e["event"] for e in sent] == ["sent"] * MODES["sync"], sent
    assert all(e["status"] == "OK" for e in sent)
    assert all(re.fullmatch(r"[0-9A-F]{32}", e["msg_id"]) for e in sent), sent
    assert len({e["msg_id"] for e in sent}) == len(sent)


def test_async_send_calls_back_ok(scenario):
    """Every async send reaches its success callback."""
    sent = scenario["by_mode"]["async"]
    assert sorted(e["i"] for e in sent if e["event"] == "sent") == list(range(MODES["async"])), sent
    assert all(e.get("status") == "OK" for e in sent)


def test_orderly_send_uses_the_selected_queue(scenario):
    """send_orderly(msg, i) lands in queue i % 4 and in send order within each queue."""
    sent = scenario["by_mode"]["orderly"]
    assert all(e["event"] == "sent" and e["status"] == "OK" for e in sent), sent
    msgs = [m for m in _received(scenario["consumers"]["push"]) if m["body"].startswith("orderly-")]
    assert len(msgs) == MODES["orderly"], scenario["consumers"]["push"].diagnostics()
    for m in msgs:
        i = int(m["body"].split("-")[1])
        assert m["queue_id"] == i % QUEUES, m
    per_queue: dict[int, list[tuple[int, int]]] = {}
    for m in msgs:
        per_queue.setdefault(m["queue_id"], []).append((m["queue_offset"], int(m["body"][8:])))
    for pairs in per_queue.values():
        pairs.sort()
        assert [i for _, i in pairs] == sorted(i for _, i in pairs)


def test_push_consumer_receives_every_message_once(scenario):
    """The push consumer gets each body exactly once with its tags and keys (oneway included)."""
    _check_delivery(scenario["consumers"]["push"], "push")


def test_push_consumer_is_woken_by_new_messages(scenario):
    """Messages sent while the consumer waits in a held pull arrive (long polling)."""
    bodies = {m["body"] for m in _received(scenario["consumers"]["push"])}
    assert {f"late-{i}" for i in range(LATE)} <= bodies


def test_orderly_push_consumer_receives_in_queue_order(scenario):
    """The orderly consumer (LOCK_BATCH_MQ) gets everything once, in queue-offset order."""
    client = scenario["consumers"]["orderly"]
    _check_delivery(client, "orderly")
    last: dict[int, int] = {}
    for m in _received(client):
        q, off = m["queue_id"], m["queue_offset"]
        assert off > last.get(q, -1), f"queue {q}: offset {off} after {last.get(q)}"
        last[q] = off


def test_pull_consumer_receives_every_message(scenario):
    """The pull consumer (code 11, no suspend flag) reads every message once."""
    _check_delivery(scenario["consumers"]["pull"], "pull")


def test_consumers_shut_down_cleanly(scenario):
    """Every consumer reached its expected count and shut down without timing out."""
    for name, client in scenario["consumers"].items():
        done = client.events("done")
        assert done and not done[-1].get("timed_out"), f"{name}\n{client.diagnostics()}"
        assert client.proc.returncode == 0, f"{name}\n{client.diagnostics()}"


def test_conformance_error_is_only_the_batch_flag(scenario):
    """The one error of the whole run is the batch's batch="1" on SEND_MESSAGE (10): the Java
    broker reads it as false and stores the batch as one message."""
    errors = [f for f in scenario["conformance"]["findings"] if f["severity"] == "error"]
    assert [(f["kind"], f["code"], f["field"], f["sent"], f["language"]) for f in errors] == [
        ("header.boolean", 10, "batch", "1", "CPP")], errors
    assert "Boolean.parseBoolean as false" in errors[0]["message"]


def test_conformance_warnings_are_booleans_written_as_zero(scenario):
    """The only warnings: batch="0" and unitMode="0" on every single send (read as false, as
    meant; Java writes "false"); no session warning (the consumers unregister)."""
    assert seen(scenario["conformance"], "warning") == {
        ("header.boolean", "warning", 10, "batch", "0"),
        ("header.boolean", "warning", 10, "unitMode", "0")}


def test_conformance_notes_the_onschannel_key_on_every_request(scenario):
    """OnsChannel, which Java does not send, is an info finding on sends, pulls, offsets,
    route look-ups, consumer lists, batch locks and unregistering."""
    codes = {code for kind, _, code, field, _ in seen(scenario["conformance"], "info")
             if (kind, field) == ("header.unknown", "OnsChannel")}
    assert {10, 11, 14, 15, 35, 38, 105} <= codes, codes


def test_conformance_notes_properties_ending_with_a_separator(scenario):
    """Each send's properties end with the separator \\u0002, which Java deletes: info, and
    nothing else about the messages."""
    message = {s for s in seen(scenario["conformance"]) if s[0].startswith("message.")}
    assert message == {("message.property.reserved", "info", 10, "properties",
                        "\\u0002 at the end")}


def test_conformance_lists_each_client_as_cpp_version_63(scenario):
    """Every client of the run (nine processes) is listed with language CPP and version 63."""
    clients = scenario["conformance"]["clients"]
    assert len({c["clientId"] for c in clients}) >= 9, clients
    assert {(c["language"], c["version"]) for c in clients} == {("CPP", 63)}


def test_batch_is_stored_as_one_message(py_clients: ClientLauncher):
    """A C++ batch (code 10, batch="1") is ONE message, as Apache RocketMQ 4.9.8 stores it.

    Java's Boolean.parseBoolean("1") is false, so the real broker does not unpack it.
    """
    topic = unique("PyBatch")
    batch = py_clients.run_python("py_producer.py", *_producer_args(topic, "batch", 3))
    sent = batch.events("sent")
    assert len(sent) == 1 and sent[0]["status"] == "OK", batch.diagnostics()
    marker = py_clients.run_python("py_producer.py", *_producer_args(topic, "sync", 1, "marker"))
    assert marker.events("sent"), marker.diagnostics()
    pull = py_clients.run_python("py_pull_consumer.py", "--topic", topic, "--group",
                                 unique("GID_batch"), "--expect", "2", "--drain",
                                 "--timeout", "30")
    msgs = pull.events("msg")
    assert len(msgs) == 2, pull.diagnostics()
    assert sum(m["body"] == "marker-0" for m in msgs) == 1
    (batch_msg,) = [m for m in msgs if m["body"] != "marker-0"]
    assert not batch_msg["body"].startswith("batch-"), batch_msg


def test_push_consumers_split_queues_after_notify(py_clients: ClientLauncher):
    """A second C++ push consumer joining a group makes the first give up half its queues.

    The C++ client rebalances on its own only every 20 s: within a few seconds only the
    broker's NOTIFY_CONSUMER_IDS_CHANGED can make it let go, so messages sent then must each
    reach one consumer, from disjoint queue sets.
    """
    emu = py_clients.emulator
    topic = unique("PySplit")
    group = unique("GID_split")
    first = py_clients.run_python("py_producer.py", *_producer_args(topic, "sync", 4, "warm"))
    assert len(first.events("sent")) == 4, first.diagnostics()
    wait_route(emu, topic)

    def consumer():
        return py_clients.python("py_push_consumer.py", "--topic", topic, "--group", group,
                                 "--expect", "0", "--timeout", "60")

    a = consumer()
    a.wait_for(lambda evs: sum(e["event"] == "msg" for e in evs) >= 4, 30, "the warm-up messages")
    b = consumer()
    wait_consumers(emu, group, 2)
    time.sleep(3)  # the notified client rebalances at once; give the pulls time to move
    sent = py_clients.run_python("py_producer.py", *_producer_args(topic, "orderly", 8, "split"))
    assert len(sent.events("sent")) == 8, sent.diagnostics()

    def split_msgs(client):
        return [m for m in client.events("msg") if m["body"].startswith("split-")]

    a.wait_for(lambda _: len(split_msgs(a)) + len(split_msgs(b)) >= 8, 30, "the 8 split messages")
    time.sleep(1)  # duplicates, if any, arrive now
    a.stop()
    b.stop()
    got_a, got_b = split_msgs(a), split_msgs(b)
    bodies = Counter(m["body"] for m in got_a + got_b)
    assert bodies == Counter(f"split-{i}" for i in range(8)), (a.diagnostics(), b.diagnostics())
    queues_a = {m["queue_id"] for m in got_a}
    queues_b = {m["queue_id"] for m in got_b}
    assert queues_a and queues_b and not queues_a & queues_b, (queues_a, queues_b)


def test_delay_level_message_arrives_after_its_delay(py_clients: ClientLauncher):
    """A message sent with delay level 1 (1 s) reaches the consumer a second later, unchanged;
    a plain message sent alongside is not delayed."""
    topic = unique("PyDelay")
    plain = py_clients.run_python("py_producer.py", *_producer_args(topic, "sync", 1, "plain"))
    assert plain.events("sent"), plain.diagnostics()
    wait_route(py_clients.emulator, topic)
    consumer = py_clients.python("py_push_consumer.py", "--topic", topic, "--group",
                                 unique("GID_delay"), "--expect", "3", "--linger", "1",
                                 "--timeout", "40")
    consumer.wait_for(lambda evs: any(e.get("body") == "plain-0" for e in evs), 30,
                      "the plain message")
    delayed = py_clients.run_python("py_producer.py", "--delay-level", "1",
                                     *_producer_args(topic, "sync", 2, "delayed"))
    assert len(delayed.events("sent")) == 2, delayed.diagnostics()
    consumer.wait(60)
    msgs = {m["body"]: m for m in consumer.events("msg")}
    assert set(msgs) == {"plain-0", "delayed-0", "delayed-1"}, consumer.diagnostics()
    for i in range(2):
        m = msgs[f"delayed-{i}"]
        assert (m["tags"], m["keys"], m["topic"]) == ("TagDelayed", f"kdelayed-{i}", topic), m
        assert m["delay"] == "1", m
        # Redelivered by the schedule service no earlier than due: due = the first store
        # time + 1 s, and born <= that store time (one host clock), so both gaps are >= 1 s.
        assert m["store_timestamp"] - m["born_timestamp"] >= 1000, m
        assert m["received_ms"] - m["born_timestamp"] >= 1000, m
        assert m["received_ms"] >= m["store_timestamp"], m
    # The plain message was not scheduled: it carries no DELAY (a bound on its store time
    # would also measure how busy the machine is).
    assert not msgs["plain-0"]["delay"], msgs["plain-0"]
