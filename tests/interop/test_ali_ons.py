"""npm ``ali-ons@3.12.0`` (pure JS; language JAVA, version 121, numbers and booleans in
extFields) against the emulator: send, push consume, and rebalance across consumers of a group."""

from __future__ import annotations

from collections import Counter

from interop_support import ClientLauncher, unique


def _expected(prefix: str, n: int) -> dict[str, tuple[str, str]]:
    return {f"{prefix}-{i}": ("TagOns", f"k{prefix}-{i}") for i in range(n)}


def _send(clients: ClientLauncher, topic: str, prefix: str, n: int):
    p = clients.run_node("ons_producer.js", topic=topic, count=n, tag="TagOns",
                         key_prefix=f"k{prefix}", body_prefix=prefix)
    sent = p.events("sent")
    assert len(sent) == n and not p.events("send_error"), p.diagnostics()
    return sent


def test_ons_send_returns_ok_with_queue_and_offset(node_clients: ClientLauncher):
    """Each send succeeds (SEND_OK) and gets an offset msgId, queue id and queue offset."""
    sent = _send(node_clients, unique("OnsSend"), "s", 4)
    assert all(e["status"] == "SEND_OK" for e in sent), sent
    assert all(len(e["msg_id"]) == 32 for e in sent), sent
    assert len({(e["queue_id"], e["offset"]) for e in sent}) == 4, sent


def test_ons_push_consumer_receives_every_message(node_clients: ClientLauncher):
    """The push consumer gets messages sent before it started and while it runs, once each."""
    topic = unique("OnsTopic")
    _send(node_clients, topic, "before", 6)
    consumer = node_clients.node("ons_consumer.js", topic=topic, group=unique("GID_ons"),
                                 expect=9, linger=1.5, timeout=45)
    consumer.wait_for(lambda evs: sum(e["event"] == "msg" for e in evs) >= 6, 40,
                      "the first 6 messages")
    _send(node_clients, topic, "during", 3)
    consumer.wait(60)
    expected = {**_expected("before", 6), **_expected("during", 3)}
    msgs = consumer.events("msg")
    counts = Counter(m["body"] for m in msgs)
    assert counts == Counter(expected), consumer.diagnostics()
    for m in msgs:
        assert (m["tags"], m["keys"]) == expected[m["body"]], m
        assert m["topic"] == topic


def _latest_assignment(client) -> list[int] | None:
    evs = client.events("assigned")
    return evs[-1]["queues"] if evs else None


def _is_partition(assignments: list[list[int] | None], queues: set[int]) -> bool:
    if any(not a for a in assignments):
        return False
    flat = [q for a in assignments for q in a]
    return len(flat) == len(set(flat)) and set(flat) == queues


def test_ons_consumers_split_queues_and_resplit_when_one_joins(node_clients: ClientLauncher):
    """Two consumers of a group split the 4 queues 2/2; a third joining re-splits them 2/1/1."""
    topic = unique("OnsRebalance")
    group = unique("GID_rebalance")
    _send(node_clients, topic, "m", 8)
    queues = {0, 1, 2, 3}

    def start():
        return node_clients.node("ons_consumer.js", topic=topic, group=group, expect=0,
                                 rebalance_interval_ms=1000, timeout=80)

    a, b = start(), start()
    a.wait_for(lambda _: _is_partition([_latest_assignment(a), _latest_assignment(b)], queues),
               40, "a 2-way split of the queues")
    assert sorted(len(_latest_assignment(x)) for x in (a, b)) == [2, 2]
    c = start()
    trio = (a, b, c)
    c.wait_for(lambda _: _is_partition([_latest_assignment(x) for x in trio], queues),
               40, "a 3-way split after the third consumer joined")
    assert sorted(len(_latest_assignment(x)) for x in trio) == [1, 1, 2]
    for x in trio:
        x.stop()
    bodies = {m["body"] for x in trio for m in x.events("msg")}
    assert bodies == set(_expected("m", 8)), "\n".join(x.diagnostics() for x in trio)
