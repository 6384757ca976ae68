"""``rmq-emu proxy --upstream HOST:PORT --record FILE [--listen PORT] [--host HOST]
[--upstream-tls]``: record a session against a real RocketMQ (or any name server and its
brokers) by sitting between it and the clients (:mod:`.proxy`); ``rmq-emu replay FILE`` then
plays the session against the emulator. Point the clients' name server at the printed address.
Runs until Ctrl-C / SIGTERM."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rocketmq_emu.broker.cli_errors import CliError, PortRole, port_number
from rocketmq_emu.broker.recording.cli_replay import ReplayError, check_addr, tls_creator


class _RecorderService:
    """Closes the recording when the command stops."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder

    def stop(self) -> None:
        self.recorder.close()


def main(args: argparse.Namespace) -> int:
    """Relay and record until a signal; 2 for a bad option, 1 if the port cannot be listened."""
    from rocketmq_emu.broker.cli import READY, serve

    try:
        upstream = check_addr(args.upstream)
        tls = tls_creator() if args.upstream_tls else None
    except ReplayError as exc:
        print(f"rmq-emu proxy: {str(exc).replace('--namesrv', '--upstream')}", file=sys.stderr)
        return 2

    def starter(reactor: Any, services: list[Any]) -> None:
        from rocketmq_emu.broker.recording.proxy import RecordingProxy
        from rocketmq_emu.broker.recording.recorder import Recorder

        try:
            recorder = Recorder(args.record)
        except OSError as exc:
            raise CliError(f"--record {args.record}: {exc.strerror or exc}") from None
        services.append(_RecorderService(recorder))
        proxy = RecordingProxy(reactor, upstream, args.host, args.listen, recorder, tls)
        proxy.start()
        services.append(proxy)
        print(f"rmq-emu: proxy name server {proxy.namesrv} relays to {upstream}"
              f"{' (TLS)' if tls is not None else ''}; brokers get a port each as routes "
              "name them", flush=True)
        print(f"rmq-emu: recording {args.record}", flush=True)
        print(f"{READY} (Ctrl-C to stop)", flush=True)

    return serve(starter, [PortRole(args.listen, "proxy name server", "--listen")])


def register(subparsers: Any) -> None:
    """Add ``proxy``."""
    p = subparsers.add_parser(
        "proxy", help="record a session against a real name server and its brokers",
        description="Relay clients to a real name server and its brokers and record the session "
                    "(as `rmq-emu up --record`): point the clients at the printed name server, "
                    "then `rmq-emu replay FILE --namesrv <emulator>`. Runs until Ctrl-C.")
    p.add_argument("--upstream", required=True, metavar="HOST:PORT",
                   help="the real name server (its brokers are relayed as routes name them)")
    p.add_argument("--record", required=True, metavar="FILE",
                   help="the recording to write (as `rmq-emu up --record`)")
    p.add_argument("--listen", type=port_number, default=0, metavar="N",
                   help="the proxy's name server port (0: a free port, printed)")
    p.add_argument("--host", default="127.0.0.1", metavar="HOST",
                   help="the interface the proxy listens on (127.0.0.1)")
    p.add_argument("--upstream-tls", action="store_true",
                   help="speak TLS to the upstream (its tls.server.mode is enforcing)")
    p.set_defaults(func=main)
