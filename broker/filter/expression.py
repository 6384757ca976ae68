"""The SQL92 expression tree and its evaluation rules (RocketMQ ``filter/expression/*``, which
were taken from ActiveMQ's JMS selector classes).

Values are those a Java expression sees: message properties are always ``str`` (``String``);
literals are :class:`JInt` (``Integer``), :class:`JLong` (``Long``), ``float`` (``Double``),
``str``, ``bool`` (``Boolean``) or ``None`` (``NULL``). ``evaluate(props)`` returns ``True``,
``False`` or ``None`` (SQL unknown) or raises :class:`EvalError` where Java throws at run time
(e.g. ``a > 3`` when ``a`` is ``"abc"``); the broker treats anything but ``True`` as no match.

Semantics kept from the Java classes (4.9.8 unless noted):

* comparisons with an absent property (``None``) give ``None``; ``NOT None`` is ``None``;
  ``AND``/``OR`` are three-valued (``LogicExpression``);
* ``=`` (``ComparisonExpression.doCreateEqual``): exactly one side null → ``None`` when the
  *left* one is null, else ``False``; both null → ``True`` (this is how ``IS NULL`` works);
* mixed types convert as ``ComparisonExpression.__compare`` does: a String against a number is
  parsed as that number's type (``Integer.valueOf``, ``Long.valueOf``, ``Double.valueOf``; a
  failure is an error), a String against a Boolean with ``Boolean.valueOf``, Boolean against a
  number compares as "less";
* ``>``/``>=``/``<``/``<=`` between two Strings parse both as doubles (error otherwise);
* ``IN`` only matches String values; a property used as a whole boolean is ``False`` unless it
  is absent (``UnaryExpression.createBooleanCast``);
* ``CONTAINS``/``STARTSWITH``/``ENDSWITH`` (and their ``NOT`` forms) are RocketMQ 5.x
  additions: ``False`` for an absent property or an empty search string.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any


class EvalError(Exception):
    """A run-time error of an expression (Java throws; the broker logs and skips the message)."""


class JInt(int):
    """A Java ``Integer`` literal."""

    java_type = "Integer"


class JLong(int):
    """A Java ``Long`` literal."""

    java_type = "Long"


INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DOUBLE_MAX = 1.7976931348623157e308
DOUBLE_MIN = 5e-324  # Double.MIN_VALUE: the smallest positive double

_INT_RE = re.compile(r"[+-]?[0-9]+")
_DOUBLE_RE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")


def java_type(value: Any) -> str:
    """The Java class a value stands for: Boolean, Integer, Long, Double, String."""
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, JInt):
        return "Integer"
    if isinstance(value, int):
        return "Long"
    if isinstance(value, float):
        return "Double"
    return "String"


def parse_integer(text: str, bits: int = 32) -> int:
    """``Integer.valueOf`` / ``Long.valueOf``: optional sign, ASCII digits, range-checked."""
    if not _INT_RE.fullmatch(text):
        raise EvalError(f'java.lang.NumberFormatException: For input string: "{text}"')
    value = int(text)
    lo, hi = (INT_MIN, INT_MAX) if bits == 32 else (LONG_MIN, LONG_MAX)
    if not lo <= value <= hi:
        raise EvalError(f'java.lang.NumberFormatException: For input string: "{text}"')
    return JInt(value) if bits == 32 else JLong(value)


def parse_double(text: str) -> float:
    """``Double.valueOf``: Java trims ASCII control/space characters and accepts NaN,
    Infinity and an ``f``/``d`` suffix."""
    trimmed = text.strip("".join(chr(c) for c in range(33)))
    if not _DOUBLE_RE.fullmatch(trimmed):
        raise EvalError(f'java.lang.NumberFormatException: For input string: "{text}"')
    body = trimmed.rstrip("fFdD") if not trimmed.endswith("Infinity") else trimmed
    if body.lstrip("+-") == "NaN":
        return math.nan
    if body.lstrip("+-") == "Infinity":
        return -math.inf if body.startswith("-") else math.inf
    return float(body)


def _convert_string(text: str, to: str) -> Any:
    if to == "Boolean":
        return text.lower() == "true"
    if to == "Integer":
        return parse_integer(text, 32)
    if to == "Long":
        return parse_integer(text, 64)
    return parse_double(text)


def _cmp_doubles(a: float, b: float) -> int:
    """``Double.compareTo``: NaN is greater than everything and equal to itself."""
    if math.isnan(a) or math.isnan(b):
        return (math.isnan(a) > math.isnan(b)) - (math.isnan(a) < math.isnan(b))
    if a == b == 0.0:
        return (math.copysign(1, a) > math.copysign(1, b)) - (
            math.copysign(1, a) < math.copysign(1, b))
    return (a > b) - (a < b)


def _cmp_same(lv: Any, rv: Any) -> int:
    if isinstance(lv, float) or isinstance(rv, float):
        return _cmp_doubles(float(lv), float(rv))
    return (lv > rv) - (lv < rv)


_NUMERIC = ("Integer", "Long", "Double")


def java_compare(lv: Any, rv: Any) -> int:
    """``ComparisonExpression.__compare`` with ``convertStringExpressions`` on (as
    ``SelectorParser.parse`` always sets it)."""
    lc, rc = java_type(lv), java_type(rv)
    if lc != rc:
        if lc == "Boolean":
            if rc == "String":
                # Java casts the Boolean to String here: a ClassCastException.
                raise EvalError("java.lang.ClassCastException: java.lang.Boolean cannot be "
                                "cast to java.lang.String")
            return -1
        if lc in _NUMERIC:
            if rc in _NUMERIC:
                pass  # widened below: int/long compare exactly, anything with double as double
            elif rc == "String":
                rv = _convert_string(rv, lc)
            else:
                return -1
        elif lc == "String":
            if rc == "Boolean" or rc in _NUMERIC:
                lv = _convert_string(lv, rc)
            else:
                return -1
        else:
            return -1
    return _cmp_same(lv, rv)


def java_str(value: Any) -> str:
    """``ConstantExpression.toString``."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return repr(value)
    return str(int(value))


Props = Mapping[str, str]


class Expression:
    """A node. ``is_boolean`` marks Java's ``BooleanExpression`` implementations."""

    is_boolean = False

    def evaluate(self, props: Props) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def matches(self, props: Props) -> bool:
        """True only when the expression evaluates to TRUE (``BooleanExpression.matches``);
        run-time errors count as no match, as ``ExpressionMessageFilter`` logs and skips."""
        try:
            return self.evaluate(props) is True
        except (EvalError, RecursionError):
            return False


class Constant(Expression):
    """``ConstantExpression`` (``BooleanConstantExpression`` for TRUE/FALSE/NULL)."""

    def __init__(self, value: Any, boolean_constant: bool = False) -> None:
        self.value = value
        self.is_boolean = boolean_constant

    def evaluate(self, props: Props) -> Any:
        return self.value

    def __str__(self) -> str:
        return java_str(self.value)


class Property(Expression):
    """``PropertyExpression``: the message property of that name (None when absent)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, props: Props) -> Any:
        return props.get(self.name)

    def __str__(self) -> str:
        return self.name


class Negate(Expression):
    """Unary minus: numbers only; anything else evaluates to None."""

    def __init__(self, right: Expression) -> None:
        self.right = right

    def evaluate(self, props: Props) -> Any:
        value = self.right.evaluate(props)
        if value is None or isinstance(value, bool | str):
            return None
        if isinstance(value, float):
            return -value
        return type(value)(-value)

    def __str__(self) -> str:
        return f"(- {self.right})"


class Not(Expression):
    """``UnaryExpression.createNOT``: None stays None."""

    is_boolean = True

    def __init__(self, right: Expression) -> None:
        self.right = right

    def evaluate(self, props: Props) -> Any:
        value = self.right.evaluate(props)
        if value is None:
            return None
        return not value

    def __str__(self) -> str:
        return f"(NOT {self.right})"


class BooleanCast(Expression):
    """``UnaryExpression.createBooleanCast``: a property used as a condition."""

    is_boolean = True

    def __init__(self, right: Expression) -> None:
        self.right = right

    def evaluate(self, props: Props) -> Any:
        value = self.right.evaluate(props)
        if value is None:
            return None
        return value if isinstance(value, bool) else False

    def __str__(self) -> str:
        return str(self.right)


class Logic(Expression):
    """``LogicExpression`` AND / OR with SQL three-valued logic."""

    is_boolean = True

    def __init__(self, op: str, left: Expression, right: Expression) -> None:
        self.op, self.left, self.right = op, left, right

    def evaluate(self, props: Props) -> Any:
        lv = self.left.evaluate(props)
        if self.op == "AND":
            if lv is False:
                return False
            rv = self.right.evaluate(props)
            if rv is False:
                return False
            return None if lv is None or rv is None else True
        if lv is True:
            return True
        rv = self.right.evaluate(props)
        if rv is True:
            return True
        return None if lv is None or rv is None else False

    def __str__(self) -> str:
        return f"({self.left} {'&&' if self.op == 'AND' else '||'} {self.right})"


class Equal(Expression):
    """``ComparisonExpression.doCreateEqual`` (``=``, and ``IS NULL`` against NULL)."""

    is_boolean = True

    def __init__(self, left: Expression, right: Expression) -> None:
        self.left, self.right = left, right

    def evaluate(self, props: Props) -> Any:
        lv = self.left.evaluate(props)
        rv = self.right.evaluate(props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None:
            return True
        if java_type(lv) == java_type(rv) and lv == rv:
            return True
        return java_compare(lv, rv) == 0

    def __str__(self) -> str:
        return f"({self.left} == {self.right})"


_ORDER_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


class Compare(Expression):
    """``>``, ``>=``, ``<``, ``<=`` (``ComparisonExpression.evaluate``)."""

    is_boolean = True

    def __init__(self, op: str, left: Expression, right: Expression) -> None:
        self.op, self.left, self.right = op, left, right
        self._test = _ORDER_TESTS[op]

    def evaluate(self, props: Props) -> Any:
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            # "Compare String is illegal": both must read as doubles.
            try:
                lv, rv = parse_double(lv), parse_double(rv)
            except EvalError:
                raise EvalError(
                    "It's illegal to compare string by '>=', '>', '<', '<='. "
                    f"lv={lv}, rv={rv}") from None
        return self._test(java_compare(lv, rv))

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


class In(Expression):
    """``UnaryExpression.createInExpression``: String property values only."""

    is_boolean = True

    def __init__(self, prop: Property, values: list[str], negated: bool) -> None:
        self.prop, self.values, self.negated = prop, frozenset(values), negated
        self._listed = list(values)

    def evaluate(self, props: Props) -> Any:
        value = self.prop.evaluate(props)
        if value is None or not isinstance(value, str):
            return None
        return (value in self.values) != self.negated

    def __str__(self) -> str:
        items = ", ".join(self._listed)
        return f"{self.prop} {'NOT IN' if self.negated else 'IN'} ( {items} )"


_STRING_TESTS: dict[str, Callable[[str, str], bool]] = {
    "CONTAINS": lambda v, s: s in v,
    "STARTSWITH": lambda v, s: v.startswith(s),
    "ENDSWITH": lambda v, s: v.endswith(s),
}


class StringTest(Expression):
    """RocketMQ 5.x ``ContainsExpression`` / ``StartsWithExpression`` / ``EndsWithExpression``
    and their NOT forms: False for an absent or non-String value or an empty search."""

    is_boolean = True

    def __init__(self, op: str, right: Expression, search: str, negated: bool) -> None:
        self.op, self.right, self.search, self.negated = op, right, search, negated
        self._test = _STRING_TESTS[op]

    def evaluate(self, props: Props) -> Any:
        if not self.search:
            return False
        value = self.right.evaluate(props)
        if value is None or not isinstance(value, str):
            return False
        return self._test(value, self.search) != self.negated

    def __str__(self) -> str:
        return f"({'NOT ' if self.negated else ''}{self.op} {self.right})"
