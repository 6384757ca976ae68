"""How rmq-emu combines broker.conf with command-line options (broker.cli.load_config)."""

from __future__ import annotations

import os

import pytest

from rocketmq_emu.broker.cli import CliError, build_parser, load_config


def test_store_option_beats_broker_conf(tmp_path):
    """--store overrides storePathRootDir."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path / 'from-conf'}\n")
    cfg = load_config(str(conf), store=str(tmp_path / "from-cli"), default_store="store")
    assert cfg.store_path_root_dir == str(tmp_path / "from-cli")


def test_broker_conf_store_beats_up_default(tmp_path):
    """storePathRootDir in broker.conf is used when --store is not given."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path / 'from-conf'}\n")
    cfg = load_config(str(conf), default_store="store")
    assert cfg.store_path_root_dir == str(tmp_path / "from-conf")


def test_up_default_store_is_dot_store():
    """Without --store or storePathRootDir, ``up`` keeps its data in ./store (absolute)."""
    cfg = load_config(None, default_store="store")
    assert cfg.store_path_root_dir == os.path.abspath("store")


def test_ports_and_namesrv_override_conf(tmp_path):
    """--broker-port/--port and -n override listenPort and namesrvAddr."""
    conf = tmp_path / "broker.conf"
    conf.write_text("listenPort=1111\nnamesrvAddr=10.0.0.1:9876\n")
    cfg = load_config(str(conf), port=2222, namesrv="127.0.0.1:9999")
    assert cfg.listen_port == 2222
    assert cfg.namesrv_addrs() == ["127.0.0.1:9999"]


def test_missing_conf_is_a_user_error(tmp_path):
    """A missing broker.conf is reported without a traceback."""
    with pytest.raises(CliError, match="no such file"):
        load_config(str(tmp_path / "nope.conf"))


def test_up_defaults():
    """``up`` defaults: name server 9876, broker port from conf (10911), loopback."""
    args = build_parser().parse_args(["up"])
    assert (args.namesrv_port, args.broker_port, args.host, args.store) == (
        9876, None, "127.0.0.1", None)
    assert load_config(None, port=args.broker_port).listen_port == 10911
