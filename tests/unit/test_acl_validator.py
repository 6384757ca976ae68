"""ACL 1.0 request checks (broker/acl/validator.py, Java PlainAccessValidator /
PlainPermissionManager.validate)."""

from __future__ import annotations

import json

from acl_support import config
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.acl.signer import sign_request
from rocketmq_emu.broker.acl.validator import validate, validate_exc
from rocketmq_emu.broker.remoting.codes import RequestCode

ACL = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB, topicP=PUB]
    groupPerms: [groupA=DENY, groupB=PUB|SUB]
  - accessKey: whitelisted
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
  - accessKey: adminUser
    secretKey: adminsecret
    admin: true
"""
CFG = config(ACL)
PEER = "127.0.0.1:50000"


def signed(ext: dict[str, str], body: bytes = b"", ak: str = "RocketMQ",
           sk: str = "12345678") -> dict[str, str]:
    return sign_request(dict(ext), body, ak, sk)


def check(code: int, ext: dict[str, str] | None, body: bytes = b"", peer: str = PEER) -> str | None:
    return validate(CFG, code, ext, body, peer)


def test_signed_send_with_pub_is_allowed() -> None:
    """A correctly signed SEND_MESSAGE to a PUB topic passes."""
    assert check(RequestCode.SEND_MESSAGE, signed({"topic": "topicB", "group": "g"})) is None


def test_wrong_secret_is_refused() -> None:
    """A signature made with another secret fails the signature check."""
    ext = signed({"topic": "topicB"}, sk="wrongsecret")
    assert check(RequestCode.SEND_MESSAGE, ext) == "Check signature failed for accessKey=RocketMQ"


def test_body_is_signed() -> None:
    """Changing the body after signing breaks the signature."""
    ext = signed({"topic": "topicB"}, b"one")
    assert check(RequestCode.SEND_MESSAGE, ext, b"two").startswith("Check signature failed")


def test_no_access_key() -> None:
    """A request without AccessKey is refused."""
    assert check(RequestCode.SEND_MESSAGE, {"topic": "topicB"}) == "No accessKey is configured"


def test_no_ext_fields() -> None:
    """A request without extFields has no access key."""
    assert check(RequestCode.GET_ALL_TOPIC_CONFIG, None) == "No accessKey is configured"


def test_unknown_account() -> None:
    """An access key not in plain_acl.yml is refused."""
    ext = signed({"topic": "topicB"}, ak="stranger")
    assert check(RequestCode.SEND_MESSAGE, ext) == "No acl config for stranger"


def test_global_white_list_skips_everything() -> None:
    """A peer in globalWhiteRemoteAddresses passes without credentials."""
    assert check(RequestCode.SEND_MESSAGE, {"topic": "topicA"}, peer="10.10.103.7:1") is None


def test_account_white_list_skips_signature_and_perms() -> None:
    """A peer in the account's whiteRemoteAddress passes with any signature."""
    ext = {"topic": "topicA", "AccessKey": "whitelisted", "Signature": "junk"}
    assert check(RequestCode.SEND_MESSAGE, ext, peer="192.168.1.20:9") is None


def test_send_to_denied_topic() -> None:
    """Sending to a DENY topic is refused with Java's message."""
    ext = signed({"topic": "topicA", "group": "g"})
    assert check(RequestCode.SEND_MESSAGE, ext) == "No default permission for topic:topicA"


def test_send_to_sub_only_topic() -> None:
    """Sending needs PUB: a SUB-only topic is refused."""
    assert check(RequestCode.SEND_MESSAGE, signed({"topic": "topicC"})) is not None


def test_default_topic_perm_applies() -> None:
    """A topic not listed falls back to defaultTopicPerm (DENY here)."""
    assert check(RequestCode.SEND_MESSAGE, signed({"topic": "other"})) == (
        "No default permission for topic:other")


def test_send_v2_uses_short_names() -> None:
    """SEND_MESSAGE_V2 reads the topic from b."""
    assert check(RequestCode.SEND_MESSAGE_V2, signed({"a": "g", "b": "topicB"})) is None
    assert check(RequestCode.SEND_MESSAGE_V2, signed({"a": "g", "b": "topicA"})) is not None


def test_retry_topic_send_checks_group() -> None:
    """A send to %RETRY%x needs SUB on the sending group, not PUB on the topic."""
    ext = signed({"topic": "%RETRY%groupA", "group": "groupA"})
    assert check(RequestCode.SEND_MESSAGE, ext) == "No default permission for group:groupA"
    ext = signed({"topic": "%RETRY%groupB", "group": "groupB"})
    assert check(RequestCode.SEND_MESSAGE, ext) is None


def test_pull_needs_sub_on_topic_and_group() -> None:
    """PULL_MESSAGE needs SUB on the topic and on the consumer group."""
    assert check(RequestCode.PULL_MESSAGE, signed({"topic": "topicC", "consumerGroup": "g"})) is None
    denied = signed({"topic": "topicP", "consumerGroup": "g"})
    assert check(RequestCode.PULL_MESSAGE, denied) == "No default permission for topic:topicP"


def test_heartbeat_checks_groups_and_subscriptions() -> None:
    """HEART_BEAT needs SUB on every consumer group and subscribed topic in its body."""
    body = json.dumps({"consumerDataSet": [{"groupName": "groupA", "subscriptionDataSet": [
        {"topic": "topicC"}]}]}).encode()
    assert check(RequestCode.HEART_BEAT, signed({}, body), body) == (
        "No default permission for group:groupA")


def test_admin_code_needs_admin() -> None:
    """UPDATE_AND_CREATE_TOPIC is refused for a non-admin account."""
    assert check(RequestCode.UPDATE_AND_CREATE_TOPIC, signed({"topic": "t"})) == (
        "Need admin permission for request code=17, but accessKey=RocketMQ is not")


def test_admin_passes_admin_code() -> None:
    """An admin account without perms passes admin codes and any topic."""
    ext = signed({"topic": "t"}, ak="adminUser", sk="adminsecret")
    assert check(RequestCode.UPDATE_AND_CREATE_TOPIC, ext) is None


def test_trace_topic_send_skips_perms() -> None:
    """A send to RMQ_SYS_TRACE_TOPIC skips the permission check."""
    assert check(RequestCode.SEND_MESSAGE, signed({"topic": "RMQ_SYS_TRACE_TOPIC"})) is None


def test_missing_required_header_is_acl_error() -> None:
    """UPDATE_CONSUMER_OFFSET without its fields is refused with the header error text."""
    exc = validate_exc(CFG, RequestCode.UPDATE_CONSUMER_OFFSET, signed({}), b"", PEER)
    assert exc is not None and exc.message == "the custom field <consumerGroup> is null"


def test_remark_is_java_exception_simple_desc() -> None:
    """The remark names the Java exception and the frame that threw it."""
    exc = validate_exc(CFG, RequestCode.SEND_MESSAGE, {"topic": "t"}, b"", PEER)
    assert exc is not None and exc.remark() == (
        "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, "
        "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate"
        "(PlainPermissionManager.java:664)")


def test_unique_key_query_not_signed() -> None:
    """_UNIQUE_KEY_QUERY added after signing does not break the signature."""
    ext = signed({"topic": "topicC"})
    ext["_UNIQUE_KEY_QUERY"] = "true"
    assert check(RequestCode.QUERY_MESSAGE, ext) is None


TEXT = st.text(max_size=40)


@settings(max_examples=200, deadline=None)
@given(ak=st.one_of(st.none(), st.just(""), TEXT), sig=st.one_of(
    st.none(), st.just(""), TEXT, st.text(min_size=5000, max_size=20000)),
    code=st.sampled_from([10, 11, 15, 17, 34, 35, 36, 38, 310, 320, 105]),
    extra=st.dictionaries(TEXT, TEXT, max_size=4), body=st.binary(max_size=64))
def test_fuzz_unsigned_requests_are_refused(ak, sig, code, extra, body) -> None:
    """Arbitrary credentials, signatures and values: a refusal message, never an exception."""
    ext = dict(extra)
    if ak is not None:
        ext["AccessKey"] = ak
    if sig is not None:
        ext["Signature"] = sig
    result = validate(CFG, code, ext, body, PEER)
    assert isinstance(result, str) and result


@settings(max_examples=100, deadline=None)
@given(value=st.text(min_size=1, max_size=30))
def test_fuzz_non_ascii_values_sign_round_trip(value: str) -> None:
    """Any (non-ASCII, even unpaired-surrogate) value signs and verifies consistently."""
    ext = signed({"topic": "topicC", "consumerGroup": "groupB", "x": value})
    assert check(RequestCode.PULL_MESSAGE, ext) is None
