"""Where ``rmq-emu report`` runs a report: the rules of ``reports.service_client`` (no Spark, no
sockets: a service's health check is replaced by one that finds nothing), and the service's
line stream."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rocketmq_emu.reports import service_client as sc


@pytest.fixture
def state(tmp_path, monkeypatch):
    """This test's own state file, no RMQ_EMU_REPORT_SERVER from outside, and no service
    answering anywhere (the checked URLs are kept in ``state.checked``)."""
    path = tmp_path / "report-service.json"
    monkeypatch.setenv(sc.STATE_ENV, str(path))
    monkeypatch.delenv(sc.SERVER_ENV, raising=False)
    checked: list[str] = []

    def refused(url: str, timeout: float = 0) -> dict:
        checked.append(url)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(sc, "health", refused)
    return path


def test_without_a_service_or_a_name_the_report_runs_here(state):
    assert sc.find_service(None) is None


@pytest.mark.parametrize("word", ["local", "off", "LOCAL"])
def test_the_variable_can_say_run_here(state, monkeypatch, word):
    """RMQ_EMU_REPORT_SERVER=local wins over a state file naming a live process."""
    state.write_text(json.dumps({"pid": os.getpid(), "url": "http://127.0.0.1:9"}))
    monkeypatch.setenv(sc.SERVER_ENV, word)
    assert sc.find_service(None) is None


def test_a_named_service_that_does_not_answer_is_an_error(state, monkeypatch):
    """--server, or the variable, naming a service that does not answer: an error line."""
    with pytest.raises(sc.ServiceError, match=r"report service http://127.0.0.1:9 does not "
                                              r"answer \(Connection refused\)"):
        sc.find_service("127.0.0.1:9")
    monkeypatch.setenv(sc.SERVER_ENV, "http://127.0.0.1:10/")
    with pytest.raises(sc.ServiceError, match="http://127.0.0.1:10 does not answer"):
        sc.find_service(None)


def test_a_state_file_of_a_dead_process_is_ignored(state):
    """The process the file names has exited: the report runs here."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state.write_text(json.dumps({"pid": dead.pid, "url": "http://127.0.0.1:9"}))
    assert sc.read_state(str(state)) is None
    assert sc.find_service(None) is None


def test_a_state_file_of_a_live_process_that_does_not_answer_is_ignored(state):
    """A live pid whose URL answers nothing (a service still starting, or a reused pid)."""
    state.write_text(json.dumps({"pid": os.getpid(), "url": "http://127.0.0.1:9"}))
    assert sc.read_state(str(state))["url"] == "http://127.0.0.1:9"
    assert sc.find_service(None) is None


@pytest.mark.parametrize("given, url", [
    ("127.0.0.1:8081", "http://127.0.0.1:8081"),
    ("http://localhost:8081/", "http://localhost:8081"),
])
def test_a_server_is_host_and_port(given, url):
    assert sc.normalize(given) == url


@pytest.mark.parametrize("given", ["https://h:1", "http://h", "h"])
def test_anything_else_is_refused(given):
    with pytest.raises(sc.ServiceError, match="give http://HOST:PORT"):
        sc.normalize(given)


def test_store_arguments_travel_as_absolute_paths(tmp_path, monkeypatch):
    """The service resolves them from its own working directory: DIR and NAME=DIR both."""
    monkeypatch.chdir(tmp_path)
    assert sc.store_args(["s1", "broker-b=s2"]) == [str(tmp_path / "s1"),
                                                   f"broker-b={tmp_path / 's2'}"]


def test_the_default_state_file_is_under_the_runtime_or_cache_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(sc.STATE_ENV, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert sc.state_path() == str(tmp_path / "rocketmq-emu" / "report-service.json")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert sc.state_path() == str(tmp_path / "cache" / "rocketmq-emu" / "report-service.json")


def test_progress_is_sent_a_whole_line_at_a_time():
    """Progress printed in pieces (and from several threads) reaches the client as lines."""
    from rocketmq_emu.reports.service import LineStream

    lines: list[str] = []
    stream = LineStream(lines.append)
    stream.write("[traffic 1/7] scan ")
    assert lines == []
    stream.write("...\n[traffic 1/7] done in 0.1 s\n[tra")
    assert lines == ["[traffic 1/7] scan ...", "[traffic 1/7] done in 0.1 s"]


def test_serve_refuses_a_port_out_of_range_before_anything_starts(capsys):
    """`rmq-emu report serve --port 99999`: argparse's one error line, exit status 2."""
    import argparse

    from rocketmq_emu.reports.cli import configure

    parser = configure(argparse.ArgumentParser(prog="rmq-emu report"))
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["serve", "--port", "99999"])
    assert stop.value.code == 2
    assert "argument --port: 99999 is out of range" in capsys.readouterr().err
