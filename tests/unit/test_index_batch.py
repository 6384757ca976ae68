"""IndexService.build_index_batch (hashes gathered, one IndexFile.put_entries per file) writes
exactly the files that one build_index per message writes."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.index.service import IndexService

T0 = 1_700_000_000_000
KEY = st.one_of(st.text(alphabet="abcAB é#", max_size=6),
                st.text(alphabet="0123456789ABCDEF", min_size=32, max_size=32))
KEYS = st.one_of(st.none(), KEY, st.lists(KEY, min_size=2, max_size=3).map(" ".join))


class FixedClock:
    def seconds(self) -> float:
        return T0 / 1000


def _files(svc: IndexService) -> list[tuple[str, bytes]]:
    return [(f.name, bytes(f._mm)) for f in svc.files]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["T", "U"]), KEYS, st.one_of(st.none(), KEY),
                          st.integers(0, 3000), st.booleans()), max_size=14),
       st.integers(0, 4))
def test_batch_equals_one_build_index_per_message(messages, already):
    """Same names and bytes (slots, entries, headers, rolls), skipping already indexed ones."""
    with tempfile.TemporaryDirectory() as d:
        batch = IndexService(str(Path(d, "a")), FixedClock(), hash_slot_num=3, index_num=5)
        single = IndexService(str(Path(d, "b")), FixedClock(), hash_slot_num=3, index_num=5)
        items = []
        offset = 0
        for topic, keys, uniq, dt, back in messages:
            offset = offset - 50 if back and offset > 50 else offset + 100
            items.append((topic, keys, uniq, offset, T0 + dt * 1000))
        for svc in (batch, single):  # an index that already holds the first few
            for item in items[:already]:
                svc.build_index(*item)
        for item in items[already:]:
            single.build_index(*item)
        batch.build_index_batch(iter(items[already:]))
        assert _files(batch) == _files(single)
        assert batch.last_indexed_phy_offset == single.last_indexed_phy_offset
