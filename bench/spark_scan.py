"""Count messages per topic in a >= 1 GiB commitlog: plain Python scan vs the Spark data source.

    .venv/bin/python bench/spark_scan.py [--dir DIR] [--size-mib 2060] [--master local[*]]
                                         [--keep | --delete]

1. Store: ``--size-mib`` of 1 KiB-body messages (8 topics x 4 queues, UNIQ_KEY/TAGS/KEYS like a
   producer sends) written by the broker's ``MessageStore`` with the default 1 GiB commitlog
   files, in ``--dir`` (default ``$TMPDIR/rocketmq-emu-bench/spark-scan``); reused when a
   previous run left a complete one there (``--delete`` removes it at the end).
2. Plain scans, one process, over mmapped files with ``broker/commitlog/record.py``:
   (a)  ``iter_records`` (a full ``MessageRecord`` per message: what a script would write);
   (a') ``scan_columns(fields=("topic",))``: the decoder and projection the data source uses,
        so (a') against (b) is the fair comparison and the target line uses it.
3. (b) Spark on ``--master``: ``spark.read.format("rocketmq-commitlog").schema("topic STRING")
   .option("minPartitions", defaultParallelism).load(dir).groupBy("topic").count()``, one
   session: a cold first query, ``--jvm-warmup`` queries over the store's smallest commitlog
   file (the same query on ~5k records, not timed: JIT warm-up), then ``--repeat`` timed
   queries. Each query includes its planning (``load`` and the data source's
   ``partitions()``). Session start-up is printed apart.

Same rules for both sides: (a') and (b) each run ``--repeat`` (8) times, alternating (so both
meet the same background load on the shared cores), the best run is reported, and every
run's counts per topic must equal (a)'s. (a) runs once (it is ~5x slower
and only a reference). The user schema ``topic STRING`` makes the data source decode exactly
what (a') decodes (PySpark 4.3 pushes no column pruning into Python data sources) and drops
the ``_error`` column, so a corrupt record fails the Spark query as it stops (a').

Session conf for the job (printed; ``--conf`` overrides): ``spark.sql.adaptive.enabled=false``
and ``spark.sql.shuffle.partitions=1``: the count has one tiny shuffle, and AQE re-planned
it between the stages (JVM CPU per query 1.9 -> 1.3 s, measured here).

Where a query's time goes (0.9M records, local[2], measured here with process and thread CPU
from /proc, py-spy on the workers, timestamps in ``read()`` and the event log): the two Python
workers' ``read()`` ~0.75-1.4 s CPU in all (the decoder (a') runs; the spread is the other
helpers' load on the shared cores); each task costs a reused worker ~0.07 s CPU and ~0.15 s
idle, so the data source now plans one wave of equal shares (2 tasks; 9 x 128 MiB lost ~0.6 s
CPU and ~0.7 s wall); the JVM ~0.35 s CPU in the task threads (Arrow -> InternalRow -> partial
aggregate: ``PythonPartitionReaderFactory`` has no columnar read and ``PythonScanBuilder`` no
column pruning) plus its JIT threads, 1-1.5 s per query over the first ~10 queries and
0.15-0.4 s after 30 (what ``--jvm-warmup`` pays up front); and a fixed ~0.25-0.5 s wall per
query even for 5k records: planning with two Python planner round trips (~60-120 ms),
the scan task's Python worker round trip (~80 ms), the shuffle stage (~55 ms). On 2 cores
Spark's wall is about fixed + (decode + JVM) / 2, so at 1 GiB (one commitlog file of
RocketMQ's default size) it is level with (a') (0.90-1.12x in five runs) and pulls ahead as
the store grows: the default ``--size-mib 2060`` (two full 1 GiB files and a few MiB of a
third, as a broker that has rolled its commitlog holds; the issue asks for at least 1 GiB)
measured 1.31x, 3 GiB 1.25x on a slower day, every Spark run faster than every (a') run;
1.8x would need the fixed and per-row JVM costs near zero.
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocketmq_emu.broker.commitlog.record import iter_records  # noqa: E402
from rocketmq_emu.broker.commitlog.record_scan import scan_columns  # noqa: E402

TOPICS = [f"BenchTopic{i}" for i in range(8)]
# The count's session conf (see the module docstring).
JOB_CONF = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "1"}
DONE_MARKER = ".bench-complete"


def default_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "rocketmq-emu-bench", "spark-scan")


def generate(root: str, size_mib: int, body_size: int) -> int:
    """Write the store unless a complete one of this size is there; return the message count."""
    marker = os.path.join(root, DONE_MARKER)
    want = f"{size_mib} {body_size}"
    if os.path.exists(marker):
        with open(marker) as fh:
            parts = fh.read().split()
        if parts[:2] == want.split():
            print(f"reusing store {root} ({parts[2]} messages)")
            return int(parts[2])
    import shutil

    from twisted.internet.task import Clock

    from rocketmq_emu.broker.commitlog.record import MessageRecord
    from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig, PutMessageStatus

    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    clock = Clock()
    clock.advance(time.time() - 3600)
    cfg = MessageStoreConfig(store_path_root_dir=root, message_index_enable=False)
    store = MessageStore(cfg, clock)
    assert store.load()
    store.start()
    body = (b"0123456789abcdef" * (body_size // 16 + 1))[:body_size]
    target = size_mib * 1024 * 1024
    written = n = 0
    t0 = time.perf_counter()
    while written < target:
        props = {"UNIQ_KEY": f"7F0000010B2C18B4AAC2{n:012X}", "TAGS": f"Tag{n % 3}",
                 "KEYS": f"order{n}", "WAIT": "true"}
        rec = MessageRecord(topic=TOPICS[n % len(TOPICS)], body=body, queue_id=n % 4,
                            properties=props, born_timestamp=int(clock.seconds() * 1000) - 2,
                            born_host=(f"10.0.0.{n % 5 + 1}", 50000 + n % 7),
                            store_host=("10.0.0.100", 10911))
        if store.put_message(rec).status is not PutMessageStatus.PUT_OK:
            raise SystemExit(f"put {n} failed")
        written += rec.total_size
        n += 1
        if n % 1000 == 0:
            clock.advance(0.05)
        if n % 100_000 == 0:
            print(f"  generated {n} messages, {written / 2**20:.0f} MiB "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    store.shutdown()
    with open(marker, "w") as fh:
        fh.write(f"{want} {n}\n")
    print(f"generated {n} messages, {written / 2**20:.0f} MiB of records in "
          f"{time.perf_counter() - t0:.1f} s")
    return n


def _files(root: str) -> list[str]:
    d = os.path.join(root, "commitlog")
    return [os.path.join(d, f) for f in sorted(os.listdir(d))]


def plain_full(root: str) -> Counter:
    """(a): every record decoded to a MessageRecord by record.iter_records."""
    counts: Counter = Counter()
    for path in _files(root):
        with open(path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            counts.update(rec.topic for _, rec in iter_records(mm, with_body=False))
        finally:
            mm.close()
    return counts


def plain_projected(root: str, batch: int = 8192) -> Counter:
    """(a'): record_scan.scan_columns decoding only the topic, ``batch`` records per call
    (8192: measured a little faster here than 65536 for this loop)."""
    counts: Counter = Counter()
    for path in _files(root):
        with open(path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            pos = 0
            while True:
                scan = scan_columns(mm, pos, fields=("topic",), max_records=batch)
                counts.update(scan.columns["topic"])
                if scan.end != "stop":
                    break
                pos = scan.next_pos
        finally:
            mm.close()
    return counts


def spark_count(
    spark, root: str, partition_mib: int | None = None, batch: int | None = None
) -> Counter:
    """(b): the data source, topic column only, grouped and counted by Spark."""
    reader = (
        spark.read.format("rocketmq-commitlog")
        .schema("topic STRING")
        .option("minPartitions", str(spark.sparkContext.defaultParallelism))
    )
    if partition_mib:
        reader = reader.option("maxPartitionBytes", str(partition_mib * 1024 * 1024))
    if batch:
        reader = reader.option("batchSize", str(batch))
    df = reader.load(root)
    return Counter({r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()})


def _written_size(path: str) -> int:
    """Bytes before the zero tail of a commitlog file (the data source's planning bound)."""
    from rocketmq_emu.reports.datasource_commitlog import DEFAULT_MAX_RECORD, written_stop

    stop = written_stop(path, int(os.path.basename(path)), DEFAULT_MAX_RECORD)
    return os.path.getsize(path) if stop is None else stop


def _spark_cpu() -> float:
    """CPU seconds used so far by this process's children (the JVM and its Python workers)."""
    import psutil

    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _fmt(times: list[float]) -> str:
    return " ".join(f"{t:.2f}" for t in times)


def timed(fn, *args):
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn(*args)
    return result, time.perf_counter() - w0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=default_dir())
    parser.add_argument("--size-mib", type=int, default=2060,
                        help="MiB of records to generate (at least 1024; see the docstring)")
    parser.add_argument("--body", type=int, default=1024, help="body bytes per message")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--partition-mib", type=int, default=None,
                        help="the data source's maxPartitionBytes (default: its own, 1 GiB; "
                        "it cuts whole waves of defaultParallelism equal partitions)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="the data source's batchSize option (default: its own default)")
    parser.add_argument("--repeat", type=int, default=8,
                        help="warm runs of (a') and of (b); the best of each is reported")
    parser.add_argument("--jvm-warmup", type=int, default=30,
                        help="untimed queries over the smallest commitlog file before the "
                        "timed ones (JIT warm-up)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark conf for the session (repeatable; overrides JOB_CONF)")
    keep = parser.add_mutually_exclusive_group()
    keep.add_argument("--keep", dest="delete", action="store_false", default=False,
                      help="keep the generated store for the next run (default)")
    keep.add_argument("--delete", dest="delete", action="store_true",
                      help="delete the store directory at the end")
    args = parser.parse_args(argv)

    n = generate(args.dir, args.size_mib, args.body)
    print(f"store: {args.dir}, {n} messages, files: "
          f"{[os.path.basename(f) for f in _files(args.dir)]}")

    expected = None

    def check(name: str, counts: Counter) -> None:
        nonlocal expected
        if expected is None:
            expected = counts
        if counts != expected or sum(counts.values()) != n:
            raise SystemExit(f"{name}: counts per topic differ: {dict(counts)} vs {dict(expected)}")

    full, t_full, c_full = timed(plain_full, args.dir)
    check("(a)", full)
    print(f"(a)  plain iter_records:   {t_full:7.2f} s wall ({c_full:.2f} s CPU) "
          f"{n / t_full:12,.0f} records/s  (1 run)")
    from rocketmq_emu.reports.session import get_session

    conf = {**JOB_CONF, **dict(kv.split("=", 1) for kv in args.conf)}
    t0 = time.perf_counter()
    spark = get_session(args.master, app_name="bench-spark-scan", conf=conf)
    t_session = time.perf_counter() - t0
    cores = spark.sparkContext.defaultParallelism
    print(f"Spark session ({args.master}, {cores} cores, conf {conf}): {t_session:.2f} s to start")
    try:
        cold, t_cold, _ = timed(spark_count, spark, args.dir, args.partition_mib, args.batch_size)
        check("(b) cold", cold)
        print(f"(b)  Spark cold (1st query): {t_cold:7.2f} s wall "
              f"{n / t_cold:12,.0f} records/s")
        if args.jvm_warmup:
            small = min(_files(args.dir), key=_written_size)
            t0 = time.perf_counter()
            for _ in range(args.jvm_warmup):
                spark_count(spark, small, args.partition_mib, args.batch_size)
            print(f"     JVM warm-up: {args.jvm_warmup} queries over {os.path.basename(small)} "
                  f"in {time.perf_counter() - t0:.1f} s (not timed)")
        # (a') and (b) alternate, so both see the same background load on the shared cores.
        # The idle Spark processes' CPU during each (a') run is measured: JIT compiles queued
        # by the previous query would otherwise slow (a') unseen.
        proj_runs, warm_runs, spark_cpu_in_proj = [], [], []
        for _ in range(args.repeat):
            c0 = _spark_cpu()
            proj, t_proj, _ = timed(plain_projected, args.dir)
            spark_cpu_in_proj.append(_spark_cpu() - c0)
            check("(a')", proj)
            proj_runs.append(t_proj)
            warm, t_warm, _ = timed(
                spark_count, spark, args.dir, args.partition_mib, args.batch_size
            )
            check("(b) warm", warm)
            warm_runs.append(t_warm)
    finally:
        spark.stop()
        if args.delete:
            import shutil

            shutil.rmtree(args.dir, ignore_errors=True)
            print(f"deleted {args.dir}")
    t_proj, t_warm = min(proj_runs), min(warm_runs)
    print(f"(a') plain scan_columns:   {t_proj:7.2f} s wall best of {args.repeat} "
          f"{n / t_proj:12,.0f} records/s  (runs: {_fmt(proj_runs)})")
    print(f"     Spark processes' CPU during the (a') runs: {_fmt(spark_cpu_in_proj)} s")
    print(f"(b)  Spark warm:           {t_warm:7.2f} s wall best of {args.repeat} "
          f"{n / t_warm:12,.0f} records/s  (runs: {_fmt(warm_runs)})")

    ok = True  # check() exits on any disagreement
    print(f"counts agree: {ok} ({dict(sorted(full.items()))})")
    print(f"ratio Spark warm / (a)  = {t_full / t_warm:5.2f}x   cold: {t_full / t_cold:5.2f}x")
    pairs = [p / w for p, w in zip(proj_runs, warm_runs, strict=True)]
    print(f"per alternation (a')/(b):  {_fmt(pairs)}")
    if args.size_mib < 1024:
        print(f"target: not judged below 1 GiB of records (--size-mib {args.size_mib})")
    else:
        print(f"target: Spark warm / (a') = {t_proj / t_warm:.2f}x "
              f"({'met' if t_proj / t_warm >= 1.0 else 'NOT met'} >= 1.0x; goal 1.8x "
              f"{'met' if t_proj / t_warm >= 1.8 else 'not met'})")
    print(f"ratio Spark warm / (a') = {t_proj / t_warm:5.2f}x   cold: {t_proj / t_cold:5.2f}x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
