"""docs/acl.md's sample plain_acl.yml, exactly as the page shows it, is what the broker loads,
and it allows and refuses each request as the page's table says (broker/acl/, RocketMQ 4.9.8's
PlainAccessValidator)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rocketmq_emu.broker.acl.service import AclService
from rocketmq_emu.broker.acl.signer import sign_request
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

PAGE = Path(__file__).resolve().parents[2] / "docs" / "acl.md"
SAMPLE_HEADING = "## A sample plain_acl.yml"
#: The keys of an account in RocketMQ 4.9's plain_acl.yml (PlainAccessConfig).
ACCOUNT_KEYS = {"accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm",
                "defaultGroupPerm", "topicPerms", "groupPerms"}


def page_section() -> str:
    """The page from the sample's heading to the next heading."""
    text = PAGE.read_text()
    start = text.index(SAMPLE_HEADING)
    end = text.find("\n## ", start + len(SAMPLE_HEADING))
    return text[start:end if end != -1 else len(text)]


def sample_yaml() -> str:
    """The ```yaml block of the sample section, byte for byte."""
    [block] = re.findall(r"```yaml\n(.*?)```", page_section(), re.S)
    return block


@dataclass(frozen=True)
class Row:
    """One row of the page's table: who sends what, and what the page says happens."""

    host: str
    access_key: str | None
    signing: str  # "signed", "wrong secretKey" or "not signed"
    request: str
    refusal: str | None  # the AclException message, None when allowed

    def __str__(self) -> str:
        return f"{self.host} {self.access_key} ({self.signing}): {self.request}"


def table_rows() -> list[Row]:
    """The outcome table under the sample, parsed."""
    rows = []
    for line in page_section().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        host, who, request, outcome = cells
        keys = re.findall(r"`([^`]+)`", who)
        signing = "wrong secretKey" if "wrong secretKey" in who else \
            "not signed" if "not signed" in who else "signed"
        refusal = re.fullmatch(r"refused: `(.+)`", outcome)
        assert refusal or outcome.startswith("allowed"), outcome
        rows.append(Row(host.strip("`"), keys[0] if keys else None, signing, request,
                        refusal.group(1) if refusal else None))
    return rows


def request_of(text: str) -> tuple[int, dict[str, str]]:
    """The remoting request a table cell names: its code and extFields, as the Python client
    (and the Java one) sends them."""
    if m := re.fullmatch(r"send to `(\S+)`", text):
        return RequestCode.SEND_MESSAGE_V2, {"a": "docs-producer", "b": m.group(1), "c": "TBW102",
                                             "d": "4", "e": "0", "f": "0", "g": "0", "h": "0",
                                             "i": "", "j": "0", "k": "false", "m": "false"}
    if m := re.fullmatch(r"pull `(\S+)` as group `(\S+)`", text):
        return RequestCode.PULL_MESSAGE, {"consumerGroup": m.group(2), "topic": m.group(1),
                                          "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
                                          "sysFlag": "2", "commitOffset": "0",
                                          "suspendTimeoutMillis": "15000", "subscription": "*",
                                          "subVersion": "0"}
    if m := re.fullmatch(r"create topic `(\S+)`", text):
        return RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": m.group(1), "defaultTopic": "TBW102",
                                                     "readQueueNums": "4", "writeQueueNums": "4",
                                                     "perm": "6", "topicFilterType": "SINGLE_TAG"}
    raise AssertionError(f"the test does not know the request {text!r}")


class Conn:
    """What the broker's ACL interceptor reads of a connection: its peer."""

    def __init__(self, host: str) -> None:
        self.peer = (host, 50000)


@pytest.fixture
def broker_acl(tmp_path: Path) -> AclService:
    """The broker's ACL service over a home whose conf/plain_acl.yml is the page's sample."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(sample_yaml())
    return AclService(str(tmp_path))


def test_the_sample_has_every_key_of_the_format(broker_acl: AclService) -> None:
    """The sample loads, and it shows the white list and, in one account, all eight keys."""
    assert sorted(broker_acl.config.accounts) == ["ops-admin", "orders-app"]
    assert len(broker_acl.config.global_white) == 1
    raw = yaml.safe_load(sample_yaml())
    assert set(raw) == {"globalWhiteRemoteAddresses", "accounts"}
    assert any(set(account) == ACCOUNT_KEYS for account in raw["accounts"])


def test_the_table_covers_allowed_and_refused_requests() -> None:
    """The table is there and says both things (a parsing slip would leave it empty)."""
    rows = table_rows()
    assert len(rows) >= 10
    assert {r.refusal is None for r in rows} == {True, False}


@pytest.mark.parametrize("row", table_rows(), ids=str)
def test_each_row_is_what_the_broker_does(broker_acl: AclService, row: Row) -> None:
    """The broker's interceptor lets the request through, or answers SYSTEM_ERROR with the
    AclException the page quotes."""
    code, ext = request_of(row.request)
    if row.access_key is not None and row.signing == "not signed":
        ext["AccessKey"] = row.access_key
    elif row.access_key is not None:
        account = broker_acl.config.accounts.get(row.access_key)
        secret = account.secret_key if account is not None else "any-secret-key"
        if row.signing == "wrong secretKey":
            secret += "-wrong"
        sign_request(ext, b"", row.access_key, secret)
    answer = broker_acl.intercept(RemotingCommand.request(code, ext), Conn(row.host))
    if row.refusal is None:
        assert answer is None
    else:
        assert answer is not None and answer.code == ResponseCode.SYSTEM_ERROR
        assert f"AclException: {row.refusal}, " in answer.remark
