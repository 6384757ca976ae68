"""The client runtime shared by producers and consumers (Java ``MQClientInstance``).

One :class:`ClientInstance` holds a :class:`rocketmq_emu.broker.remoting.client.RemotingClient` (connection pool,
no second codec), the topic route table refreshed from the name server, the heartbeat loop, and
the handler for requests brokers push to clients (NOTIFY_CONSUMER_IDS_CHANGED, 40).
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable
from typing import Any

from twisted.internet import defer, task

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.remoting.client import RemotingClient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RequestDispatcher
from rocketmq_emu.client import client_requests
from rocketmq_emu.client.credentials import SessionCredentials, as_credentials
from rocketmq_emu.client.message import MQBrokerError, MQClientError
from rocketmq_emu.client.route import TopicRouteData

log = logging.getLogger(__name__)

CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"  # MixAll.CLIENT_INNER_PRODUCER_GROUP
_instance_counter = itertools.count()


def default_reactor() -> Any:
    """The global reactor (imported lazily so importing the client installs nothing)."""
    from twisted.internet import reactor

    return reactor


def split_namesrv(addr: str | list[str]) -> list[str]:
    """``"h1:p1;h2:p2"`` (Java's separator) or a list -> list of addresses."""
    if isinstance(addr, str):
        return [a.strip() for a in addr.replace(",", ";").split(";") if a.strip()]
    return list(addr)


def _tls_creator() -> Any:
    """The client side of TLS (imports pyOpenSSL: only for a client asked to use TLS)."""
    from rocketmq_emu.broker.tls.context import InsecureClientCreator

    return InsecureClientCreator()


class ClientInstance:
    """Routes, broker addresses, heartbeats and the remoting client of one client process.

    ``heartbeat_interval`` / ``poll_interval`` are Java's ``heartbeatBrokerInterval`` and
    ``pollNameServerInterval`` (30 s); tests shorten them. ``credentials`` (``(ak, sk)``, or
    :class:`~rocketmq_emu.client.credentials.SessionCredentials`) sign every request sent.
    ``tls`` opens every connection with TLS, trusting any server certificate (a Java client's
    ``-Dtls.enable=true`` with ``tls.test.mode.enable``; needs the ``[tls]`` extra).
    """

    def __init__(
        self,
        namesrv_addr: str | list[str],
        reactor: Any = None,
        client_ip: str = "127.0.0.1",
        instance_name: str | None = None,
        heartbeat_interval: float = 30.0,
        poll_interval: float = 30.0,
        timeout: float = 3.0,
        credentials: SessionCredentials | tuple[str, ...] | None = None,
        tls: bool = False,
    ) -> None:
        self.reactor = reactor if reactor is not None else default_reactor()
        #: ``AclClientRPCHook``: every request is signed with these (None: unsigned).
        self.credentials = as_credentials(credentials)
        self.namesrv_addrs = split_namesrv(namesrv_addr)
        if not self.namesrv_addrs:
            raise MQClientError("no name server address")
        self.client_ip = client_ip
        if instance_name is None:
            # ClientConfig.changeInstanceNameToPID: "<pid>#<n>" keeps ids unique per instance.
            instance_name = f"{os.getpid()}#{next(_instance_counter)}"
        self.instance_name = instance_name
        self.client_id = f"{client_ip}@{instance_name}"
        self.heartbeat_interval = heartbeat_interval
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.dispatcher = RequestDispatcher(self.reactor)
        self.dispatcher.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_ids_changed)
        self.remoting = RemotingClient(self.reactor, self.dispatcher,
                                       tls=_tls_creator() if tls else None)
        self.routes: dict[str, TopicRouteData] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.producer_groups: set[str] = set()
        # group -> consumer (client.push_consumer.PushConsumer or a subclass)
        self.consumers: dict[str, Any] = {}
        client_requests.register(self.dispatcher, self.consumers)
        self.route_listeners: list[Callable[[str, TopicRouteData], None]] = []
        self._loops: list[task.LoopingCall] = []
        self._namesrv_index = 0
        self.started = False

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the periodic route refresh and heartbeat (idempotent)."""
        if self.started:
            return
        self.started = True
        for interval, fn in (
            (self.poll_interval, self._refresh_routes),
            (self.heartbeat_interval, self._heartbeat_loop),
        ):
            loop = task.LoopingCall(fn)
            loop.clock = self.reactor
            loop.start(interval, now=False).addErrback(
                lambda f: log.error("client loop failed: %s", f.getTraceback())
            )
            self._loops.append(loop)

    async def shutdown(self) -> None:
        """Stop the loops and close every connection."""
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops.clear()
        self.started = False
        await self.remoting.close()

    # --- invoking ----------------------------------------------------------------------------
    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        """Send ``cmd`` to ``addr`` and return the response (raises remoting errors)."""
        if self.credentials is not None:
            self.credentials.sign(cmd)
        return await self.remoting.invoke(addr, cmd, self.timeout if timeout is None else timeout)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        """Send ``cmd`` oneway."""
        if self.credentials is not None:
            self.credentials.sign(cmd)
        await self.remoting.invoke_oneway(addr, cmd)

    async def invoke_namesrv(self, cmd: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        """Send to the name servers in turn until one answers."""
        last: Exception | None = None
        n = len(self.namesrv_addrs)
        for i in range(n):
            addr = self.namesrv_addrs[(self._namesrv_index + i) % n]
            try:
                # A fresh opaque per attempt: the same command may go to several servers.
                attempt = RemotingCommand.request(cmd.code, dict(cmd.ext_fields), cmd.body)
                resp = await self.invoke(addr, attempt, timeout)
                self._namesrv_index = (self._namesrv_index + i) % n
                return resp
            except Exception as exc:  # connection refused, timeout: try the next one
                last = exc
        raise MQClientError(f"no name server answered {cmd.code}: {last}") from last

    # --- routes ------------------------------------------------------------------------------
    async def fetch_route(self, topic: str) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC (105); None for TOPIC_NOT_EXIST."""
        cmd = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic, "acceptStandardJsonOnly": "true"}
        )
        resp = await self.invoke_namesrv(cmd)
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if resp.code != ResponseCode.SUCCESS:
            raise MQBrokerError(resp.code, resp.remark)
        return TopicRouteData.decode(resp.body)

    async def update_route(self, topic: str) -> TopicRouteData | None:
        """Fetch and store the route of ``topic``; None if the name server does not know it."""
        route = await self.fetch_route(topic)
        if route is not None:
            self.set_route(topic, route)
        return route

    def set_route(self, topic: str, route: TopicRouteData) -> None:
        """Store a route and remember its broker addresses; a broker seen for the first time
        gets a heartbeat at once (so a consumer started before its topic's route appeared is
        registered before it asks for the group's members, not up to 30 s later)."""
        self.routes[topic] = route
        new_broker = False
        for bd in route.broker_datas:
            known = self.broker_addrs.get(bd.broker_name)
            if known != bd.broker_addrs and set(bd.broker_addrs.values()) - set((known or {}).values()):
                new_broker = True
            self.broker_addrs[bd.broker_name] = dict(bd.broker_addrs)
        if new_broker and self.consumers and self.started:
            self.heartbeat_soon()
        for fn in list(self.route_listeners):
            try:
                fn(topic, route)
            except Exception:
                log.exception("route listener failed")

    def master_addr(self, broker_name: str) -> str | None:
        """Address of the master of ``broker_name``, if known."""
        return self.broker_addrs.get(broker_name, {}).get(0)

    def any_addr(self, broker_name: str) -> str | None:
        """The master's address, else any known address of the broker."""
        addrs = self.broker_addrs.get(broker_name, {})
        return addrs.get(0) or next(iter(addrs.values()), None)

    def known_master_addrs(self) -> list[str]:
        """Masters of every broker seen in a route."""
        return sorted({a[0] for a in self.broker_addrs.values() if 0 in a})

    async def _refresh_routes(self) -> None:
        for topic in list(self.routes):
            try:
                await self.update_route(topic)
            except Exception as exc:
                log.debug("route refresh of %s failed: %s", topic, exc)

    # --- heartbeat ---------------------------------------------------------------------------
    def heartbeat_body(self) -> bytes:
        """``HeartbeatData`` JSON for every registered producer group and consumer."""
        producers = [{"groupName": g} for g in sorted(self.producer_groups | {CLIENT_INNER_PRODUCER_GROUP})]
        consumers = [c.consumer_data() for c in self.consumers.values()]
        return jsonutil.dumps(
            {"clientID": self.client_id, "consumerDataSet": consumers, "producerDataSet": producers}
        )

    async def send_heartbeat_to_all_brokers(self) -> None:
        """HEART_BEAT (34) to every master known (Java: masters only without consumers)."""
        if not self.producer_groups and not self.consumers:
            return
        body = self.heartbeat_body()
        addrs = self.known_master_addrs()
        if self.consumers:
            addrs = sorted({a for b in self.broker_addrs.values() for a in b.values()})
        for addr in addrs:
            try:
                resp = await self.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT, body=body))
                if resp.code != ResponseCode.SUCCESS:
                    log.warning("heartbeat to %s answered %d %s", addr, resp.code, resp.remark)
            except Exception as exc:
                log.debug("heartbeat to %s failed: %s", addr, exc)

    async def _heartbeat_loop(self) -> None:
        await self.send_heartbeat_to_all_brokers()

    def heartbeat_soon(self) -> None:
        """Send a heartbeat to every broker now (in the background)."""
        d = defer.ensureDeferred(self.send_heartbeat_to_all_brokers())
        d.addErrback(lambda f: log.debug("heartbeat failed: %s", f.getErrorMessage()))

    async def unregister(self, producer_group: str | None = None, consumer_group: str | None = None) -> None:
        """UNREGISTER_CLIENT (35) to every known broker."""
        ext = {"clientID": self.client_id}
        if producer_group:
            ext["producerGroup"] = producer_group
        if consumer_group:
            ext["consumerGroup"] = consumer_group
        for addr in self.known_master_addrs():
            try:
                await self.invoke(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, ext))
            except Exception as exc:
                log.debug("unregister at %s failed: %s", addr, exc)

    # --- broker -> client --------------------------------------------------------------------
    def _on_ids_changed(self, cmd: RemotingCommand, conn: Any) -> None:
        group = cmd.ext_fields.get("consumerGroup", "")
        consumer = self.consumers.get(group)
        log.info("NOTIFY_CONSUMER_IDS_CHANGED for %s from %s", group, getattr(conn, "peer_addr", "?"))
        if consumer is not None:
            consumer.rebalance_soon()
        return None


def ensure(d: Any) -> defer.Deferred:
    """A Deferred from a coroutine (or pass a Deferred through)."""
    if isinstance(d, defer.Deferred):
        return d
    return defer.ensureDeferred(d)
