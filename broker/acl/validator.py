"""ACL 1.0 checks of one request (Java ``PlainAccessValidator.parse`` and
``PlainPermissionManager.validate`` / ``checkPerm``, RocketMQ 4.9.8), as pure functions.

:func:`validate` takes the request code, extFields, body and the peer's ``host:port`` and
returns None (allowed) or the message of the ``AclException`` RocketMQ would throw. The broker
answers a rejection SYSTEM_ERROR with :func:`AclException.remark`, the text Java's
``RemotingHelper.exceptionSimpleDesc`` makes (exception, then the frame that threw it).

The order is RocketMQ's: global white list, access key present, account known, the account's
white list (a match skips the signature), signature (compared in constant time here),
``RMQ_SYS_TRACE_TOPIC`` sends, then the permission every resource needs.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.acl.config import Account, AclConfig
from rocketmq_emu.broker.acl.permission import (
    PUB,
    SUB,
    check_permission,
    describe,
    is_retry_topic,
    needs_admin,
    retry_topic,
)
from rocketmq_emu.broker.acl.signer import (
    ACCESS_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    UNIQUE_KEY_QUERY,
    content_to_sign,
    sign,
)
from rocketmq_emu.broker.remoting.codes import RequestCode

#: TopicValidator.RMQ_SYS_TRACE_TOPIC: sends to it skip the permission check.
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
_VALIDATOR = "org.apache.rocketmq.acl.plain.PlainAccessValidator"
_SKIP_IN_CONTENT = frozenset({SIGNATURE, UNIQUE_KEY_QUERY})


class AclException(Exception):
    """A rejected request (Java ``org.apache.rocketmq.acl.common.AclException``).

    ``site`` is the Java frame that throws it in 4.9.8, for the remark.
    """

    def __init__(self, message: str, site: str) -> None:
        super().__init__(message)
        self.message = message
        self.site = site

    def remark(self) -> str:
        """``RemotingHelper.exceptionSimpleDesc``: what the client reads in the SYSTEM_ERROR."""
        return f"org.apache.rocketmq.acl.common.AclException: {self.message}, {self.site}"


def _site(method: str, line: int) -> str:
    cls = _VALIDATOR if method == "parse" else _MANAGER
    return f"{cls}.{method}({cls.rsplit('.', 1)[1]}.java:{line})"


@dataclass(slots=True)
class AccessRequest:
    """The needed side of Java ``PlainAccessResource``, built from one request."""

    code: int
    remote_host: str | None
    access_key: str | None = None
    signature: str | None = None
    security_token: str | None = None
    resource_perms: dict[str, int] | None = None
    content: bytes | None = None

    def need(self, resource: str | None, perm: int) -> None:
        """``addResourceAndPerm``: None resources are ignored; a later need replaces."""
        if resource is None:
            return
        if self.resource_perms is None:
            self.resource_perms = {}
        self.resource_perms[resource] = perm


class _HeaderError(Exception):
    """What ``decodeCommandCustomHeader`` / fastjson would throw, with Java's message."""


def _required(ext: Mapping[str, str], *names: str) -> None:
    for name in names:
        if ext.get(name) is None:
            raise _HeaderError(f"the custom field <{name}> is null")


def _java_number(ext: Mapping[str, str], name: str) -> None:
    value = ext.get(name, "")
    text = value[1:] if value[:1] in "+-" else value
    if not (text.isascii() and text.isdigit()):
        raise _HeaderError(f'For input string: "{value}"')


def _needs(req: AccessRequest, code: int, ext: Mapping[str, str], body: bytes) -> None:
    """The resources and permissions each request code needs (``PlainAccessValidator.parse``)."""
    if code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
        topic_key, group_key = ("topic", "group") if code == RequestCode.SEND_MESSAGE else ("b", "a")
        topic = ext.get(topic_key)
        if is_retry_topic(topic):
            req.need(retry_topic(ext.get(group_key)), SUB)
        else:
            req.need(topic, PUB)
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        req.need(retry_topic(ext.get("group")), SUB)
    elif code == RequestCode.PULL_MESSAGE:
        req.need(ext.get("topic"), SUB)
        req.need(retry_topic(ext.get("consumerGroup")), SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        req.need(ext.get("topic"), SUB)
    elif code == RequestCode.HEART_BEAT:
        _heartbeat_needs(req, body)
    elif code == RequestCode.UNREGISTER_CLIENT:
        _required(ext, "clientID")
        req.need(retry_topic(ext.get("consumerGroup")), SUB)
    elif code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
        _required(ext, "consumerGroup")
        req.need(retry_topic(ext.get("consumerGroup")), SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        _required(ext, "consumerGroup", "topic", "queueId", "commitOffset")
        _java_number(ext, "queueId")
        _java_number(ext, "commitOffset")
        req.need(retry_topic(ext.get("consumerGroup")), SUB)
        req.need(ext.get("topic"), SUB)


def _heartbeat_needs(req: AccessRequest, body: bytes) -> None:
    """HEART_BEAT: SUB on every consumer group (as its retry topic) and subscribed topic."""
    try:
        doc: Any = jsonutil.loads(body) if body else None
    except Exception as exc:  # any parse failure is the request's fault, as in fastjson
        raise _HeaderError(f"HeartbeatData body is not JSON: {exc}"[:200]) from None
    if doc is None:
        raise _HeaderError("HeartbeatData body is empty")
    if not isinstance(doc, dict):
        raise _HeaderError("HeartbeatData body is not a JSON object")
    consumers = doc.get("consumerDataSet") or []
    if not isinstance(consumers, list):
        raise _HeaderError("HeartbeatData.consumerDataSet is not a list")
    for consumer in consumers:
        if not isinstance(consumer, dict):
            raise _HeaderError("HeartbeatData.consumerDataSet holds a non-object")
        group = consumer.get("groupName")
        req.need(retry_topic(None if group is None else str(group)), SUB)
        subs = consumer.get("subscriptionDataSet") or []
        if not isinstance(subs, list):
            raise _HeaderError("ConsumerData.subscriptionDataSet is not a list")
        for sub in subs:
            if not isinstance(sub, dict):
                raise _HeaderError("ConsumerData.subscriptionDataSet holds a non-object")
            topic = sub.get("topic")
            req.need(None if topic is None else str(topic), SUB)


def parse_request(code: int, ext_fields: Mapping[str, str] | None, body: bytes | None,
                  remote_addr: str | None) -> AccessRequest:
    """``PlainAccessValidator.parse``: ``remote_addr`` is Java's ``host:port``."""
    host = remote_addr
    if remote_addr is not None and ":" in remote_addr:
        host = remote_addr[: remote_addr.rindex(":")]
    req = AccessRequest(code=code, remote_host=host)
    if ext_fields is None:
        return req
    req.access_key = ext_fields.get(ACCESS_KEY)
    req.signature = ext_fields.get(SIGNATURE)
    req.security_token = ext_fields.get(SECURITY_TOKEN)
    try:
        _needs(req, code, ext_fields, body or b"")
    except _HeaderError as exc:
        raise AclException(str(exc), _site("parse", 134)) from None
    req.content = content_to_sign(ext_fields, body, _SKIP_IN_CONTENT)
    return req


def _signature_matches(expected: str, given: str | None) -> bool:
    """Constant-time comparison (Java uses ``String.equals``; the answer is the same)."""
    if given is None:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8", "replace"))


def check_perm(req: AccessRequest, owned: Account) -> None:
    """``PlainPermissionManager.checkPerm``: admin codes, then every needed resource."""
    if needs_admin(req.code) and not owned.admin:
        raise AclException(
            f"Need admin permission for request code={req.code}, but accessKey="
            f"{owned.access_key} is not", _site("checkPerm", 581))
    if req.resource_perms is None:
        return
    owned_perms = owned.resource_perms
    if owned_perms is None and owned.admin:
        return
    for resource, needed in req.resource_perms.items():
        is_group = is_retry_topic(resource)
        if owned_perms is None or resource not in owned_perms:
            perm = owned.default_group_perm if is_group else owned.default_topic_perm
            line = 606
        else:
            perm = owned_perms[resource]
            line = 611
        if not check_permission(needed, perm):
            raise AclException(f"No default permission for {describe(resource, is_group)}",
                               _site("checkPerm", line))


def check(config: AclConfig, req: AccessRequest) -> None:
    """``PlainPermissionManager.validate``: raises :class:`AclException` when refused."""
    for strategy in config.global_white:
        if strategy.matches(req.remote_host):
            return
    if req.access_key is None:
        raise AclException("No accessKey is configured", _site("validate", 664))
    owned = config.accounts.get(req.access_key)
    if owned is None:
        raise AclException(f"No acl config for {req.access_key}", _site("validate", 668))
    if owned.address_strategy.matches(req.remote_host):
        return
    expected = sign(req.content or b"", owned.secret_key)
    if not _signature_matches(expected, req.signature):
        raise AclException(f"Check signature failed for accessKey={req.access_key}",
                           _site("validate", 684))
    if req.resource_perms is not None and req.resource_perms.get(TRACE_TOPIC) == PUB:
        return
    check_perm(req, owned)


def validate_exc(config: AclConfig, code: int, ext_fields: Mapping[str, str] | None,
                 body: bytes | None, remote_addr: str | None) -> AclException | None:
    """Parse and check one request; the AclException if refused, else None. Never raises."""
    try:
        check(config, parse_request(code, ext_fields, body, remote_addr))
    except AclException as exc:
        return exc
    except Exception as exc:  # fail closed: a bug here must never open the door
        return AclException(f"{type(exc).__name__}: {exc}"[:300], _site("parse", 134))
    return None


def validate(config: AclConfig, code: int, ext_fields: Mapping[str, str] | None,
             body: bytes | None, remote_addr: str | None) -> str | None:
    """None if the request is allowed, else the AclException message RocketMQ would give."""
    exc = validate_exc(config, code, ext_fields, body, remote_addr)
    return None if exc is None else exc.message
