"""Port options and port keys of ``rmq-emu up | namesrv | broker``: 0-65535, 0 picking a free
port; anything else is one argparse-style line before anything starts (issue 25 item 2)."""

from __future__ import annotations

import argparse

import pytest

from rocketmq_emu.broker.cli import build_parser
from rocketmq_emu.broker.config import ConfigError, parse_broker_conf
from rocketmq_emu.namesrv.config import NamesrvConfigError, parse_namesrv_conf

#: Every port option of the server commands, as (subcommand, option).
PORT_OPTIONS = [("up", "--namesrv-port"), ("up", "--broker-port"), ("up", "--grpc-port"),
                ("up", "--control-port"), ("namesrv", "--port"), ("broker", "--port"),
                ("broker", "--grpc-port")]


@pytest.mark.parametrize("text, port", [("0", 0), ("1", 1), ("9876", 9876), ("65535", 65535)])
def test_a_port_option_takes_0_to_65535(text, port):
    """0 (a free port) up to 65535 are ports."""
    from rocketmq_emu.broker.cli_errors import port_number

    assert port_number(text) == port


@pytest.mark.parametrize("text", ["65536", "99999", "-1", "-5"])
def test_a_port_out_of_range_is_refused_naming_the_range(text):
    """A number outside 0-65535 is an argparse type error naming it and the range."""
    from rocketmq_emu.broker.cli_errors import port_number

    with pytest.raises(argparse.ArgumentTypeError,
                       match=rf"^{text} is out of range \(0-65535; 0 picks a free port\)$"):
        port_number(text)


def test_a_port_that_is_not_a_number_is_refused():
    """Text that is not a decimal number is refused, quoted."""
    from rocketmq_emu.broker.cli_errors import port_number

    with pytest.raises(argparse.ArgumentTypeError, match=r"^'9876x' is not a port number"):
        port_number("9876x")


@pytest.mark.parametrize("command, option", PORT_OPTIONS)
def test_every_port_option_out_of_range_is_one_line_and_status_2(command, option, capsys):
    """``rmq-emu <command> <option> 99999``: exit status 2 and one stderr line, argparse's
    ``rmq-emu <command>: error: argument <option>: ...``, without the usage block."""
    argv = [command, option, "99999"]
    with pytest.raises(SystemExit) as exit_:
        build_parser(argv).parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"rmq-emu {command}: error: argument {option}: 99999 is out of range "
        "(0-65535; 0 picks a free port)"]


def test_broker_namesrv_option_with_a_port_out_of_range_is_one_line(capsys):
    """``broker -n 127.0.0.1:99999``: one line naming -n and the address."""
    argv = ["broker", "-n", "127.0.0.1:9876;127.0.0.1:99999"]
    with pytest.raises(SystemExit) as exit_:
        build_parser(argv).parse_args(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "rmq-emu broker: error: argument -n/--namesrv: '127.0.0.1:99999': port 99999 is out of "
        "range (1-65535)"]


def test_broker_conf_listen_port_0_picks_a_free_port():
    """``listenPort=0`` is accepted (the broker binds a free port, as Java's NettyRemotingServer
    does with 0)."""
    assert parse_broker_conf("listenPort=0\n", "b.conf").config.listen_port == 0


def test_broker_conf_listen_port_out_of_range_names_the_line():
    """``listenPort=70000`` is an error naming file, line, key and the range."""
    with pytest.raises(ConfigError, match=r"^b\.conf:2 listenPort: 70000 is out of range "
                                          r"\(0-65535; 0 picks a free port\)$"):
        parse_broker_conf("brokerName=b\nlistenPort=70000\n", "b.conf")


@pytest.mark.parametrize("value, problem", [
    ("127.0.0.1:99999", "'127.0.0.1:99999': port 99999 is out of range (1-65535)"),
    ("127.0.0.1:0", "'127.0.0.1:0': port 0 is out of range (1-65535)"),
    ("10.0.0.1:9876;nameserver", "'nameserver' is not host:port"),
])
def test_broker_conf_namesrv_addr_with_a_bad_port_names_the_line(value, problem):
    """Each ``namesrvAddr`` entry is host:port with a port a client can connect to."""
    with pytest.raises(ConfigError) as err:
        parse_broker_conf(f"namesrvAddr={value}\n", "b.conf")
    assert str(err.value) == f"b.conf:1 namesrvAddr: {problem}"


def test_namesrv_conf_listen_port_0_picks_a_free_port():
    """namesrv.conf ``listenPort=0`` is accepted, as on the command line."""
    assert parse_namesrv_conf("listenPort=0\n").listen_port == 0


def test_namesrv_conf_listen_port_out_of_range_names_the_line():
    """namesrv.conf ``listenPort=65536`` is an error naming file, line and key."""
    with pytest.raises(NamesrvConfigError, match=r"^n\.conf:1 listenPort: '65536' is not a port "
                                                 r"\(0-65535; 0 picks a free port\)$"):
        parse_namesrv_conf("listenPort=65536\n", "n.conf")
