"""SQL92 subscriptions: grammar, compile-time checks and evaluation as RocketMQ's filter module."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.commitlog.record import MessageRecord, encode_record
from rocketmq_emu.broker.filter.expression import EvalError, java_compare
from rocketmq_emu.broker.filter.message_filter import (
    check_client_config,
    pull_filter,
    record_properties,
    sql92_record_filter,
)
from rocketmq_emu.broker.filter.parser import FilterError, compile_sql92, evaluate
from rocketmq_emu.broker.remoting.codes import ResponseCode


def ev(expr: str, **props: str):
    """Raw three-valued result of ``expr`` against ``props``."""
    return compile_sql92(expr).evaluate(props)


# --- grammar -------------------------------------------------------------------------------
@pytest.mark.parametrize("expr", [
    "a > 5 AND b = 'abc'",
    "a BETWEEN 0 AND 3",
    "a not between 0 and 3",
    "a IS NULL",
    "a is not null",
    "a IN ('x', 'y')",
    "a NOT IN ('x')",
    "TRUE",
    "flag",
    "(a > 1) OR (b < -2.5)",
    "a = 1 -- trailing comment\n",
    "/* leading */ a = 1",
    "a >= 3L",
    "a = 'it''s'",
    "ANDROID = 'x'",
    "$x_1 = 'y'",
    "a <> 'x'",
    "a > 1.5e3",
    "a CONTAINS 'x'",
    "a NOT STARTSWITH 'x'",
    "a ENDSWITH 'z'",
])
def test_valid_expressions_compile(expr):
    """Every construct of SelectorParser.jj (and the 5.x string tests) compiles."""
    assert compile_sql92(expr).is_boolean


@pytest.mark.parametrize("expr, cause", [
    ("", "ParseException"),
    ("a >", "ParseException"),
    ("a === 1", "ParseException"),
    ("a.b = 1", "ParseException"),
    ("'x'", "ParseException"),
    ("5", "ParseException"),
    ("a = NULL", "RuntimeException"),
    ("a > 'x'", "RuntimeException"),
    ("a > TRUE", "RuntimeException"),
    ("(a > 1) > 2", "RuntimeException"),
    ("5 IN ('a')", "RuntimeException"),
    ("a IN (1, 2)", "ParseException"),
    ("a BETWEEN 3 AND 1", "RuntimeException"),
    ("a BETWEEN 'x' AND 'y'", "RuntimeException"),
    ("TRUE = 1", "RuntimeException"),
    ("a > 0.0", "RuntimeException"),
    ("a = 9223372036854775808", "NumberFormatException"),
    ("a LIKE 'x%'", "ParseException"),
    ("a = 007", "ParseException"),
    ("(a = 1", "ParseException"),
])
def test_bad_expressions_raise_filter_error_naming_the_java_cause(expr, cause):
    """Invalid selectors fail to compile with the Java exception class in the message."""
    with pytest.raises(FilterError) as info:
        compile_sql92(expr)
    assert cause in str(info.value)


def test_parse_error_message_names_position_and_expected_tokens():
    """A syntax error says what was found where, like JavaCC's ParseException."""
    with pytest.raises(FilterError) as info:
        compile_sql92("a >= ")
    assert 'Encountered "<EOF>"' in info.value.detail
    assert "Was expecting one of" in info.value.detail


def test_keywords_are_case_insensitive_and_property_names_keep_case():
    """``and``/``AND`` are the same keyword; ``A`` and ``a`` are different properties."""
    assert evaluate("A = 'x' and a = 'y'", {"A": "x", "a": "y"})
    assert not evaluate("A = 'x'", {"a": "x"})


# --- evaluation ----------------------------------------------------------------------------
def test_numeric_comparison_parses_the_property():
    """A String property compared with a number literal is read as that number."""
    assert evaluate("a > 5", {"a": "10"})
    assert not evaluate("a > 5", {"a": "3"})
    assert evaluate("a >= 1.5", {"a": "1.5"})
    assert evaluate("a < -2", {"a": "-3"})


def test_non_numeric_property_against_number_is_an_error_not_a_match():
    """``a > 5`` with ``a='abc'`` throws in Java; the broker skips the message."""
    with pytest.raises(EvalError):
        ev("a > 5", a="abc")
    assert not evaluate("a > 5", {"a": "abc"})


def test_integer_literal_reads_property_as_int32():
    """``Integer.valueOf``: a decimal or out-of-range property fails against an int literal."""
    assert not evaluate("a = 3", {"a": "3.0"})
    assert not evaluate("a > 3", {"a": "3000000000"})
    assert evaluate("a > 3000000000", {"a": "3000000001"})


def test_unknown_property_makes_comparisons_not_true():
    """An absent property gives SQL unknown, never a match, also under NOT / <>."""
    for expr in ("a = 'x'", "a <> 'x'", "a > 1", "a BETWEEN 1 AND 2", "a IN ('x')",
                 "NOT (a = 'x')", "a NOT IN ('x')"):
        assert ev(expr) is None, expr
        assert not evaluate(expr, {})


def test_equality_with_null_on_the_right_is_false_not_unknown():
    """``doCreateEqual``: only a null *left* side gives unknown, so ``NOT ('x' = a)`` matches."""
    assert ev("'x' = a") is False
    assert evaluate("NOT ('x' = a)", {})


def test_is_null_and_is_not_null():
    """IS NULL is true exactly for absent properties."""
    assert evaluate("a IS NULL", {})
    assert not evaluate("a IS NULL", {"a": "1"})
    assert evaluate("a IS NOT NULL", {"a": "1"})
    assert not evaluate("a IS NOT NULL", {})


def test_three_valued_and_or():
    """AND/OR follow SQL three-valued logic (LogicExpression)."""
    assert ev("a = 'x' AND b = 'y'", b="n") is False
    assert ev("a = 'x' AND b = 'y'", b="y") is None
    assert ev("a = 'x' OR b = 'y'", b="y") is True
    assert ev("a = 'x' OR b = 'y'", b="n") is None


def test_between_is_inclusive_and_not_between_is_its_complement():
    """BETWEEN includes both bounds."""
    for value, inside in (("0", True), ("3", True), ("-1", False), ("4", False)):
        assert evaluate("a BETWEEN 0 AND 3", {"a": value}) is inside
        assert evaluate("a NOT BETWEEN 0 AND 3", {"a": value}) is not inside


def test_in_matches_exact_strings():
    """IN compares strings exactly."""
    assert evaluate("a IN ('x', 'y')", {"a": "y"})
    assert not evaluate("a IN ('x', 'y')", {"a": "Y"})
    assert evaluate("a NOT IN ('x', 'y')", {"a": "z"})


def test_string_equality_and_quote_escape():
    """Strings compare with equals; '' inside a literal is one quote."""
    assert evaluate("a = 'it''s'", {"a": "it's"})
    assert not evaluate("a = 'abc'", {"a": "abd"})


def test_comparing_two_numeric_strings_uses_doubles():
    """``'10' > '9'`` is numeric, not lexicographic."""
    assert evaluate("a > b", {"a": "10", "b": "9"})
    assert not evaluate("a > b", {"a": "x", "b": "9"})


def test_property_alone_is_false_unless_absent():
    """A bare property is a Boolean cast: a String value is never TRUE."""
    assert ev("flag", flag="true") is False
    assert ev("flag") is None


def test_boolean_literal_against_string_property():
    """``a = TRUE`` reads the property with Boolean.valueOf."""
    assert evaluate("a = TRUE", {"a": "true"})
    assert evaluate("a = FALSE", {"a": "whatever"})


def test_not_binds_tighter_than_comparison_as_in_jms():
    """``NOT a = 'x'`` is ``(NOT a) = 'x'``: never true (JMS selector precedence)."""
    assert not evaluate("NOT a = 'x'", {"a": "y"})
    assert evaluate("NOT (a = 'x')", {"a": "y"})


def test_tags_and_keys_are_visible_properties():
    """System properties such as TAGS are in the evaluation context."""
    assert evaluate("TAGS IN ('TagA')", {"TAGS": "TagA", "a": "1"})


def test_rocketmq5_string_tests():
    """CONTAINS / STARTSWITH / ENDSWITH are false for absent values and empty searches."""
    assert evaluate("a CONTAINS 'bc'", {"a": "abcd"})
    assert evaluate("a STARTSWITH 'ab'", {"a": "abcd"})
    assert evaluate("a ENDSWITH 'cd'", {"a": "abcd"})
    assert evaluate("a NOT CONTAINS 'x'", {"a": "abcd"})
    assert not evaluate("a NOT CONTAINS 'x'", {})
    assert not evaluate("a CONTAINS ''", {"a": "abcd"})


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1))
def test_integer_comparisons_agree_with_python(value, bound):
    """For any int32 property and literal, > and = agree with integer arithmetic."""
    assert evaluate(f"a > {bound}", {"a": str(value)}) is (value > bound)
    assert evaluate(f"a = {bound}", {"a": str(value)}) is (value == bound)


def test_java_compare_boolean_against_number_is_less():
    """``__compare``: a Boolean against a number answers -1."""
    assert java_compare(True, 5) == -1


# --- message filter / broker checks --------------------------------------------------------
def _raw(props: dict[str, str]) -> bytes:
    return encode_record(MessageRecord(topic="T", body=b"hello", properties=props))


def test_record_properties_reads_the_stored_properties_string():
    """The filter reads properties straight from the raw commitlog record."""
    props = {"a": "1", "TAGS": "t", "UNIQ_KEY": "ABC"}
    assert record_properties(_raw(props)) == props


def test_record_filter_matches_raw_records():
    """A compiled SQL92 record filter accepts and rejects raw records."""
    f = sql92_record_filter("a BETWEEN 1 AND 3")
    assert f(_raw({"a": "2"}))
    assert not f(_raw({"a": "7"}))
    assert not f(_raw({}))


class _Sub:
    def __init__(self, expr: str, expression_type: str = "SQL92") -> None:
        self.topic = "T"
        self.sub_string = expr
        self.expression_type = expression_type
        self.class_filter_mode = False


def test_pull_filter_codes_for_bad_expressions():
    """Bad SQL in the pull request → 23; a bad one registered by heartbeat → 27."""
    assert pull_filter(_Sub("a >"), from_request=True)[1] == (
        ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
    code, _ = pull_filter(_Sub("a >"), from_request=False)[1]
    assert code == ResponseCode.FILTER_DATA_NOT_EXIST
    assert pull_filter(_Sub("*", "TAG"), True) == (None, None)
    assert pull_filter(_Sub("a = 1"), True)[0] is not None


def test_check_client_config_gate_and_parse_failure():
    """46: TAG always OK; SQL92 needs enablePropertyFilter; a bad expression → 23 + remark."""
    assert check_client_config({"expressionType": "TAG"}, False) == (0, None)
    code, remark = check_client_config({"expressionType": "SQL92", "subString": "a=1"}, False)
    assert code == ResponseCode.SYSTEM_ERROR
    assert remark == "The broker does not support consumer to filter message by SQL92"
    assert check_client_config({"expressionType": "SQL92", "subString": "a=1"}, True) == (0, None)
    code, remark = check_client_config({"expressionType": "SQL92", "subString": "a="}, True)
    assert code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert remark.startswith("org.apache.rocketmq.filter.parser.ParseException")


def test_deep_nesting_compiles_or_fails_cleanly():
    """Thousands of parentheses are fine; thousands of NOTs are a FilterError, not a crash
    (Java: StackOverflowError, caught as MQFilterException)."""
    assert evaluate("(" * 5000 + "a = 1" + ")" * 5000, {"a": "1"})
    with pytest.raises(FilterError):
        compile_sql92("NOT " * 3000 + "(a = 1)")
