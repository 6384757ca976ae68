"""record_scan.scan_columns and record_scan.find_record_start: the columnar path equals decode_record."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emu.broker.commitlog.record import (
    MessageRecord,
    decode_record,
    encode_blank,
    encode_record,
    iter_records,
)
from rocketmq_emu.broker.commitlog.record_scan import SCAN_FIELDS, find_record_start, scan_columns
from rocketmq_emu.broker.message import pack_host

_hosts = st.sampled_from([("127.0.0.1", 1), ("10.1.2.3", 65000), ("::1", 9876), ("fe80::2", 2)])
_records = st.builds(
    MessageRecord,
    topic=st.text(min_size=1, max_size=140).filter(lambda t: len(t.encode()) <= 200),
    body=st.binary(max_size=300),
    queue_id=st.integers(0, 1000),
    flag=st.integers(-(2**31), 2**31 - 1),
    properties=st.dictionaries(
        st.text("abcKEY_", min_size=1, max_size=8), st.text(min_size=1, max_size=20), max_size=4
    ),
    sys_flag=st.sampled_from([0, 1, 4, 8, 12, 0x301]),
    born_timestamp=st.integers(0, 2**41),
    born_host=_hosts,
    store_host=_hosts,
    reconsume_times=st.integers(0, 16),
    prepared_transaction_offset=st.integers(0, 2**40),
    queue_offset=st.integers(0, 2**40),
    store_timestamp=st.integers(0, 2**41),
)


def _log(records: list[MessageRecord], base: int = 0) -> bytes:
    buf = bytearray()
    for rec in records:
        rec.physical_offset = base + len(buf)
        buf += encode_record(rec)
    return bytes(buf)


@settings(max_examples=60, deadline=None)
@given(st.lists(_records, min_size=1, max_size=6))
def test_scan_columns_equals_decode_record(records):
    """Every field scan_columns returns equals decode_record's value for the same record."""
    buf = _log(records) + bytes(16)
    scan = scan_columns(buf)
    assert scan.end == "zero" and scan.error is None
    decoded = list(iter_records(buf))
    assert scan.positions == [p for p, _ in decoded]
    for i, (_, rec) in enumerate(decoded):
        props = rec.encoded_properties()
        assert scan.columns["totalSize"][i] == rec.total_size
        assert scan.columns["magicCode"][i] == rec.magic_code
        assert scan.columns["bodyCRC"][i] == rec.body_crc
        assert scan.columns["queueId"][i] == rec.queue_id
        assert scan.columns["flag"][i] == rec.flag
        assert scan.columns["queueOffset"][i] == rec.queue_offset
        assert scan.columns["physicalOffset"][i] == rec.physical_offset
        assert scan.columns["sysFlag"][i] == rec.sys_flag
        assert scan.columns["bornTimestamp"][i] == rec.born_timestamp
        assert scan.columns["bornHost"][i] == pack_host(*rec.born_host)
        assert scan.columns["storeTimestamp"][i] == rec.store_timestamp
        assert scan.columns["storeHostAddress"][i] == pack_host(*rec.store_host)
        assert scan.columns["reconsumeTimes"][i] == rec.reconsume_times
        assert scan.columns["preparedTransactionOffset"][i] == rec.prepared_transaction_offset
        assert scan.columns["bodyLength"][i] == len(rec.body)
        assert scan.columns["body"][i] == rec.body
        assert scan.columns["topicLength"][i] == len(rec.topic.encode())
        assert scan.columns["topic"][i] == rec.topic
        assert scan.columns["propertiesLength"][i] == len(props)
        assert scan.columns["properties"][i] == rec.properties_str


def test_projection_fills_only_the_requested_fields():
    """Asking for topic alone returns one column with every record's topic."""
    recs = [MessageRecord(topic=f"T{i % 3}", body=b"x" * i) for i in range(10)]
    scan = scan_columns(_log(recs), fields=("topic",))
    assert list(scan.columns) == ["topic"]
    assert scan.columns["topic"] == [r.topic for r in recs]
    assert scan.end == "eof"


def test_scan_stops_at_blank_filler_and_resumes_at_limits():
    """A BLANK filler ends the scan; max_records and stop leave next_pos at the next record."""
    recs = [MessageRecord(topic="T", body=b"y" * 10) for _ in range(5)]
    buf = _log(recs) + encode_blank(100) + bytes(92)
    part = scan_columns(buf, fields=("queueId",), max_records=2)
    assert part.end == "stop" and len(part.positions) == 2
    rest = scan_columns(buf, part.next_pos, fields=("queueId",))
    assert rest.end == "blank" and len(rest.positions) == 3
    assert scan_columns(buf, 0, stop=1, fields=SCAN_FIELDS).positions == [0]


def test_corrupt_record_stops_with_decode_records_error():
    """A damaged record ends the scan with the RecordError decode_record raises there."""
    recs = [MessageRecord(topic="T", body=b"z" * 20) for _ in range(3)]
    buf = bytearray(_log(recs))
    second = recs[1].physical_offset
    buf[second + 4 : second + 8] = b"\x01\x02\x03\x04"
    scan = scan_columns(bytes(buf))
    assert scan.end == "error" and scan.next_pos == second and len(scan.positions) == 1
    try:
        decode_record(bytes(buf), second)
    except Exception as exc:  # noqa: BLE001 - compare messages
        assert str(exc) == str(scan.error)


def test_find_record_start_uses_the_physical_offset():
    """The first start at or after a position is found; a forged magic in a body is not."""
    base = 1 << 30
    forged = b"\xda\xa3\x20\xa7" * 8  # message magic repeated inside a body
    recs = [MessageRecord(topic="T", body=forged + bytes(40)) for _ in range(4)]
    buf = _log(recs, base)
    starts = [r.physical_offset - base for r in recs]
    assert find_record_start(buf, 0, len(buf), base) == 0
    assert find_record_start(buf, 1, len(buf), base) == starts[1]
    assert find_record_start(buf, starts[2], len(buf), base) == starts[2]
    assert find_record_start(buf, starts[3] + 1, len(buf), base) is None
    assert find_record_start(buf, 1, starts[1], base) is None


_VECTOR_FIELDS = tuple(f for f in SCAN_FIELDS if f not in ("body", "properties"))


def _scan_all(buf: bytes, fields, batch: int):
    """Scan a whole buffer batch by batch as the data source does; resume after an error."""
    import rocketmq_emu.broker.commitlog.record_scan as R

    out = {name: [] for name in fields}
    positions, errors, ends, pos = [], [], [], 0
    while pos is not None and pos < len(buf):
        scan = R.scan_columns(buf, pos, len(buf), fields, batch)
        for name in fields:
            out[name] += scan.columns[name]
        positions += scan.positions
        ends.append(scan.end)
        if scan.end == "error":
            errors.append((scan.next_pos, str(scan.error)))
            pos = R.find_record_start(buf, scan.next_pos + 1, len(buf), 0)
        elif scan.end == "stop":
            pos = scan.next_pos
        else:
            break
    return out, positions, errors, ends[-1]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(_records, min_size=1, max_size=12),
    st.integers(1, 5),
    st.sampled_from([None, 0, 1, 2]),
    st.sampled_from(["bodyLength", "propertiesLength", "totalSize"]),
)
def test_vectorized_scan_equals_the_per_record_loop(records, batch, damage, field_name):
    """The numpy batch path gives the per-record loop's values, stops and errors exactly."""
    import struct

    import rocketmq_emu.broker.commitlog.record_scan as R

    buf = bytearray(_log(records))
    if damage is not None and damage < len(records):
        rec = records[damage]
        at, end = rec.physical_offset, rec.physical_offset + rec.total_size
        if field_name == "bodyLength":
            buf[at + 84 : at + 88] = b"\x7f\xff\xff\xff"  # past the record
        elif field_name == "propertiesLength":
            plen = len(rec.encoded_properties())
            struct.pack_into(">h", buf, end - plen - 2, plen + 1)  # one byte too many
        else:
            struct.pack_into(">i", buf, at, rec.total_size + 4)  # fields end before it
    buf = bytes(buf) + bytes(8)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(R, "_VECTOR_MIN", 1)
        fast = _scan_all(buf, _VECTOR_FIELDS, batch)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(R, "_VECTOR_MIN", 10**9)
        slow = _scan_all(buf, _VECTOR_FIELDS, batch)
    assert fast == slow


def test_vectorized_scan_is_used_for_large_batches(monkeypatch):
    """Above the threshold the numpy path runs (the per-record loop is not called)."""
    import rocketmq_emu.broker.commitlog.record_scan as R

    recs = [MessageRecord(topic=f"T{i % 5}", body=b"q" * (i % 50), queue_id=i % 3,
                          born_host=("10.0.0.1", 256 * (i % 3)), properties={"TAGS": "x"})
            for i in range(500)]
    buf = _log(recs)
    calls = []
    monkeypatch.setattr(R, "decode_record", lambda *a, **k: calls.append(a))
    scan = R.scan_columns(buf, fields=("topic", "queueId", "bornHost", "topicLength"))
    assert not calls and scan.end == "eof" and len(scan.positions) == 500
    assert scan.columns["topic"] == [r.topic for r in recs]
    assert scan.columns["queueId"] == [r.queue_id for r in recs]
    assert scan.columns["bornHost"] == [pack_host(*r.born_host) for r in recs]
    assert scan.columns["topicLength"] == [len(r.topic) for r in recs]


@pytest.mark.parametrize("fields", [("topic",), ("topic", "body"), ("queueId",)])
def test_check_crc_reports_a_body_that_does_not_match(fields):
    """With check_crc a flipped body byte ends the scan with decode_record's CRC error."""
    recs = [MessageRecord(topic="T", body=b"payload-%d" % i) for i in range(3)]
    buf = bytearray(_log(recs))
    second = recs[1].physical_offset
    buf[second + 88] ^= 0xFF  # first body byte of the second record
    plain = scan_columns(bytes(buf), fields=fields)
    assert plain.end == "eof" and len(plain.positions) == 3
    checked = scan_columns(bytes(buf), fields=fields, check_crc=True)
    assert checked.end == "error" and checked.next_pos == second
    assert "BODYCRC" in str(checked.error) and len(checked.positions) == 1
