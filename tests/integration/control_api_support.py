"""HTTP calls to a harness cluster's control API, for the loopback tests."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from rocketmq_emu.client.blocking import run_blocking


def call(cluster, method: str, path: str, body: dict | None = None,
         timeout: float = 10) -> tuple[int, object]:
    """An HTTP call made from a worker thread while the reactor keeps serving: (status, JSON)."""
    from twisted.internet import threads

    def do() -> tuple[int, object]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{cluster.control_port}{path}", data=data,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    return run_blocking(threads.deferToThread, do)
