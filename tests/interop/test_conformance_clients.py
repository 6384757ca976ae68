"""The conformance findings (``GET /conformance``) real clients earn in ordinary use: PyPI
``rocketmq-python-cvs`` (C++ 2.x), npm ``ali-ons`` (pure JS) and npm ``rocketmq-nodejs`` (C++
addon). PyPI ``rocketmq`` 0.4.4 is checked in test_pypi_rocketmq.py on its scenario.

Each client runs once per module: a producer (the C++ one also sends a batch), then a push
consumer reads what was sent; the findings of that run alone are read after the clients exit.
"""

from __future__ import annotations

import pytest
from conformance_support import forget_findings, seen, settled_findings
from interop_support import ClientLauncher, create_topic, unique

TRAILING_SEPARATOR = ("message.property.reserved", "info", 310, "i", "\\u0002 at the end")
#: A C++ push consumer's heartbeat: its ConsumerData enums as ordinals (read right by fastjson).
CPP_HEARTBEAT_ENUMS = {("body.heartbeat", "info", 34, "consumeType", "1"),
                       ("body.heartbeat", "info", 34, "messageModel", "1"),
                       ("body.heartbeat", "info", 34, "consumeFromWhere", "0")}


@pytest.fixture(scope="module")
def cvs(tmp_path_factory, emulator, pypi_rocketmq_cvs) -> dict:
    """rocketmq-python-cvs: two sync sends, a batch of three, a push consumer; the findings."""
    launcher = ClientLauncher(tmp_path_factory.mktemp("cvs"), emulator, pypi_rocketmq_cvs, None)
    topic = unique("CvsConf")
    args = ["--topic", topic, "--group", unique("PID_cvs"), "--tag", "TagCvs"]
    try:
        forget_findings(emulator)
        sync = launcher.run_python("py_producer.py", *args, "--mode", "sync", "--count", "2")
        assert len(sync.events("sent")) == 2, sync.diagnostics()
        batch = launcher.run_python("py_producer.py", *args, "--mode", "batch", "--count", "3")
        assert batch.events("sent"), batch.diagnostics()
        consumer = launcher.run_python("py_push_consumer.py", "--topic", topic, "--group",
                                       unique("GID_cvs"), "--expect", "3", "--linger", "0.5",
                                       "--timeout", "30")
        assert len(consumer.events("msg")) == 3, consumer.diagnostics()
        return settled_findings(emulator)
    finally:
        launcher.close()


def _node_run(directory, emulator, npm_clients, name: str, create: bool) -> dict:
    """An npm client's producer (three sends) and push consumer, ``name``_producer.js and
    ``name``_consumer.js; the findings they earned."""
    launcher = ClientLauncher(directory, emulator, None, npm_clients)
    topic = unique(f"{name.capitalize()}Conf")
    try:
        if create:
            create_topic(emulator, topic)
        forget_findings(emulator)
        producer = launcher.run_node(f"{name}_producer.js", topic=topic, count=3,
                                     tag=f"Tag{name}", key_prefix="k", body_prefix=name)
        assert len(producer.events("sent")) == 3, producer.diagnostics()
        consumer = launcher.node(f"{name}_consumer.js", topic=topic, group=unique(f"GID_{name}"),
                                 expect=3, linger=0.5, timeout=30)
        consumer.wait(45)
        assert len(consumer.events("msg")) == 3, consumer.diagnostics()
        return settled_findings(emulator)
    finally:
        launcher.close()


@pytest.fixture(scope="module")
def ons(tmp_path_factory, emulator, npm_clients) -> dict:
    """ali-ons: three sends to a created topic, a push consumer; the findings."""
    return _node_run(tmp_path_factory.mktemp("ons"), emulator, npm_clients, "ons", create=True)


@pytest.fixture(scope="module")
def nodejs(tmp_path_factory, emulator, npm_clients) -> dict:
    """rocketmq-nodejs: three sends, a push consumer; the findings."""
    return _node_run(tmp_path_factory.mktemp("nodejs"), emulator, npm_clients, "nodejs",
                     create=False)


def test_cvs_batch_flag_is_the_only_error(cvs):
    """rocketmq-python-cvs sends its batch as SEND_MESSAGE_V2 (310) with m="1": the one error,
    naming "m (batch)" and the value (the Java broker stores the batch as one message)."""
    errors = [f for f in cvs["findings"] if f["severity"] == "error"]
    assert [(f["kind"], f["code"], f["field"], f["sent"], f["language"]) for f in errors] == [
        ("header.boolean", 310, "m (batch)", "1", "CPP")], errors


def test_cvs_header_warnings_are_booleans_written_as_zero(cvs):
    """Its header warnings: m (batch)="0" and k (unitMode)="0" on single sends."""
    headers = {s for s in seen(cvs, "warning") if s[0].startswith("header.")}
    assert headers == {("header.boolean", "warning", 310, "m (batch)", "0"),
                       ("header.boolean", "warning", 310, "k (unitMode)", "0")}


def test_cvs_session_warning_is_at_most_a_consumer_left_registered(cvs):
    """The only session finding possible: the consumer (which may crash while shutting down)
    closing without UNREGISTER_CLIENT, a warning on consumerGroup."""
    session = {(kind, severity, field) for kind, severity, _, field, _ in seen(cvs)
               if kind.startswith("session.")}
    assert session <= {("session.unregister", "warning", "consumerGroup")}


def test_cvs_infos_are_onschannel_the_trailing_separator_and_enum_ordinals(cvs):
    """Its infos: the OnsChannel key on sends, pulls and route look-ups, properties that end
    with \\u0002, and the heartbeat's enums as ordinals."""
    infos = seen(cvs, "info")
    onschannel = {code for kind, _, code, field, _ in infos if field == "OnsChannel"}
    assert {11, 105, 310} <= onschannel, infos
    assert {s for s in infos if s[3] != "OnsChannel" and s[0] != "header.json"} == {
        TRAILING_SEPARATOR, *CPP_HEARTBEAT_ENUMS}


@pytest.mark.parametrize(("run", "infos"), [
    ("ons", {TRAILING_SEPARATOR}), ("nodejs", {TRAILING_SEPARATOR, *CPP_HEARTBEAT_ENUMS})])
def test_javascript_clients_earn_only_infos(run, infos, request):
    """ali-ons and rocketmq-nodejs: no error, no warning; infos for the properties ending with
    \\u0002 on SEND_MESSAGE_V2 and (rocketmq-nodejs, a C++ core) the heartbeat's enum
    ordinals."""
    assert {s for s in seen(request.getfixturevalue(run)) if s[0] != "header.json"} == infos


@pytest.mark.parametrize(("run", "types"), [
    ("cvs", {"number"}), ("nodejs", {"number"}), ("ons", {"number", "boolean"})])
def test_clients_writing_json_numbers_in_extfields_earn_an_info(run, types, request):
    """The C++ clients and ali-ons write some extFields values as JSON numbers (ali-ons also
    booleans): an info per request code and type, naming the keys; a pull's queueId among
    them."""
    json_infos = {s for s in seen(request.getfixturevalue(run)) if s[0] == "header.json"}
    assert {sent for *_, sent in json_infos} == types, json_infos
    assert any(code == 11 and "queueId" in field for _, _, code, field, _ in json_infos)


@pytest.mark.parametrize(("run", "language", "version"), [
    ("cvs", "CPP", 333), ("ons", "JAVA", 121), ("nodejs", "CPP", 333)])
def test_clients_are_listed_with_their_language_and_version(run, language, version, request):
    """Each process of the run (producer, consumer) is listed with its language and version."""
    clients = request.getfixturevalue(run)["clients"]
    assert len({c["clientId"] for c in clients}) >= 2, clients
    assert {(c["language"], c["version"]) for c in clients} == {(language, version)}
