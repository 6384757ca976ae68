"""Parse a SQL92 subscription (``MessageSelector.bySql``) into an :mod:`expression` tree.

The language is RocketMQ's ``filter/parser/SelectorParser.jj`` (ActiveMQ's JMS selector grammar
without LIKE, ESCAPE, XPATH, XQUERY, arithmetic, hex and octal literals). Written down as the
``lark`` grammar below (LALR); keywords and identifiers are case-insensitive, property names keep
their case::

    start      : or_expr
    or_expr    : and_expr (OR and_expr)*
    and_expr   : eq_expr (AND eq_expr)*
    eq_expr    : cmp_expr ( "=" cmp_expr | "<>" cmp_expr | IS NULL | IS NOT NULL )*
    cmp_expr   : unary ( (">" | ">=" | "<" | "<=") unary
                       | [NOT] BETWEEN unary AND unary
                       | [NOT] IN "(" STRING ("," STRING)* ")"
                       | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) STRING )*   # 5.x
    unary      : "+" unary | "-" unary | NOT unary | primary
    primary    : literal | ID | "(" or_expr ")"
    literal    : STRING | DECIMAL | FLOAT | TRUE | FALSE | NULL
    STRING     : "'" ( "''" | any char but "'" )* "'"
    DECIMAL    : "0" | [1-9][0-9]* [lL]?           # Integer if it fits in 32 bits, else Long
    FLOAT      : [0-9]+ "." [0-9]* EXP? | "." [0-9]+ EXP? | [0-9]+ EXP     # Double
    EXP        : [eE] [+-]? [0-9]+
    ID         : [a-zA-Z_$] [a-zA-Z0-9_$]*
    comments   : "--" to end of line, "/* ... */"

Note the JMS precedence this inherits: ``NOT`` binds tighter than comparisons, so
``NOT a = 'x'`` is ``(NOT a) = 'x'`` (never true); write ``NOT (a = 'x')``.

Compile-time checks raise :class:`FilterError` as ``SelectorParser`` throws
``MQFilterException`` (its ``getMessage()`` is the cause's ``toString()``, which the broker
puts in the remark of SUBSCRIPTION_PARSE_FAILED): NULL in ``=``/``<>``, non-numeric constants
or boolean expressions in ``<``/``>``/BETWEEN, ``IN`` on a non-property, ``BETWEEN`` bounds in
the wrong order, a non-boolean whole expression, integer literals beyond ``Long``, float
literals beyond ``Double.MAX_VALUE`` or below ``Double.MIN_VALUE`` (so ``0.0`` is refused, as in
4.9.8).
"""

from __future__ import annotations

from functools import lru_cache

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from rocketmq_emu.broker.filter.errors import FilterError  # noqa: F401 - re-exported
from rocketmq_emu.broker.filter.expression import (
    DOUBLE_MAX,
    DOUBLE_MIN,
    LONG_MAX,
    BooleanCast,
    Compare,
    Constant,
    Equal,
    EvalError,
    Expression,
    In,
    JInt,
    JLong,
    Logic,
    Negate,
    Not,
    Property,
    StringTest,
    java_compare,
)

GRAMMAR = r"""
start: or_expr

?or_expr: and_expr
        | or_expr OR and_expr                       -> or_

?and_expr: eq_expr
         | and_expr AND eq_expr                     -> and_

?eq_expr: cmp_expr
        | eq_expr "=" cmp_expr                      -> eq
        | eq_expr "<>" cmp_expr                     -> ne
        | eq_expr IS NULL                           -> is_null
        | eq_expr IS NOT NULL                       -> is_not_null

?cmp_expr: unary
         | cmp_expr ">" unary                       -> gt
         | cmp_expr ">=" unary                      -> ge
         | cmp_expr "<" unary                       -> lt
         | cmp_expr "<=" unary                      -> le
         | cmp_expr BETWEEN unary AND unary         -> between
         | cmp_expr NOT BETWEEN unary AND unary     -> not_between
         | cmp_expr IN "(" string_list ")"          -> in_
         | cmp_expr NOT IN "(" string_list ")"      -> not_in
         | cmp_expr STRING_OP STRING                -> string_test
         | cmp_expr NOT STRING_OP STRING            -> not_string_test

string_list: STRING ("," STRING)*

?unary: "+" unary
      | "-" unary                                   -> negate
      | NOT unary                                   -> not_
      | primary

?primary: STRING                                    -> string
        | DECIMAL                                   -> decimal
        | FLOAT                                     -> float_
        | TRUE                                      -> true
        | FALSE                                     -> false
        | NULL                                      -> null
        | ID                                        -> prop
        | "(" or_expr ")"

NOT.2: /NOT(?![a-zA-Z0-9_$])/i
AND.2: /AND(?![a-zA-Z0-9_$])/i
OR.2: /OR(?![a-zA-Z0-9_$])/i
BETWEEN.2: /BETWEEN(?![a-zA-Z0-9_$])/i
IN.2: /IN(?![a-zA-Z0-9_$])/i
TRUE.2: /TRUE(?![a-zA-Z0-9_$])/i
FALSE.2: /FALSE(?![a-zA-Z0-9_$])/i
NULL.2: /NULL(?![a-zA-Z0-9_$])/i
IS.2: /IS(?![a-zA-Z0-9_$])/i
STRING_OP.2: /(CONTAINS|STARTSWITH|ENDSWITH)(?![a-zA-Z0-9_$])/i

ID: /[a-zA-Z_$][a-zA-Z0-9_$]*/
FLOAT.3: /[0-9]+\.[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+/
DECIMAL: /0|[1-9][0-9]*[lL]?/
STRING: /'(''|[^'])*'/s

LINE_COMMENT: /--[^\n\r]*(\r\n|\n|\r)/
BLOCK_COMMENT: /\/\*(.|\n)*?\*\//
WS: /[ \t\n\r\f]+/
%ignore WS
%ignore LINE_COMMENT
%ignore BLOCK_COMMENT
"""

PARSE_EXCEPTION = "org.apache.rocketmq.filter.parser.ParseException"
RUNTIME_EXCEPTION = "java.lang.RuntimeException"
NUMBER_FORMAT_EXCEPTION = "java.lang.NumberFormatException"


class _Check(Exception):
    """Internal: a compile-time check failed (re-raised as FilterError)."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(message)
        self.java_class = java_class


def _runtime(message: str) -> _Check:
    return _Check(RUNTIME_EXCEPTION, message)


def as_boolean(expr: Expression) -> Expression:
    """``SelectorParser.asBooleanExpression``."""
    if expr.is_boolean:
        return expr
    if isinstance(expr, Property):
        return BooleanCast(expr)
    raise _Check(PARSE_EXCEPTION, f"Expression will not result in a boolean value: {expr}")


def _check_less_than_operand(expr: Expression) -> None:
    """``ComparisonExpression.checkLessThanOperand``: only numbers in < > BETWEEN."""
    if isinstance(expr, Constant):
        if isinstance(expr.value, int | float) and not isinstance(expr.value, bool):
            return
        raise _runtime(f"Value '{expr}' cannot be compared.")
    if expr.is_boolean:
        raise _runtime(f"Value '{expr}' cannot be compared.")


def _check_equal_operand(expr: Expression) -> None:
    """``checkEqualOperand``: NULL cannot be compared with ``=``."""
    if isinstance(expr, Constant) and expr.value is None:
        raise _runtime(f"'{expr}' cannot be compared.")


def _compare(op: str, left: Expression, right: Expression) -> Expression:
    _check_less_than_operand(left)
    _check_less_than_operand(right)
    return Compare(op, left, right)


def _equal(left: Expression, right: Expression) -> Expression:
    _check_equal_operand(left)
    _check_equal_operand(right)
    if isinstance(left, Constant) and isinstance(right, Constant) and left.is_boolean \
            and not right.is_boolean:
        raise _runtime(f"'{left}' cannot be compared with '{right}'")
    return Equal(left, right)


def _decode_string(token: str) -> str:
    return token[1:-1].replace("''", "'")


@v_args(inline=True)
class _Builder(Transformer):
    """Parse tree → expression tree, applying the checks of the Java factories."""

    def start(self, expr: Expression) -> Expression:
        return as_boolean(expr)

    def or_(self, left: Expression, _op: Token, right: Expression) -> Expression:
        return Logic("OR", as_boolean(left), as_boolean(right))

    def and_(self, left: Expression, _op: Token, right: Expression) -> Expression:
        return Logic("AND", as_boolean(left), as_boolean(right))

    def eq(self, left: Expression, right: Expression) -> Expression:
        return _equal(left, right)

    def ne(self, left: Expression, right: Expression) -> Expression:
        return Not(_equal(left, right))

    def is_null(self, left: Expression, _is: Token, _null: Token) -> Expression:
        return Equal(left, Constant(None, True))

    def is_not_null(self, left: Expression, _is: Token, _not: Token, _null: Token) -> Expression:
        return Not(Equal(left, Constant(None, True)))

    def gt(self, left: Expression, right: Expression) -> Expression:
        return _compare(">", left, right)

    def ge(self, left: Expression, right: Expression) -> Expression:
        return _compare(">=", left, right)

    def lt(self, left: Expression, right: Expression) -> Expression:
        return _compare("<", left, right)

    def le(self, left: Expression, right: Expression) -> Expression:
        return _compare("<=", left, right)

    def between(self, value: Expression, _b: Token, low: Expression, _a: Token,
                high: Expression) -> Expression:
        # ComparisonExpression.createBetween: constant bounds must be ordered.
        if isinstance(low, Constant) and isinstance(high, Constant):
            if low.value is None or high.value is None:
                raise _runtime("Illegal values of between, values can not be null!")
            try:
                order = java_compare(high.value, low.value)
            except EvalError as exc:
                raise _Check(NUMBER_FORMAT_EXCEPTION, str(exc)) from None
            if order < 0:
                raise _runtime(
                    f"Illegal values of between, left value({low}) must less than or equal "
                    f"to right value({high})")
        return Logic("AND", _compare(">=", value, low), _compare("<=", value, high))

    def not_between(self, value: Expression, _n: Token, _b: Token, low: Expression, _a: Token,
                    high: Expression) -> Expression:
        return Logic("OR", _compare("<", value, low), _compare(">", value, high))

    def _in(self, left: Expression, values: list[str], negated: bool) -> Expression:
        if not isinstance(left, Property):
            raise _runtime(f"Expected a property for In expression, got: {left}")
        return In(left, values, negated)

    def in_(self, left: Expression, _in: Token, values: list[str]) -> Expression:
        return self._in(left, values, False)

    def not_in(self, left: Expression, _n: Token, _in: Token, values: list[str]) -> Expression:
        return self._in(left, values, True)

    def string_list(self, *tokens: Token) -> list[str]:
        return [_decode_string(t) for t in tokens]

    def string_test(self, left: Expression, op: Token, text: Token) -> Expression:
        return StringTest(op.upper(), left, _decode_string(text), False)

    def not_string_test(self, left: Expression, _n: Token, op: Token, text: Token) -> Expression:
        return StringTest(op.upper(), left, _decode_string(text), True)

    def negate(self, right: Expression) -> Expression:
        return Negate(right)

    def not_(self, _not: Token, right: Expression) -> Expression:
        return Not(as_boolean(right))

    def string(self, token: Token) -> Expression:
        return Constant(_decode_string(token))

    def decimal(self, token: Token) -> Expression:
        # ConstantExpression.createFromDecimal: strip l/L, new Long(text), narrow to Integer.
        text = token[:-1] if token[-1] in "lL" else str(token)
        value = int(text)
        if value > LONG_MAX:
            raise _Check(NUMBER_FORMAT_EXCEPTION, f'For input string: "{text}"')
        if -(2**31) <= value <= 2**31 - 1:
            return Constant(JInt(value))
        return Constant(JLong(value))

    def float_(self, token: Token) -> Expression:
        # ConstantExpression.createFloat.
        value = float(token)
        if value > DOUBLE_MAX:
            raise _runtime(f"{token} is greater than {DOUBLE_MAX!r}")
        if value < DOUBLE_MIN:
            raise _runtime(f"{token} is less than 4.9E-324")
        return Constant(value)

    def true(self, _t: Token) -> Expression:
        return Constant(True, True)

    def false(self, _t: Token) -> Expression:
        return Constant(False, True)

    def null(self, _t: Token) -> Expression:
        return Constant(None, True)

    def prop(self, token: Token) -> Expression:
        return Property(str(token))


_PARSER = Lark(GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=False)


def _terminal_text(name: str) -> str:
    """A terminal as the user typed it: ``">="`` rather than lark's ``__ANON_1``."""
    try:
        pattern = _PARSER.get_terminal(name).pattern
    except KeyError:
        return name
    if pattern.type == "str":
        return f'"{pattern.value}"'
    return name


def _parse_error_message(exc: UnexpectedInput, text: str) -> str:
    """``ParseException`` style: what was found where, and what was expected."""
    line = getattr(exc, "line", 1)
    column = getattr(exc, "column", 1)
    if isinstance(exc, UnexpectedEOF):
        found = "<EOF>"
        line, column = 1, len(text) + 1
    elif isinstance(exc, UnexpectedToken):
        found = str(exc.token) if exc.token.type != "$END" else "<EOF>"
    elif isinstance(exc, UnexpectedCharacters):
        found = exc.char
    else:
        found = "?"
    names = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or []
    expected = sorted(_terminal_text(name) for name in names)
    msg = f'Encountered "{found}" at line {line}, column {column}.'
    if expected:
        msg += " Was expecting one of: " + ", ".join(expected)
    return msg


@lru_cache(maxsize=256)
def compile_sql92(expression: str) -> Expression:
    """Compile a SQL92 subscription; :class:`FilterError` if it is not valid
    (``SqlFilter.compile``). Results are cached like ``SelectorParser``'s parse cache."""
    if expression is None or not expression.strip():
        raise FilterError(PARSE_EXCEPTION, 'Encountered "<EOF>" at line 1, column 1.',
                          expression or "")
    try:
        tree = _PARSER.parse(expression)
        return _Builder().transform(tree)
    except VisitError as exc:
        cause = exc.orig_exc
        if isinstance(cause, _Check):
            raise FilterError(cause.java_class, str(cause), expression) from None
        raise FilterError(RUNTIME_EXCEPTION, str(cause), expression) from None
    except UnexpectedInput as exc:
        raise FilterError(PARSE_EXCEPTION, _parse_error_message(exc, expression),
                          expression) from None
    except (LarkError, RecursionError) as exc:
        raise FilterError(PARSE_EXCEPTION, str(exc), expression) from None


def evaluate(expression: str, properties: dict[str, str]) -> bool:
    """Compile (cached) and match in one call: True only when the expression is TRUE."""
    return compile_sql92(expression).matches(properties)
