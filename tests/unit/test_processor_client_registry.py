"""Pure pieces of the client registry: subscriptions, enum reading, tags-code matching."""

from __future__ import annotations

from rocketmq_emu.broker.client_manager import CONSUME_TYPES, SubscriptionData, enum_name
from rocketmq_emu.broker.message import java_string_hash


def test_subscription_splits_tags_on_double_bar():
    """FilterAPI.build: "a || b" gives tags [a, b] and their String.hashCode codes."""
    sub = SubscriptionData.build("T", " a || b ||")
    assert sub.tags_set == ["a", "b"]
    assert sub.code_set == {java_string_hash("a"), java_string_hash("b")}


def test_empty_or_star_subscription_matches_everything():
    """An empty expression or "*" subscribes to all tags, including untagged messages."""
    for expr in ("", None, "*", " * "):
        sub = SubscriptionData.build("T", expr)
        assert sub.sub_string == "*" and sub.matches_tags_code(0)


def test_tag_subscription_rejects_other_tags_codes():
    """A tag subscription accepts only its tags' codes."""
    sub = SubscriptionData.build("T", "a")
    assert sub.matches_tags_code(java_string_hash("a"))
    assert not sub.matches_tags_code(java_string_hash("b"))
    assert not sub.matches_tags_code(0)


def test_heartbeat_subscription_without_code_set_computes_it():
    """A heartbeat SubscriptionData without codeSet gets one from tagsSet."""
    sub = SubscriptionData.from_json({"topic": "T", "subString": "x", "tagsSet": ["x"]})
    assert sub.code_set == {java_string_hash("x")}


def test_enums_by_name_by_ordinal_and_by_digit_string():
    """Enums arrive as names (Java), ints (C++) or digit strings; all read the same."""
    assert enum_name("CONSUME_PASSIVELY", CONSUME_TYPES) == "CONSUME_PASSIVELY"
    assert enum_name(1, CONSUME_TYPES) == "CONSUME_PASSIVELY"
    assert enum_name("0", CONSUME_TYPES) == "CONSUME_ACTIVELY"
    assert enum_name(9, CONSUME_TYPES) is None and enum_name(None, CONSUME_TYPES) is None
