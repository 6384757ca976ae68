"""``rmq-emu``: the command line.

Subcommands are registered by modules, each owning its area: this module registers ``up``,
``namesrv`` and ``broker``; other areas plug in through :data:`SUBCOMMAND_MODULES` (a module with
a ``register(subparsers)`` function that adds its parser and sets ``func=callable(args) -> int``).
Such a module is imported only when its subcommand is the one being run; otherwise its command is
listed from the table's help text. A missing optional module is skipped.

``rmq-emu up`` runs a name server and a broker in one process on the default reactor; Ctrl-C or
SIGTERM stops both cleanly (the broker unregisters, the store is flushed and its ``abort`` marker
removed) and the exit status is 0.

Once serving, each prints where it listens, with the ports bound (a port option of 0 picks a
free port), and one line per optional feature that is on (:mod:`rocketmq_emu.broker.cli_banner`),
then :data:`READY` last. A port option out of 0-65535 is argparse's one-line error.

An expected startup failure (a port in use, a locked or unwritable store, a bad ``broker.conf``
value, an unusable store config file) prints one line naming the cause and what to do, and exits
non-zero (:mod:`rocketmq_emu.broker.cli_errors`); ``--debug`` adds the traceback.

Importing this module and building the parser import no area's code: each subcommand's module
is imported when that subcommand runs (``--help`` and ``up`` stay fast, and ``report`` can say
which extra to install instead of failing on a missing pyspark).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import os
import signal
import sys
from typing import Any

from rocketmq_emu.broker.cli_control import ControlOptions, add_control_args
from rocketmq_emu.broker.cli_errors import (
    CliArgumentParser,
    CliError,
    PortRole,
    describe_startup_failure,
    namesrv_addresses,
    port_number,
    writable_dir,
    writable_file,
)
from rocketmq_emu.broker.grpc import DEFAULT_GRPC_PORT

log = logging.getLogger(__name__)

#: Other areas' subcommands: (command, module with ``register(subparsers)``, one-line help).
SUBCOMMAND_MODULES: list[tuple[str, str, str]] = [
    ("report", "rocketmq_emu.reports.cli",
     "Spark batch reports read from the store files (needs the [reports] extra)"),
    ("admin", "rocketmq_emu.client.admin_cli", "mqadmin-style administration commands"),
    ("recording", "rocketmq_emu.broker.recording.cli", "list the frames of an `up --record` file"),
    ("replay", "rocketmq_emu.broker.recording.cli_replay",
     "replay a recording's client requests and compare the answers"),
    ("proxy", "rocketmq_emu.broker.recording.cli_proxy",
     "record a session against a real name server and its brokers"),
    ("tls-cert", "rocketmq_emu.broker.tls.cli",
     "print the certificate a server's TLS port presents, for a client to trust"),
]

#: Where ``up`` keeps its data when neither ``--store`` nor ``storePathRootDir`` says:
#: ``./store`` (git-ignored), not RocketMQ's ``~/store``, so ``make run`` stays in the checkout.
DEFAULT_UP_STORE = "store"
#: The line a server command prints once it serves: what scripts and tests wait for.
READY = "rmq-emu: ready"
#: The name server's listenPort default (NettyServerConfig in NamesrvStartup).
DEFAULT_NAMESRV_PORT = 9876


# --- configuration ------------------------------------------------------------------------------


def load_conf_file(path: str, loader: Any, bad_value: tuple[type[Exception], ...]) -> Any:
    """``loader(path)``; a missing or unreadable file, or a value ``bad_value`` names, is one
    :class:`CliError` line."""
    try:
        return loader(path)
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except OSError as e:
        raise CliError(f"{path}: cannot read: {e.strerror or e}") from None
    except bad_value as e:
        raise CliError(f"{e}; fix that line of the file") from None


def load_config(conf: str | None, *, store: str | None = None, port: int | None = None,
                namesrv: str | None = None, default_store: str | None = None) -> Any:
    """``broker.conf`` (if any) with command-line overrides applied; returns a BrokerConfig."""
    from rocketmq_emu.broker.config import BrokerConfig, ConfigError, load_broker_conf
    from rocketmq_emu.broker.properties import PropertiesError

    if conf:
        loaded = load_conf_file(conf, load_broker_conf, (ConfigError, PropertiesError))
        cfg, explicit = loaded.config, loaded.explicit
    else:
        cfg, explicit = BrokerConfig(), set()
    if store is not None:
        cfg.store_path_root_dir = store
    elif "store_path_root_dir" not in explicit and default_store is not None:
        cfg.store_path_root_dir = default_store
    cfg.store_path_root_dir = os.path.abspath(os.path.expanduser(cfg.store_path_root_dir))
    if port is not None:
        cfg.listen_port = port
    if namesrv is not None:
        cfg.namesrv_addr = namesrv
    return cfg


def prepare_store(root: str) -> None:
    """Create the store root and check it is writable before anything starts listening, so a bad
    path is one line (``CliError``) rather than a failure halfway through the start."""
    try:
        os.makedirs(root, exist_ok=True)
        if not os.access(root, os.W_OK):
            raise PermissionError(13, os.strerror(13), root)
    except OSError as e:
        raise CliError(describe_startup_failure(e, [], root)) from None


# --- services -----------------------------------------------------------------------------------


def load_namesrv_settings(conf: str | None) -> Any:
    """``namesrv.conf`` (if any) as :class:`~rocketmq_emu.namesrv.config.NamesrvSettings`."""
    from rocketmq_emu.broker.properties import PropertiesError
    from rocketmq_emu.namesrv.config import (
        NamesrvConfigError,
        NamesrvSettings,
        load_namesrv_conf,
    )

    if not conf:
        return NamesrvSettings()
    return load_conf_file(conf, load_namesrv_conf, (NamesrvConfigError, PropertiesError))


def make_namesrv(reactor: Any, host: str, port: int, kv_config_path: str | None = None,
                 settings: Any = None) -> Any:
    """A name server alone for ``host:port`` (``start()`` it; ``stop()`` it at shutdown) with
    ``namesrv.conf``'s other ``settings``; name servers with brokers are built by
    :class:`rocketmq_emu.broker.cluster.Cluster`."""
    from rocketmq_emu.namesrv.config import NamesrvSettings
    from rocketmq_emu.namesrv.server import NameServer

    settings = settings or NamesrvSettings()
    return NameServer(reactor, port=port, host=host, kv_config_path=kv_config_path,
                      order_message_enable=settings.order_message_enable, tls=settings.tls)


def _stop_all(services: list[Any]) -> Any:
    """Stop services in reverse start order, each after the previous one has stopped; returns
    a Deferred for the reactor's shutdown.

    Not Twisted's ``MultiService``: its ``stopService`` starts every child's stop at once, so
    the name server would close while the broker's UNREGISTER_BROKER is still in flight.
    """
    from twisted.internet import defer

    @defer.inlineCallbacks
    def run():
        for svc in reversed(services):
            try:
                yield defer.maybeDeferred(svc.stop)
            except Exception as e:
                message = describe_startup_failure(e, [])
                log.error("error stopping %r%s", svc, f": {message}" if message else "",
                          exc_info=message is None)
        print("rmq-emu: stopped", flush=True)

    return run()


def serve(starter, roles: list[PortRole] | None = None, store_root: str | None = None,
           debug: bool = False) -> int:
    """Run ``starter(reactor, services)`` on the default reactor until a signal.

    ``roles`` name the ports the start listens on and ``store_root`` the store, so that an
    expected failure is one line on stderr (exit status 1); ``debug`` adds the traceback.
    """
    from twisted.internet import defer

    from rocketmq_emu.broker.default_reactor import default_reactor

    reactor = default_reactor()
    services: list[Any] = []
    outcome = {"rc": 0}

    @defer.inlineCallbacks
    def boot():
        try:
            yield defer.maybeDeferred(starter, reactor, services)
            # Everything loaded at start (modules, configs, recovered tables) lives as long as
            # the process: the cyclic GC, off since the command began (a start's imports and
            # loads make long-lived objects only, and its collections cost ~10 ms of a start),
            # is turned on with all of it frozen, so it never walks it again on a full
            # collection (a busy broker's records in flight trigger them).
            gc.freeze()
            gc.enable()
        except CliError as e:
            print(f"rmq-emu: {e}", file=sys.stderr, flush=True)
            outcome["rc"] = 2
            reactor.stop()
        except Exception as e:
            message = describe_startup_failure(e, roles or [], store_root)
            if message is None or debug:
                log.error("rmq-emu: failed to start", exc_info=True)
            if message is not None:
                print(f"rmq-emu: {message}", file=sys.stderr, flush=True)
            outcome["rc"] = 1
            reactor.stop()

    def stop_once(*_: Any) -> None:
        # `make run` + Ctrl-C (or a supervisor) can deliver the signal twice; Twisted's own
        # handler (and task.react's) would then call reactor.stop() on a stopped reactor and
        # print a traceback. Ours is installed even when the shell started us with SIGINT
        # ignored (`rmq-emu up &` from a script), where Twisted installs none.
        if reactor.running and not outcome.get("stopping"):
            outcome["stopping"] = True
            reactor.stop()

    def on_signal(*_: Any) -> None:
        reactor.callFromThread(stop_once)

    reactor.addSystemEventTrigger("before", "shutdown", lambda: _stop_all(services))
    reactor.callWhenRunning(boot)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    reactor.run(installSignalHandlers=False)
    return outcome["rc"]


# --- subcommands ------------------------------------------------------------------------------


def cmd_up(args: argparse.Namespace) -> int:
    """Name server + broker in one process, built by :mod:`rocketmq_emu.broker.cluster` (the
    wiring the test harness uses too); ``--control-port`` adds a controllable clock, fault hooks
    and the HTTP control API to that same cluster."""
    gc.disable()  # until started: see serve
    cfg = load_config(args.config, store=args.store, port=args.broker_port,
                      namesrv=f"{args.host}:{args.namesrv_port}", default_store=DEFAULT_UP_STORE)
    prepare_store(cfg.store_path_root_dir)
    control = ControlOptions.from_args(args)
    roles = [PortRole(args.namesrv_port, "name server port", "--namesrv-port"),
             *_broker_roles(cfg.listen_port, "--broker-port"),
             PortRole(args.grpc_port, "gRPC port", "--grpc-port")]
    if control.port is not None:
        roles.append(PortRole(control.port, "control API port", "--control-port"))

    from twisted.internet import defer

    from rocketmq_emu.broker.cluster import up_spec

    spec = up_spec(cfg, args.host, args.namesrv_port, grpc_port=args.grpc_port)
    if args.record:
        spec.record = writable_file(args.record, "--record")
    if args.conformance_report:
        spec.conformance_report = writable_dir(args.conformance_report, "--conformance-report")

    @defer.inlineCallbacks
    def starter(reactor, services):
        cluster, controls = control.build(spec, reactor)
        services.append(cluster)
        yield cluster.start()
        extra = []
        if controls is not None:
            services.append(controls)  # stopped first: no control request races the shutdown
            extra = control.serve(controls, cluster)
        _announce(cluster, extra=extra)

    return serve(starter, roles=roles, store_root=cfg.store_path_root_dir, debug=args.debug)


def _broker_roles(listen_port: int, option: str) -> list[PortRole]:
    """The broker's port and its VIP channel port (``listenPort - 2``, BrokerController's
    ``fastRemotingServer``); with port 0 both are free ports, which no failure names."""
    if listen_port == 0:
        return []
    return [PortRole(listen_port, "broker port", option),
            PortRole(listen_port - 2, "the broker's VIP channel port, listenPort-2", option)]


def cmd_namesrv(args: argparse.Namespace) -> int:
    """A name server alone."""
    gc.disable()  # until started: see serve

    from twisted.internet import defer

    settings = load_namesrv_settings(args.config)
    port = next(p for p in (args.port, settings.listen_port, DEFAULT_NAMESRV_PORT)
                if p is not None)  # 0 is a port too: a free one
    kv_config = args.kv_config or settings.kv_config_path

    @defer.inlineCallbacks
    def starter(reactor, services):
        namesrv = make_namesrv(reactor, args.host, port, kv_config, settings)
        services.append(namesrv)
        yield _maybe_start(namesrv)
        print(f"rmq-emu: name server listening on {args.host}:{namesrv.port}", flush=True)
        from rocketmq_emu.broker.cli_banner import tls_line

        tls = tls_line(namesrv.tls)
        if tls:
            print(f"rmq-emu: {tls}", flush=True)
        print(f"{READY} (Ctrl-C to stop)", flush=True)

    option = "listenPort" if args.port is None and settings.listen_port is not None else "--port"
    return serve(starter, [PortRole(port, "name server port", option)], debug=args.debug)


def cmd_broker(args: argparse.Namespace) -> int:
    """A broker alone, registering with the name server(s) of ``-n`` or ``namesrvAddr``."""
    gc.disable()  # until started: see serve
    cfg = load_config(args.config, store=args.store, port=args.port, namesrv=args.namesrv)
    prepare_store(cfg.store_path_root_dir)
    if not cfg.namesrv_addrs():
        log.warning("no name server (-n or namesrvAddr): clients will not find this broker")
    control = ControlOptions.from_args(args)

    from twisted.internet import defer

    from rocketmq_emu.broker.cluster import broker_spec

    spec = broker_spec(cfg, args.host, grpc_port=args.grpc_port)

    @defer.inlineCallbacks
    def starter(reactor, services):
        cluster, controls = control.build(spec, reactor)
        services.append(cluster)
        yield cluster.start()
        extra = []
        if controls is not None:
            services.append(controls)  # stopped first: no control request races the shutdown
            extra = control.serve(controls, cluster)
        _announce(cluster, registers_with=cfg.namesrv_addr, extra=extra)

    roles = _broker_roles(cfg.listen_port, "--port")
    if args.grpc_port is not None:
        roles.append(PortRole(args.grpc_port, "gRPC port", "--grpc-port"))
    if control.port is not None:
        roles.append(PortRole(control.port, "control API port", "--control-port"))
    return serve(starter, roles, cfg.store_path_root_dir, debug=args.debug)


def _maybe_start(service: Any) -> Any:
    from twisted.internet import defer

    start = getattr(service, "start", None)
    return defer.maybeDeferred(start) if start is not None else defer.succeed(None)


def _announce(cluster: Any, registers_with: str | None = None,
              extra: list[str] | None = None) -> None:
    """Tell the user where things are (the ports bound) and which features are on
    (:mod:`rocketmq_emu.broker.cli_banner`), then ``extra`` lines; the last line, ``ready``, is
    what scripts wait for."""
    from rocketmq_emu.broker.cli_banner import cluster_lines

    for line in [*cluster_lines(cluster, registers_with), *(extra or [])]:
        print(f"rmq-emu: {line}", flush=True)
    print(f"{READY} (Ctrl-C to stop)", flush=True)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``up``, ``namesrv`` and ``broker``."""
    up = subparsers.add_parser(
        "up", help="name server + broker in one process",
        description="Run a name server and a broker in one process until Ctrl-C/SIGTERM.")
    up.add_argument("--store", help=f"store directory (default: storePathRootDir or ./{DEFAULT_UP_STORE})")
    up.add_argument("--namesrv-port", type=port_number, default=DEFAULT_NAMESRV_PORT, metavar="N",
                    help=f"name server port ({DEFAULT_NAMESRV_PORT}; 0 picks a free port, "
                         "printed at start)")
    up.add_argument("--broker-port", type=port_number, default=None, metavar="N",
                    help="broker listenPort (default: broker.conf or 10911); port-2 is also served "
                         "(the VIP channel); 0 picks free ones, printed at start")
    up.add_argument("-c", "--config", metavar="broker.conf", help="RocketMQ broker.conf")
    up.add_argument("--host", default="127.0.0.1", help="interface to listen on (127.0.0.1)")
    up.add_argument("--grpc-port", type=port_number, default=DEFAULT_GRPC_PORT, metavar="N",
                    help=f"RocketMQ 5 gRPC port for the 5.x SDKs ({DEFAULT_GRPC_PORT})")
    add_control_args(up, port_number)
    up.add_argument("--record", metavar="FILE", default=None,
                    help="write every byte the name server and broker ports read and write to "
                         "FILE as it goes (format: broker/recording/format.py)")
    up.add_argument("--conformance-report", metavar="DIR", default=None,
                    help="write DIR/conformance.json and DIR/conformance.html (what clients sent "
                         "that the Java client does not) when the process stops")
    up.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                    help="show the traceback of a startup failure")
    up.set_defaults(func=cmd_up)

    ns = subparsers.add_parser("namesrv", help="a name server alone")
    ns.add_argument("-c", "--config", metavar="namesrv.conf",
                    help="RocketMQ namesrv.conf (listenPort, kvConfigPath, orderMessageEnable, "
                         "and the tls.* keys Java takes as -D properties)")
    ns.add_argument("--port", type=port_number, default=None, metavar="N",
                    help=f"listen port (overrides listenPort; default {DEFAULT_NAMESRV_PORT}; 0 "
                         "picks a free port)")
    ns.add_argument("--host", default="127.0.0.1", help="interface to listen on (127.0.0.1)")
    ns.add_argument("--kv-config", metavar="PATH",
                    help="persist KV config here (overrides kvConfigPath; default: in memory "
                         "only)")
    ns.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                    help="show the traceback of a startup failure")
    ns.set_defaults(func=cmd_namesrv)

    br = subparsers.add_parser("broker", help="a broker alone")
    br.add_argument("-n", "--namesrv", metavar="HOST:PORT", type=namesrv_addresses,
                    help="name server address(es), ';'-separated (overrides namesrvAddr)")
    br.add_argument("-c", "--config", metavar="broker.conf", help="RocketMQ broker.conf")
    br.add_argument("--store", help="store directory (overrides storePathRootDir)")
    br.add_argument("--port", type=port_number, default=None, metavar="N",
                    help="listenPort (overrides broker.conf; port-2 is also served, the VIP "
                         "channel); 0 picks free ones, printed at start")
    br.add_argument("--host", default="127.0.0.1", help="interface to listen on (127.0.0.1)")
    br.add_argument("--grpc-port", type=port_number, default=None, metavar="N",
                    help="serve RocketMQ 5's gRPC for the 5.x SDKs on this port (off by "
                         f"default: several brokers share a host; the 5.x proxy's is "
                         f"{DEFAULT_GRPC_PORT})")
    add_control_args(br, port_number)
    br.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                    help="show the traceback of a startup failure")
    br.set_defaults(func=cmd_broker)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The ``rmq-emu`` parser; the other areas' module for the subcommand ``argv`` names (the
    command line if None) is imported and registers its full parser."""
    # Subparsers are of the same class: every usage error is one line, without the usage block.
    parser = CliArgumentParser(
        prog="rmq-emu", description="RocketMQ-compatible name server and broker (emulator).")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging (-v info, -vv debug)")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of a startup failure (and debug logging)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    register(subparsers)
    chosen = _chosen_command(argv)
    for command, name, help_text in SUBCOMMAND_MODULES:
        if command != chosen:
            # Listed, not imported: `--help` and `up` never pay for another area's imports.
            subparsers.add_parser(command, help=help_text, add_help=False)
            continue
        try:
            module = importlib.import_module(name)
        except ImportError as e:
            if e.name and not name.startswith(e.name):
                raise
            continue
        module.register(subparsers)
    return parser


def _chosen_command(argv: list[str] | None) -> str | None:
    """The subcommand named on the command line: the first word that is not an option (the
    top-level options take no value)."""
    words = sys.argv[1:] if argv is None else argv
    return next((w for w in words if not w.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run the ``rmq-emu`` command."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        return status
    except BrokenPipeError:
        # `rmq-emu ... | head -1`: the reader is gone. End quietly like a Unix tool (and like
        # mqadmin, whose PrintStream swallows the IOException): fd 1 -> /dev/null so the exit
        # flush cannot fail again (the recipe of Python's signal docs), status 0.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    verbose = 2 if args.debug else args.verbose
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CliError as e:
        print(f"rmq-emu: {e}", file=sys.stderr)
        return 2
    finally:
        gc.enable()  # a server command that failed before it started turned it off


if __name__ == "__main__":
    sys.exit(main())
