"""The fast Java ``String.hashCode`` (dot product with precomputed powers of 31) equals Java's
loop for any text, and the index's per-topic shortcut equals hashing ``topic#key``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.index.index_file import build_key, index_key_hash
from rocketmq_emu.broker.index.service import IndexService
from rocketmq_emu.broker.message import (
    java_string_hash,
    java_string_hash_append,
    java_string_hash_reference,
)

# Lone surrogates cannot be encoded (Java would hash them; neither function accepts them).
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=600)
ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=600)


def test_known_values():
    """Values Java prints for String.hashCode."""
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("TagA") == 2598919


@given(TEXT)
def test_fast_hash_equals_java_loop(text):
    """java_string_hash agrees with the reference loop (BMP, astral, long text)."""
    assert java_string_hash(text) == java_string_hash_reference(text)


@given(ASCII)
def test_fast_hash_equals_java_loop_ascii(text):
    """ASCII text of any length (across the 256-unit chunks) agrees with the loop."""
    assert java_string_hash(text) == java_string_hash_reference(text)


@given(TEXT, TEXT)
def test_append_equals_hash_of_concatenation(prefix, text):
    """hash(prefix + text) from hash(prefix) and text."""
    assert java_string_hash_append(java_string_hash(prefix), text) == \
        java_string_hash_reference(prefix + text)


@given(st.text(min_size=1, max_size=40), TEXT)
def test_index_key_hash_of_topic_and_key(topic, key):
    """The index service's cached-prefix hash equals index_key_hash('topic#key')."""
    svc = IndexService("/nonexistent", clock=None)
    assert svc._key_hash(topic, key) == index_key_hash(build_key(topic, key))
    assert svc._key_hash(topic, key) == index_key_hash(build_key(topic, key))  # cached prefix


@given(st.text(min_size=1, max_size=20),
       st.one_of(st.text(alphabet="0123456789ABCDEF", min_size=32, max_size=32), TEXT))
def test_uniq_key_hash_with_remembered_fixed_part(topic, uniq):
    """The UNIQ_KEY shortcut (remembered hash of topic# + first 20 digits) equals
    index_key_hash('topic#uniq'), first time and cached."""
    svc = IndexService("/nonexistent", clock=None)
    expected = index_key_hash(build_key(topic, uniq))
    assert svc._uniq_hash(topic, uniq) == expected
    assert svc._uniq_hash(topic, uniq) == expected
    other = uniq[:20] + "0" * 12 if len(uniq) == 32 else uniq
    assert svc._uniq_hash(topic, other) == index_key_hash(build_key(topic, other))
