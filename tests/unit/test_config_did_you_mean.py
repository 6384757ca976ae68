"""A misspelt key of ``broker.conf`` or ``namesrv.conf`` is warned about with the nearest known
key (issue 25 item 5a)."""

from __future__ import annotations

import logging

from rocketmq_emu.broker.config import parse_broker_conf
from rocketmq_emu.namesrv.config import parse_namesrv_conf


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_broker_conf_misspelt_key_names_the_nearest_known_key(caplog):
    """``brokerNmae=x``: ignored, and the warning asks "did you mean brokerName?"."""
    with caplog.at_level(logging.WARNING):
        loaded = parse_broker_conf("brokerNmae=x\n", "b.conf")
    assert loaded.unknown == ["brokerNmae"] and loaded.config.broker_name == "broker-a"
    assert warnings(caplog) == ["b.conf:1 brokerNmae: unknown key ignored; did you mean brokerName?"]


def test_broker_conf_misspelt_dotted_key_names_the_tls_key(caplog):
    """The dotted keys (``tls.*``, read from the same file) are suggested too."""
    with caplog.at_level(logging.WARNING):
        parse_broker_conf("tls.server.mdoe=enforcing\n", "b.conf")
    assert warnings(caplog) == [
        "b.conf:1 tls.server.mdoe: unknown key ignored; did you mean tls.server.mode?"]


def test_namesrv_conf_misspelt_key_names_the_nearest_known_key(caplog):
    """namesrv.conf ``listenPrt=9877``: "did you mean listenPort?"."""
    with caplog.at_level(logging.WARNING):
        settings = parse_namesrv_conf("listenPrt=9877\n", "n.conf")
    assert settings.unknown == ("listenPrt",) and settings.listen_port is None
    assert warnings(caplog) == ["n.conf:1 listenPrt: unknown key ignored; did you mean listenPort?"]
