"""Permission bits of ACL 1.0 (Java ``org.apache.rocketmq.acl.common.Permission`` and
``AclConstants``, RocketMQ 4.9.8)."""

from __future__ import annotations

from rocketmq_emu.broker.remoting.codes import RequestCode

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

#: MixAll.RETRY_GROUP_TOPIC_PREFIX: a group's permissions are kept under its retry topic.
RETRY_PREFIX = "%RETRY%"

#: Permission.ADMIN_CODE: the request codes only an ``admin: true`` account may send.
ADMIN_CODES = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC,
    RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode.DELETE_SUBSCRIPTIONGROUP,
})

_PERM_NAMES = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}
_JAVA_TRIM = "".join(chr(i) for i in range(33))


def java_trim(text: str) -> str:
    """``String.trim``: strips characters up to U+0020 only."""
    return text.strip(_JAVA_TRIM)


def is_known_perm(text: str) -> bool:
    """True if ``text`` (trimmed) is one of PUB, SUB, PUB|SUB, SUB|PUB, DENY."""
    return java_trim(text) in _PERM_NAMES


def parse_perm(text: str | None) -> int:
    """``Permission.parsePermFromString``: absent or unknown text is DENY."""
    if text is None:
        return DENY
    return _PERM_NAMES.get(java_trim(text), DENY)


def check_permission(needed: int, owned: int) -> bool:
    """``Permission.checkPermission``: DENY wins; ANY is satisfied by PUB or SUB."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def needs_admin(code: int) -> bool:
    """``Permission.needAdminPerm``."""
    return code in ADMIN_CODES


def retry_topic(group: str | None) -> str | None:
    """``PlainAccessResource.getRetryTopic`` (None stays None)."""
    return None if group is None else RETRY_PREFIX + group


def is_retry_topic(topic: str | None) -> bool:
    """``PlainAccessResource.isRetryTopic``."""
    return topic is not None and topic.startswith(RETRY_PREFIX)


def describe(resource: str, is_group: bool) -> str:
    """``PlainAccessResource.printStr``: ``group:G`` or ``topic:T``."""
    return f"group:{resource[len(RETRY_PREFIX):]}" if is_group else f"topic:{resource}"
