"""npm ``ali-ons@3.12.0`` (pure JS; language JAVA, version 121, numbers and booleans in
extFields) against the emulator: send, push consume, and rebalance across consumers of a group.

ali-ons never falls back to TBW102: sending to a topic the name server does not know fails, on a
real broker too. So each test creates its topic first, as ``mqadmin updateTopic`` would.
"""

from __future__ import annotations

from collections import Counter

from interop_support import ClientLauncher, create_topic, unique


def _expected(prefix: str, n: int) -> dict[str, tuple[str, str]]:
    return {f"{prefix}-{i}": ("TagOns", f"k{prefix}-{i}") for i in range(n)}


def _topic(clients: ClientLauncher, prefix: str) -> str:
    topic = unique(prefix)
    create_topic(clients.emulator, topic, queues=4)
    return topic


def _send(clients: ClientLauncher, topic: str, prefix: str, n: int):
    p = clients.run_node("ons_producer.js", topic=topic, count=n, tag="TagOns",
                         key_prefix=f"k{prefix}", body_prefix=prefix)
    sent = p.events("sent")
    assert len(sent) == n and not p.events("send_error"), p.diagnostics()
    return sent


def test_ons_send_returns_ok_with_queue_and_offset(node_clients: ClientLauncher):
    """Each send succeeds (SEND_OK) and gets an offset msgId, queue id and queue offset."""
    sent = _send(node_clients, _topic(node_clients, "OnsSend"), "s", 4)
    assert all(e["status"] == "SEND_OK" for e in sent), sent
    # The offset msgId: store host (ip, port) then the commit log offset, uppercase hex.
    host, port = node_clients.emulator.broker.split(":")
    prefix = "".join(f"{int(b):02X}" for b in host.split(".")) + f"{int(port):08X}"
    assert all(e["msg_id"].startswith(prefix) and len(e["msg_id"]) == 32 for e in sent), sent
    assert len({(e["queue_id"], e["offset"]) for e in sent}) == 4, sent


def test_ons_push_consumer_receives_every_message(node_clients: ClientLauncher):
    """The push consumer gets messages sent before it started and while it runs, once each."""
    topic = _topic(node_clients, "OnsTopic")
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
    assert counts == Counter(list(expected)), consumer.diagnostics()
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


def _check_owners(clients: ClientLauncher, topic: str, consumers, prefix: str, n: int) -> None:
    """Send ``n`` messages; each must reach exactly the consumer that owns its queue."""
    owner = {q: x for x in consumers for q in _latest_assignment(x)}
    before = {id(x): len(x.events("msg")) for x in consumers}
    _send(clients, topic, prefix, n)

    def got_all(_):
        bodies = [m["body"] for x in consumers for m in x.events("msg")[before[id(x)]:]]
        return sum(b.startswith(prefix + "-") for b in bodies) >= n

    consumers[0].wait_for(got_all, 30, f"the {n} {prefix!r} messages")
    seen = Counter()
    for x in consumers:
        for m in x.events("msg")[before[id(x)]:]:
            if m["body"].startswith(prefix + "-"):
                seen[m["body"]] += 1
                assert owner[m["queue_id"]] is x, (
                    f"{m['body']} from queue {m['queue_id']} went to a consumer that does not own it")
    assert seen == Counter(list(_expected(prefix, n))), seen


def test_ons_consumers_split_queues_and_resplit_when_one_joins(node_clients: ClientLauncher):
    """Two consumers of a group split the 4 queues 2/2; a third joining re-splits them 2/1/1.

    After each split, new messages reach only the consumer owning their queue, once.
    """
    topic = _topic(node_clients, "OnsRebalance")
    group = unique("GID_rebalance")
    queues = {0, 1, 2, 3}

    def start():
        return node_clients.node("ons_consumer.js", topic=topic, group=group, expect=0,
                                 rebalance_interval_ms=1000, timeout=80)

    a, b = start(), start()
    a.wait_for(lambda _: _is_partition([_latest_assignment(a), _latest_assignment(b)], queues),
               40, "a 2-way split of the queues")
    assert sorted(len(_latest_assignment(x)) for x in (a, b)) == [2, 2]
    _check_owners(node_clients, topic, [a, b], "two", 8)
    c = start()
    trio = [a, b, c]
    c.wait_for(lambda _: _is_partition([_latest_assignment(x) for x in trio], queues),
               40, "a 3-way split after the third consumer joined")
    assert sorted(len(_latest_assignment(x)) for x in trio) == [1, 1, 2]
    _check_owners(node_clients, topic, trio, "three", 8)
    for x in trio:
        x.stop()
