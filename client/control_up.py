"""The controls put on a production :class:`rocketmq_emu.broker.cluster.Cluster`: a controllable
business clock, a fault injector hooked into every request dispatcher, and (on demand) the HTTP
control API (:mod:`rocketmq_emu.client.control_api`) serving them.

``rmq-emu up --control-port N`` builds its cluster with :meth:`Controls.build` and serves it;
:class:`rocketmq_emu.client.testing.EmbeddedCluster` does the same, so the control API always
drives a cluster made by the production wiring, never the harness class. Importing this module
loads no ``twisted.web`` (only :meth:`Controls.serve` does), so the harness stays cheap.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.cluster import Cluster, ClusterSpec
from rocketmq_emu.client.clock import ControllableClock
from rocketmq_emu.client.faults import FaultInjector


class Controls:
    """A clock, a fault injector and the control API's listening port for one cluster.

    ``clock`` is ``"follow"`` (default: business time runs with the wall clock until advanced),
    ``"manual"`` or a :class:`ControllableClock`; ``faults`` defaults to a new
    :class:`FaultInjector`.
    """

    def __init__(self, reactor: Any, clock: str | ControllableClock = "follow",
                 faults: FaultInjector | None = None) -> None:
        self.reactor = reactor
        self.clock = clock if isinstance(clock, ControllableClock) else ControllableClock(clock, reactor)
        self.faults = faults if faults is not None else FaultInjector(reactor, clock=self.clock)
        self.listening: Any = None
        #: The bearer token the served API requires (None: none), once :meth:`serve` ran.
        self.token: str | None = None
        #: Whether :meth:`serve` generated :attr:`token` (the CLI prints it once).
        self.token_generated = False

    def build(self, spec: ClusterSpec) -> Cluster:
        """The production cluster of ``spec`` with this clock as its brokers' business clock and
        the fault injector hooked into its dispatchers (not started)."""
        return Cluster(spec, self.reactor, business_clock=self.clock, hooks=[self.faults])

    def serve(self, cluster: Cluster, port: int, host: str = "127.0.0.1",
              token: str | None = None) -> int:
        """Serve the control API for ``cluster`` on ``host:port`` (0 picks a port); returns the
        port. A taken port raises CannotListenError (the CLI names it in one line).

        ``token``, when given, is required as ``Authorization: Bearer <token>``; a ``host`` that
        is not loopback requires one anyway (generated when not given: :attr:`token`,
        :attr:`token_generated`). On loopback without ``token`` nothing is required."""
        from rocketmq_emu.client.control_api import resolve_token, serve_control_api

        self.token, self.token_generated = resolve_token(host, token)
        self.listening = serve_control_api(cluster, self.clock, self.faults, port, host,
                                           self.reactor, token=self.token)
        return self.listening.getHost().port

    def stop_serving(self) -> defer.Deferred:
        """Stop listening for control requests (nothing if not serving)."""
        listening, self.listening = self.listening, None
        if listening is None:
            return defer.succeed(None)
        return defer.maybeDeferred(listening.stopListening)

    def stop(self) -> defer.Deferred:
        """Stop serving, unhook the fault injector and cancel the clock's wake-up on the reactor.

        ``rmq-emu up``'s shutdown calls this before stopping the cluster, so no control request
        (a broker start) races the shutdown; the cluster's brokers then stop on the clock as
        usual (a timer they set re-arms the wake-up)."""
        def unhook(_: Any) -> None:
            self.faults.detach_all()
            self.clock.stop()

        return self.stop_serving().addCallback(unhook)
