"""The commitlog: fast-path bytes identical to the record codec, RocketMQ's append rules
(offsets, CRC, queue offsets, BLANK filler, size limits), reads that refuse bad data."""

from __future__ import annotations

import os
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.commitlog import CommitLog, CommitLogError
from rocketmq_emu.broker.commitlog.encoder import RecordEncoder
from rocketmq_emu.broker.commitlog.record import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MessageRecord,
    decode_record,
    encode_record,
)
from rocketmq_emu.broker.commitlog.results import AppendMessageStatus
from rocketmq_emu.broker.message import TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE

FILE = 1024


def _log(tmp_path, size=FILE, t=1_700_000_000.0) -> CommitLog:
    clock = Clock()
    clock.advance(t)
    cl = CommitLog(str(tmp_path / "commitlog"), size, clock)
    cl.load()
    return cl


def _rec(i=0, body=None, **kw) -> MessageRecord:
    return MessageRecord(topic=kw.pop("topic", "T"), body=body if body is not None else b"b%d" % i,
                         properties=kw.pop("properties", {"TAGS": "a"}), **kw)


hosts = st.sampled_from([("10.0.0.1", 1234), ("::1", 9876), ("fe80::1", 1), ("127.0.0.1", 0)])


@settings(max_examples=150, deadline=None)
@given(
    body=st.binary(max_size=300),
    topic=st.text(min_size=1, max_size=140),
    props=st.dictionaries(st.text("abcXYZ_", min_size=1, max_size=8),
                          st.text(min_size=1, max_size=20), max_size=4),
    born=hosts, store=hosts, sys_flag=st.sampled_from([0, 1, 0x8, 0x301]),
    qoff=st.integers(0, 2**40), phys=st.integers(0, 2**50), ts=st.integers(0, 2**45),
)
def test_fast_path_bytes_equal_record_codec(body, topic, props, born, store, sys_flag, qoff,
                                            phys, ts):
    """The append encoder writes exactly the bytes encode_record produces."""
    rec = MessageRecord(topic=topic, body=body, properties=props, born_host=born,
                        store_host=store, sys_flag=sys_flag, queue_offset=qoff,
                        physical_offset=phys, store_timestamp=ts, queue_id=3, flag=7,
                        born_timestamp=ts - 5, reconsume_times=2,
                        prepared_transaction_offset=11)
    rec.body_crc = zlib.crc32(body) & 0x7FFFFFFF
    enc = RecordEncoder()
    prep = enc.prepare(rec)
    buf = bytearray(prep.size + 10)
    n = enc.write(buf, 5, rec, prep)
    twin = MessageRecord(topic=topic, body=body, properties=props, born_host=born,
                         store_host=store, sys_flag=sys_flag, queue_offset=qoff,
                         physical_offset=phys, store_timestamp=ts, queue_id=3, flag=7,
                         born_timestamp=ts - 5, reconsume_times=2,
                         prepared_transaction_offset=11, body_crc=rec.body_crc)
    assert bytes(buf[5 : 5 + n]) == encode_record(twin)


def test_append_sets_offsets_timestamp_and_crc(tmp_path):
    """An append stamps physical offset, store time from the clock and RocketMQ's body CRC."""
    cl = _log(tmp_path)
    r1 = cl.append(_rec(1))
    r2 = cl.append(_rec(2))
    assert r1.status is AppendMessageStatus.PUT_OK
    assert (r1.wrote_offset, r2.wrote_offset) == (0, r1.wrote_bytes)
    rec = decode_record(cl.read_raw(r2.wrote_offset), check_crc=True)
    assert rec.physical_offset == r2.wrote_offset
    assert rec.store_timestamp == 1_700_000_000_000 == r2.store_timestamp
    assert rec.body_crc == zlib.crc32(b"b2") & 0x7FFFFFFF


def test_queue_offsets_count_per_topic_and_queue(tmp_path):
    """Queue offsets advance independently per (topic, queueId)."""
    cl = _log(tmp_path)
    got = [cl.append(_rec(topic=t, queue_id=q)).queue_offset
           for t, q in [("A", 0), ("A", 0), ("A", 1), ("B", 0), ("A", 0)]]
    assert got == [0, 1, 0, 0, 2]


@pytest.mark.parametrize("tx", [TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE])
def test_prepared_and_rollback_take_no_queue_offset(tmp_path, tx):
    """PREPARED / ROLLBACK records get queue offset 0 and do not advance the table."""
    cl = _log(tmp_path)
    cl.append(_rec())
    assert cl.append(_rec(sys_flag=tx)).queue_offset == 0
    assert cl.append(_rec()).queue_offset == 1


def test_blank_filler_when_record_plus_eight_does_not_fit(tmp_path):
    """When size + 8 exceeds the room left, the file ends with a BLANK filler."""
    cl = _log(tmp_path, size=FILE)
    size = cl.append(_rec(body=b"x" * 400)).wrote_bytes
    cl.append(_rec(body=b"x" * 400))
    third = cl.append(_rec(body=b"x" * 400))
    assert third.wrote_offset == FILE
    first = cl.queue.files[0]
    assert struct.unpack_from(">ii", first.mm, 2 * size) == (FILE - 2 * size, BLANK_MAGIC_CODE)


def test_exact_fit_leaving_eight_bytes_stays_in_file(tmp_path):
    """A record leaving exactly 8 bytes is written in the current file."""
    cl = _log(tmp_path, size=FILE)
    probe = cl.encoder.prepare(_rec(body=b""))
    body = FILE - 8 - probe.size
    res = cl.append(_rec(body=b"x" * body))
    assert res.wrote_offset == 0 and res.wrote_bytes == FILE - 8
    assert cl.append(_rec()).wrote_offset == FILE


def test_many_tiny_files_roll_and_read_back_across_files(tmp_path):
    """Hundreds of appends over tiny files all read back by offset, files named by offset."""
    cl = _log(tmp_path, size=512)
    results = [(i, cl.append(_rec(i, body=b"m%05d" % i * (i % 7 + 1)))) for i in range(300)]
    names = sorted(os.listdir(tmp_path / "commitlog"))
    assert len(names) > 20
    assert all(int(n) % 512 == 0 and len(n) == 20 for n in names)
    for i, res in results:
        assert decode_record(cl.read_raw(res.wrote_offset)).body == b"m%05d" % i * (i % 7 + 1)
    assert [r.physical_offset for r in cl.iter_records(0)] == [r.wrote_offset for _, r in results]


def test_record_bigger_than_a_file_is_size_exceeded(tmp_path):
    """A record that can never fit a file is MESSAGE_SIZE_EXCEEDED and writes nothing."""
    cl = _log(tmp_path, size=FILE)
    res = cl.append(_rec(body=b"x" * FILE))
    assert res.status is AppendMessageStatus.MESSAGE_SIZE_EXCEEDED
    assert cl.max_offset == 0


def test_properties_over_32767_bytes(tmp_path):
    """Properties longer than a Java short are PROPERTIES_SIZE_EXCEEDED."""
    cl = _log(tmp_path, size=1 << 20)
    res = cl.append(_rec(properties={"K": "v" * 40000}))
    assert res.status is AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED


def test_long_topic_uses_v2_magic(tmp_path):
    """A topic over 127 bytes is written with the V2 magic (2-byte topic length)."""
    cl = _log(tmp_path, size=1 << 16)
    res = cl.append(_rec(topic="t" * 200))
    assert decode_record(cl.read_raw(res.wrote_offset)).magic_code == MESSAGE_MAGIC_CODE_V2


def test_batch_is_contiguous_with_consecutive_queue_offsets(tmp_path):
    """A batch lands in one file with consecutive queue offsets and comma-joined ids."""
    cl = _log(tmp_path, size=4096)
    cl.append(_rec())
    res = cl.append_batch([_rec(i) for i in range(3)])
    assert res.msg_num == 3 and res.queue_offset == 1
    recs = [decode_record(cl.read_raw(o)) for o in res.offsets]
    assert [r.queue_offset for r in recs] == [1, 2, 3]
    assert res.offsets[1] == res.offsets[0] + recs[0].total_size
    assert res.msg_id.count(",") == 2


def test_read_of_wrong_offset_names_file_and_offset(tmp_path):
    """Reading where no record starts is an error naming the file and the offset."""
    cl = _log(tmp_path)
    cl.append(_rec())
    with pytest.raises(CommitLogError, match=r"wrong magic.*00000000000000000000 at offset 3"):
        cl.read_raw(3)
    with pytest.raises(CommitLogError, match="beyond the written data"):
        cl.read_raw(cl.max_offset)


def test_length_beyond_the_written_data_is_refused(tmp_path):
    """A TOTALSIZE pointing past the written data is refused, not served."""
    cl = _log(tmp_path)
    res = cl.append(_rec())
    struct.pack_into(">i", cl.queue.files[0].mm, 0, res.wrote_bytes + 50)
    with pytest.raises(CommitLogError, match="runs beyond"):
        cl.read_raw(0)


def test_msg_id_is_store_host_and_offset(tmp_path):
    """The offset msgId is store host + port + offset in uppercase hex."""
    cl = _log(tmp_path)
    cl.append(_rec())
    res = cl.append(_rec(store_host=("10.1.2.3", 10911)))
    assert res.msg_id == "0A010203" + "00002A9F" + f"{res.wrote_offset:016X}"


@settings(max_examples=100, deadline=None)
@given(
    bodies=st.lists(st.binary(max_size=200), min_size=1, max_size=5),
    topic=st.text(min_size=1, max_size=140),
    props=st.dictionaries(st.text("abcXYZ_", min_size=1, max_size=8),
                          st.text(min_size=1, max_size=20), max_size=4),
    born=hosts, store=hosts, sys_flag=st.sampled_from([0, 1, 0x8, 0x301]),
    batch=st.booleans(),
)
def test_appended_bytes_equal_record_codec(tmp_path_factory, bodies, topic, props, born, store,
                                           sys_flag, batch):
    """Whatever path an append takes (inline IPv4, general, batch), the stored bytes are
    exactly encode_record of the record with the offsets the store assigned."""
    cl = _log(tmp_path_factory.mktemp("cl"), size=1 << 16)
    recs = [MessageRecord(topic=topic, body=b, properties=dict(props), born_host=born,
                          store_host=store, sys_flag=sys_flag, queue_id=1, flag=9,
                          born_timestamp=123, reconsume_times=1) for b in bodies]
    if batch:
        res = cl.append_batch(recs)
        placed = [(off, res.queue_offset + i, res.store_timestamp)
                  for i, off in enumerate(res.offsets)]
    else:
        placed = [(a.wrote_offset, a.queue_offset, a.store_timestamp)
                  for a in (cl.append(r) for r in recs)]
    for r, (off, qoff, ts) in zip(recs, placed, strict=True):
        twin = MessageRecord(
            topic=topic, body=r.body, properties=dict(props), born_host=born, store_host=store,
            sys_flag=sys_flag, queue_id=1, flag=9, born_timestamp=123, reconsume_times=1,
            queue_offset=qoff, physical_offset=off,
            store_timestamp=ts, body_crc=zlib.crc32(r.body) & 0x7FFFFFFF)
        assert cl.read_raw(off) == encode_record(twin)
    cl.shutdown()
