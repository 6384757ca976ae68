"""``rmq-emu recording FILE [--json]``: the frames of a recording (``rmq-emu up --record``), one
line each: entry time, connection, server port, direction, request or response code, opaque,
and the remark of an answer. A torn or damaged file prints what could be read, then one line
naming the entry number and byte offset, exit status 1."""

from __future__ import annotations

import argparse
import json
import os
import sys

from rocketmq_emu.broker.recording.format import (
    CLIENT_TO_SERVER,
    RecordingError,
    frames,
    read_entries,
)
from rocketmq_emu.broker.remoting.command import RemotingCommand, RemotingCommandError


def describe(entry, frame: bytes) -> dict:
    """One frame as a plain dict (what ``--json`` prints)."""
    row = {"timestampMs": entry.timestamp_ms, "connection": entry.connection,
           "port": entry.port,
           "direction": "request" if entry.direction == CLIENT_TO_SERVER else "response"}
    try:
        cmd = RemotingCommand.decode(frame)
    except RemotingCommandError as exc:
        row["error"] = str(exc)
        return row
    row.update(code=cmd.code, opaque=cmd.opaque, flag=cmd.flag, language=cmd.language,
               version=cmd.version, bodyLength=len(cmd.body or b""))
    if cmd.remark:
        row["remark"] = cmd.remark
    return row


def main(args: argparse.Namespace) -> int:
    """Print the recording's frames; 1 if the file is damaged, 2 if it cannot be read."""
    try:
        with open(args.file, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        print(f"recording: {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    count = 0
    try:
        for entry, frame in frames(read_entries(data)):
            row = describe(entry, frame)
            count += 1
            if args.json:
                print(json.dumps(row))
            else:
                arrow = "->" if row["direction"] == "request" else "<-"
                what = row.get("error") or (f"code {row['code']} opaque {row['opaque']}"
                                            + (f" {row['remark']!r}" if "remark" in row else ""))
                print(f"{row['timestampMs']} conn {row['connection']} port {row['port']} "
                      f"{arrow} {what}")
    except RecordingError as exc:
        print(f"recording: {args.file}: {exc} (after {count} frames)", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader stopped early (`| head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    print(f"{count} frames", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    """Add ``recording``."""
    p = subparsers.add_parser("recording", help="list the frames of an `up --record` file",
                              description=__doc__.splitlines()[0])
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true", help="one JSON object per frame")
    p.set_defaults(func=main)
