"""PyPI ``rocketmq==0.4.4`` with ``set_session_credentials`` against an emulator started with
``aclEnable=true`` and ``rocketmqHome`` in broker.conf (issue 15, ACL 1.0): the right
credentials send and consume; a wrong secret, no credentials and a topic without PUB are
refused; the broker stays up."""

from __future__ import annotations

import pytest
from interop_support import (
    TEST_BROKER_CONF,
    ClientLauncher,
    create_topic,
    plain_acl_yml,
    rpc,
    start_emulator,
    stop_emulator,
    topic_header,
    unique,
    wait_route,
)

AK, SK = "RocketMQ", "12345678"
TOPIC = unique("PyAcl")
READ_ONLY = unique("PyAclRo")
PLAIN_ACL = plain_acl_yml(AK, SK, TOPIC, READ_ONLY)


def _create_topic(emu, topic: str) -> None:
    """UPDATE_AND_CREATE_TOPIC with a wrong secret is refused; signed with the account
    (admin: true) it creates the topic, then the route is waited for."""
    from rocketmq_emu.broker.acl.signer import sign_request
    from rocketmq_emu.broker.remoting.codes import RequestCode

    refused = rpc(emu.broker, RequestCode.UPDATE_AND_CREATE_TOPIC,
                  sign_request(topic_header(topic), b"", AK, "wrong-secret"))
    assert refused.code == 1 and "AclException" in refused.remark
    create_topic(emu, topic, credentials=(AK, SK))


@pytest.fixture(scope="module")
def acl_emulator(tmp_path_factory):
    """An emulator with aclEnable=true and plain_acl.yml under its rocketmqHome."""
    tmp = tmp_path_factory.mktemp("emulator-acl")
    home = tmp / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    conf = tmp / "broker.conf"
    conf.write_text(TEST_BROKER_CONF +
                    f"aclEnable=true\nrocketmqHome={home}\n")
    emu = start_emulator(tmp, ["-c", str(conf)])
    for topic in (TOPIC, READ_ONLY):  # signed, by the admin account
        _create_topic(emu, topic)
    yield emu
    stop_emulator(emu)


@pytest.fixture
def launcher(tmp_path, acl_emulator, pypi_rocketmq):
    launcher = ClientLauncher(tmp_path, acl_emulator, pypi_rocketmq, None)
    yield launcher
    launcher.close()


def _send(launcher: ClientLauncher, topic: str, *cred: str, count: int = 2):
    return launcher.run_python("py_producer.py", "--topic", topic, "--mode", "sync",
                               "--count", str(count), "--group", unique("PID_acl"),
                               "--body-prefix", "acl", *cred)


RIGHT = ("--access-key", AK, "--secret-key", SK)


def test_right_credentials_send_and_consume(launcher, acl_emulator):
    """Signed sends are stored; a signed push consumer receives them."""
    sent = _send(launcher, TOPIC, *RIGHT)
    assert [e["status"] for e in sent.events("sent")] == ["OK", "OK"], sent.diagnostics()
    wait_route(acl_emulator, TOPIC)
    consumer = launcher.python("py_push_consumer.py", "--topic", TOPIC, "--group",
                               unique("GID_acl"), "--expect", "2", "--linger", "1", *RIGHT)
    consumer.wait(60)
    assert sorted(e["body"] for e in consumer.events("msg")) == ["acl-0", "acl-1"], \
        consumer.diagnostics()


def _cpp_log(launcher: ClientLauncher) -> str:
    """What librocketmq logged under the launcher's $HOME (it logs the broker's remark; the
    exception it raises after its retries only says "No route info")."""
    return "".join(p.read_text(errors="replace")
                   for p in (launcher.home / "logs").rglob("*.log*") if p.is_file())


@pytest.mark.parametrize("topic,cred,remark", [
    (TOPIC, ("--access-key", AK, "--secret-key", "wrong-secret"),
     "Check signature failed for accessKey=RocketMQ"),
    # librocketmq always sends AccessKey, empty without credentials: no such account.
    (TOPIC, (), "No acl config for , "),
    (READ_ONLY, RIGHT, f"No default permission for topic:{READ_ONLY}"),
], ids=["wrong-secret", "no-credentials", "no-pub"])
def test_refused_and_the_broker_stays_up(launcher, acl_emulator, topic, cred, remark):
    """A refused send fails at the client with the AclException remark (SYSTEM_ERROR, code 1);
    the broker then serves the right credentials."""
    refused = _send(launcher, topic, *cred, count=1)
    assert refused.events("sent") == [] and refused.events("send_error"), refused.diagnostics()
    log = _cpp_log(launcher)
    assert "org.apache.rocketmq.acl.common.AclException: " in log and remark in log, log[-3000:]
    assert acl_emulator.proc.poll() is None
    ok = _send(launcher, TOPIC, *RIGHT, count=1)
    assert [e["status"] for e in ok.events("sent")] == ["OK"], ok.diagnostics()
