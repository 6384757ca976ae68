"""ACL 1.0 on the gRPC side (broker/grpc/auth.py, auth_guard.py, acl_switch.py): the 5.x SDKs'
authorization header, the permission each RPC needs (PlainAccessResource.parse of a
GeneratedMessageV3), and what a refusal becomes (AuthenticationInterceptor)."""

from __future__ import annotations

import hmac
from binascii import hexlify
from hashlib import sha1
from types import SimpleNamespace

import pytest
from acl_support import config
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.acl.service import AclService
from rocketmq_emu.broker.acl.validator import AclException
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.acl_switch import acl_settings, install_if_enabled
from rocketmq_emu.broker.grpc.auth import (
    access_request,
    authenticate,
    hex_to_base64,
    java_split,
    parse_authorization,
    wrap_namespace,
)
from rocketmq_emu.broker.grpc.auth_guard import GrpcAclGuard, install
from rocketmq_emu.broker.grpc.wire import StatusCode

DATE = "20240102T030405Z"
ACL = config("""\
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [topicB=PUB|SUB, topicC=SUB, topicP=PUB, ns%topicN=PUB]
    groupPerms: [groupB=SUB]
  - accessKey: rocketmq2
    secretKey: 87654321
    whiteRemoteAddress: 192.168.1.*
    admin: true
""")


def cls(name):
    return messages.message_class(name)


def sdk_sign(sk: str, date_time: str) -> str:
    """rocketmq-python-client 5.1.2's Signature.sign: hex HMAC-SHA1 of the date-time."""
    return hexlify(hmac.new(sk.encode("utf-8"), date_time.encode("utf-8"), sha1).digest()).decode()


def header(ak: str = "RocketMQ", sk: str = "12345678", date_time: str = DATE) -> str:
    """Signature.metadata's authorization value."""
    return (f"MQv2-HMAC-SHA1 Credential={ak}, SignedHeaders=x-mq-date-time, "
            f"Signature={sdk_sign(sk, date_time)}")


def send(topic="topicP", namespace=""):
    req = cls("SendMessageRequest")()
    m = req.messages.add()
    m.topic.name = topic
    m.topic.resource_namespace = namespace
    return req


def receive(topic="topicC", group="groupB"):
    req = cls("ReceiveMessageRequest")()
    req.group.name = group
    req.message_queue.topic.name = topic
    return req


def run(rpc, request, auth=None, date_time=DATE, host="127.0.0.1", acl=ACL):
    return authenticate(acl, rpc, request, header() if auth is None else auth, date_time, None, host)


# --- header ----------------------------------------------------------------------------------

def test_signature_golden_value():
    """hex HMAC-SHA1(sk, x-mq-date-time), the SDK's way; the proxy turns it into Base64."""
    assert sdk_sign("12345678", DATE) == hexlify(
        hmac.new(b"12345678", b"20240102T030405Z", sha1).digest()).decode()
    auth = parse_authorization(header())
    assert auth.method == "MQv2-HMAC-SHA1"
    assert auth.access_key == "RocketMQ"
    assert auth.signed_headers == ("x-mq-date-time",)
    assert auth.signature == hex_to_base64(sdk_sign("12345678", DATE))


def test_java_split_drops_trailing_empties():
    assert java_split("a,b,,", ",") == ["a", "b"]
    assert java_split("", ",") == [""]
    assert java_split(",,", ",") == []
    assert java_split("a=b=c", "=", 2) == ["a", "b=c"]
    assert java_split("Signature=", "=", 2) == ["Signature", ""]


@pytest.mark.parametrize("bad", [
    "MQv2-HMAC-SHA1",                       # no space
    "MQv2 Credential",                      # item without '='
    "MQv2 Credential=/",                    # empty credential
    "MQv2 Credential=ak, Signature=abc",    # odd hex
    "MQv2 Credential=ak, Signature=zz",     # not hex
    "MQv2 Credential=ak, Signature=ａａ",   # non-ASCII
    "MQv2 ",                                # [""] -> one part
])
def test_malformed_headers_are_acl_exceptions(bad):
    with pytest.raises(AclException):
        parse_authorization(bad)


def test_credential_keeps_the_part_before_a_slash_and_hex_case_is_free():
    sig = sdk_sign("12345678", DATE).upper()
    auth = parse_authorization(f"X Credential=RocketMQ/2024/cn, Signature={sig}")
    assert auth.access_key == "RocketMQ"
    assert run("QueryRoute", _route("topicC"), auth=f"X Credential=RocketMQ/x, Signature={sig}") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_fuzzed_headers_never_raise_and_never_pass(text):
    """Any header: a refusal (or, for a forged signature, still a refusal), never an exception."""
    refusal = run("SendMessage", send(), auth=text)
    assert refusal is not None


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_fuzzed_requests_never_raise(raw):
    try:
        request = cls("TelemetryCommand").FromString(raw)
    except Exception:
        return
    run("Telemetry", request)  # None or a Refusal


# --- verdicts --------------------------------------------------------------------------------

def _route(topic):
    req = cls("QueryRouteRequest")()
    req.topic.name = topic
    return req


def test_right_credentials_pass_and_wrong_secret_is_permission_denied():
    assert run("SendMessage", send()) is None
    refusal = run("SendMessage", send(), auth=header(sk="wrong-secret"))
    assert refusal is not None and not refusal.internal
    assert "Check signature failed" in refusal.reason


def test_unknown_account_and_missing_credential():
    assert "No acl config for nobody1" in run("SendMessage", send(), auth=header(ak="nobody1")).reason
    no_ak = f"MQv2-HMAC-SHA1 Signature={sdk_sign('12345678', DATE)}"
    assert run("SendMessage", send(), auth=no_ak).reason == "No accessKey is configured"


def test_missing_authorization_or_date_is_internal_as_the_proxys_npe():
    req = send()
    missing_auth = authenticate(ACL, "SendMessage", req, None, DATE, None, "127.0.0.1")
    missing_date = authenticate(ACL, "SendMessage", req, header(), None, None, "127.0.0.1")
    assert missing_auth.internal and missing_date.internal


def test_permissions_per_rpc():
    assert run("SendMessage", send("topicC")) is not None            # SUB only: no PUB
    assert run("SendMessage", send("topicN", namespace="ns")) is None  # namespace wrapped
    assert run("ReceiveMessage", receive()) is None
    assert run("ReceiveMessage", receive(group="groupX")) is not None  # group DENY by default
    assert run("ReceiveMessage", receive(topic="topicP")) is not None  # PUB only: no SUB
    assert run("QueryRoute", _route("topicP")) is None                 # ANY: PUB or SUB
    assert run("QueryRoute", _route("topicZ")) is not None
    ack = cls("AckMessageRequest")()
    ack.group.name, ack.topic.name = "groupB", "topicB"
    assert run("AckMessage", ack) is None
    end = cls("EndTransactionRequest")()
    end.topic.name = "topicC"
    assert run("EndTransaction", end) is not None
    empty = cls("SendMessageRequest")()
    assert "messageCount is zero" in run("SendMessage", empty).reason
    mixed = send("topicP")
    mixed.messages.add().topic.name = "topicB"
    assert "not consistent" in run("SendMessage", mixed).reason


def test_heartbeat_and_terminate_and_telemetry():
    hb = cls("HeartbeatRequest")()
    hb.client_type = 1  # PRODUCER: signature only
    assert run("Heartbeat", hb) is None
    hb.client_type = 4  # SIMPLE_CONSUMER without group
    assert "doesn't have group" in run("Heartbeat", hb).reason
    hb.group.name = "groupB"
    assert run("Heartbeat", hb) is None
    bye = cls("NotifyClientTerminationRequest")()
    assert run("NotifyClientTermination", bye) is None
    bye.group.name = "groupX"
    assert run("NotifyClientTermination", bye) is not None
    cmd = cls("TelemetryCommand")()
    cmd.settings.publishing.topics.add().name = "topicP"
    assert run("Telemetry", cmd) is None
    cmd.settings.publishing.topics.add().name = "topicC"
    assert run("Telemetry", cmd) is not None
    bare = cls("TelemetryCommand")()
    bare.settings.client_type = 1
    assert "publishing or subscription" in run("Telemetry", bare).reason
    other = cls("TelemetryCommand")()
    other.thread_stack_trace.nonce = "n"
    assert run("Telemetry", other) is None


def test_white_listed_account_skips_the_signature():
    auth = "MQv2-HMAC-SHA1 Credential=rocketmq2, SignedHeaders=x-mq-date-time, Signature=00"
    assert run("SendMessage", send("anything"), auth=auth, host="192.168.1.7") is None
    assert run("SendMessage", send("anything"), auth=auth, host="10.0.0.1") is not None


def test_wrap_namespace():
    assert wrap_namespace("", "T") == "T"
    assert wrap_namespace("ns", "T") == "ns%T"
    assert wrap_namespace("ns", "ns%T") == "ns%T"
    assert wrap_namespace("ns", "%RETRY%G") == "%RETRY%ns%G"
    assert wrap_namespace("ns", "rmq_sys_trace") == "rmq_sys_trace"


def test_access_request_records_the_date_as_content():
    req = access_request("SendMessage", send(), header(), DATE, "tok", "h")
    assert req.content == DATE.encode() and req.security_token == "tok"


# --- wiring ----------------------------------------------------------------------------------

class _Call:
    def __init__(self, rpc, auth):
        meta = {"authorization": auth, "x-mq-date-time": DATE}
        self.metadata = SimpleNamespace(authorization=auth, mq_headers=meta)
        self.method = SimpleNamespace(name=rpc)
        self.peer = ("127.0.0.1", 5555)
        self.finished = None

    def finish(self, code, message=""):
        self.finished = (code, message)


def test_guard_interceptor_codes():
    guard = GrpcAclGuard(lambda: ACL)
    assert guard.interceptor(_Call("SendMessage", header()), send()) is None
    denied = guard.interceptor(_Call("SendMessage", header(sk="nope-nope")), send())
    assert denied.code == StatusCode.PERMISSION_DENIED and denied.message == ""
    internal = guard.interceptor(_Call("SendMessage", None), send())
    assert internal.code == StatusCode.INTERNAL
    assert guard.interceptor(_Call("Telemetry", None), None) is None  # checked per message


def test_guarded_telemetry_checks_every_message():
    seen, cancelled = [], []
    inner = SimpleNamespace(on_message=seen.append, on_half_close=lambda: None,
                            on_cancel=lambda: cancelled.append(1))
    guard = GrpcAclGuard(lambda: ACL)
    good = _Call("Telemetry", header())
    observer = guard.wrap_streaming(lambda call: inner)(good)
    cmd = cls("TelemetryCommand")()
    cmd.settings.publishing.topics.add().name = "topicP"
    observer.on_message(cmd)
    assert seen == [cmd] and good.finished is None
    bad = cls("TelemetryCommand")()
    bad.settings.publishing.topics.add().name = "topicC"
    observer.on_message(bad)
    assert seen == [cmd] and good.finished == (StatusCode.PERMISSION_DENIED, "") and cancelled


def test_install_only_when_a_broker_enables_acl(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(
        "accounts:\n  - accessKey: RocketMQ\n    secretKey: '12345678'\n")
    off = {"a": SimpleNamespace(config=SimpleNamespace(acl_enable=False))}
    service = AclService(str(tmp_path))
    on = {"a": SimpleNamespace(config=SimpleNamespace(acl_enable=True, rocketmq_home=str(tmp_path)),
                               acl=service)}
    assert acl_settings(off) == (False, None, "conf/plain_acl.yml")
    assert acl_settings(on) == (True, str(tmp_path), "conf/plain_acl.yml")
    added, registered = [], {}
    factory = SimpleNamespace(add_interceptor=added.append, handlers={"Telemetry": lambda c: None},
                              register=registered.__setitem__)
    assert install_if_enabled(factory, off) is None and not added
    guard = install_if_enabled(factory, on)
    assert added == [guard.interceptor] and "Telemetry" in registered
    assert "RocketMQ" in guard.accounts().accounts
    # One watcher: the guard reads the broker's AclService, so its reload is the guard's too.
    (tmp_path / "conf" / "plain_acl.yml").write_text(
        "accounts:\n  - accessKey: Another1\n    secretKey: '12345678'\n")
    assert service.reload()
    assert list(guard.accounts().accounts) == ["Another1"]


def test_install_wraps_telemetry():
    added, registered = [], {}
    factory = SimpleNamespace(add_interceptor=added.append, handlers={"Telemetry": lambda c: None},
                              register=registered.__setitem__)
    guard = install(factory, lambda: ACL)
    assert added == [guard.interceptor] and registered["Telemetry"].__name__ == "<lambda>"
