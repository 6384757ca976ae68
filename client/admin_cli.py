"""``rmq-emu admin``: ``mqadmin``-style subcommands over the remoting protocol.

Subcommand names and flags follow Apache RocketMQ's ``mqadmin`` (``tools/command/*``):
``-n`` name server (default ``$NAMESRV_ADDR``, else ``127.0.0.1:9876``), ``-t`` topic, ``-g``
group, ``-c`` cluster, ``-b`` broker address, ``-i`` message id, ``-k`` key, ``-s`` timestamp.
Tables are aligned with ``#``-prefixed headers as mqadmin prints them; ``--json`` prints one
JSON document instead (for scripts). Exit status: 0 ok, 1 a request failed, 2 usage error.

The subcommands live in one module per area, each with its own table of options:
:mod:`~rocketmq_emu.client.admin_cli_topic` (topics, clusters, brokerStatus),
:mod:`~rocketmq_emu.client.admin_cli_consumer` (consumerProgress, resetOffsetByTime),
:mod:`~rocketmq_emu.client.admin_cli_connection` (consumerConnection, consumerStatus,
producerConnection),
:mod:`~rocketmq_emu.client.admin_cli_message` (queryMsgById, queryMsgByKey, queryMsgByOffset,
printMsg, sendMessage),
:mod:`~rocketmq_emu.client.admin_cli_brokerconfig` (getBrokerConfig, updateBrokerConfig,
wipeWritePerm, addWritePerm),
:mod:`~rocketmq_emu.client.admin_cli_broker` (brokerConsumeStats, cleanExpiredCQ,
cleanUnusedTopic, deleteExpiredCommitLog, cloneGroupOffset, statsAll, queryCq, producer),
:mod:`~rocketmq_emu.client.admin_cli_group` (updateSubGroup, getConsumerConfig,
deleteSubGroup) and
:mod:`~rocketmq_emu.client.admin_cli_acl` (updateAclConfig, deleteAclConfig,
updateGlobalWhiteAddr, clusterAclConfigVersion, getAclConfig, and the credentials every request
is signed with: ``$ROCKETMQ_HOME/conf/tools.yml``, ``--access-key``/``--secret-key``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from rocketmq_emu.client import (
    admin_cli_acl,
    admin_cli_broker,
    admin_cli_brokerconfig,
    admin_cli_connection,
    admin_cli_consumer,
    admin_cli_group,
    admin_cli_message,
    admin_cli_topic,
)
from rocketmq_emu.client.admin_output import Output, UsageError
from rocketmq_emu.client.admin_tls import tls_hint, tls_requested
from rocketmq_emu.client.message import MQBrokerError, MQClientError

DEFAULT_NAMESRV = "127.0.0.1:9876"


Command = Callable[[Any, argparse.Namespace, Output], Any]

#: The modules a subcommand lives in, each with ``COMMANDS`` and ``add_options(name, parser)``.
MODULES = (admin_cli_topic, admin_cli_consumer, admin_cli_connection, admin_cli_message,
           admin_cli_brokerconfig, admin_cli_broker, admin_cli_group, admin_cli_acl)

COMMANDS: dict[str, tuple[str, Command]] = {
    name: entry for module in MODULES for name, entry in module.COMMANDS.items()}


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namesrvAddr", default=None,
                   help="Name server address list, eg: 192.168.0.1:9876;192.168.0.2:9876")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--tls", action="store_true",
                   help="connect with TLS, trusting the server's certificate (for "
                        "tls.server.mode=enforcing); also on with -Dtls.enable=true in "
                        "$JAVA_OPT, as for mqadmin")
    admin_cli_acl.add_credential_options(p)


def _add_options(name: str, p: argparse.ArgumentParser) -> None:
    for module in MODULES:
        if name in module.COMMANDS:
            module.add_options(name, p)
            return


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The ``admin`` parser (standalone, or filled in by :func:`register`)."""
    if parser is None:
        parser = argparse.ArgumentParser(prog="rmq-emu admin", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="admin_command", metavar="SUBCOMMAND")
    for name, (help_text, fn) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _add_common(p)
        _add_options(name, p)
        p.set_defaults(admin_fn=fn)
    return parser


def register(subparsers: Any) -> None:
    """Add ``admin`` to the ``rmq-emu`` command line (``rocketmq_emu.broker.cli`` plug-in contract)."""
    parser = subparsers.add_parser("admin", help="mqadmin-style administration commands")
    build_parser(parser)
    parser.set_defaults(func=run_args)


async def execute(args: argparse.Namespace, reactor: Any = None) -> tuple[int, str]:
    """Run one parsed admin command; returns (exit status, text to print)."""
    from rocketmq_emu.client.admin import Admin

    namesrv = args.namesrvAddr or os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV
    out = Output(getattr(args, "json", False))
    try:
        credentials = admin_cli_acl.resolve_credentials(args)
    except UsageError as exc:
        return 2, f"rmq-emu admin {args.admin_command}: {exc}"
    admin = Admin(namesrv, reactor=reactor, timeout=5.0, credentials=credentials,
                  tls=tls_requested(args))
    try:
        await args.admin_fn(admin, args, out)
        return 0, out.render()
    except UsageError as exc:
        return 2, f"rmq-emu admin {args.admin_command}: {exc}"
    except (MQBrokerError, MQClientError) as exc:
        return 1, f"{args.admin_command} command failed: {tls_hint(exc) or exc}"
    except Exception as exc:  # connection refused, timeouts
        return 1, (f"{args.admin_command} command failed: "
                   f"{tls_hint(exc) or f'{type(exc).__name__}: {exc}'}")
    finally:
        await admin.shutdown()


def run_args(args: argparse.Namespace) -> int:
    """Entry for ``rmq-emu admin ...``: runs the reactor until the command is done."""
    if not getattr(args, "admin_fn", None):
        build_parser().print_help()
        return 2
    from twisted.internet import defer, task

    result: dict[str, Any] = {}

    def go(reactor: Any) -> defer.Deferred:
        d = defer.ensureDeferred(execute(args, reactor))
        d.addCallback(lambda r: result.update(status=r[0], text=r[1]))
        return d

    try:
        task.react(go)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    text = result.get("text", "")
    status = int(result.get("status", 1))
    if text:
        print(text, file=sys.stdout if status == 0 else sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    """``python -m client.admin_cli SUBCOMMAND ...``; a closed stdout (``| head -1``) ends
    quietly with status 0, as in ``rocketmq_emu.broker.cli.main``."""
    try:
        status = run_args(build_parser().parse_args(argv))
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
