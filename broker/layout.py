"""Byte layouts declared once with ``construct``, compiled to :mod:`struct` at import.

Every on-disk and on-wire layout of the broker is a ``construct.Struct`` declared in the module
that owns it (the commitlog record in ``commitlog/record.py``, the consume-queue unit in
``consumequeue/unit.py``...). :class:`Layout` walks such a declaration once and derives what the
hot paths run on: the :mod:`struct` format of a run of fields, each field's byte offset and
size, the fixed size of the whole. No module types a format, an offset or a size again.

Fields it understands:

* fixed: ``FormatField`` (``Int32sb``...), ``Bytes(n)`` (``"ns"``), ``Padding(n)`` (``"nx"``),
  and those wrapped in ``Const``, ``Rebuild`` or ``Default``;
* choices: ``IfThenElse`` and ``Switch``, resolved by the keyword arguments given to
  :class:`Layout` (the context values the declaration reads: ``Layout(RECORD, sysFlag=0)``
  picks the 8-byte hosts of an IPv4 commitlog record);
* variable: ``Bytes(this.n)``, ``GreedyBytes``, ``GreedyRange``, and ``Prefixed`` /
  ``PascalString``, whose length prefix is the field's fixed head. Offsets are known up to
  the first variable part; a field after one still has a format and a size.
* ``Computed`` and ``Pass`` take no bytes.

Anything else raises :class:`LayoutError` naming the field, at import: a declaration the
derivation cannot follow must not silently give a wrong format.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import construct as cs

__all__ = ["Layout", "LayoutError", "LayoutField"]


_INT32_CODES = {"l": "i", "L": "I"}


class LayoutError(ValueError):
    """A declaration (or a question about it) the derivation cannot answer; names the field."""


@dataclass(frozen=True, slots=True)
class LayoutField:
    """One field of a resolved layout.

    ``codes`` is its :mod:`struct` format without byte order ("" for a field with no fixed
    bytes), ``size`` the bytes of that fixed head, ``offset`` its byte offset (None after a
    variable part), ``variable`` whether a variable-size part follows the head (the bytes of a
    ``Prefixed`` field after its length prefix, or the whole of ``Bytes(this.n)``).
    """

    name: str | None
    codes: str
    size: int
    offset: int | None
    variable: bool


class Layout:
    """The :mod:`struct` view of one ``construct.Struct`` declaration, for one shape.

    ``choices`` are the context values its ``IfThenElse`` / ``Switch`` fields read. Every
    answer is computed here, once; :meth:`struct` caches the compiled structs.
    """

    def __init__(self, spec: cs.Construct, **choices: Any) -> None:
        """Resolve ``spec`` (a ``construct.Struct``) with ``choices``; raises LayoutError."""
        spec = _unwrap_struct(spec)
        self.choices = dict(choices)
        context = cs.Container(choices)
        self.byte_order = ""
        fields: list[LayoutField] = []
        offset: int | None = 0
        for sub in spec.subcons:
            name = sub.name if isinstance(sub, cs.Renamed) else None
            codes, size, variable = self._field(sub, context, name)
            fields.append(LayoutField(name, codes, size, offset, variable))
            if offset is not None:
                offset = None if variable else offset + size
        self.fields: tuple[LayoutField, ...] = tuple(fields)
        self._by_name = {f.name: i for i, f in enumerate(fields) if f.name is not None}
        #: Field names in declaration order (unnamed padding left out).
        self.names: tuple[str, ...] = tuple(self._by_name)
        #: Bytes before the first variable part: the offsets known from the start.
        self.fixed_size: int = next(
            (f.offset + f.size for f in fields if f.variable), sum(f.size for f in fields)
        )
        #: Size with every variable part empty (a record with no body, topic, properties).
        self.min_size: int = sum(f.size for f in fields)
        self._structs: dict[tuple[str | None, ...], struct.Struct] = {}

    # --- derivation ---------------------------------------------------------------------------
    def _field(self, con: cs.Construct, context: cs.Container, name: str | None) -> tuple[str, int, bool]:
        """(codes, fixed size, variable tail follows) of one declared field."""
        con = _resolve(con, context, name)
        if isinstance(con, cs.FormatField):
            order, code = con.fmtstr[0], con.fmtstr[1:]
            if self.byte_order and order != self.byte_order:
                raise LayoutError(f"field {name!r}: byte order {order!r} after {self.byte_order!r}")
            self.byte_order = order
            # construct spells int32 "l"; in standard sizes that is struct's "i" (Java's int).
            return _INT32_CODES.get(code, code), con.length, False
        if isinstance(con, cs.Bytes):
            if isinstance(con.length, int):
                return f"{con.length}s", con.length, False
            return "", 0, True  # Bytes(this.bodyLength): its length is another field
        if isinstance(con, cs.Padded) and isinstance(con.subcon, type(cs.Pass)):
            return f"{con.length}x", con.length, False
        if isinstance(con, cs.Prefixed):
            codes, size, _ = self._field(con.lengthfield, context, name)
            return codes, size, True
        if isinstance(con, cs.StringEncoded):
            return self._field(con.subcon, context, name)
        if isinstance(con, (cs.Computed, type(cs.Pass))):
            return "", 0, False
        if isinstance(con, (type(cs.GreedyBytes), cs.GreedyRange)):
            return "", 0, True
        raise LayoutError(f"field {name!r}: {type(con).__name__} has no struct format")

    # --- questions ----------------------------------------------------------------------------
    def field(self, name: str) -> LayoutField:
        """The field called ``name``; LayoutError if the declaration has none."""
        try:
            return self.fields[self._by_name[name]]
        except KeyError:
            raise LayoutError(f"no field {name!r} (fields: {', '.join(self.names)})") from None

    def offset(self, name: str) -> int:
        """Byte offset of ``name``; LayoutError when a variable part precedes it."""
        at = self.field(name).offset
        if at is None:
            raise LayoutError(f"field {name!r} follows a variable part: no fixed offset")
        return at

    def size(self, first: str | None = None, last: str | None = None) -> int:
        """Fixed bytes of the run ``first .. last`` (one field when only ``first`` is given;
        the fixed prefix of the whole when neither is)."""
        if first is not None and last is None:
            return self.field(first).size
        return struct.calcsize(self.format(first, last))

    def codes(self, first: str | None = None, last: str | None = None) -> str:
        """The :mod:`struct` format of fields ``first .. last`` without the byte order.

        Defaults: from the first field to the end of the fixed run (the last field, or the
        first one followed by a variable part, whose fixed head is included). Every field
        before ``last`` in the run must be fixed.
        """
        i = 0 if first is None else self._by_name.get(first, -1)
        if i < 0:
            self.field(first or "")  # raises, naming the fields
        if last is None:
            j = next((k for k in range(i, len(self.fields)) if self.fields[k].variable),
                     len(self.fields) - 1)
        else:
            j = self._by_name.get(last, -1)
            if j < 0:
                self.field(last)
        if j < i:
            raise LayoutError(f"field {last!r} comes before {first!r}")
        for f in self.fields[i:j]:
            if f.variable:
                raise LayoutError(f"a variable part follows {f.name!r}: no one format reaches {last!r}")
        return "".join(f.codes for f in self.fields[i : j + 1])

    def format(self, first: str | None = None, last: str | None = None) -> str:
        """:meth:`codes` with the declaration's byte order in front (a :mod:`struct` format)."""
        return (self.byte_order or ">") + self.codes(first, last)

    def struct(self, first: str | None = None, last: str | None = None) -> struct.Struct:
        """The compiled :meth:`format` of ``first .. last`` (one field when only ``first`` is
        given); cached, so callers share one object."""
        if first is not None and last is None:
            last = first
        key = (first, last)
        compiled = self._structs.get(key)
        if compiled is None:
            compiled = self._structs[key] = struct.Struct(self.format(first, last))
        return compiled

    def sparse_struct(self, names: tuple[str, ...]) -> struct.Struct:
        """A struct reading only ``names`` (at fixed offsets, in order), the bytes between
        them skipped as pad bytes: for a reader that needs a few fields of a long prefix."""
        key = ("sparse", *names)
        compiled = self._structs.get(key)
        if compiled is None:
            parts, at = [], 0
            for name in names:
                offset = self.offset(name)
                if offset < at:
                    raise LayoutError(f"field {name!r} is out of order in {names}")
                if offset > at:
                    parts.append(f"{offset - at}x")
                parts.append(self.field(name).codes)
                at = offset + self.field(name).size
            compiled = self._structs[key] = struct.Struct(self.byte_order + "".join(parts))
        return compiled

    def __repr__(self) -> str:
        shape = "".join(f", {k}={v!r}" for k, v in self.choices.items())
        return f"<Layout {self.format()!r} of {len(self.fields)} fields{shape}>"


def _unwrap_struct(spec: cs.Construct) -> cs.Struct:
    while isinstance(spec, cs.Renamed):
        spec = spec.subcon
    if not isinstance(spec, cs.Struct):
        raise LayoutError(f"a layout is a construct Struct, not {type(spec).__name__}")
    return spec


def _resolve(con: cs.Construct, context: cs.Container, name: str | None) -> cs.Construct:
    """Strip names and value wrappers and settle choices until a primitive is left."""
    while True:
        if isinstance(con, (cs.Renamed, cs.Const, cs.Rebuild, cs.Default)):
            con = con.subcon
        elif isinstance(con, cs.IfThenElse):
            con = con.thensubcon if _evaluate(con.condfunc, context, name) else con.elsesubcon
        elif isinstance(con, cs.Switch):
            key = _evaluate(con.keyfunc, context, name)
            con = con.cases.get(key, con.default)
        else:
            return con


def _evaluate(func: Any, context: cs.Container, name: str | None) -> Any:
    if not callable(func):
        return func
    try:
        return func(context)
    except (KeyError, AttributeError) as exc:
        raise LayoutError(
            f"field {name!r} is a choice on {exc}: give its value to Layout(...)"
        ) from None
