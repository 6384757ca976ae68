"""``rmq-emu report NAME --store DIR`` refuses a DIR that holds no store at once, in one line,
before Spark is started or pyspark imported (issue 25: an empty directory took 55 s and wrote
an empty report); every store a report can read is still taken."""

from __future__ import annotations

import sys

import pytest

from rocketmq_emu.broker import cli as rmq_emu
from rocketmq_emu.reports import cli
from rocketmq_emu.reports.stores import StoreError, resolve


@pytest.fixture
def no_pyspark(monkeypatch):
    """The extra counts as installed, but importing pyspark (or anything of Spark) fails: the
    command must answer before it gets there."""
    monkeypatch.setattr(cli, "missing_packages", lambda: [])
    for name in ("pyspark", "pyspark.sql"):
        monkeypatch.setitem(sys.modules, name, None)


def test_only_a_directory_with_no_store_in_or_under_it_is_refused(tmp_path):
    """Refused: an empty directory, one with unrelated files, a named one without commitlog/.
    Taken: a store root whose commitlog/ is still empty (a broker creates it before any
    message), a commitlog directory itself, a directory of brokers' stores."""
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "other"
    (other / "notes").mkdir(parents=True)
    (other / "readme.txt").write_text("no store here")
    for arg in (str(empty), str(other), f"broker-a={other}"):
        with pytest.raises(StoreError, match=r"holds no RocketMQ store \(no commitlog/"):
            resolve([arg])
    fresh = tmp_path / "fresh"
    (fresh / "commitlog").mkdir(parents=True)
    commitlog = tmp_path / "disk" / "cl"
    commitlog.mkdir(parents=True)
    (commitlog / "00000000000000000000").write_bytes(b"\0" * 64)
    cluster = tmp_path / "cluster"
    for broker in ("broker-a", "broker-b"):
        (cluster / broker / "commitlog").mkdir(parents=True)
    got = resolve([str(fresh), f"b={commitlog}", str(cluster)])
    assert [s.path for s in got] == [str(fresh), str(commitlog), str(cluster / "broker-a"),
                                     str(cluster / "broker-b")]


@pytest.mark.parametrize("store, words", [
    ("empty", "holds no RocketMQ store (no commitlog/"),
    ("missing", "does not exist"),
])
def test_a_store_that_is_not_there_is_one_error_line_before_spark(
        tmp_path, capsys, no_pyspark, store, words):
    """`rmq-emu report traffic --store DIR` with an empty or missing DIR: exit status 2, one
    line ``rmq-emu: error: ...`` naming the directory, no Spark (pyspark cannot even import)."""
    (tmp_path / "empty").mkdir()
    path = tmp_path / store
    status = rmq_emu.main(["report", "traffic", "--store", str(path),
                           "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and err[0].startswith("rmq-emu: error: "), err
    assert str(path) in err[0] and words in err[0]
    assert not (tmp_path / "out").exists()


def test_every_report_name_refuses_before_spark(tmp_path, capsys, no_pyspark):
    """`all` and each single report check --store the same way, first."""
    for name in (*cli.REPORTS, "all"):
        assert cli.run_argv([name, "--store", str(tmp_path)]) == 2
        assert "holds no RocketMQ store" in capsys.readouterr().err
