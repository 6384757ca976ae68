"""Sans-IO codec for RocketMQ remoting frames (``RemotingCommand``).

Frame (docs/protocol.md §1.1, Java ``RemotingCommand.encode``/``decode``)::

    int32 length  = 4 + headerLength + bodyLength      (does not count itself)
    int32 word    = serializeType << 24 | headerLength
    header        = JSON text (type 0) or ROCKETMQ binary header (type 1)
    body          = the rest

The layouts are declared once with ``construct`` (``FRAME_PREFIX``, ``EXT_FIELD``,
``ROCKETMQ_HEADER``); every ``struct``, offset and size the codec runs on is derived from them at
import (:mod:`rocketmq_emu.broker.layout`), and golden frames hold both to the same bytes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import construct as cs
import orjson

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.layout import Layout
from rocketmq_emu.broker.remoting.codes import (
    CURRENT_VERSION,
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    LanguageCode,
)

# --- the declarations ----------------------------------------------------------------------------
#: ``RemotingCommand.markProtocolType``: the serialize type in the header word's high byte, the
#: header length in its low 24 bits.
HEADER_LENGTH_BITS = 24

#: The 8 bytes in front of every header: the frame length (not counting itself) and the header
#: word.
FRAME_PREFIX = cs.Struct(
    "length" / cs.Int32sb,
    "headerWord" / cs.Rebuild(
        cs.Int32ub, lambda ctx: ctx.serialize_type << HEADER_LENGTH_BITS | ctx.header_length),
    "serialize_type" / cs.Computed(cs.this.headerWord >> HEADER_LENGTH_BITS),
    "header_length" / cs.Computed(cs.this.headerWord & ((1 << HEADER_LENGTH_BITS) - 1)),
)

#: One extFields entry of the binary header: key and value, each with its length.
EXT_FIELD = cs.Struct(
    "key" / cs.PascalString(cs.Int16ub, "utf8"),
    "value" / cs.PascalString(cs.Int32sb, "utf8"),
)

#: ROCKETMQ binary header (RocketMQSerializable.rocketMQProtocolEncode/Decode).
ROCKETMQ_HEADER = cs.Struct(
    "code" / cs.Int16sb,
    "language" / cs.Int8ub,
    "version" / cs.Int16sb,
    "opaque" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "remark" / cs.PascalString(cs.Int32sb, "utf8"),
    "ext_fields" / cs.Prefixed(cs.Int32sb, cs.GreedyRange(EXT_FIELD)),
)

# --- derived at import ----------------------------------------------------------------------------
_FRAME = Layout(FRAME_PREFIX)
_BINARY = Layout(ROCKETMQ_HEADER)
_EXT_FIELD = Layout(EXT_FIELD)
#: The frame length alone: what the protocol reads to cut a frame out of a read.
FRAME_LENGTH = _FRAME.struct("length")
#: The smallest frame length: the header word alone (an empty JSON header would not parse).
MIN_FRAME_LENGTH = _FRAME.size("headerWord")
_PREFIX = _FRAME.struct("length", "headerWord")
_WORD = _FRAME.struct("headerWord")
_BIN_FIXED = _BINARY.struct("code", "flag")
_BIN_LENGTH = _BINARY.struct("remark")  # the remark's and extFields' int32 length prefixes
_REMARK_AT = _BINARY.offset("remark")
_KEY_LENGTH = _EXT_FIELD.struct("key")
_VALUE_LENGTH = _EXT_FIELD.struct("value")
_HEADER_LENGTH_MASK = (1 << HEADER_LENGTH_BITS) - 1

_LANG_BY_BYTE = {c.value: c.name for c in LanguageCode}
_BYTE_BY_LANG = {c.name: c.value for c in LanguageCode}

_opaque_counter = itertools.count()
_loads = orjson.loads


def next_opaque() -> int:
    """A fresh request id (Java ``RemotingCommand.requestId``), wrapping within int32."""
    return next(_opaque_counter) & 0x7FFFFFFF


class RemotingCommandError(ValueError):
    """A frame or header that cannot be decoded; the message names what was wrong."""


def _need(field_name: str, needed: int, left: int) -> None:
    if needed > left:
        raise RemotingCommandError(f"truncated {field_name}: needs {needed} bytes, {left} left")


def _java_string(value: Any) -> str | None:
    """String form of a JSON scalar as a Java client would have written it (None: drop)."""
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (dict, list)):
        return jsonutil.dumps(value).decode()
    return str(value)


def coerce_ext_fields(raw: Any) -> dict[str, str]:
    """Turn a decoded ``extFields`` object into ``dict[str, str]``.

    ali-ons sends JS numbers/booleans, the C++ clients send numbers and ``"extFields": null``
    (docs/clients.md); Java would hold them as strings, so ``4`` -> ``"4"``, ``true`` -> ``"true"``,
    null values are dropped (Java's ``HashMap.get`` returns null either way).
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RemotingCommandError(f"extFields must be a JSON object, got {type(raw).__name__}")
    for value in raw.values():
        if type(value) is not str:
            break
    else:
        return raw
    out = {}
    for key, value in raw.items():
        text = _java_string(value)
        if text is not None:
            out[str(key)] = text
    return out


@dataclass(slots=True, eq=True)
class RemotingCommand:
    """One request or response (Java ``RemotingCommand``).

    ``language`` is the LanguageCode name (``"JAVA"``); ``ext_fields`` always holds strings;
    ``serialize_type`` is 0 (JSON) or 1 (ROCKETMQ) and is echoed by :meth:`response`.
    """

    code: int
    language: str = "JAVA"
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: int = SERIALIZE_JSON
    #: (key, JSON type) of the extFields a JSON header held as something other than a string
    #: (ali-ons' numbers and booleans, a C++ client's null): what ``ext_fields`` coerced.
    json_types: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, Any] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
        remark: str | None = None,
        language: str = "JAVA",
        version: int = CURRENT_VERSION,
        serialize_type: int = SERIALIZE_JSON,
        opaque: int | None = None,
    ) -> RemotingCommand:
        """Build a request with a fresh opaque (``RemotingCommand.createRequestCommand``)."""
        if opaque is None:
            opaque = next_opaque()
        return cls(
            code=int(code),
            language=language,
            version=version,
            opaque=opaque,
            flag=FLAG_ONEWAY if oneway else 0,
            remark=remark,
            ext_fields=stringify_ext_fields(ext_fields) if ext_fields else {},
            body=body,
            serialize_type=serialize_type,
        )

    def response(
        self,
        code: int,
        remark: str | None = None,
        ext_fields: dict[str, Any] | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """Build the response to this request: same opaque, same serialize type, flag bit 0 set."""
        return RemotingCommand(
            code=int(code),
            language="JAVA",
            version=CURRENT_VERSION,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext_fields=stringify_ext_fields(ext_fields) if ext_fields else {},
            body=body,
            serialize_type=self.serialize_type,
        )

    def success_response(self, ext_fields: dict[str, str]) -> RemotingCommand:
        """``response(SUCCESS, None, ext_fields)`` for ext fields that already hold only
        strings (the send hot path builds them so): no copy, no stringify pass."""
        return RemotingCommand(0, "JAVA", CURRENT_VERSION, self.opaque, FLAG_RESPONSE, None,
                               ext_fields, b"", self.serialize_type)

    @property
    def is_response(self) -> bool:
        """True for a response (flag bit 0)."""
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        """True for a oneway request (flag bit 1): no response is sent."""
        return bool(self.flag & FLAG_ONEWAY)

    # --- encoding ---------------------------------------------------------------------------
    def encode_header(self) -> bytes:
        """Header bytes only (JSON or ROCKETMQ according to ``serialize_type``)."""
        if self.serialize_type == SERIALIZE_ROCKETMQ:
            return encode_rocketmq_header(self)
        return encode_json_header(self)

    def encode_prefix_and_header(self) -> bytes:
        """Length + header-length word + header: write the body after it without copying."""
        st = self.serialize_type
        header = encode_rocketmq_header(self) if st == SERIALIZE_ROCKETMQ else \
            encode_json_header(self)
        n = len(header)
        return _PREFIX.pack(_WORD.size + n + len(self.body), (st << HEADER_LENGTH_BITS) | n) + header

    def encode(self) -> bytes:
        """The whole frame, including the leading 4-byte length."""
        return self.encode_prefix_and_header() + self.body

    # --- decoding ---------------------------------------------------------------------------
    @staticmethod
    def decode_frame(payload: bytes | bytearray | memoryview) -> RemotingCommand:
        """Decode a frame without its leading length (see module :func:`decode_frame`)."""
        return decode_frame(payload)

    @staticmethod
    def decode(frame: bytes | bytearray | memoryview) -> RemotingCommand:
        """Decode a whole frame including its leading length (see module :func:`decode`)."""
        return decode(frame)


def stringify_ext_fields(ext: dict[str, Any]) -> dict[str, str]:
    """Return ``ext`` with every value as the string Java would send; None values dropped."""
    for value in ext.values():
        if type(value) is not str:
            break
    else:
        return ext
    out = {}
    for key, value in ext.items():
        text = _java_string(value)
        if text is not None:
            out[key] = text
    return out


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """JSON header with keys in fastjson's (alphabetical) order; ``extFields`` always present."""
    ext = cmd.ext_fields
    if ext:
        ext = stringify_ext_fields(ext)
    header: dict[str, Any] = {
        "code": cmd.code,
        "extFields": ext,
        "flag": cmd.flag,
        "language": cmd.language,
        "opaque": cmd.opaque,
    }
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = cmd.version
    return orjson.dumps(header)


def encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    """ROCKETMQ binary header (RocketMQSerializable.rocketMQProtocolEncode)."""
    language = _BYTE_BY_LANG.get(cmd.language, LanguageCode.OTHER)
    remark = cmd.remark.encode() if cmd.remark else b""
    parts = []
    for key, value in stringify_ext_fields(cmd.ext_fields).items():
        kb = key.encode()
        vb = value.encode()
        parts.append(_KEY_LENGTH.pack(len(kb)) + kb + _VALUE_LENGTH.pack(len(vb)) + vb)
    ext = b"".join(parts)
    return b"".join(
        (
            _BIN_FIXED.pack(cmd.code, language, cmd.version, cmd.opaque, cmd.flag),
            _BIN_LENGTH.pack(len(remark)),
            remark,
            _BIN_LENGTH.pack(len(ext)),
            ext,
        )
    )


def _lenient_json(header: bytes) -> Any:
    """A header orjson refused, read by the lenient reader (fastjson accepts what some
    clients write; see :mod:`rocketmq_emu.broker.jsonutil`)."""
    try:
        return jsonutil.loads(header)
    except (orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RemotingCommandError(
            f"undecodable JSON header ({len(header)} bytes): {exc}"
        ) from None


def decode_json_obj(obj: dict, body: bytes) -> RemotingCommand:
    """The command of an already parsed JSON header object (what :func:`decode_frame` does
    after the JSON parse)."""
    get = obj.get
    code = get("code")
    language = get("language", "JAVA")
    version = get("version") or 0
    opaque = get("opaque") or 0
    flag = get("flag") or 0
    remark = get("remark")
    ext = get("extFields")
    if not (type(code) is int and type(language) is str and type(version) is int
            and type(opaque) is int and type(flag) is int
            and (remark is None or type(remark) is str)):
        code, language, version, opaque, flag, remark = _coerce_header(
            code, language, version, opaque, flag, remark)
    fields = coerce_ext_fields(ext) if ext else {}
    # Positional arguments: this constructor runs once per frame.
    cmd = RemotingCommand(code, language, version, opaque, flag, remark, fields, body,
                          SERIALIZE_JSON)
    if fields is not ext and ext:
        cmd.json_types = tuple((str(k), _JSON_TYPES.get(type(v), type(v).__name__))
                               for k, v in ext.items() if type(v) is not str)
    return cmd


_JSON_TYPES = {int: "number", float: "number", bool: "boolean", type(None): "null",
               dict: "object", list: "array"}


def _coerce_header(code: Any, language: Any, version: Any, opaque: Any, flag: Any,
                   remark: Any) -> tuple[int, str, int, int, int, str | None]:
    """Header values as Java would have read them from a client that wrote numbers as strings
    or the language as its byte (ali-ons, the C++ clients: docs/clients.md)."""
    if code is None:
        raise RemotingCommandError("JSON header has no 'code'")
    try:
        if type(language) is not str:
            language = (_LANG_BY_BYTE.get(language, "OTHER") if isinstance(language, int)
                        else str(language))
        return (int(code), language, int(version), int(opaque), int(flag),
                None if remark is None else str(remark))
    except (TypeError, ValueError) as exc:
        raise RemotingCommandError(f"JSON header field has a bad value: {exc}") from None


def _decode_rocketmq_header(header: bytes, body: bytes) -> RemotingCommand:
    total = len(header)
    pos = _REMARK_AT + _BIN_LENGTH.size
    _need("ROCKETMQ header fixed part", pos, total)
    code, lang, version, opaque, flag = _BIN_FIXED.unpack_from(header, 0)
    (remark_len,) = _BIN_LENGTH.unpack_from(header, _REMARK_AT)
    if remark_len < 0:
        raise RemotingCommandError(f"negative remark length {remark_len}")
    _need("remark", remark_len, total - pos)
    remark = header[pos : pos + remark_len].decode("utf-8", "replace") if remark_len else None
    pos += remark_len
    _need("extFields length", _BIN_LENGTH.size, total - pos)
    (ext_len,) = _BIN_LENGTH.unpack_from(header, pos)
    pos += _BIN_LENGTH.size
    if ext_len < 0:
        raise RemotingCommandError(f"negative extFields length {ext_len}")
    _need("extFields", ext_len, total - pos)
    end = pos + ext_len
    ext: dict[str, str] = {}
    while pos < end:
        _need("extFields key length", _KEY_LENGTH.size, end - pos)
        (klen,) = _KEY_LENGTH.unpack_from(header, pos)
        pos += _KEY_LENGTH.size
        _need("extFields key", klen, end - pos)
        key = header[pos : pos + klen].decode("utf-8", "replace")
        pos += klen
        _need("extFields value length", _VALUE_LENGTH.size, end - pos)
        (vlen,) = _VALUE_LENGTH.unpack_from(header, pos)
        pos += _VALUE_LENGTH.size
        if vlen < 0:
            raise RemotingCommandError(f"negative extFields value length {vlen} for key {key!r}")
        _need(f"extFields value of {key!r}", vlen, end - pos)
        # Zero length decodes as null in Java; a null key or value is never stored.
        if klen and vlen:
            ext[key] = header[pos : pos + vlen].decode("utf-8", "replace")
        pos += vlen
    return RemotingCommand(
        code=code,
        language=_LANG_BY_BYTE.get(lang, "OTHER"),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        body=body,
        serialize_type=SERIALIZE_ROCKETMQ,
    )


def decode_frame(payload: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode ``word ‖ header ‖ body`` (the frame after its 4-byte length).

    Raises :class:`RemotingCommandError` naming the field, bytes needed and bytes left.
    """
    return decode_frame_at(payload, 0, len(payload))


def decode_frame_at(buf: bytes | bytearray | memoryview, start: int, end: int
                    ) -> RemotingCommand:
    """:func:`decode_frame` of ``buf[start:end]``, slicing header and body straight out of
    ``buf`` (a read holding many frames is not copied frame by frame first)."""
    size = end - start
    head = start + _WORD.size
    if size < _WORD.size:
        _need("header length word", _WORD.size, size)
    (word,) = _WORD.unpack_from(buf, start)
    header_len = word & _HEADER_LENGTH_MASK
    if header_len > end - head:
        _need("header", header_len, end - head)
    header_end = head + header_len
    body = buf[header_end:end]
    if type(body) is not bytes:
        body = bytes(body)
    serialize_type = word >> HEADER_LENGTH_BITS
    if serialize_type == SERIALIZE_JSON:
        try:
            obj = _loads(buf[head:header_end])
        except ValueError:  # orjson.JSONDecodeError: not strict JSON; the lenient reader next
            obj = _lenient_json(bytes(buf[head:header_end]))
        if type(obj) is not dict:
            raise RemotingCommandError(
                f"JSON header is not an object: {bytes(buf[head:min(head + 64, end)])!r}")
        return decode_json_obj(obj, body)
    if serialize_type == SERIALIZE_ROCKETMQ:
        return _decode_rocketmq_header(bytes(buf[head:header_end]), body)
    raise RemotingCommandError(f"unknown serialize type {serialize_type}")


def decode(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode a whole frame (leading length included); the length must match exactly."""
    head = FRAME_LENGTH.size
    _need("frame length", head, len(frame))
    (length,) = FRAME_LENGTH.unpack_from(frame, 0)
    if length < _WORD.size:
        raise RemotingCommandError(f"frame length {length} is smaller than {_WORD.size}")
    _need("frame", length, len(frame) - head)
    if length != len(frame) - head:
        raise RemotingCommandError(
            f"frame length {length} does not match the {len(frame) - head} bytes given"
        )
    return decode_frame(memoryview(frame)[head:])
