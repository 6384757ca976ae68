"""Sans-IO codec for RocketMQ remoting frames (``RemotingCommand``).

Frame (docs/protocol.md §1.1, Java ``RemotingCommand.encode``/``decode``)::

    int32 length  = 4 + headerLength + bodyLength      (does not count itself)
    int32 word    = serializeType << 24 | headerLength
    header        = JSON text (type 0) or ROCKETMQ binary header (type 1)
    body          = the rest

Layouts are declared once with ``construct`` (``FRAME_PREFIX``, ``ROCKETMQ_HEADER``) as the readable
spec; the hot path below uses precompiled ``struct`` and the tests prove both give the same bytes.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field
from typing import Any

import orjson

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.lazy import lazy_specs
from rocketmq_emu.broker.remoting.codes import (
    CURRENT_VERSION,
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    LanguageCode,
)


def _specs() -> dict[str, Any]:
    """The readable ``construct`` declarations, built on first access (``lazy_specs``)."""
    from construct import (
        GreedyRange,
        Int8ub,
        Int16sb,
        Int16ub,
        Int24ub,
        Int32sb,
        Int32ub,
        PascalString,
        Prefixed,
        Struct,
    )

    # --- readable spec (construct) ----------------------------------------------------------------
    #: The 8 bytes in front of every header.
    FRAME_PREFIX = Struct(
        "length" / Int32ub,
        "serialize_type" / Int8ub,
        "header_length" / Int24ub,
    )

    #: ROCKETMQ binary header (RocketMQSerializable.rocketMQProtocolEncode/Decode).
    ROCKETMQ_HEADER = Struct(
        "code" / Int16sb,
        "language" / Int8ub,
        "version" / Int16sb,
        "opaque" / Int32sb,
        "flag" / Int32sb,
        "remark" / PascalString(Int32sb, "utf8"),
        "ext_fields"
        / Prefixed(
            Int32sb,
            GreedyRange(
                Struct("key" / PascalString(Int16ub, "utf8"), "value" / PascalString(Int32sb, "utf8"))
            ),
        ),
    )
    return {"FRAME_PREFIX": FRAME_PREFIX, "ROCKETMQ_HEADER": ROCKETMQ_HEADER}


__getattr__ = lazy_specs(__name__, _specs)


# --- hot path (struct) ------------------------------------------------------------------------
_PREFIX = struct.Struct(">iI")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">H")
_BIN_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag
_HEADER_LENGTH_MASK = 0xFFFFFF

_LANG_BY_BYTE = {c.value: c.name for c in LanguageCode}
_BYTE_BY_LANG = {c.name: c.value for c in LanguageCode}

_opaque_counter = itertools.count()


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
        return _PREFIX.pack(4 + n + len(self.body), (st << 24) | n) + header

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
        parts.append(_INT16.pack(len(kb)) + kb + _INT32.pack(len(vb)) + vb)
    ext = b"".join(parts)
    return b"".join(
        (
            _BIN_FIXED.pack(cmd.code, language, cmd.version, cmd.opaque, cmd.flag),
            _INT32.pack(len(remark)),
            remark,
            _INT32.pack(len(ext)),
            ext,
        )
    )


def _decode_json_header(header: bytes, body: bytes) -> RemotingCommand:
    try:
        obj = orjson.loads(header)
    except orjson.JSONDecodeError:
        try:
            obj = jsonutil.loads(header)
        except (orjson.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RemotingCommandError(
                f"undecodable JSON header ({len(header)} bytes): {exc}"
            ) from None
    if not isinstance(obj, dict):
        raise RemotingCommandError(f"JSON header is not an object: {header[:64]!r}")
    return decode_json_obj(obj, body)


def decode_json_obj(obj: dict, body: bytes) -> RemotingCommand:
    """The command of an already parsed JSON header object (what :func:`decode_frame` does
    after the JSON parse; the protocol's fused paths parse the header themselves)."""
    try:
        code = obj["code"]
        if type(code) is not int:
            code = int(code)
        language = obj.get("language", "JAVA")
        if type(language) is not str:
            language = (
                _LANG_BY_BYTE.get(language, "OTHER") if isinstance(language, int) else str(language)
            )
        version = obj.get("version") or 0
        opaque = obj.get("opaque") or 0
        flag = obj.get("flag") or 0
        if type(version) is not int or type(opaque) is not int or type(flag) is not int:
            version, opaque, flag = int(version), int(opaque), int(flag)
        remark = obj.get("remark")
        if remark is not None and type(remark) is not str:
            remark = str(remark)
        ext = obj.get("extFields")
        # Positional arguments: this constructor runs once per frame.
        return RemotingCommand(
            code,
            language,
            version,
            opaque,
            flag,
            remark,
            coerce_ext_fields(ext) if ext else {},
            body,
            SERIALIZE_JSON,
        )
    except KeyError:
        raise RemotingCommandError("JSON header has no 'code'") from None
    except (TypeError, ValueError) as exc:
        raise RemotingCommandError(f"JSON header field has a bad value: {exc}") from None


def _decode_rocketmq_header(header: bytes, body: bytes) -> RemotingCommand:
    total = len(header)
    _need("ROCKETMQ header fixed part", 17, total)
    code, lang, version, opaque, flag = _BIN_FIXED.unpack_from(header, 0)
    (remark_len,) = _INT32.unpack_from(header, 13)
    pos = 17
    if remark_len < 0:
        raise RemotingCommandError(f"negative remark length {remark_len}")
    _need("remark", remark_len, total - pos)
    remark = header[pos : pos + remark_len].decode("utf-8", "replace") if remark_len else None
    pos += remark_len
    _need("extFields length", 4, total - pos)
    (ext_len,) = _INT32.unpack_from(header, pos)
    pos += 4
    if ext_len < 0:
        raise RemotingCommandError(f"negative extFields length {ext_len}")
    _need("extFields", ext_len, total - pos)
    end = pos + ext_len
    ext: dict[str, str] = {}
    while pos < end:
        _need("extFields key length", 2, end - pos)
        (klen,) = _INT16.unpack_from(header, pos)
        pos += 2
        _need("extFields key", klen, end - pos)
        key = header[pos : pos + klen].decode("utf-8", "replace")
        pos += klen
        _need("extFields value length", 4, end - pos)
        (vlen,) = _INT32.unpack_from(header, pos)
        pos += 4
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
    if type(payload) is not bytes:
        payload = bytes(payload)
    size = len(payload)
    if size < 4:
        _need("header length word", 4, size)
    (word,) = _INT32.unpack_from(payload, 0)
    serialize_type = (word >> 24) & 0xFF
    header_len = word & _HEADER_LENGTH_MASK
    if header_len > size - 4:
        _need("header", header_len, size - 4)
    header = payload[4 : 4 + header_len]
    body = payload[4 + header_len :]
    if serialize_type == SERIALIZE_JSON:
        return _decode_json_header(header, body)
    if serialize_type == SERIALIZE_ROCKETMQ:
        return _decode_rocketmq_header(header, body)
    raise RemotingCommandError(f"unknown serialize type {serialize_type}")


def decode(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode a whole frame (leading length included); the length must match exactly."""
    _need("frame length", 4, len(frame))
    (length,) = _INT32.unpack_from(frame, 0)
    if length < 4:
        raise RemotingCommandError(f"frame length {length} is smaller than 4")
    _need("frame", length, len(frame) - 4)
    if length != len(frame) - 4:
        raise RemotingCommandError(
            f"frame length {length} does not match the {len(frame) - 4} bytes given"
        )
    return decode_frame(memoryview(frame)[4:])
