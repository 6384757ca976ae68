"""``rmq-emu admin`` ACL subcommands against a loopback cluster with ``aclEnable=true``: the
CLI signs with ``$ROCKETMQ_HOME/conf/tools.yml`` (or flags), creates an account, and a client
with the new account then sends."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import pytest_twisted
from issue7_support import start_cluster, stop_cluster
from twisted.internet import reactor

from rocketmq_emu.client.admin_cli import build_parser, execute
from rocketmq_emu.client.message import Message
from rocketmq_emu.client.producer import Producer

ADMIN_AK, ADMIN_SK = "adminKey1", "adminSecret1"
PLAIN_ACL = textwrap.dedent(f"""\
    accounts:
      - accessKey: {ADMIN_AK}
        secretKey: {ADMIN_SK}
        admin: true
    """)


@pytest.fixture
def acl_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    (home / "conf" / "tools.yml").write_text(f"accessKey: {ADMIN_AK}\nsecretKey: {ADMIN_SK}\n")
    monkeypatch.setenv("ROCKETMQ_HOME", str(home))
    namesrv, broker = start_cluster(tmp_path, acl_enable=True, rocketmq_home=str(home))
    yield namesrv, broker, home
    stop_cluster(namesrv, broker)


async def admin(namesrv, *argv: str) -> tuple[int, str]:
    args = build_parser().parse_args([argv[0], "-n", namesrv.addr, *argv[1:]])
    return await execute(args, reactor)


@pytest_twisted.ensureDeferred
async def test_cli_creates_account_then_client_sends(acl_cluster):
    namesrv, broker, home = acl_cluster
    status, text = await admin(namesrv, "updateTopic", "-b", broker.addr, "-t", "AclAdmT")
    assert status == 0, text
    await broker.register_broker_all()
    status, text = await admin(namesrv, "updateAclConfig", "-b", broker.addr, "-a", "newUser1",
                               "-s", "newSecret1", "-i", "DENY", "-t", "AclAdmT=PUB")
    assert status == 0, text
    assert f"create or update plain access config to {broker.addr} success." in text
    producer = Producer("acl-adm-p", namesrv.addr, reactor=reactor,
                        credentials=("newUser1", "newSecret1"))
    await producer.start()
    try:
        result = await producer.send(Message("AclAdmT", b"by the new account"))
        assert result.status.name == "SEND_OK"
    finally:
        await producer.shutdown()
    status, text = await admin(namesrv, "clusterAclConfigVersion", "-c", "DefaultCluster",
                               "--json")
    assert status == 0, text
    assert json.loads(text)[0]["counter"] == "1"
    status, text = await admin(namesrv, "getAclConfig", "-b", broker.addr, "--json")
    keys = [a["accessKey"] for a in json.loads(text)[broker.addr]["plainAccessConfigs"]]
    assert keys == [ADMIN_AK, "newUser1"]
    status, text = await admin(namesrv, "deleteAclConfig", "-b", broker.addr, "-a", "newUser1")
    assert status == 0, text
    assert "newUser1" not in broker.acl.config.accounts


@pytest_twisted.ensureDeferred
async def test_wrong_flag_credentials_are_refused(acl_cluster):
    namesrv, broker, home = acl_cluster
    status, text = await admin(namesrv, "updateAclConfig", "-b", broker.addr, "-a", "newUser2",
                               "-s", "newSecret2", "--access-key", ADMIN_AK,
                               "--secret-key", "wrong-secret")
    assert status == 1
    assert "Check signature failed" in text
    assert "newUser2" not in broker.acl.config.accounts
