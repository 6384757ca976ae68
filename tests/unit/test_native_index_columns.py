"""The C index writer reads its entry columns as lists of ints or as native-int arrays."""

from __future__ import annotations

import mmap
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker import _native

pytestmark = pytest.mark.skipif(_native.store is None, reason="C accelerator not built")

SLOTS, BASE, CAP = 16, 40 + 16 * 4, 64


def put(columns, n):
    mm = mmap.mmap(-1, BASE + CAP * 20)
    header = _native.store.index_put_entries(mm, *columns, 0, n, SLOTS, BASE, 1, 0, 0, 0)
    return header, bytes(mm)


entries = st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**40),
                             st.integers(1, 2**41)), min_size=1, max_size=CAP - 2)


@settings(max_examples=60, deadline=None)
@given(entries)
def test_arrays_write_what_lists_write(rows):
    """array('i'), array('q') columns give the same entries, slots and header as lists."""
    hashes, phys, stamps = (list(c) for c in zip(*rows, strict=True))
    as_lists = put((hashes, phys, stamps), len(rows))
    as_arrays = put((array("i", hashes), array("q", phys), array("q", stamps)), len(rows))
    assert as_arrays == as_lists


def test_a_column_of_another_item_type_is_refused():
    """A float array (or an 8-byte hash column) is a TypeError, nothing written."""
    mm = mmap.mmap(-1, BASE + CAP * 20)
    for cols in ((array("d", [1.0]), [1], [1]), (array("q", [1]), [1], [1])):
        with pytest.raises(TypeError, match="column"):
            _native.store.index_put_entries(mm, *cols, 0, 1, SLOTS, BASE, 1, 0, 0, 0)
    assert bytes(mm) == bytes(len(mm))


def test_gather_returns_arrays():
    """index_gather's columns are array('i'), array('q'), array('q')."""
    from rocketmq_emu.broker.commitlog.record import MessageRecord

    rec = MessageRecord(topic="T", properties={"UNIQ_KEY": "U1", "KEYS": "k1"})
    rec.physical_offset, rec.store_timestamp = 100, 5000
    hashes, phys, stamps, done, stop, last = _native.store.index_gather(
        [rec], 0, -1, MessageRecord, "KEYS", "UNIQ_KEY")
    assert (hashes.typecode, phys.typecode, stamps.typecode) == ("i", "q", "q")
    assert list(phys) == [100, 100] and list(stamps) == [5000, 5000]
    assert (done, stop, last) == (1, 1, 100)
