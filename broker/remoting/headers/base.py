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
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from rocketmq_emu.broker.remoting.command import RemotingCommandError

log = logging.getLogger(__name__)

STR = "String"
INT = "Integer"
LONG = "Long"
BOOL = "Boolean"

_DECIMAL = re.compile(r"[+-]?\d+\Z")
_RANGES = {INT: (-(2**31), 2**31 - 1), LONG: (-(2**63), 2**63 - 1)}
# Decimal strings shorter than this always fit the Java type (2**31 has 10 digits, 2**63 has 19).
_SAFE_DIGITS = {INT: 10, LONG: 19}
#: The canonical decimal text of small numbers -> the number: queue ids, flags, counts and
#: sysFlags are almost always among them, and a dict lookup costs a fifth of ``int(text)``.
#: Only canonical text is here ("7", never "07" or "+7"), so the answer is the parse's.
_SMALL_INTS = {str(i): i for i in range(1024)}


class HeaderError(RemotingCommandError):
    """A required custom header field is missing or cannot be parsed."""


def parse_java_int(text: str, kind: str = INT) -> int:
    """``Integer.parseInt`` / ``Long.parseLong``: strict decimal within the Java range."""
    if not text.isdecimal() and not _DECIMAL.match(text):
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    low, high = _RANGES[kind]
    if not low <= value <= high:
        raise ValueError(f'For input string: "{text}" (out of {kind} range)')
    return value


def parse_java_bool(text: str) -> bool:
    """``Boolean.parseBoolean``: true only for ``"true"`` in any letter case."""
    return text.lower() == "true"


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
        return cls._parse(ext)  # type: ignore[attr-defined]

    def to_ext_fields(self) -> dict[str, str]:
        """String values for the wire; None fields are left out (``makeCustomHeaderToNet``)."""
        out: dict[str, str] = {}
        for attr, wire, _kind, _required in self.SPEC:
            value = getattr(self, attr)
            if value is not None:
                out[wire] = _to_wire(value)
        return out


H = TypeVar("H", bound=CommandHeader)


def _int_required(raw: str, wire: str, kind: str, owner: type) -> int:
    try:
        return parse_java_int(raw, kind)
    except ValueError as exc:
        raise HeaderError(f"the custom field <{wire}> of {owner.__name__}: {exc}") from None


def _int_optional(raw: str, wire: str, kind: str, owner: type, default: Any) -> Any:
    try:
        return parse_java_int(raw, kind)
    except ValueError as exc:
        log.warning("ignoring custom field <%s> of %s: %s", wire, owner.__name__, exc)
        return default


def _missing(wire: str, owner: type) -> HeaderError:
    return HeaderError(f"the custom field <{wire}> is null ({owner.__name__})")


def _int_expr(v: str, kind: str) -> str:
    """The fast paths of an int field's parse, up to its ``else`` (the strict parse): a small
    number's canonical text (Integer fields: ids, flags, counts), then plain digits too short
    to overflow the Java type."""
    fast = f"int({v}) if {v}.isdecimal() and len({v}) < {_SAFE_DIGITS[kind]}"
    if kind == INT:
        return f"n if (n := _small({v})) is not None else {fast}"
    return fast


def _bool_expr(v: str) -> str:
    """``Boolean.parseBoolean`` of ``v``, the two usual spellings first (no ``lower()``)."""
    return f"{v} == 'true' or ({v} != 'false' and {v}.lower() == 'true')"


def compile_parser(
    cls: type, spec: tuple[tuple[str, str, str, bool], ...]
) -> Callable[[dict[str, str] | None], Any]:
    """Generate ``parse(ext) -> cls`` for ``spec`` (same idea as dataclasses' generated
    ``__init__``): one straight-line function per header, no per-field loop on the hot path."""
    defaults = {f.name: f.default for f in dataclasses.fields(realize(cls))}
    lines = ["def parse(ext):", "    get = (ext or _EMPTY).get"]
    names = []
    env: dict[str, Any] = {
        "_EMPTY": {},
        "cls": cls,
        "_missing": _missing,
        "_int_required": _int_required,
        "_int_optional": _int_optional,
        "_parse_int": parse_java_int,
        "_small": _SMALL_INTS.get,
    }
    for i, (attr, wire, kind, required) in enumerate(spec):
        v = f"v{i}"
        names.append(v)
        env[f"d{i}"] = defaults[attr]
        lines.append(f"    {v} = get({wire!r})")
        if required:
            lines.append(f"    if {v} is None: raise _missing({wire!r}, cls)")
            if kind == BOOL:
                lines.append(f"    {v} = {_bool_expr(v)}")
            elif kind != STR:
                lines.append(f"    {v} = {_int_expr(v, kind)} else "
                             f"_int_required({v}, {wire!r}, {kind!r}, cls)")
        elif kind == STR:
            lines.append(f"    if {v} is None: {v} = d{i}")
        elif kind == BOOL:
            lines.append(f"    {v} = d{i} if {v} is None else {_bool_expr(v)}")
        else:
            lines.append(f"    {v} = d{i} if {v} is None else {_int_expr(v, kind)} else "
                         f"_int_optional({v}, {wire!r}, {kind!r}, cls, d{i})")
    lines.append(f"    return cls({', '.join(names)})")
    exec("\n".join(lines), env)  # noqa: S102 - code built only from the class's own SPEC
    return env["parse"]


def header(cls: type[H]) -> type[H]:
    """Class decorator: record ``cls``'s wire SPEC; it becomes a dataclass (``__init__``,
    ``__repr__``, ``__eq__``) on first instantiation and compiles its parser on first parse.

    Generating the dataclass methods of all ~50 header classes at import was the largest
    single cost of importing the broker (``rmq-emu up`` cold start, issue 5), and most classes
    are never instantiated in a given process. Header classes derive from
    :class:`CommandHeader` directly (no dataclass bases), so deferring it changes nothing.
    """
    for base in cls.__mro__[1:]:
        if base.__dict__.get("SPEC"):
            raise TypeError(f"{cls.__name__}: a header must derive from CommandHeader directly, "
                            f"not from header {base.__name__}")
    spec = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_class_var(annotation):
            continue
        f = cls.__dict__.get(name)
        if not isinstance(f, dataclasses.Field) or "wire" not in f.metadata:
            raise TypeError(f"{cls.__name__}: every field must be declared with req() or opt()")
        spec.append((name, f.metadata["wire"], f.metadata["kind"], f.metadata["required"]))
    cls.SPEC = tuple(spec)
    cls.__init__ = _first_init  # type: ignore[misc]
    cls._parse = staticmethod(_lazy_parser(cls))
    return cls


def _is_class_var(annotation: Any) -> bool:
    # ``from __future__ import annotations``: annotations are strings (as dataclasses sees them).
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


_realize_lock = threading.Lock()


def realize(cls: type) -> type:
    """Make header class ``cls`` a dataclass now (idempotent, thread-safe)."""
    if "__dataclass_fields__" not in cls.__dict__:
        with _realize_lock:
            if "__dataclass_fields__" not in cls.__dict__:
                # dataclass() never replaces an __init__ the class defines: drop the stand-in.
                if cls.__dict__.get("__init__") is _first_init:
                    del cls.__init__
                dataclasses.dataclass(cls)
    return cls


def _first_init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    for klass in reversed(cls.__mro__):  # the decorated class, also under a plain subclass
        if klass.__dict__.get("__init__") is _first_init:
            realize(klass)
    cls.__init__(self, *args, **kwargs)


def _lazy_parser(cls: type) -> Callable[[dict[str, str] | None], Any]:
    """A stand-in that compiles ``cls``'s parser on first use and installs it: most of the ~50
    header classes are never parsed in a given process, and compiling them all at import
    cost a noticeable part of ``rmq-emu up``'s cold start (issue 5)."""

    def parse(ext: dict[str, str] | None) -> Any:
        real = compile_parser(cls, cls.SPEC)
        cls._parse = staticmethod(real)
        return real(ext)

    return parse
