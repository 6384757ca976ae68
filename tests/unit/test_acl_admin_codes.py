"""ACL admin request codes 50-54 (AdminBrokerProcessor / PlainPermissionManager, 4.9.8)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.acl.editor import AclEditError, PlainAccessConfig, update_access_config
from rocketmq_emu.broker.acl.permission import PUB, SUB
from rocketmq_emu.broker.acl.service import AclService
from rocketmq_emu.broker.acl.validator import validate
from rocketmq_emu.broker.processors.acl_admin import AclAdminProcessor
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

INITIAL = """\
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: adminKey1
    secretKey: adminSecret1
    admin: true
"""


def _ctx() -> Any:
    return SimpleNamespace(now_ms=lambda: 1_700_000_000_000, boot_timestamp=1,
                           broker_addr="127.0.0.1:10911", broker_name="broker-a",
                           cluster_name="DefaultCluster")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "plain_acl.yml").write_text(INITIAL)
    return tmp_path


def _proc(acl: Any) -> AclAdminProcessor:
    return AclAdminProcessor(_ctx(), lambda: acl)


def _req(code: int, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, ext)


def test_create_then_update_then_delete(home: Path) -> None:
    acl = AclService(str(home))
    proc = _proc(acl)
    resp = proc.update_and_create(_req(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="newUser1",
                                       secretKey="newSecret1", defaultTopicPerm="DENY",
                                       topicPerms="topicA=PUB,topicB=SUB", admin="false"), None)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    account = acl.config.accounts["newUser1"]  # reloaded at once
    assert account.resource_perms == {"topicA": PUB, "topicB": SUB}
    doc = yaml.safe_load((home / "conf" / "plain_acl.yml").read_text())
    assert doc["dataVersion"] == [{"counter": 1, "timestamp": 1_700_000_000_000}]
    assert doc["accounts"][1]["topicPerms"] == ["topicA=PUB", "topicB=SUB"]
    assert validate(acl.config, RequestCode.PULL_MESSAGE, {"AccessKey": "newUser1"}, b"", None) \
        is not None  # unsigned: refused
    resp = proc.update_and_create(_req(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="newUser1",
                                       secretKey="otherSecret", admin="true"), None)
    assert resp.code == ResponseCode.SUCCESS
    assert acl.config.accounts["newUser1"].admin
    assert acl.config.accounts["newUser1"].secret_key == "otherSecret"
    doc = yaml.safe_load((home / "conf" / "plain_acl.yml").read_text())
    assert doc["dataVersion"][0]["counter"] == 2
    assert doc["accounts"][-1]["topicPerms"] == ["topicA=PUB", "topicB=SUB"]  # kept
    resp = proc.delete(_req(RequestCode.DELETE_ACL_CONFIG, accessKey="newUser1"), None)
    assert resp.code == ResponseCode.SUCCESS
    assert "newUser1" not in acl.config.accounts
    resp = proc.delete(_req(RequestCode.DELETE_ACL_CONFIG, accessKey="newUser1"), None)
    assert (resp.code, resp.remark) == (210, "The accesskey[newUser1] corresponding to "
                                             "accessConfig has been deleted failed.")


def test_short_keys_and_bad_perms_are_refused(home: Path) -> None:
    acl = AclService(str(home))
    proc = _proc(acl)
    resp = proc.update_and_create(_req(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="short",
                                       secretKey="newSecret1"), None)
    assert resp.code == 209 and "length should longer than 6" in resp.remark
    resp = proc.update_and_create(_req(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="newUser1",
                                       secretKey="newSecret1", topicPerms="topicA"), None)
    assert resp.code == 209 and "Parse Resource format error for topicA" in resp.remark
    resp = proc.update_and_create(_req(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="newUser1",
                                       secretKey="newSecret1", whiteRemoteAddress="not-an-ip"), None)
    assert resp.code == 209
    assert yaml.safe_load((home / "conf" / "plain_acl.yml").read_text()) == yaml.safe_load(INITIAL)
    resp = proc.update_and_create(_req(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG), None)
    assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR,
                                        "the custom field <accessKey> is null")


def test_global_white_addrs(home: Path) -> None:
    acl = AclService(str(home))
    proc = _proc(acl)
    path = str(home / "conf" / "plain_acl.yml")
    resp = proc.update_global_white(_req(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                                         globalWhiteAddrs="10.10.0.*,192.168.1.2",
                                         aclFileFullPath=path), None)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert validate(acl.config, RequestCode.SEND_MESSAGE, {}, b"", "10.10.0.7:5000") is None
    resp = proc.update_global_white(_req(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                                         globalWhiteAddrs="1.2.3.4", aclFileFullPath="/etc/hosts"),
                                    None)
    assert (resp.code, resp.remark) == (211, "The globalWhiteAddresses[1.2.3.4] has been updated "
                                             "failed.")
    resp = proc.update_global_white(_req(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                                         globalWhiteAddrs="1.2.3.4"), None)
    assert resp.code == ResponseCode.SYSTEM_ERROR


def test_versions_and_config(home: Path) -> None:
    acl = AclService(str(home))
    proc = _proc(acl)
    update_access_config(PlainAccessConfig("newUser1", "newSecret1"), None,
                         str(acl.default_file), 5)
    acl.reload()
    resp = proc.config_version(_req(RequestCode.GET_BROKER_CLUSTER_ACL_INFO), None)
    assert resp.code == ResponseCode.SUCCESS
    assert jsonutil.loads(resp.ext_fields["version"]) == {"counter": 1, "timestamp": 5}
    assert jsonutil.loads(resp.ext_fields["allAclFileVersion"]) == {
        acl.default_file: {"counter": 1, "timestamp": 5}}
    assert resp.ext_fields["clusterName"] == "DefaultCluster"
    resp = proc.cluster_acl_config(_req(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG), None)
    body = jsonutil.loads(resp.body)
    assert [c["accessKey"] for c in body["plainAccessConfigs"]] == ["adminKey1", "newUser1"]
    assert body["globalWhiteAddrs"] == []


def test_acl_off_answers_as_java() -> None:
    proc = _proc(None)
    resp = proc.update_and_create(_req(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, accessKey="newUser1",
                                       secretKey="newSecret1"), None)
    assert (resp.code, resp.remark) == (209, None)
    assert proc.delete(_req(RequestCode.DELETE_ACL_CONFIG, accessKey="newUser1"), None).code == 210
    resp = proc.update_global_white(_req(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                                         globalWhiteAddrs="a", aclFileFullPath="b"), None)
    assert resp.code == 211
    assert proc.config_version(_req(RequestCode.GET_BROKER_CLUSTER_ACL_INFO), None) is None
    assert proc.cluster_acl_config(_req(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG), None) is None


def test_editor_refuses_unloadable_account(tmp_path: Path) -> None:
    with pytest.raises(AclEditError):
        update_access_config(PlainAccessConfig("newUser1", "newSecret1", "bad address"), None,
                             str(tmp_path / "plain_acl.yml"))
    assert not (tmp_path / "plain_acl.yml").exists()


def test_acl_admin_codes_are_not_admin_only_in_498(home: Path) -> None:
    """Permission.ADMIN_CODE of 4.9.8 lists none of 50-54: a signed non-admin account passes."""
    from rocketmq_emu.broker.acl.permission import needs_admin

    for code in range(50, 55):
        assert not needs_admin(code)
