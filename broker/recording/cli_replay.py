"""``rmq-emu replay FILE --namesrv HOST:PORT [--json] [--report-only] [--no-pace]``: replay the
clients' side of a recording (``rmq-emu up --record``) against a name server and its brokers
(this emulator or a real RocketMQ) and compare the answers with the recorded ones.

Output (stdout): one block per request whose answer differed, headed ``timing:`` or
``differed:`` (request number, recorded connection and port, the target address, the request
code name; for timing, why; then one line per difference: ``path: recorded X, replayed Y``);
with ``--json`` one JSON object per compared request instead (``verdict``: matched, timing or
differed). The last line is exactly ``replayed N requests: M matched, T timing, D differed``, N
counting the requests the recording holds an answer for (oneway requests and requests the
recording holds no answer for are sent, not compared; stderr says how many). Timing
(:mod:`~rocketmq_emu.broker.recording.timing`): answers that differ only by when they were
sampled across connections (pulls around oneway sends, routes around a topic's creation), where
what must agree over the session does.

Exit status: 0 when D is 0 (timing does not count); 1 when D > 0 or the recording is damaged;
``--report-only`` makes
both 0. A damaged recording (torn by a crash, corrupted) is replayed up to the damage: the
requests before it are sent and compared, and stderr names the damage as ``entry N at byte B
(frame F): ...``. Expected failures (the file is missing or no recording, ``--namesrv`` is no
``HOST:PORT``, the name server does not answer) are one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from rocketmq_emu.broker.recording.format import RecordingError
from rocketmq_emu.broker.recording.plan import Plan, build_plan
from rocketmq_emu.broker.recording.replay import (
    DEFAULT_CAP,
    DEFAULT_MARGIN,
    Outcome,
    ReplayError,
    Result,
    replay,
)
from rocketmq_emu.broker.remoting.codes import request_name

#: Exit status of an expected failure.
EXIT_USAGE = 2


def summary(result: Result) -> str:
    """The last line of the output."""
    return f"replayed {len(result.outcomes)} requests: {result.matched} matched, " \
           f"{result.timing} timing, {result.differed} differed"


def describe(outcome: Outcome) -> list[str]:
    """The block printed for a request whose answer differed."""
    ex = outcome.exchange
    code = ex.request.code
    lines = [f"{'timing' if outcome.timing else 'differed'}: request {ex.number} (connection "
             f"{ex.connection}, port {ex.port} -> {outcome.target or 'no target'}, frame "
             f"{ex.frame_number}): {request_name(code)} ({code})"]
    if outcome.timing:
        lines.append(f"  {outcome.timing}")
    if outcome.reason:
        lines.append(f"  {outcome.reason}")
    lines += [f"  {d}" for d in outcome.differences]
    return lines


def as_json(outcome: Outcome) -> dict[str, Any]:
    """One compared request as a plain dict (what ``--json`` prints)."""
    ex = outcome.exchange
    row: dict[str, Any] = {
        "request": ex.number, "connection": ex.connection, "port": ex.port,
        "target": outcome.target, "frame": ex.frame_number, "code": ex.request.code,
        "name": request_name(ex.request.code), "matched": outcome.matched,
        "verdict": outcome.verdict,
        "recordedCode": ex.response.code if ex.response else None,
        "replayedCode": outcome.replayed.code if outcome.replayed else None}
    if outcome.reason:
        row["reason"] = outcome.reason
    if outcome.timing:
        row["timing"] = outcome.timing
    if outcome.differences:
        row["differences"] = [{"path": d.path, "recorded": d.recorded, "replayed": d.replayed}
                              for d in outcome.differences]
    return row


def report(result: Result, use_json: bool, out: Any = None) -> None:
    """Print the comparison, ending with :func:`summary`."""
    out = out or sys.stdout
    for outcome in result.outcomes:
        if use_json:
            print(json.dumps(as_json(outcome), default=str), file=out)
        elif not outcome.matched:
            print("\n".join(describe(outcome)), file=out)
    print(summary(result), file=out)


def load_plan(path: str) -> Plan:
    """The plan of the recording at ``path``; :class:`ReplayError` if there is none to read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ReplayError(f"{path}: {exc.strerror or exc}") from None
    try:
        return build_plan(data)
    except RecordingError as exc:
        raise ReplayError(f"{path}: {exc}") from None


def check_addr(addr: str) -> str:
    """``HOST:PORT`` or :class:`ReplayError`."""
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ReplayError(f"--namesrv {addr!r}: expected HOST:PORT")
    return addr


def tls_creator() -> Any:
    """TLS trusting any server certificate, as a RocketMQ client with ``tls.enable`` in test
    mode; one line if the ``[tls]`` extra is missing."""
    from rocketmq_emu.broker.tls.config import NEEDS_EXTRA, tls_available

    if not tls_available():
        raise ReplayError(f"--tls: {NEEDS_EXTRA}")
    from rocketmq_emu.broker.tls.context import InsecureClientCreator

    return InsecureClientCreator()


def run_on_reactor(fn: Any) -> Any:
    """Run ``fn(reactor)`` (a coroutine function) on the default reactor; its result, or its
    exception raised."""
    from twisted.internet import defer, reactor
    from twisted.python.failure import Failure

    box: list[Any] = []

    def go() -> None:
        d = defer.ensureDeferred(fn(reactor))
        d.addBoth(box.append)
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(go)
    reactor.run()
    if not box:
        raise ReplayError("interrupted")
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]


def main(args: argparse.Namespace) -> int:
    """Replay, print the comparison; the exit status (see the module docstring)."""
    try:
        namesrv = check_addr(args.namesrv)
        plan = load_plan(args.file)
        tls = tls_creator() if args.tls else None
        result = run_on_reactor(lambda reactor: replay(
            reactor, plan, namesrv, pace=not args.no_pace, margin=args.margin, cap=args.cap,
            tls=tls))
    except ReplayError as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if plan.damage is not None:
        print(f"replay: {args.file}: {plan.damage}; replayed the {plan.frames} frames before it",
              file=sys.stderr)
    if result.oneway or result.unanswered_in_recording:
        print(f"replay: also sent {result.oneway} oneway requests and "
              f"{result.unanswered_in_recording} the recording holds no answer for "
              f"(not compared)", file=sys.stderr)
    try:
        report(result, args.json)
    except BrokenPipeError:  # the reader stopped early (`| head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    failed = result.differed > 0 or plan.damage is not None
    return 0 if args.report_only or not failed else 1


def register(subparsers: Any) -> None:
    """Add ``replay``."""
    p = subparsers.add_parser(
        "replay", help="replay a recording's client requests and compare the answers",
        description=__doc__.split("\n\n")[0])
    p.add_argument("file", metavar="FILE", help="a recording (rmq-emu up --record FILE)")
    p.add_argument("--namesrv", "-n", required=True, metavar="HOST:PORT",
                   help="the name server to replay against (its brokers are asked for by name)")
    p.add_argument("--json", action="store_true", help="one JSON object per compared request")
    p.add_argument("--tls", action="store_true",
                   help="connect with TLS (for name servers and brokers whose tls.server.mode "
                        "is enforcing); the recording holds the frames inside TLS either way")
    p.add_argument("--report-only", action="store_true",
                   help="exit 0 even when answers differ or the recording is damaged")
    p.add_argument("--no-pace", action="store_true",
                   help="send each request as soon as the answers it waits for are in, not at "
                        "its recorded time")
    p.add_argument("--margin", type=float, default=DEFAULT_MARGIN, metavar="S",
                   help=f"seconds added to a request's recorded wait ({DEFAULT_MARGIN:g})")
    p.add_argument("--cap", type=float, default=DEFAULT_CAP, metavar="S",
                   help=f"the longest wait for any answer ({DEFAULT_CAP:g} s)")
    p.set_defaults(func=main)
