"""ACL 1.0 on a loopback broker (``aclEnable=true``): signed requests pass, refused ones are
answered SYSTEM_ERROR with the AclException remark on a connection that stays usable, and a
changed plain_acl.yml is picked up without a restart."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import pytest_twisted
from test_broker_loopback import bodies, pull, send_v2
from twisted.internet import reactor

from rocketmq_emu.broker.acl.config import AclConfigError
from rocketmq_emu.broker.acl.signer import sign_request
from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.controller import BrokerController
from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

AK, SK = "RocketMQ", "12345678"
ACL_YML = textwrap.dedent("""\
    accounts:
      - accessKey: RocketMQ
        secretKey: 12345678
        admin: false
        defaultTopicPerm: DENY
        defaultGroupPerm: SUB
        topicPerms:
          - TopicA=PUB|SUB
          - TopicB=SUB
    """)


def write_acl(home: Path, text: str) -> Path:
    path = home / "conf" / "plain_acl.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_broker(tmp_path: Path, home: Path, **settings) -> BrokerController:
    cfg = BrokerConfig(listen_port=0, store_path_root_dir=str(tmp_path / "store"),
                       mapped_file_size_commit_log=1024 * 1024,
                       mapped_file_size_consume_queue=300 * 20,
                       acl_enable=True, rocketmq_home=str(home), **settings)
    return BrokerController(cfg, reactor=reactor, host="127.0.0.1", enable_vip_channel=False)


@pytest.fixture
def acl_broker(tmp_path):
    home = tmp_path / "home"
    write_acl(home, ACL_YML)
    broker = make_broker(tmp_path, home)
    pytest_twisted.blockon(broker.start())
    client = RemotingClient(reactor)
    yield broker, client, home
    pytest_twisted.blockon(client.close())
    pytest_twisted.blockon(broker.stop())


def signed(cmd: RemotingCommand, ak: str = AK, sk: str = SK) -> RemotingCommand:
    sign_request(cmd.ext_fields, cmd.body, ak, sk)
    return cmd


def assert_refused(resp: RemotingCommand, words: str) -> None:
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark.startswith("org.apache.rocketmq.acl.common.AclException: ")
    assert words in resp.remark


@pytest_twisted.inlineCallbacks
def test_signed_send_and_pull_pass(acl_broker):
    """The right credentials send to a PUB topic and pull it back through a SUB group."""
    broker, c, _ = acl_broker
    resp = yield c.invoke(broker.addr, signed(send_v2("TopicA", b"hello")))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    got = yield c.invoke(broker.addr, signed(pull("TopicA", 0, 0)))
    assert got.code == ResponseCode.SUCCESS and bodies(got.body) == [b"hello"]


@pytest_twisted.inlineCallbacks
def test_refusals_answer_system_error_and_keep_the_connection(acl_broker, caplog):
    """Wrong secret, no credentials, a topic without PUB: SYSTEM_ERROR with the AclException
    remark, each logged (Java logs the hook's exception); the same connection then serves a
    correctly signed request."""
    broker, c, _ = acl_broker
    resp = yield c.invoke(broker.addr, signed(send_v2("TopicA", b"x"), sk="wrong-secret"))
    assert_refused(resp, "Check signature failed for accessKey=RocketMQ")
    resp = yield c.invoke(broker.addr, send_v2("TopicA", b"x"))
    assert_refused(resp, "No accessKey is configured")
    resp = yield c.invoke(broker.addr, signed(send_v2("TopicB", b"x")))
    assert_refused(resp, "No default permission for")
    resp = yield c.invoke(broker.addr, signed(send_v2("TopicZ", b"x")))
    assert_refused(resp, "TopicZ")
    refusals = [r.getMessage() for r in caplog.records if "ACL refused" in r.getMessage()]
    assert len(refusals) == 4 and "Check signature failed" in refusals[0]
    conn = yield c.connection(broker.addr)
    assert not conn.closed
    resp = yield c.invoke(broker.addr, signed(send_v2("TopicA", b"ok")))
    assert resp.code == ResponseCode.SUCCESS
    assert (yield c.connection(broker.addr)) is conn


@pytest_twisted.inlineCallbacks
def test_refused_oneway_gets_no_answer(acl_broker):
    """A refused oneway request is dropped (no answer), the connection stays."""
    broker, c, _ = acl_broker
    cmd = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT,
                                  {"clientID": "c1", "producerGroup": "pg"})
    yield c.invoke_oneway(broker.addr, cmd)
    resp = yield c.invoke(broker.addr, signed(send_v2("TopicA", b"ok")))
    assert resp.code == ResponseCode.SUCCESS


@pytest_twisted.inlineCallbacks
def test_a_changed_file_is_picked_up_and_a_bad_one_keeps_the_old(acl_broker):
    """The file watch reloads a changed plain_acl.yml; a broken edit keeps the accounts."""
    broker, c, home = acl_broker
    path = write_acl(home, ACL_YML.replace("TopicB=SUB", "TopicB=PUB"))
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert broker.acl.poll()
    resp = yield c.invoke(broker.addr, signed(send_v2("TopicB", b"now allowed")))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    write_acl(home, "accounts: 7\n")
    assert not broker.acl.poll()
    resp = yield c.invoke(broker.addr, signed(send_v2("TopicB", b"still allowed")))
    assert resp.code == ResponseCode.SUCCESS


def test_the_watch_polls_on_the_liveness_clock(tmp_path):
    """``start`` polls every WATCH_INTERVAL_S on the clock it is given."""
    from twisted.internet.task import Clock

    from rocketmq_emu.broker.acl.service import WATCH_INTERVAL_S, AclService

    home = tmp_path / "home"
    path = write_acl(home, ACL_YML)
    service = AclService(str(home))
    clock = Clock()
    service.start(clock)
    write_acl(home, ACL_YML.replace("12345678", "87654321"))
    os.utime(path, ns=(2, 2))
    clock.advance(WATCH_INTERVAL_S)
    assert service.config.accounts[AK].secret_key == "87654321"
    service.stop()


def test_a_bad_file_is_a_start_error_naming_file_and_key(tmp_path):
    """A plain_acl.yml RocketMQ would refuse stops the broker's construction, one line."""
    from rocketmq_emu.broker.cli_errors import describe_startup_failure

    home = tmp_path / "home"
    path = write_acl(home, "accounts:\n  - accessKey: RocketMQ\n    secretKey: [1]\n")
    with pytest.raises(AclConfigError) as info:
        make_broker(tmp_path, home)
    message = describe_startup_failure(info.value, [])
    assert message is not None and str(path) in message and "secretKey" in message
    assert "\n" not in message



@pytest_twisted.inlineCallbacks
def test_rocketmq_acl_plain_file_names_the_accounts_file(tmp_path):
    """broker.conf's rocketmq.acl.plain.file (a JVM property in Java) moves the accounts file:
    its account signs in; the account of conf/plain_acl.yml, not read, is refused."""
    from rocketmq_emu.broker.config import parse_broker_conf

    home = tmp_path / "home"
    write_acl(home, ACL_YML.replace("RocketMQ", "NotRead1"))
    (home / "conf" / "team.yml").write_text(ACL_YML)
    conf = parse_broker_conf("rocketmq.acl.plain.file=conf/team.yml\n").config
    broker = make_broker(tmp_path, home, acl_plain_file=conf.acl_plain_file)
    yield broker.start()
    client = RemotingClient(reactor)
    try:
        resp = yield client.invoke(broker.addr, signed(send_v2("TopicA", b"x")))
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        resp = yield client.invoke(broker.addr, signed(send_v2("TopicA", b"x"), ak="NotRead1"))
        assert_refused(resp, "NotRead1")
    finally:
        yield client.close()
        yield broker.stop()
