"""plain_acl.yml loading (broker/acl/config.py, Java PlainPermissionManager.load)."""

from __future__ import annotations

import pytest
from acl_support import SAMPLE, config

from rocketmq_emu.broker.acl.config import AclConfigError, acl_file_paths, load_acl
from rocketmq_emu.broker.acl.permission import DENY, PUB, SUB

PATH = "/conf/plain_acl.yml"


def error(text: str) -> AclConfigError:
    with pytest.raises(AclConfigError) as info:
        config(text, PATH)
    return info.value


def test_sample_accounts_load() -> None:
    """RocketMQ's sample file gives both accounts, the admin flag and the numeric secret."""
    cfg = config(SAMPLE)
    assert set(cfg.accounts) == {"RocketMQ", "rocketmq2"}
    assert cfg.accounts["RocketMQ"].secret_key == "12345678"
    assert cfg.accounts["rocketmq2"].admin is True


def test_groups_are_kept_as_retry_topics() -> None:
    """groupPerms entries are stored under %RETRY%group, topicPerms under the topic."""
    perms = config(SAMPLE).accounts["RocketMQ"].resource_perms
    assert perms == {"%RETRY%groupA": DENY, "%RETRY%groupB": PUB | SUB, "%RETRY%groupC": SUB,
                     "topicA": DENY, "topicB": PUB | SUB, "topicC": SUB}


def test_absent_default_perms_are_deny() -> None:
    """An account without defaultTopicPerm/defaultGroupPerm gets DENY for both."""
    account = config(SAMPLE).accounts["rocketmq2"]
    assert (account.default_topic_perm, account.default_group_perm) == (DENY, DENY)
    assert account.resource_perms is None


def test_unknown_perm_text_is_deny() -> None:
    """An unknown permission word is DENY, as Permission.parsePermFromString decides."""
    cfg = config("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, defaultTopicPerm: ALL}\n")
    assert cfg.accounts["abcdefg"].default_topic_perm == DENY


def test_unknown_account_key_names_file_and_key() -> None:
    """An unknown account key is an error naming the file and the key."""
    exc = error("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, admn: true}\n")
    assert str(exc).startswith(PATH) and "accounts[0].admn" in str(exc)


def test_unknown_top_level_key() -> None:
    """An unknown top-level key is an error naming it."""
    assert "globalWhiteRemoteAddress" in str(error("globalWhiteRemoteAddress: ['*']\n"))


def test_wrong_type_is_named() -> None:
    """A list where a string belongs is an error naming the key and the type."""
    exc = error("accounts:\n- {accessKey: [a, b], secretKey: 1234567}\n")
    assert "accounts[0].accessKey" in str(exc) and "list" in str(exc)


def test_accounts_must_be_a_list() -> None:
    """accounts as a mapping is an error."""
    assert "accounts" in str(error("accounts: {accessKey: abcdefg}\n"))


def test_python_tag_is_refused() -> None:
    """A YAML tag that builds a Python object is refused by safe_load, as an AclConfigError."""
    exc = error("accounts: !!python/object/apply:os.system ['true']\n")
    assert exc.key == "(yaml)"


def test_binary_tag_is_a_type_error() -> None:
    """A standard tag giving bytes where a string belongs is a type error."""
    assert "bytes" in str(error("accounts:\n- {accessKey: !!binary aGVsbG8gd29y, secretKey: x}\n"))


def test_top_level_list_is_refused() -> None:
    """A document that is not a mapping is an error."""
    assert "(top level)" in str(error("- a\n- b\n"))


def test_empty_document_holds_no_data() -> None:
    """An empty file gives no accounts (Java: 'No data in file')."""
    assert config("").accounts == {}


def test_short_access_key_is_refused() -> None:
    """Keys of 6 characters or fewer are refused (checkPlainAccessConfig)."""
    assert "accounts[0].accessKey" in str(error("accounts:\n- {accessKey: abc, secretKey: 1234567}\n"))


def test_secret_not_in_error_message() -> None:
    """A short secret is reported without repeating it."""
    assert "123" not in str(error("accounts:\n- {accessKey: abcdefg, secretKey: '123'}\n"))


def test_malformed_resource_perm() -> None:
    """A topicPerms entry without '=' is refused like Permission.parseResourcePerms."""
    exc = error("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, topicPerms: [topicA]}\n")
    assert "topicPerms[0]" in str(exc) and "topic:topicA" in str(exc)


def test_bad_white_address_names_key() -> None:
    """An address pattern RocketMQ refuses is an error naming whiteRemoteAddress."""
    exc = error("accounts:\n- {accessKey: abcdefg, secretKey: 1234567, whiteRemoteAddress: 1.2.3}\n")
    assert "accounts[0].whiteRemoteAddress" in str(exc)


def test_first_definition_of_access_key_wins(tmp_path) -> None:
    """An access key defined in two files keeps the first (conf/acl files come first)."""
    (tmp_path / "conf" / "acl").mkdir(parents=True)
    (tmp_path / "conf" / "acl" / "a.yml").write_text(
        "accounts:\n- {accessKey: abcdefg, secretKey: first00}\n")
    (tmp_path / "conf" / "plain_acl.yml").write_text(
        "accounts:\n- {accessKey: abcdefg, secretKey: second0}\n")
    assert load_acl(str(tmp_path)).accounts["abcdefg"].secret_key == "first00"


def test_file_order_and_tools_skipped(tmp_path) -> None:
    """conf/acl/**/*.yml|yaml sorted, then conf/plain_acl.yml; other files are ignored."""
    acl = tmp_path / "conf" / "acl"
    (acl / "sub").mkdir(parents=True)
    for name in ("b.yaml", "a.yml", "notes.txt", "sub/c.yml"):
        (acl / name).write_text("")
    (tmp_path / "conf" / "plain_acl.yml").write_text("")
    names = [p[len(str(tmp_path)) + 1:] for p in acl_file_paths(str(tmp_path))]
    assert names == ["conf/acl/a.yml", "conf/acl/b.yaml", "conf/acl/sub/c.yml",
                     "conf/plain_acl.yml"]


def test_no_home_no_accounts() -> None:
    """Without ROCKETMQ_HOME nothing is loaded (PlainPermissionManager.load returns)."""
    assert load_acl(None).accounts == {}
