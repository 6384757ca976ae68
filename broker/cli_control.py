"""``--control-port``, ``--control-host`` and ``--control-token`` of ``rmq-emu up`` and
``rmq-emu broker``: the HTTP control API and the dashboard beside the cluster the command runs.

The options are checked before anything starts (one line for a bad one); the control API's code
lives in ``client/`` and is imported only when ``--control-port`` is given, so a command
without it loads none of it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from rocketmq_emu.broker.cli_errors import CliError


def add_control_args(parser: argparse.ArgumentParser, port_type: Any) -> None:
    """Register the three options on ``parser``."""
    parser.add_argument("--control-port", type=port_type, default=None, metavar="N",
                        help="serve the HTTP control API (clock, faults, request log) and the "
                             "dashboard (http://127.0.0.1:N/ in a browser) on 127.0.0.1:N "
                             "(--control-host to change)")
    parser.add_argument("--control-host", default=None, metavar="ADDR",
                        help="interface the control API listens on (127.0.0.1); any address "
                             "that is not loopback requires a bearer token (--control-token, or "
                             "one generated and printed at start)")
    parser.add_argument("--control-token", default=None, metavar="TOKEN",
                        help="require 'Authorization: Bearer TOKEN' on every control API "
                             "request (on loopback too); letters, digits and -._~+/")


@dataclass
class ControlOptions:
    """The checked options (``port`` None: no control API)."""

    port: int | None
    host: str
    token: str | None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ControlOptions:
        """The options of ``args``; CliError for a token that cannot be sent, or host/token
        without a port."""
        port = getattr(args, "control_port", None)
        host = getattr(args, "control_host", None)
        token = getattr(args, "control_token", None)
        if port is None and (host is not None or token is not None):
            raise CliError("--control-host and --control-token need --control-port")
        if token is not None:
            from rocketmq_emu.client.control_api import validate_token

            try:
                validate_token(token)
            except ValueError as e:
                raise CliError(f"--control-token: {e}") from None
        return cls(port, host or "127.0.0.1", token)

    def build(self, spec: Any, reactor: Any) -> tuple[Any, Any]:
        """``(cluster, controls)``: the production cluster of ``spec``, with a controllable clock
        and fault hooks when the API is on (``controls`` None when it is off)."""
        from rocketmq_emu.broker.cluster import Cluster

        if self.port is None:
            return Cluster(spec, reactor), None
        # client/ owns the control API. Imported here only: broker/ never depends on client/ at
        # import, and a command without the option loads no client code.
        from rocketmq_emu.client.control_up import Controls

        controls = Controls(reactor)
        return controls.build(spec), controls

    def serve(self, controls: Any, cluster: Any) -> list[str]:
        """Serve the API for the started ``cluster``; the banner lines saying where (a generated
        token is printed at once, before ``ready``: scripts wait for that line)."""
        bound = controls.serve(cluster, self.port, self.host, token=self.token)
        if controls.token_generated:
            print(f"rmq-emu: control API token: {controls.token}", flush=True)
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        base = f"http://{host}:{bound}/"
        auth = "; send Authorization: Bearer <token>" if controls.token is not None else ""
        page = f"{base}?token={controls.token}" if controls.token_generated else base
        return [f"control API {base} (OpenAPI at /openapi.json{auth})",
                f"dashboard {page} (open in a browser)"]
