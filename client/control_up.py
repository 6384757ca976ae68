"""``rmq-emu up --control-port N``: the name server and broker run as an
:class:`~rocketmq_emu.client.testing.EmbeddedCluster` with the HTTP control API
(:mod:`rocketmq_emu.client.control_api`).

Its own module so that the control API does not import the harness that serves it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from rocketmq_emu.client.testing import EmbeddedCluster


class _ClusterService:
    """Adapter so ``rmq-emu up``'s shutdown hook stops the cluster."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster

    def stop(self) -> defer.Deferred:
        """Stop the cluster; fires when it has stopped."""
        return self.cluster.stop_async()


def up_with_control(args: Any, cfg: Any, serve: Callable[..., int], announce: Callable[..., None]) -> int:
    """``rmq-emu up --control-port N``: the same name server + broker, run as an
    :class:`rocketmq_emu.client.testing.EmbeddedCluster` on a follow-mode controllable clock, plus the
    control API on 127.0.0.1:N."""
    def starter(reactor: Any, services: list) -> defer.Deferred:
        cluster = EmbeddedCluster(
            config=cfg, store_dir=cfg.store_path_root_dir, host=args.host,
            namesrv_port=args.namesrv_port, broker_port=cfg.listen_port,
            control_port=args.control_port, reactor=reactor,
            # Where `rmq-emu up` keeps the name server's KV config.
            namesrv_kv_config=os.path.join(cfg.store_path_root_dir, "namesrv", "kvConfig.json"),
        )
        services.append(_ClusterService(cluster))

        def started(_: Any) -> None:
            announce(cfg, args.host, namesrv=cluster.namesrv_addr)
            print(f"rmq-emu: control API http://127.0.0.1:{cluster.control_port}/ "
                  "(OpenAPI at /openapi.json)", flush=True)

        return cluster.start_async().addCallback(started)

    return serve(starter)
