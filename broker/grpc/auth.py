"""ACL 1.0 on the gRPC side, as pure functions: the ``authorization`` header of the 5.x SDKs and
the permission each MessagingService request needs (RocketMQ 5.0-5.2, before ACL 2.0).

The 5.x SDKs sign every call::

    authorization: MQv2-HMAC-SHA1 Credential=<ak>, SignedHeaders=x-mq-date-time, Signature=<hex>

where ``<hex>`` is the hex HMAC-SHA1 of the ``x-mq-date-time`` value under the secret key. The
proxy's ``AuthenticationInterceptor`` builds an ``AuthenticationHeader`` from the call's metadata
and hands each request message to ``PlainAccessValidator.parse(GeneratedMessageV3,
AuthenticationHeader)`` (``PlainAccessResource.parse``, which reads the header with
``AuthorizationHeader``: the hex signature becomes Base64, so the usual
``PlainPermissionManager.validate`` compares it with ``AclSigner``'s Base64 HMAC-SHA1), then
``validate``: global white list, account, its white list, signature, permissions. That last part
is :func:`rocketmq_emu.broker.acl.validator.check`, shared with the remoting side.

What a refusal becomes (``AuthenticationInterceptor`` / ``GlobalExceptionInterceptor``): an
``AclException`` ends the call with gRPC status PERMISSION_DENIED and no message; anything else
thrown there (a call without ``authorization`` or ``x-mq-date-time``: Java's
``NullPointerException``) ends it INTERNAL. The response ``Status`` codes (UNAUTHORIZED,
FORBIDDEN) belong to ACL 2.0 and are not used.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocketmq_emu.broker.acl.config import AclConfig
from rocketmq_emu.broker.acl.permission import ANY, PUB, SUB, java_trim, retry_topic
from rocketmq_emu.broker.acl.validator import AccessRequest, AclException, check
from rocketmq_emu.broker.remoting.codes import RequestCode

#: The metadata the check reads (``GrpcConstants``).
AUTHORIZATION = "authorization"
DATE_TIME = "x-mq-date-time"
SESSION_TOKEN = "x-mq-session-token"

#: ``AuthorizationHeader`` item names.
_CREDENTIAL = "Credential"
_SIGNED_HEADERS = "SignedHeaders"
_SIGNATURE = "Signature"

_PARSE_SITE = ("org.apache.rocketmq.acl.plain.PlainAccessResource.parse"
               "(PlainAccessResource.java:207)")
_HEX = frozenset("0123456789abcdefABCDEF")

#: ``RequestMapping``: the remoting request code of each RPC (HEART_BEAT otherwise). Only
#: ``Permission.needAdminPerm`` reads it, and none of these is an admin code.
REQUEST_CODES: dict[str, int] = {
    "QueryRoute": RequestCode.GET_ROUTEINFO_BY_TOPIC,
    "Heartbeat": RequestCode.HEART_BEAT,
    "SendMessage": RequestCode.SEND_MESSAGE_V2,
    "RecallMessage": RequestCode.RECALL_MESSAGE,
    "QueryAssignment": RequestCode.GET_ROUTEINFO_BY_TOPIC,
    "ReceiveMessage": RequestCode.PULL_MESSAGE,
    "AckMessage": RequestCode.UPDATE_CONSUMER_OFFSET,
    "EndTransaction": RequestCode.END_TRANSACTION,
    "NotifyClientTermination": RequestCode.UNREGISTER_CLIENT,
    "ChangeInvisibleDuration": RequestCode.CONSUMER_SEND_MSG_BACK,
}


class MissingHeader(Exception):
    """Metadata the proxy dereferences without a check is absent (Java's NPE: INTERNAL)."""


@dataclass(frozen=True, slots=True)
class Authorization:
    """``AuthorizationHeader``: ``signature`` is already Base64 (``hexToBase64``)."""

    method: str
    access_key: str | None
    signed_headers: tuple[str, ...] | None
    signature: str | None


def java_split(text: str, sep: str, limit: int = 0) -> list[str]:
    """``String.split`` with a one-character literal separator: limit 0 drops trailing empty
    strings (an empty input stays ``[""]``); a positive limit caps the parts."""
    parts = text.split(sep, limit - 1) if limit > 0 else text.split(sep)
    if limit == 0 and text:
        while parts and parts[-1] == "":
            parts.pop()
    return parts


def hex_to_base64(text: str) -> str:
    """``AuthorizationHeader.hexToBase64`` (commons-codec ``Hex.decodeHex``: even length, hex
    digits of either case); ValueError otherwise."""
    if len(text) % 2 or not _HEX.issuperset(text):
        raise ValueError("Illegal hexadecimal signature")
    return base64.b64encode(binascii.unhexlify(text)).decode("ascii")


def parse_authorization(header: str) -> Authorization:
    """``new AuthorizationHeader(header)``; :class:`AclException` (Java's ``DecoderException``
    wrapped by ``PlainAccessResource.parse``) when malformed. The method is not checked."""
    result = java_split(header, " ", 2)
    if len(result) != 2:
        raise AclException("authorization header is incorrect", _PARSE_SITE)
    access_key: str | None = None
    signed: tuple[str, ...] | None = None
    signature: str | None = None
    for key_value in java_split(result[1], ","):
        kv = java_split(java_trim(key_value), "=", 2)
        if len(kv) != 2:
            raise AclException(
                f"authorization keyValues length is incorrect, actual length={len(kv)}", _PARSE_SITE)
        item, value = kv
        if item == _CREDENTIAL:
            credential = java_split(value, "/")
            if not credential:
                raise AclException(
                    "authorization credential length is incorrect, actual length=0", _PARSE_SITE)
            access_key = credential[0]
        elif item == _SIGNED_HEADERS:
            signed = tuple(java_split(value, ";"))
        elif item == _SIGNATURE:
            try:
                signature = hex_to_base64(value)
            except ValueError as exc:
                raise AclException(str(exc), _PARSE_SITE) from None
    return Authorization(result[0], access_key, signed, signature)


# --- what each request needs (PlainAccessResource.parse(GeneratedMessageV3, ...)) -----------

_SYSTEM_PREFIXES = ("rmq_sys_", "RMQ_SYS_", "CID_RMQ_SYS_", "rocketmq_sys_")
_RETRY = "%RETRY%"
_DLQ = "%DLQ%"


def wrap_namespace(namespace: str, name: str) -> str:
    """``NamespaceUtil.wrapNamespace`` (system resources told apart by their prefixes)."""
    if not namespace or not name or name.startswith(_SYSTEM_PREFIXES):
        return name
    prefix = _RETRY if name.startswith(_RETRY) else _DLQ if name.startswith(_DLQ) else ""
    bare = name[len(prefix):]
    if bare.startswith(namespace + "%"):
        return name
    return f"{prefix}{namespace}%{bare}"


def _name(resource: Any) -> str:
    return wrap_namespace(resource.resource_namespace, resource.name)


def _topic(req: AccessRequest, resource: Any, perm: int) -> None:
    req.need(_name(resource), perm)


def _group(req: AccessRequest, resource: Any, perm: int) -> None:
    req.need(retry_topic(_name(resource)), perm)


def _group_and_topic(req: AccessRequest, msg: Any) -> None:
    _group(req, msg.group, SUB)
    _topic(req, msg.topic, SUB)


def _heartbeat(req: AccessRequest, msg: Any) -> None:
    # ClientType PUSH_CONSUMER = 2, SIMPLE_CONSUMER = 4 (apache.rocketmq.v2.ClientType).
    if msg.client_type in (2, 4):
        if not msg.HasField("group"):
            raise ValueError("Consumer heartbeat doesn't have group")
        _group(req, msg.group, SUB)


def _send(req: AccessRequest, msg: Any) -> None:
    if not msg.messages:
        raise ValueError("SendMessageRequest, messageCount is zero")
    topic = msg.messages[0].topic
    if any(m.topic != topic for m in msg.messages):
        raise ValueError("SendMessageRequest, messages' topic is not consistent")
    _topic(req, topic, PUB)


def _receive(req: AccessRequest, msg: Any) -> None:
    _group(req, msg.group, SUB)
    _topic(req, msg.message_queue.topic, SUB)


def _telemetry(req: AccessRequest, msg: Any) -> None:
    if msg.WhichOneof("command") != "settings":
        return
    settings = msg.settings
    kind = settings.WhichOneof("pub_sub")
    if kind == "publishing":
        for topic in settings.publishing.topics:
            _topic(req, topic, PUB)
    elif kind == "subscription":
        _group(req, settings.subscription.group, SUB)
        for entry in settings.subscription.subscriptions:
            _topic(req, entry.topic, SUB)
    else:
        raise ValueError("settings command doesn't have publishing or subscription")


def _terminate(req: AccessRequest, msg: Any) -> None:
    if msg.group.name.strip():
        _group(req, msg.group, SUB)


_NEEDS: dict[str, Callable[[AccessRequest, Any], None]] = {
    "Heartbeat": _heartbeat,
    "SendMessage": _send,
    "RecallMessage": lambda req, msg: _topic(req, msg.topic, PUB),
    "ReceiveMessage": _receive,
    "AckMessage": _group_and_topic,
    "ForwardMessageToDeadLetterQueue": _group_and_topic,
    "EndTransaction": lambda req, msg: _topic(req, msg.topic, PUB),
    "Telemetry": _telemetry,
    "NotifyClientTermination": _terminate,
    "QueryRoute": lambda req, msg: _topic(req, msg.topic, ANY),
    "QueryAssignment": _group_and_topic,
    "ChangeInvisibleDuration": _group_and_topic,
}


def access_request(rpc: str, request: Any, authorization: str | None, date_time: str | None,
                   session_token: str | None, remote_host: str | None) -> AccessRequest:
    """``PlainAccessResource.parse(GeneratedMessageV3, AuthenticationHeader)``.

    :class:`MissingHeader` for a missing ``authorization`` / ``x-mq-date-time`` (Java's NPE),
    :class:`AclException` for a malformed header or request.
    """
    if authorization is None:
        raise MissingHeader("the call has no authorization header")
    auth = parse_authorization(authorization)
    if date_time is None:
        raise MissingHeader(f"the call has no {DATE_TIME} header")
    req = AccessRequest(code=REQUEST_CODES.get(rpc, RequestCode.HEART_BEAT),
                        remote_host=remote_host, access_key=auth.access_key,
                        signature=auth.signature, security_token=session_token,
                        content=date_time.encode("utf-8", "surrogatepass"))
    needs = _NEEDS.get(rpc)
    if needs is not None:
        try:
            needs(req, request)
        except Exception as exc:  # Java: catch (Throwable t) -> AclException
            raise AclException(str(exc), _PARSE_SITE) from None
    return req


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refused call: ``internal`` False is PERMISSION_DENIED (an AclException), True is
    INTERNAL (anything else the proxy would throw). ``reason`` is for the log only."""

    internal: bool
    reason: str


def authenticate(config: AclConfig, rpc: str, request: Any, authorization: str | None,
                 date_time: str | None, session_token: str | None,
                 remote_host: str | None) -> Refusal | None:
    """The whole check of one request message; None if allowed. Never raises."""
    try:
        check(config, access_request(rpc, request, authorization, date_time, session_token,
                                     remote_host))
    except AclException as exc:
        return Refusal(False, exc.message)
    except MissingHeader as exc:
        return Refusal(True, str(exc))
    except Exception as exc:  # fail closed: a bug here must never open the door
        return Refusal(True, f"{type(exc).__name__}: {exc}"[:300])
    return None
