"""The batch append fast path with records of different shapes (body and properties lengths,
equal total sizes included) stores exactly encode_record of each record."""

from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.commitlog import CommitLog
from rocketmq_emu.broker.commitlog.record import MessageRecord, encode_record


def _log(path) -> CommitLog:
    clock = Clock()
    clock.advance(1_700_000_000.0)
    cl = CommitLog(str(path / "commitlog"), 1 << 16, clock)
    cl.load()
    return cl


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=40), st.text("abc", max_size=40)),
                min_size=1, max_size=6))
def test_batch_of_mixed_shapes_equals_record_codec(tmp_path_factory, shapes):
    """Each record of a mixed batch is stored byte for byte as encode_record writes it."""
    cl = _log(tmp_path_factory.mktemp("cl"))
    recs = [MessageRecord(topic="T", body=b, properties={"K": v} if v else {}, queue_id=2)
            for b, v in shapes]
    res = cl.append_batch(recs)
    for i, (r, off) in enumerate(zip(recs, res.offsets, strict=True)):
        twin = MessageRecord(topic="T", body=r.body, properties=dict(r.properties), queue_id=2,
                             queue_offset=res.queue_offset + i, physical_offset=off,
                             store_timestamp=res.store_timestamp,
                             body_crc=zlib.crc32(r.body) & 0x7FFFFFFF)
        assert cl.read_raw(off) == encode_record(twin)
    cl.shutdown()


def test_equal_sizes_different_shapes(tmp_path):
    """Two records of one total size but different body / properties lengths."""
    cl = _log(tmp_path)
    recs = [MessageRecord(topic="T", body=b"x" * 10, properties={"A": "b" * 20}),
            MessageRecord(topic="T", body=b"y" * 20, properties={"A": "c" * 10})]
    res = cl.append_batch(recs)
    for r, off in zip(recs, res.offsets, strict=True):
        assert cl.read_raw(off)[88:88 + len(r.body)] == r.body
    cl.shutdown()
