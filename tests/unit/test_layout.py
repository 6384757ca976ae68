"""broker/layout.py: struct formats, offsets and sizes derived from construct declarations."""

from __future__ import annotations

import struct

import construct as cs
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rocketmq_emu.broker.layout import Layout, LayoutError

# (construct field, hypothesis strategy for its value)
_PRIMITIVES = [
    (cs.Int8sb, st.integers(-(2**7), 2**7 - 1)),
    (cs.Int8ub, st.integers(0, 2**8 - 1)),
    (cs.Int16sb, st.integers(-(2**15), 2**15 - 1)),
    (cs.Int16ub, st.integers(0, 2**16 - 1)),
    (cs.Int32sb, st.integers(-(2**31), 2**31 - 1)),
    (cs.Int32ub, st.integers(0, 2**32 - 1)),
    (cs.Int64sb, st.integers(-(2**63), 2**63 - 1)),
    (cs.Int64ub, st.integers(0, 2**64 - 1)),
]


@st.composite
def declarations(draw):
    """A random fixed declaration (ints, Bytes(n), Padding(n), Const) and values for it."""
    subcons, values, packed = [], {}, []
    for i in range(draw(st.integers(1, 12))):
        kind = draw(st.integers(0, 3))
        name = f"f{i}"
        if kind == 0:
            con, strategy = draw(st.sampled_from(_PRIMITIVES))
            value = draw(strategy)
            subcons.append(name / con)
            values[name] = value
            packed.append(value)
        elif kind == 1:
            n = draw(st.integers(0, 24))
            value = draw(st.binary(min_size=n, max_size=n))
            subcons.append(name / cs.Bytes(n))
            values[name] = value
            packed.append(value)
        elif kind == 2:
            subcons.append(cs.Padding(draw(st.integers(1, 9))))
        else:
            con, strategy = draw(st.sampled_from(_PRIMITIVES))
            value = draw(strategy)
            subcons.append(name / cs.Const(value, con))
            packed.append(value)
    return cs.Struct(*subcons), values, packed


@given(declarations())
def test_derived_struct_packs_the_declarations_bytes(decl):
    """The derived struct packs exactly the bytes the construct declaration builds."""
    spec, values, packed = decl
    assert Layout(spec).struct().pack(*packed) == spec.build(values)


@given(declarations())
def test_offsets_and_sizes_match_constructs_own_sizes(decl):
    """Each field's offset is the size of the fields before it, as construct measures them."""
    spec, _values, _packed = decl
    layout = Layout(spec)
    at = 0
    for sub in spec.subcons:
        if sub.name is not None:
            assert layout.offset(sub.name) == at
            assert layout.size(sub.name) == sub.sizeof()
        at += sub.sizeof()
    assert layout.min_size == layout.fixed_size == spec.sizeof() == layout.struct().size


@given(declarations(), st.data())
def test_sub_range_struct_unpacks_those_fields(decl, data):
    """struct(first, last) reads fields first..last at first's offset."""
    spec, values, packed = decl
    layout = Layout(spec)
    names = list(layout.names)
    assume(names)
    i = data.draw(st.integers(0, len(names) - 1))
    j = data.draw(st.integers(i, len(names) - 1))
    got = layout.struct(names[i], names[j]).unpack_from(spec.build(values), layout.offset(names[i]))
    assert list(got) == packed[i : j + 1]


def test_int32_is_spelled_as_struct_i():
    """construct's int32 ('l') comes out as struct's 'i', the code Java ints are read with."""
    assert Layout(cs.Struct("a" / cs.Int32sb, "b" / cs.Int32ub)).format() == ">iI"


def test_choice_is_resolved_by_the_given_value():
    """An IfThenElse picks its branch from the keyword argument it reads."""
    spec = cs.Struct("host" / cs.IfThenElse(cs.this.v6, cs.Bytes(20), cs.Bytes(8)), "n" / cs.Int64sb)
    assert Layout(spec, v6=False).offset("n") == 8
    assert Layout(spec, v6=True).offset("n") == 20


def test_switch_is_resolved_by_the_given_value():
    """A Switch picks its case (or its default) from the keyword argument it reads."""
    spec = cs.Struct("len" / cs.Switch(cs.this.kind, {1: cs.Int8sb, 2: cs.Int16sb}, cs.Int32sb))
    assert [Layout(spec, kind=k).format() for k in (1, 2, 3)] == [">b", ">h", ">i"]


def test_choice_without_its_value_names_the_field():
    """A choice whose value was not given is a LayoutError naming the field."""
    spec = cs.Struct("host" / cs.IfThenElse(cs.this.v6, cs.Bytes(20), cs.Bytes(8)))
    with pytest.raises(LayoutError, match="'host'"):
        Layout(spec)


def test_length_field_then_variable_bytes_end_the_fixed_run():
    """Bytes(this.n) is variable: offsets stop there, the run's format ends at its length."""
    spec = cs.Struct(
        "a" / cs.Int32sb,
        "n" / cs.Rebuild(cs.Int32sb, cs.len_(cs.this.body)),
        "body" / cs.Bytes(cs.this.n),
        "m" / cs.Int16sb,
    )
    layout = Layout(spec)
    assert (layout.format(), layout.fixed_size, layout.min_size) == (">ii", 8, 10)
    assert layout.struct("m").format == ">h"
    with pytest.raises(LayoutError, match="'m' follows a variable part"):
        layout.offset("m")


def test_prefixed_field_contributes_its_length_prefix():
    """Prefixed / PascalString: the length prefix is the field's fixed head."""
    spec = cs.Struct("code" / cs.Int16sb, "remark" / cs.PascalString(cs.Int32sb, "utf8"))
    layout = Layout(spec)
    assert (layout.format(), layout.offset("remark"), layout.fixed_size) == (">hi", 2, 6)


def test_run_across_a_variable_part_is_refused():
    """No single format spans a variable part."""
    spec = cs.Struct("n" / cs.Int8ub, "b" / cs.Bytes(cs.this.n), "m" / cs.Int8ub)
    with pytest.raises(LayoutError, match="variable part follows 'b'"):
        Layout(spec).format("n", "m")


def test_unsupported_field_is_refused_at_derivation():
    """A field with no struct equivalent (Int24ub) raises instead of deriving a wrong format."""
    with pytest.raises(LayoutError, match="'x'"):
        Layout(cs.Struct("x" / cs.Int24ub))


def test_sparse_struct_reads_only_the_named_fields():
    """sparse_struct skips the bytes between the named fields."""
    spec = cs.Struct("a" / cs.Int32sb, "b" / cs.Int64sb, "c" / cs.Int16sb)
    sparse = Layout(spec).sparse_struct(("a", "c"))
    assert sparse.format == ">i8xh"
    assert sparse.unpack(struct.pack(">iqh", 1, 2, 3)) == (1, 3)


def test_struct_objects_are_shared():
    """Asking twice for one run gives the same compiled struct."""
    layout = Layout(cs.Struct("a" / cs.Int32sb, "b" / cs.Int64sb))
    assert layout.struct("a", "b") is layout.struct("a", "b")
