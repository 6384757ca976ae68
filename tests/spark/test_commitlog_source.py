"""The rocketmq-commitlog data source, checked against the records the store was sent."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import struct

import pytest

from rocketmq_emu.broker.commitlog.record import BLANK_MAGIC_CODE
from rocketmq_emu.broker.message import create_offset_msg_id

pytestmark = pytest.mark.spark

UTC = dt.UTC


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=UTC)


def _host(h: tuple[str, int]) -> str:
    return f"[{h[0]}]:{h[1]}" if ":" in h[0] else f"{h[0]}:{h[1]}"


def _local(value):
    """Spark returns naive local-time datetimes for TIMESTAMP; make them aware UTC."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.astimezone(UTC)
    return value


def _load(spark, path, **options):
    reader = spark.read.format("rocketmq-commitlog")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load(path)


def test_every_column_matches_what_was_sent(spark, store):
    """Each of the 20 record fields and every derived column equals the sent record's value."""
    rows = {r["physicalOffset"]: r.asDict() for r in _load(spark, store.root).collect()}
    assert len(rows) == len(store.records)
    for rec in store.records:
        row = {k: _local(v) for k, v in rows[rec.physical_offset].items()}
        topic_len = len(rec.topic.encode())
        props = rec.encoded_properties()
        expected = {
            "totalSize": rec.total_size, "magicCode": rec.magic_code, "bodyCRC": rec.body_crc,
            "queueId": rec.queue_id, "flag": rec.flag, "queueOffset": rec.queue_offset,
            "physicalOffset": rec.physical_offset, "sysFlag": rec.sys_flag,
            "bornTimestamp": _ts(rec.born_timestamp), "bornHost": _host(rec.born_host),
            "storeTimestamp": _ts(rec.store_timestamp),
            "storeHostAddress": _host(rec.store_host), "reconsumeTimes": rec.reconsume_times,
            "preparedTransactionOffset": rec.prepared_transaction_offset,
            "bodyLength": len(rec.body), "body": bytearray(rec.body), "topicLength": topic_len,
            "topic": rec.topic, "propertiesLength": len(props), "properties": rec.properties,
            "tags": rec.properties.get("TAGS"), "keys": rec.keys or None,
            "uniqKey": rec.properties["UNIQ_KEY"],
            "realTopic": rec.properties.get("REAL_TOPIC"),
            "realQueueId": int(rec.properties["REAL_QID"]) if "REAL_QID" in rec.properties
            else None,
            "retryTopic": rec.properties.get("RETRY_TOPIC"),
            "offsetMsgId": create_offset_msg_id(*rec.store_host, rec.physical_offset),
            "compressed": bool(rec.sys_flag & 1),
            "compressionType": "ZLIB" if rec.sys_flag & 1 else None,
            "file": f"{rec.physical_offset - rec.physical_offset % 2048:020d}",
            "filePosition": rec.physical_offset % 2048, "_error": None,
        }
        for name, value in expected.items():
            assert row[name] == value, (name, rec.topic, rec.physical_offset)


def test_derived_columns_for_special_messages(spark, store):
    """sysFlag, delay level, timer deliver time and retry/DLQ group are decoded per kind."""
    df = _load(spark, store.root, includeBody="false")
    assert "body" not in df.columns
    got = {
        (r.topic, r.reconsumeTimes, r.uniqKey[:2]): r
        for r in df.select("topic", "reconsumeTimes", "uniqKey", "transactionType",
                           "delayLevel", "timerDeliverTime", "retryGroup", "dlqGroup").collect()
    }
    assert got[("TopicC", 0, "CC")].transactionType == "TRANSACTION_COMMIT_TYPE"
    half = got[("RMQ_SYS_TRANS_HALF_TOPIC", 0, "HH")]
    assert half.transactionType == "TRANSACTION_PREPARED_TYPE"
    assert got[("SCHEDULE_TOPIC_XXXX", 0, "D1")].delayLevel == 2
    assert got[("SCHEDULE_TOPIC_XXXX", 2, "RR")].delayLevel == 4
    from storegen import S

    assert _local(got[("rmq_sys_wheel_timer", 0, "M2")].timerDeliverTime) == _ts(S + 60_000)
    assert got[("SCHEDULE_TOPIC_XXXX", 1, "QQ")].retryGroup == "G2"
    assert got[("%RETRY%G1", 1, "RR")].retryGroup == "G1"
    assert got[("%DLQ%G1", 3, "RR")].dlqGroup == "G1"
    assert got[("TopicA", 0, "D1")].retryGroup is None


def test_store_has_many_files_and_blank_fillers(store):
    """The fixture exercises file rolls: several files, each ending in a BLANK filler."""
    files = sorted(os.listdir(os.path.join(store.root, "commitlog")))
    assert len(files) >= 4 and len(store.blanks) == len(files) - 1
    for offset in store.blanks:
        with open(os.path.join(store.root, "commitlog", f"{offset - offset % 2048:020d}"),
                  "rb") as fh:
            fh.seek(offset % 2048)
            assert struct.unpack(">ii", fh.read(8))[1] == BLANK_MAGIC_CODE


def test_byte_range_partitions_inside_files_read_each_record_once(spark, store):
    """Splitting every file into 300-byte ranges yields every record exactly once."""
    from rocketmq_emu.reports.datasource_commitlog import plan_partitions

    files = os.listdir(os.path.join(store.root, "commitlog"))
    assert len(plan_partitions(store.root, 300)) > 3 * len(files)
    split = _load(spark, store.root, columns="physicalOffset,topic", maxPartitionBytes=300)
    rows = sorted((r.physicalOffset, r.topic) for r in split.collect())
    assert rows == [(r.physical_offset, r.topic) for r in store.records]


def test_partitions_are_equal_shares_across_files(store):
    """minPartitions=3 cuts the files end to end into 3 equal partitions covering each file's
    written ranges once, in order, some partition spanning a file boundary."""
    from rocketmq_emu.reports.datasource_commitlog import plan_partitions, plan_ranges

    parts = plan_partitions(store.root, 10**9, min_partitions=3)
    assert len(parts) == 3
    sizes = [sum(r.stop - r.start for r in p.ranges) for p in parts]
    assert max(sizes) - min(sizes) < len(parts)  # ceil(total / 3): the last is short
    assert any(len({r.path for r in p.ranges}) > 1 for p in parts)
    pieces = [(r.path, r.start, r.stop) for p in parts for r in p.ranges]
    by_file: dict[str, list[tuple[int, int]]] = {}
    for path, start, stop in pieces:
        by_file.setdefault(path, []).append((start, stop))
    whole = {r.path: r.stop for r in plan_ranges(store.root, 10**9)}
    for path, spans in by_file.items():
        assert spans[0][0] == 0 and spans[-1][1] == whole[path]
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_whole_waves_of_partitions(store):
    """The partition count is a multiple of minPartitions, each under maxPartitionBytes."""
    from rocketmq_emu.reports.datasource_commitlog import plan_partitions

    for min_parts in (1, 2, 5):
        parts = plan_partitions(store.root, 700, min_partitions=min_parts)
        assert len(parts) % min_parts == 0
        assert all(sum(r.stop - r.start for r in p.ranges) <= 700 for p in parts)


@pytest.mark.parametrize("min_parts", [1, 2, 3, 7])
def test_cross_file_partitions_read_each_record_once(spark, store, min_parts):
    """Equal-share partitions spanning files yield every record exactly once."""
    df = _load(
        spark, store.root, columns="physicalOffset,file", maxPartitionBytes=10**9,
        minPartitions=min_parts,
    )
    assert df.rdd.getNumPartitions() == min_parts
    rows = sorted((r.physicalOffset, r.file) for r in df.collect())
    assert rows == [
        (r.physical_offset, f"{r.physical_offset - r.physical_offset % 2048:020d}")
        for r in store.records
    ]


@pytest.mark.parametrize(
    "ddl",
    [
        "topic string",
        "queueId int, bornTimestamp timestamp, bornHost string",
        "uniqKey string, tags string, keys array<string>",
        "body binary, bodyCRC int, physicalOffset bigint",
        "delayLevel int, storeTimestamp timestamp, offsetMsgId string",
    ],
)
def test_user_schema_reads_the_same_values_as_the_full_read(spark, store, ddl):
    """A narrow user schema decodes only its columns, with the full read's values for them."""
    names = [part.split()[0] for part in ddl.split(",")]
    full = _load(spark, store.root).select(*names).collect()
    narrow = spark.read.format("rocketmq-commitlog").schema(ddl).load(store.root)
    assert narrow.columns == names
    key = repr
    assert sorted(map(key, narrow.collect())) == sorted(map(key, full))


def test_projection_decodes_the_same_values(spark, store):
    """A `columns` projection and a user schema give the values that were stored."""
    sent = sorted((r.topic, r.queue_offset) for r in store.records)
    proj = _load(spark, store.root, columns="topic,queueOffset")
    assert proj.columns == ["topic", "queueOffset", "_error"]
    assert sorted((r.topic, r.queueOffset) for r in proj.collect()) == sent
    user = spark.read.format("rocketmq-commitlog").schema("topic string, queueOffset bigint")
    assert sorted((r.topic, r.queueOffset) for r in user.load(store.root).collect()) == sent


def _corrupt_copy(store, tmp_path, victim_index: int) -> tuple[str, int]:
    root = str(tmp_path / "corrupt")
    shutil.copytree(store.root, root)
    victim = store.records[victim_index]
    name = f"{victim.physical_offset - victim.physical_offset % 2048:020d}"
    with open(os.path.join(root, "commitlog", name), "r+b") as fh:
        fh.seek(victim.physical_offset % 2048 + 4)
        fh.write(b"\x00\x00\x00\x00")  # MAGICCODE destroyed
    return root, victim.physical_offset


def test_corrupt_record_is_reported_with_file_and_offset(spark, store, tmp_path):
    """A broken record becomes one _error row naming file and position; the rest is read."""
    root, offset = _corrupt_copy(store, tmp_path, 5)
    for mpb, min_parts in ((10**9, 1), (300, 2), (10**9, 3)):
        rows = _load(
            spark, root, columns="physicalOffset,file,filePosition", maxPartitionBytes=mpb,
            minPartitions=min_parts,
        ).collect()
        errors = [r for r in rows if r._error is not None]
        assert len(errors) == 1
        err = errors[0]
        assert err.file == f"{offset - offset % 2048:020d}" and err.filePosition == offset % 2048
        assert err.file in err._error and "MAGICCODE" in err._error
        good = sorted(r.physicalOffset for r in rows if r._error is None)
        assert good == [r.physical_offset for r in store.records if r.physical_offset != offset]


def test_fail_fast_raises_on_a_corrupt_record(spark, store, tmp_path):
    """With failFast=true the job fails instead of reporting a row."""
    root, _ = _corrupt_copy(store, tmp_path, 7)
    with pytest.raises(Exception, match="MAGICCODE"):
        _load(spark, root, columns="topic", failFast="true").collect()


def test_user_schema_without_error_column_fails_on_a_corrupt_record(spark, store, tmp_path):
    """A user schema without _error has nowhere to report a corrupt record: the job fails."""
    root, _ = _corrupt_copy(store, tmp_path, 9)
    narrow = spark.read.format("rocketmq-commitlog").schema("topic string").load(root)
    with pytest.raises(Exception, match="MAGICCODE"):
        narrow.groupBy("topic").count().collect()


def test_topic_count_equals_the_plain_scan(spark, store):
    """The bench's two sides agree: Spark's count per topic over a narrow schema equals a
    plain scan_columns loop over the files, and both equal what was sent."""
    import mmap
    from collections import Counter

    from rocketmq_emu.broker.commitlog.record_scan import scan_columns

    plain: Counter = Counter()
    directory = os.path.join(store.root, "commitlog")
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            plain.update(scan_columns(mm, 0, fields=("topic",)).columns["topic"])
        finally:
            mm.close()
    df = (
        spark.read.format("rocketmq-commitlog").schema("topic STRING")
        .option("minPartitions", "2").load(store.root)
    )
    counted = Counter({r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()})
    assert counted == plain == Counter(r.topic for r in store.records)


def test_reading_stops_at_the_written_end(spark, store):
    """The zero tail of the last file yields no rows: the count is the number sent."""
    assert _load(spark, store.root, columns="topic").count() == len(store.records)
    last = sorted(os.listdir(os.path.join(store.root, "commitlog")))[-1]
    single = _load(spark, os.path.join(store.root, "commitlog", last), columns="topic")
    assert single.count() == sum(1 for r in store.records if r.physical_offset >= int(last))


def test_consumequeue_source_lists_every_dispatched_unit(spark, store):
    """One row per dispatched message with its queue offset, commitlog offset, size, tags code."""
    from rocketmq_emu.broker.message import tags_code

    rows = spark.read.format("rocketmq-consumequeue").load(store.root).collect()
    expected = sorted(
        (r.topic, r.queue_id, r.queue_offset, r.physical_offset, r.total_size)
        for r in store.records if r.topic != "RMQ_SYS_TRANS_HALF_TOPIC"
    )
    assert sorted(
        (r.topic, r.queueId, r.queueOffset, r.commitLogOffset, r.size) for r in rows
    ) == expected
    by_offset = {r.commitLogOffset: r.tagsCode for r in rows}
    for rec in store.records:
        if rec.topic.startswith("Topic"):
            assert by_offset[rec.physical_offset] == tags_code(rec.properties.get("TAGS"))
        if rec.topic == "SCHEDULE_TOPIC_XXXX":
            delay = {2: 5_000, 3: 10_000, 4: 30_000}[rec.queue_id + 1]
            assert by_offset[rec.physical_offset] == rec.store_timestamp + delay


def test_planning_leaves_out_the_zero_tail(store, tmp_path):
    """Ranges past the last file's written end are not planned; a damaged tail keeps them."""
    from rocketmq_emu.reports.datasource_commitlog import plan_ranges

    last = sorted(os.listdir(os.path.join(store.root, "commitlog")))[-1]
    tail = max(store.records, key=lambda r: r.physical_offset)
    start = tail.physical_offset - int(last)
    parts = [p for p in plan_ranges(store.root, 100) if p.path.endswith(last)]
    assert parts[-1].stop == start + 1 and parts[0].start == 0
    root = str(tmp_path / "tail")
    shutil.copytree(store.root, root)
    with open(os.path.join(root, "commitlog", last), "r+b") as fh:
        fh.seek(start + tail.total_size)
        fh.write(b"\xff" * 8)  # garbage right after the last record: not a clean end
    parts = [p for p in plan_ranges(root, 100) if p.path.endswith(last)]
    assert parts[-1].stop == 2048


def test_planning_sees_a_file_that_changed_since_the_last_query(store, tmp_path):
    """The remembered written end of a file is not reused once the file changed."""
    from rocketmq_emu.reports.datasource_commitlog import plan_ranges

    root = str(tmp_path / "changing")
    shutil.copytree(store.root, root)
    last = sorted(os.listdir(os.path.join(root, "commitlog")))[-1]
    path = os.path.join(root, "commitlog", last)
    tail = max(store.records, key=lambda r: r.physical_offset)
    before = [p.stop for p in plan_ranges(root, 10**9) if p.path == path]
    assert before == [tail.physical_offset - int(last) + 1]
    with open(path, "r+b") as fh:
        fh.seek(tail.physical_offset - int(last) + tail.total_size)
        fh.write(b"\xff" * 8)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a later write's mtime
    assert [p.stop for p in plan_ranges(root, 10**9) if p.path == path] == [2048]


def test_check_crc_option_reports_a_damaged_body(store, tmp_path):
    """checkCRC=true turns a body that no longer matches BODYCRC into an _error row."""
    import pyarrow as pa

    from rocketmq_emu.reports.columns import commitlog_schema
    from rocketmq_emu.reports.datasource_commitlog import CommitLogReader

    root = str(tmp_path / "crc")
    shutil.copytree(store.root, root)
    victim = store.records[3]
    name = f"{victim.physical_offset - victim.physical_offset % 2048:020d}"
    with open(os.path.join(root, "commitlog", name), "r+b") as fh:
        fh.seek(victim.physical_offset % 2048 + 88)
        fh.write(b"#")
    schema = commitlog_schema(["physicalOffset"])
    for check, expected in (("false", 0), ("true", 1)):
        reader = CommitLogReader({"path": root, "checkCRC": check}, schema)
        table = pa.Table.from_batches(
            [b for p in reader.partitions() for b in reader.read(p)]
        )
        errors = [e for e in table.column("_error").to_pylist() if e]
        assert len(errors) == expected
        assert table.num_rows == len(store.records) + expected - (1 if expected else 0)
    assert "BODYCRC" in errors[0] and name in errors[0]


def test_several_stores_load_as_one_table_with_broker_names(spark, store, tmp_path):
    """load([a, b]) reads both stores into one table, brokerName telling them apart, with the
    byte ranges cut across both (a partition may end in one store and go on in the next)."""
    from rocketmq_emu.reports.datasource_commitlog import plan_partitions
    from rocketmq_emu.reports.stores import from_paths

    roots = [str(tmp_path / name) for name in ("broker-x", "broker-y")]
    for root in roots:
        shutil.copytree(store.root, root)
        shutil.rmtree(os.path.join(root, "config"), ignore_errors=True)  # named by directory
    rows = _load(spark, roots, columns="physicalOffset,brokerName", minPartitions=3).collect()
    by_broker = {name: sorted(r.physicalOffset for r in rows if r.brokerName == name)
                 for name in ("broker-x", "broker-y")}
    want = [r.physical_offset for r in store.records]
    assert by_broker == {"broker-x": want, "broker-y": want} and len(rows) == 2 * len(want)
    parts = plan_partitions(from_paths(roots), 10**9, min_partitions=3)
    spanning = [p for p in parts if len({r.broker for r in p.ranges}) == 2]
    assert len(parts) == 3 and spanning
