"""Declarative typed views of ``extFields`` (Java ``CommandCustomHeader``).

A header class is a dataclass whose fields carry their wire name, Java type and whether Java marks
them ``@CFNotNull``::

    @header
    class GetMaxOffsetRequestHeader(CommandHeader):
        topic: str | None = req("topic")
        queue_id: int | None = req("queueId", INT)

Values are read the way Apache RocketMQ reads them (``RemotingCommand.decodeCommandCustomHeader``
and the ``FastCodesHeader`` decoders): ``Integer.parseInt`` / ``Long.parseLong`` (strict decimal,
range-checked), ``Boolean.parseBoolean`` (true only for a case-insensitive ``"true"``, so the C++
clients' ``"1"`` is false). A missing required field or an unparsable required value raises
:class:`HeaderError`; an unparsable optional value is logged and left at its default, as Java does.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any, ClassVar, TypeVar

from broker.remoting.command import RemotingCommandError

log = logging.getLogger(__name__)

STR = "String"
INT = "Integer"
LONG = "Long"
BOOL = "Boolean"

_DECIMAL = re.compile(r"[+-]?[0-9]+\Z")
_RANGES = {INT: (-(2**31), 2**31 - 1), LONG: (-(2**63), 2**63 - 1)}


class HeaderError(RemotingCommandError):
    """A required custom header field is missing or cannot be parsed."""


def parse_java_int(text: str, kind: str = INT) -> int:
    """``Integer.parseInt`` / ``Long.parseLong``: strict decimal within the Java range."""
    if not _DECIMAL.match(text):
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    low, high = _RANGES[kind]
    if not low <= value <= high:
        raise ValueError(f'For input string: "{text}" (out of {kind} range)')
    return value


def parse_java_bool(text: str) -> bool:
    """``Boolean.parseBoolean``: true only for ``"true"`` in any letter case."""
    return text.lower() == "true"


def _parse(kind: str, text: str) -> Any:
    if kind == STR:
        return text
    if kind == BOOL:
        return parse_java_bool(text)
    return parse_java_int(text, kind)


def _to_wire(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return value if isinstance(value, str) else str(value)


def req(wire: str, kind: str = STR) -> Any:
    """A required (``@CFNotNull``) field."""
    return dataclasses.field(default=None, metadata={"wire": wire, "kind": kind, "required": True})


def opt(wire: str, kind: str = STR, default: Any = None) -> Any:
    """An optional field (``default`` mirrors a Java primitive's default, e.g. False)."""
    return dataclasses.field(
        default=default, metadata={"wire": wire, "kind": kind, "required": False}
    )


class CommandHeader:
    """Base of all typed headers; see the module docstring."""

    #: (attribute, wire name, kind, required) for each field, filled by :func:`header`.
    SPEC: ClassVar[tuple[tuple[str, str, str, bool], ...]] = ()

    @classmethod
    def from_ext_fields(cls: type[H], ext: dict[str, str] | None) -> H:
        """Parse ``extFields`` (strings) into this header; raises HeaderError like Java."""
        ext = ext or {}
        kwargs: dict[str, Any] = {}
        for attr, wire, kind, required in cls.SPEC:
            raw = ext.get(wire)
            if raw is None:
                if required:
                    raise HeaderError(f"the custom field <{wire}> is null ({cls.__name__})")
                continue
            try:
                kwargs[attr] = _parse(kind, raw)
            except ValueError as exc:
                if required:
                    raise HeaderError(
                        f"the custom field <{wire}> of {cls.__name__}: {exc}"
                    ) from None
                log.warning("ignoring custom field <%s> of %s: %s", wire, cls.__name__, exc)
        return cls(**kwargs)

    def to_ext_fields(self) -> dict[str, str]:
        """String values for the wire; None fields are left out (``makeCustomHeaderToNet``)."""
        out: dict[str, str] = {}
        for attr, wire, _kind, _required in self.SPEC:
            value = getattr(self, attr)
            if value is not None:
                out[wire] = _to_wire(value)
        return out


H = TypeVar("H", bound=CommandHeader)


def header(cls: type[H]) -> type[H]:
    """Class decorator: make ``cls`` a dataclass and record its wire SPEC."""
    cls = dataclasses.dataclass(cls)
    cls.SPEC = tuple(
        (f.name, f.metadata["wire"], f.metadata["kind"], f.metadata["required"])
        for f in dataclasses.fields(cls)
        if "wire" in f.metadata
    )
    return cls
