"""npm ``rocketmq-nodejs@1.1.2`` (native C++ addon; language CPP, version 333) against the
emulator: send and push consume."""

from __future__ import annotations

from collections import Counter

from interop_support import ClientLauncher, unique


def test_nodejs_send_and_push_consume(node_clients: ClientLauncher):
    """Sync sends succeed and the push consumer gets each message once with tags and keys."""
    topic = unique("NodeTopic")
    producer = node_clients.run_node("nodejs_producer.js", topic=topic, count=5, tag="TagNode",
                                     key_prefix="knode", body_prefix="node")
    sent = producer.events("sent")
    assert len(sent) == 5 and not producer.events("send_error"), producer.diagnostics()
    assert all(e["status"] == "OK" and len(e["msg_id"]) == 32 for e in sent), sent
    consumer = node_clients.node("nodejs_consumer.js", topic=topic, group=unique("GID_node"),
                                 expect=7, linger=1.5, timeout=45)
    consumer.wait_for(lambda evs: sum(e["event"] == "msg" for e in evs) >= 5, 40,
                      "the first 5 messages")
    late = node_clients.run_node("nodejs_producer.js", topic=topic, count=2, tag="TagNode",
                                 key_prefix="klate", body_prefix="late")
    assert len(late.events("sent")) == 2, late.diagnostics()
    consumer.wait(60)
    expected = {f"node-{i}": f"knode-{i}" for i in range(5)}
    expected.update({f"late-{i}": f"klate-{i}" for i in range(2)})
    msgs = consumer.events("msg")
    assert Counter(m["body"] for m in msgs) == Counter(list(expected)), consumer.diagnostics()
    for m in msgs:
        assert m["tags"] == "TagNode" and m["keys"] == expected[m["body"]], m
        assert m["topic"] == topic
