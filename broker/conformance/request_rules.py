"""Rules on one request's frame: its code, language, version, serialize type and header keys.

Pure: :func:`check_request` takes the decoded request's values and returns
:class:`~rocketmq_emu.broker.conformance.findings.Observation` s. The reference is what Apache
RocketMQ's Java client 4.9.8 sends and how the 4.9.8 broker reads it: header values through
``RemotingCommand.decodeCommandCustomHeader`` (``Boolean.parseBoolean``, ``Integer.parseInt``,
``@CFNotNull``), request codes through ``RequestCode`` (an unknown one is answered
REQUEST_CODE_NOT_SUPPORTED by ``NettyRemotingAbstract.processRequestCommand``).

The header declarations are the broker's own (:mod:`rocketmq_emu.broker.remoting.headers`):
which keys exist, which are required and what type each has is written once, there.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from rocketmq_emu.broker.conformance.findings import ERROR, INFO, WARNING, Observation
from rocketmq_emu.broker.conformance.message_rules import show
from rocketmq_emu.broker.remoting import headers as h
from rocketmq_emu.broker.remoting.codes import (
    SERIALIZE_ROCKETMQ,
    V3_4_9,
    V4_9_8,
    LanguageCode,
    RequestCode,
    request_name,
)
from rocketmq_emu.broker.remoting.headers.base import BOOL, INT, LONG, parse_java_int

#: ``RequestCode`` of Apache RocketMQ 4.9.8 (common/protocol/RequestCode.java).
CODES_4_9_8 = frozenset({
    10, 11, 12, 13, 14, 15, 17, 21, 22, 23, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37,
    38, 39, 40, 41, 42, 43, 45, 46, 50, 51, 52, 53, 100, 101, 102, 103, 104, 105, 106, 200, 201,
    202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 219, 220, 221,
    222, 223, 224, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311, 312, 313, 314,
    315, 316, 317, 318, 319, 320, 321, 322, 323, 324, 325, 326, 327, 328, 329,
})
#: Codes RocketMQ 5.x added (remoting/protocol/RequestCode.java): a 4.9.8 broker refuses them.
CODES_5X = frozenset({
    18, 47, 54, 60, 61, 217, 225, 343, 345, 351, 352, 353, 354, 355, 361, 370, 400, 401, 402,
    513, 200050, 200051, 200052, 200053, 200054, 200055, 200056, 200151,
    *range(901, 909), *range(1001, 1019), *range(2001, 2005), *range(3001, 3011),
})

#: Keys any request may carry besides its header's: ``AclClientRPCHook`` adds the credentials
#: (``SessionCredentials``: AccessKey, Signature, SecurityToken).
ACL_KEYS = frozenset({"AccessKey", "Signature", "SecurityToken"})
#: Keys any request may carry: the credentials above and ``StreamTypeRPCHook``'s ``ReqT``
#: (``MixAll.REQ_T``), which the Java client adds.
HOOK_KEYS = ACL_KEYS | {"ReqT"}
#: Codes whose 4.9.8 header extends ``RpcRequestHeader`` and so may carry ``bname``.
RPC_HEADER_CODES = frozenset({10, 11, 14, 15, 29, 30, 31, 32, 36, 37, 39, 310, 320, 324, 325})

#: Request code -> the Java header class its extFields are read into (4.9.8 broker and name
#: server). Codes missing here are not checked key by key.
REQUEST_HEADERS: dict[int, type] = {
    RequestCode.SEND_MESSAGE: h.SendMessageRequestHeader,
    RequestCode.SEND_REPLY_MESSAGE: h.SendMessageRequestHeader,
    RequestCode.PULL_MESSAGE: h.PullMessageRequestHeader,
    RequestCode.QUERY_MESSAGE: h.QueryMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: h.QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: h.UpdateConsumerOffsetRequestHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: h.SearchOffsetRequestHeader,
    RequestCode.GET_MAX_OFFSET: h.GetMaxOffsetRequestHeader,
    RequestCode.GET_MIN_OFFSET: h.GetMinOffsetRequestHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: h.GetEarliestMsgStoretimeRequestHeader,
    RequestCode.VIEW_MESSAGE_BY_ID: h.ViewMessageRequestHeader,
    RequestCode.UNREGISTER_CLIENT: h.UnregisterClientRequestHeader,
    RequestCode.CONSUMER_SEND_MSG_BACK: h.ConsumerSendMsgBackRequestHeader,
    RequestCode.END_TRANSACTION: h.EndTransactionRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: h.GetConsumerListByGroupRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: h.GetRouteInfoRequestHeader,
}
#: Codes whose header uses ``SendMessageRequestHeaderV2``'s one-letter keys.
V2_SEND_CODES = frozenset({RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
                           RequestCode.SEND_REPLY_MESSAGE_V2})
#: The ``LanguageCode`` names a request (or a 5.x SDK's ``x-mq-language``) may carry.
LANGUAGES = frozenset(c.name for c in LanguageCode)
_JAVA_CLIENT = "the Java client 4.9.8"


def _spec(code: int) -> tuple[str, tuple[tuple[str, str, str, bool], ...]] | None:
    """(Java class, (attribute, wire key, kind, required)...) of ``code``'s header."""
    if code in V2_SEND_CODES:
        cls = h.SendMessageRequestHeader
        letters = cls.V1_TO_V2
        return ("SendMessageRequestHeaderV2",
                tuple((a, letters[w], k, r) for a, w, k, r in cls.SPEC))
    cls = REQUEST_HEADERS.get(code)
    if cls is None:
        return None
    return cls.__name__, cls.SPEC


def _named(code: int, key: str) -> str:
    """A V2 letter with its V1 meaning ("m (batch)"), other keys as they are."""
    if code in V2_SEND_CODES:
        meaning = h.SendMessageRequestHeader.V2_TO_V1.get(key)
        if meaning:
            return f"{key} ({meaning})"
    return key


#: (code, language, version, serialize type) -> the observations on them (bounded).
_IDENTITY: dict[tuple[int, str, int, int], tuple[Observation, ...]] = {}
_IDENTITY_MAX = 4096


class _Header:
    """What the quick check of one code's header needs, derived once from its declaration."""

    __slots__ = ("java_class", "spec", "known", "required", "booleans", "ints", "longs")

    def __init__(self, code: int, java_class: str,
                 spec: tuple[tuple[str, str, str, bool], ...]) -> None:
        self.java_class = java_class
        self.spec = spec
        known = {wire for _a, wire, _k, _r in spec} | HOOK_KEYS
        if code in RPC_HEADER_CODES:
            known.add("bname")
        self.known = frozenset(known)
        self.required = frozenset(wire for _a, wire, _k, r in spec if r)
        self.booleans = tuple(wire for _a, wire, k, _r in spec if k == BOOL)
        self.ints = tuple(wire for _a, wire, k, _r in spec if k == INT)
        self.longs = tuple(wire for _a, wire, k, _r in spec if k == LONG)

    def plain(self, ext: Mapping[str, str]) -> bool:
        """Whether ``ext`` surely conforms: known keys, required ones present, booleans spelled
        ``true``/``false``, numbers short plain decimals (anything else: the full check)."""
        keys = ext.keys()
        if not (self.required <= keys and keys <= self.known):
            return False
        get = ext.get
        for wire in self.booleans:
            value = get(wire)
            if value is not None and value != "false" and value != "true":
                return False
        for wires, digits in ((self.ints, 10), (self.longs, 19)):
            for wire in wires:
                value = get(wire)
                if value is not None and not (value.isdecimal() and len(value) < digits) \
                        and not (value[:1] == "-" and value[1:].isdecimal()
                                 and len(value) <= digits):  # Java's -1: "not committing"
                    return False
        return True


_HEADERS: dict[int, _Header | None] = {}


def _header_of(code: int) -> _Header | None:
    try:
        return _HEADERS[code]
    except KeyError:
        spec = _spec(code)
        found = _HEADERS[code] = _Header(code, *spec) if spec is not None else None
        return found


def check_request(code: int, language: str, version: int, serialize_type: int,
                  ext_fields: Mapping[str, str],
                  json_types: tuple[tuple[str, str], ...] = ()) -> list[Observation]:
    """The deviations of one request from what the Java client 4.9.8 sends (see module doc).

    Runs on every request: the verdict on code and identity is remembered per combination,
    and a header passing :meth:`_Header.plain` is not looked at field by field."""
    key = (code, language, version, serialize_type)
    identity = _IDENTITY.get(key)
    if identity is None:
        identity = tuple(_check_code(code) + _check_identity(code, language, version,
                                                             serialize_type))
        if len(_IDENTITY) < _IDENTITY_MAX:
            _IDENTITY[key] = identity
    found = list(identity)
    if json_types:
        found += _json_values(code, json_types)
    header = _header_of(code)
    if header is not None and not header.plain(ext_fields):
        found += _check_header(code, header.java_class, header.spec, ext_fields)
    return found


def _json_values(code: int, json_types: tuple[tuple[str, str], ...]) -> list[Observation]:
    """One observation per JSON type the extFields held instead of strings, naming the keys."""
    by_type: dict[str, list[str]] = {}
    for key, json_type in json_types:
        by_type.setdefault(json_type, []).append(_named(code, key))
    found = []
    for json_type, keys in sorted(by_type.items()):
        read = ("as absent (a null is no value)" if json_type == "null"
                else "as its text (fastjson turns it into a String)")
        names = show(", ".join(sorted(keys)))
        found.append(Observation(
            "header.json", INFO, code, names, json_type, "JSON strings",
            f"extFields {names}: JSON {json_type} values; the Java client writes every value "
            f"as a string, the broker reads each {read}",
            "org.apache.rocketmq.remoting.protocol.RemotingCommand"))
    return found


def _check_code(code: int) -> list[Observation]:
    if code in CODES_4_9_8:
        return []
    name = request_name(code)
    if code in CODES_5X:
        return [Observation(
            "request.code", WARNING, code, "code", str(code),
            "a RequestCode of 4.9.8",
            f"request code {code} ({name}) exists only in RocketMQ 5.x: a 4.9.8 broker answers "
            "REQUEST_CODE_NOT_SUPPORTED", "org.apache.rocketmq.common.protocol.RequestCode")]
    return [Observation(
        "request.code", ERROR, code, "code", str(code), "a RequestCode of 4.9.8",
        f"request code {code} is unknown to Apache RocketMQ: the broker answers "
        "REQUEST_CODE_NOT_SUPPORTED", "org.apache.rocketmq.common.protocol.RequestCode")]


def _check_identity(code: int, language: str, version: int,
                    serialize_type: int) -> list[Observation]:
    found = []
    if language not in LANGUAGES:
        found.append(Observation(
            "request.language", ERROR, code, "language", show(str(language)),
            "a LanguageCode name (JAVA, CPP, ...)",
            f"language {language!r} is not a LanguageCode: the Java broker cannot decode the "
            "header", "org.apache.rocketmq.remoting.protocol.LanguageCode"))
    if version < 0:
        found.append(Observation(
            "request.version", ERROR, code, "version", str(version),
            f"an MQVersion ordinal ({_JAVA_CLIENT} sends {V4_9_8})",
            f"version {version} is negative: MQVersion.getVersionDesc cannot name it",
            "org.apache.rocketmq.common.MQVersion"))
    elif language == "JAVA" and version < V3_4_9:
        found.append(Observation(
            "request.version", WARNING, code, "version", str(version),
            f"{V4_9_8} (V4_9_8)",
            f"language JAVA with version {version}, older than V3_4_9: the broker applies the "
            "old client's behaviour (e.g. ignores maxReconsumeTimes of a send-back)",
            "org.apache.rocketmq.common.MQVersion"))
    if serialize_type == SERIALIZE_ROCKETMQ and language != "JAVA":
        found.append(Observation(
            "request.serialize", INFO, code, "serializeType", "ROCKETMQ",
            "only the Java client writes ROCKETMQ binary headers",
            f"a {language} client wrote a ROCKETMQ binary header; the broker answers in it",
            "org.apache.rocketmq.remoting.protocol.RocketMQSerializable"))
    return found


def _check_header(code: int, java_class: str, spec: tuple[tuple[str, str, str, bool], ...],
                  ext: Mapping[str, str]) -> list[Observation]:
    found = []
    known = {wire for _a, wire, _k, _r in spec}
    if code in RPC_HEADER_CODES:
        known.add("bname")
    for _attr, wire, kind, required in spec:
        value = ext.get(wire)
        field = _named(code, wire)
        if value is None:
            if required:
                found.append(Observation(
                    "header.missing", ERROR, code, field, "", "a value (@CFNotNull)",
                    f"required header key {field} is missing or null: the broker refuses the "
                    f"request ({java_class} marks it @CFNotNull)", java_class))
            continue
        if kind == BOOL:
            found += _check_bool(code, java_class, field, value)
        elif kind in (INT, LONG):
            found += _check_number(code, java_class, field, value, kind, required)
    for key in ext:
        if key in known or key in HOOK_KEYS:
            continue
        found.append(_unknown_key(code, java_class, key, known - set(ext)))
    return found


def _check_bool(code: int, java_class: str, field: str, value: str) -> list[Observation]:
    if value in ("true", "false"):
        return []
    meaning = "true" if value.lower() == "true" else "false"
    if value == "0" or value.lower() in ("true", "false"):
        return [Observation(
            "header.boolean", WARNING, code, field, value, '"true" or "false"',
            f'header {field}="{value}" is read by Boolean.parseBoolean as {meaning}, as meant; '
            'the Java client writes "true"/"false"', java_class)]
    return [Observation(
        "header.boolean", ERROR, code, field, show(value), '"true" or "false"',
        f'header {field}="{show(value)}" is read by Boolean.parseBoolean as false'
        + (": the batch body is stored as ONE message" if field.endswith(("batch", "batch)"))
           else ""), java_class)]


def _check_number(code: int, java_class: str, field: str, value: str, kind: str,
                  required: bool) -> list[Observation]:
    try:
        parse_java_int(value, kind)
    except ValueError:
        java = "Integer.parseInt" if kind == INT else "Long.parseLong"
        what = ("the broker refuses the request" if required
                else "the broker ignores the key and uses its default")
        return [Observation(
            "header.number", ERROR, code, field, show(value), f"a decimal {kind}",
            f'header {field}="{show(value)}" is not a {kind} for {java}: {what}', java_class)]
    return []


def _unknown_key(code: int, java_class: str, key: str, absent: set[str]) -> Observation:
    close = difflib.get_close_matches(key, sorted(absent), n=1, cutoff=0.75)
    if close:
        return Observation(
            "header.unknown", WARNING, code, key, key, close[0],
            f"header key {key!r} is not a field of {java_class} (did you mean {close[0]!r}?): "
            "the broker ignores it", java_class)
    return Observation(
        "header.unknown", INFO, code, key, key, f"keys of {java_class}",
        f"header key {key!r} is not a field of {java_class}: the broker ignores it, "
        f"{_JAVA_CLIENT} does not send it", java_class)
