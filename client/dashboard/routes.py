"""The dashboard's JSON endpoints, routed for the control API (:class:`DashboardRoutes`).

``ControlResource`` builds this on the first request under one of its paths
(``control_api.DASHBOARD_HEADS``), so a control API that no page reads imports none of the
dashboard.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.remoting.protocol import RemotingConnectionError, RemotingTimeoutError
from rocketmq_emu.client.api_errors import ApiError
from rocketmq_emu.client.dashboard import cluster_view, groups_view, messages_view, topics_view
from rocketmq_emu.client.dashboard.common import controller, int_arg, query
from rocketmq_emu.client.message import MQBrokerError, MQClientError

Handler = Callable[..., Any]

#: The first segments of the paths routed with an argument (``topics/{topic}``, ...).
PREFIXES = frozenset(("topics", "groups", "messages", "dlq", "traces"))

log = logging.getLogger(__name__)


class DashboardRoutes:
    """Routes ``METHOD path`` (without the leading slash) to the views' functions."""

    def __init__(self, cluster: Any, clock_state: Callable[[], dict[str, Any]],
                 use_tls: bool) -> None:
        self.cluster = cluster
        self.clock_state = clock_state
        self.use_tls = use_tls
        self.samples = cluster_view.ThroughputSamples()
        self.store_sizes = cluster_view.StoreSizes()
        c = cluster
        self.fixed: dict[tuple[str, str], Handler] = {
            ("GET", "cluster"): lambda req, body: cluster_view.cluster_view(
                c, self.clock_state(), self.samples, self.store_sizes),
            ("GET", "recording"): lambda req, body: cluster_view.recording(c),
            ("GET", "topics"): lambda req, body: topics_view.topic_list(c, req),
            ("POST", "topics"): lambda req, body: topics_view.create_topic(c, body, self.admin),
            ("GET", "groups"): lambda req, body: groups_view.group_list(c, req),
            ("GET", "producers"): lambda req, body: groups_view.producer_list(c, req),
            ("GET", "messages/search"): lambda req, body: messages_view.search(
                c, req, self.now_ms()),
            ("GET", "scheduled"): self.scheduled,
        }

    def now_ms(self) -> int:
        return int(self.clock_state()["now_ms"])

    def route(self, method: str, path: str) -> tuple[Handler, tuple] | None:
        """The handler of ``method path`` and its path arguments, None if there is none."""
        handler = self.fixed.get((method, path))
        if handler is not None:
            return handler, ()
        head, _, rest = path.partition("/")
        if not rest:
            return None
        c = self.cluster
        if head == "topics" and method == "GET":
            return (lambda req, body, t: topics_view.topic_detail(c, req, t)), (rest,)
        if head == "topics" and method == "DELETE":
            return (lambda req, body, t: topics_view.delete_topic(c, t, self.admin)), (rest,)
        if head == "groups":
            group, _, action = rest.partition("/")
            if method == "GET" and not action:
                return (lambda req, body, g: groups_view.group_detail(c, req, g)), (group,)
            if method == "POST" and action == "reset-offset":
                return (lambda req, body, g: groups_view.reset_offset(c, body, g, self.admin)), \
                    (group,)
        if head == "messages":
            msg_id, _, action = rest.partition("/")
            if method == "GET" and not action:
                return (lambda req, body, m: messages_view.detail(c, req, m)), (msg_id,)
            if method == "GET" and action == "body":
                return (lambda req, body, m: messages_view.body(c, req, m)), (msg_id,)
            if method == "POST" and action == "resend":
                return (lambda req, body, m: messages_view.resend(c, req, body, m, self.admin)), \
                    (msg_id,)
        if head == "dlq" and method == "GET":
            return (lambda req, body, g: messages_view.dlq(c, req, g, self.now_ms())), (rest,)
        if head == "traces" and method == "GET":
            return self.traces, (rest,)
        return None

    def paths(self) -> set[str]:
        """Every fixed path this routes (the rest are under :data:`PREFIXES`)."""
        return {p for (_, p) in self.fixed}

    def heads(self) -> set[str]:
        """The first segment of every path this routes."""
        return {p.partition("/")[0] for p in self.paths()} | PREFIXES

    # --- over the wire --------------------------------------------------------------------
    def namesrv_addr(self) -> str | None:
        """The cluster's name server, or for a broker run alone (``rmq-emu broker``) the one it
        registers with (its ``namesrvAddr``); None when it has none."""
        if self.cluster.namesrv_addr is not None:
            return self.cluster.namesrv_addr
        first = self.cluster.slots[0]
        cfg = first.config or first.template
        addrs = cfg.namesrv_addrs() if cfg is not None else []
        return ";".join(addrs) if addrs else None

    def admin(self, run: Callable[[Any], Any]) -> defer.Deferred:
        """Run ``run(admin)`` with an admin client of the cluster's name server (TLS as the
        cluster's ports want) and shut it down after; a broker's refusal is a 409 with its
        remark, a failure to reach it a 502."""
        from rocketmq_emu.client.admin import Admin

        namesrv = self.namesrv_addr()
        if namesrv is None:
            raise ApiError(409, "this broker has no name server to ask (-n or namesrvAddr)")
        admin = Admin(namesrv, tls=self.use_tls)

        async def go() -> Any:
            try:
                return await run(admin)
            except MQBrokerError as exc:
                if exc.code == ResponseCode.CONSUME_MSG_TIMEOUT:  # the consumer did not answer
                    raise ApiError(502, f"no answer in time: {exc.remark}") from None
                raise ApiError(409, f"the broker refused: {exc.remark or exc.code}") from None
            except (MQClientError, RemotingConnectionError, RemotingTimeoutError,
                    ConnectionError, TimeoutError) as exc:
                raise ApiError(502, f"the broker did not answer: {exc}") from None
            finally:
                try:
                    await admin.shutdown()
                except Exception:  # the answer above matters more than a failed close
                    log.warning("closing the dashboard's admin client failed", exc_info=True)

        return defer.ensureDeferred(go())

    # --- reads of other modules ---------------------------------------------------------------
    def traces(self, request: Any, body: Any, msg_id: str) -> dict[str, Any]:
        """``GET /traces/{msgId}``: trace records of the message on every running broker."""
        from rocketmq_emu.client.dashboard.traces import RMQ_SYS_TRACE_TOPIC, traces_for

        out: list[dict[str, Any]] = []
        for c in self.cluster.running_brokers().values():
            topic = getattr(c.ctx.config, "msg_trace_topic_name", RMQ_SYS_TRACE_TOPIC)
            if c.ctx.topic_config.select_topic_config(topic) is not None:
                out.extend(traces_for(c.ctx.store, topic, msg_id))
        out.sort(key=lambda t: t.get("timestamp") or 0)
        return {"msgId": msg_id, "traces": out}

    def scheduled(self, request: Any, body: Any) -> dict[str, Any]:
        """``GET /scheduled``: delay-level and timer messages not delivered yet, by due time."""
        from rocketmq_emu.broker.schedule.pending import pending_scheduled

        q = query(request)
        limit = int_arg(q, "max", 200, low=1, high=messages_view.MAX_RESULTS)
        c = controller(self.cluster, q.get("broker"))
        ctx = c.ctx
        found, truncated = pending_scheduled(ctx.store, ctx.delay_offsets, ctx.delay_levels,
                                             ctx.timer_service, self.now_ms(), limit)
        return {"broker": ctx.broker_name, "now_ms": self.now_ms(), "messages": found,
                "truncated": truncated}
