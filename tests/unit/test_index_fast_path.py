"""build_index (cached topic-prefix hash, one header write per message) writes exactly the bytes
of indexing each ``topic#key`` string one put_key at a time."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.index.index_file import build_key
from rocketmq_emu.broker.index.service import IndexService, split_keys

T0 = 1_700_000_000_000
KEY = st.one_of(st.text(alphabet="abcAB é#", max_size=6),
             st.text(alphabet="0123456789ABCDEF", min_size=32, max_size=32))


class FixedClock:
    def seconds(self) -> float:
        return T0 / 1000


def _files_bytes(svc: IndexService) -> list[bytes]:
    return [bytes(f._mm) for f in svc.files]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(KEY, st.one_of(st.none(), KEY), st.integers(0, 3000)), max_size=12))
def test_build_index_equals_one_put_key_per_key(messages):
    """Same files (slots, entries, header, rolls) as one full-key put_key per distinct key."""
    with tempfile.TemporaryDirectory() as d:
        fast = IndexService(str(Path(d, "a")), FixedClock(), hash_slot_num=3, index_num=5)
        slow = IndexService(str(Path(d, "b")), FixedClock(), hash_slot_num=3, index_num=5)
        for i, (keys, uniq, dt) in enumerate(messages):
            offset, ts = 100 * (i + 1), T0 + dt * 100 * (i + 1)
            assert fast.build_index("T", keys, uniq, offset, ts)
            seen = []
            for key in ([uniq] if uniq else []) + split_keys(keys):
                if key not in seen:
                    seen.append(key)
                    slow._put_key(build_key("T", key), offset, ts)  # full-string hash
        assert [f.name for f in fast.files] == [f.name for f in slow.files]
        assert _files_bytes(fast) == _files_bytes(slow)
        fast.shutdown()
        slow.shutdown()
