"""Messages cross client families through the emulator: what one client stores, another reads
with the same body, tags and keys (property encoding, record layout, offsets)."""

from __future__ import annotations

from collections import Counter

from interop_support import ClientLauncher, create_topic, unique


def test_ali_ons_to_cpp_pull_consumer(tmp_path, emulator, pypi_rocketmq, npm_clients):
    """ali-ons (JAVA, V2 header with JS numbers) sends; the C++ pull consumer reads it all."""
    clients = ClientLauncher(tmp_path, emulator, pypi_rocketmq, npm_clients)
    try:
        topic = unique("CrossOns")
        create_topic(emulator, topic)
        p = clients.run_node("ons_producer.js", topic=topic, count=4, tag="TagX",
                             key_prefix="kx", body_prefix="x")
        assert len(p.events("sent")) == 4, p.diagnostics()
        c = clients.run_python("py_pull_consumer.py", "--topic", topic, "--group",
                               unique("GID_cross"), "--expect", "4", "--drain")
        msgs = c.events("msg")
        assert Counter(m["body"] for m in msgs) == Counter(f"x-{i}" for i in range(4)), \
            c.diagnostics()
        assert all(m["tags"] == "TagX" and m["keys"] == "k" + m["body"] for m in msgs), msgs
    finally:
        clients.close()


def test_rocketmq_nodejs_to_ali_ons_consumer(tmp_path, emulator, npm_clients):
    """rocketmq-nodejs (CPP) sends; the ali-ons push consumer reads it all."""
    clients = ClientLauncher(tmp_path, emulator, None, npm_clients)
    try:
        topic = unique("CrossNode")
        create_topic(emulator, topic)
        p = clients.run_node("nodejs_producer.js", topic=topic, count=3, tag="TagY",
                             key_prefix="ky", body_prefix="y")
        assert len(p.events("sent")) == 3, p.diagnostics()
        c = clients.run_node("ons_consumer.js", topic=topic, group=unique("GID_cross"), expect=3,
                             linger=1, timeout=40)
        msgs = c.events("msg")
        assert Counter(m["body"] for m in msgs) == Counter(f"y-{i}" for i in range(3)), \
            c.diagnostics()
        assert all(m["tags"] == "TagY" and m["keys"] == "k" + m["body"] for m in msgs), msgs
    finally:
        clients.close()
