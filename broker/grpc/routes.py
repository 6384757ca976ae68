"""QueryRoute and QueryAssignment (5.x proxy ``RouteActivity``) over the brokers of this process,
and the proxy's queue selection for sends (``SendMessageQueueSelector``).

The proxy in Local mode answers routes with its own address for every broker: a 5.x client
talks to one endpoint only. So do we: every ``Broker`` of a route carries the endpoint the
client used, with this server's gRPC port.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.status import Code, ProxyError
from rocketmq_emu.broker.message import java_string_hash
from rocketmq_emu.broker.processors.common import PERM_READ, PERM_WRITE
from rocketmq_emu.broker.topic_message_type import (
    TopicMessageType,
    route_accept_message_types,
    topic_message_type,
)


def consistent_hash(value: int, buckets: int) -> int:
    """Guava ``Hashing.consistentHash(long, int)`` (its linear congruential generator), which
    the proxy uses to pin a message group to a queue."""
    state = value & 0xFFFFFFFFFFFFFFFF
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & 0xFFFFFFFFFFFFFFFF
        next_double = ((state >> 33) + 1) / 2.0 ** 31
        nxt = int((candidate + 1) / next_double)
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate


@dataclass(frozen=True)
class QueueRef:
    """A queue of a topic on a broker."""

    broker_name: str
    queue_id: int


def _permission(perm: int) -> str:
    readable, writable = bool(perm & PERM_READ), bool(perm & PERM_WRITE)
    if readable and writable:
        return "READ_WRITE"
    if readable:
        return "READ"
    return "WRITE" if writable else "NONE"


class Routes:
    """Routes of the brokers ``brokers()`` returns (name → running BrokerController) seen
    through ``grpc_port``."""

    def __init__(self, brokers: Callable[[], dict[str, Any]], grpc_port: Callable[[], int]) -> None:
        self._brokers = brokers
        self._grpc_port = grpc_port
        self._round_robin = itertools.count()

    def topic_configs(self, topic: str) -> list[tuple[str, Any]]:
        """(broker name, TopicConfig) of every broker that has the topic; ProxyError
        TOPIC_NOT_FOUND when none does (topics are not auto-created over gRPC)."""
        found = []
        for name, broker in sorted(self._brokers().items()):
            tc = broker.ctx.topic_config.select_topic_config(topic)
            if tc is not None:
                found.append((name, tc))
        if not found:
            raise ProxyError(Code.TOPIC_NOT_FOUND,
                             f"No topic route info in name server for the topic: {topic}")
        return found

    def topic_type(self, topic: str) -> TopicMessageType:
        """The topic's message type (its first broker's config)."""
        return topic_message_type(self.topic_configs(topic)[0][1])

    def _broker_message(self, name: str, endpoints: Any) -> Any:
        broker = messages.message_class("Broker")()
        broker.name = name
        broker.id = 0
        ep = broker.endpoints
        enum = messages.protocol().enum_descriptor("AddressScheme")
        ep.scheme = endpoints.scheme if endpoints is not None and endpoints.addresses else \
            enum.values_by_name["IPv4"].number
        port = self._grpc_port()
        hosts = [a.host for a in endpoints.addresses] if endpoints is not None else []
        for host in hosts or ["127.0.0.1"]:
            address = ep.addresses.add()
            address.host = host
            address.port = port
        return broker

    def query_route(self, topic_resource: Any, endpoints: Any) -> list[Any]:
        """``RouteActivity.queryRoute``: the MessageQueues (read-only, write-only, read-write
        and no-permission ones, numbered as the proxy does) of every broker with the topic."""
        perms = messages.protocol().enum_descriptor("Permission").values_by_name
        queues = []
        for name, tc in self.topic_configs(topic_resource.name):
            accept = [int(t) for t in route_accept_message_types(tc)]
            broker = self._broker_message(name, endpoints)
            readable, writable = bool(tc.perm & PERM_READ), bool(tc.perm & PERM_WRITE)
            r = w = rw = n = 0
            if readable and writable:
                rw = min(tc.write_queue_nums, tc.read_queue_nums)
                r, w = tc.read_queue_nums - rw, tc.write_queue_nums - rw
            elif writable:
                w = tc.write_queue_nums
            elif readable:
                r = tc.read_queue_nums
            else:
                n = max(1, tc.write_queue_nums, tc.read_queue_nums)
            kinds = ["READ"] * r + ["WRITE"] * w + ["READ_WRITE"] * rw + ["NONE"] * n
            for queue_id, kind in enumerate(kinds):
                mq = messages.message_class("MessageQueue")()
                mq.topic.CopyFrom(topic_resource)
                mq.id = queue_id
                mq.permission = perms[kind].number
                mq.broker.CopyFrom(broker)
                mq.accept_message_types.extend(accept)
                queues.append(mq)
        return queues

    def query_assignment(self, topic_resource: Any, endpoints: Any, fifo: bool) -> list[Any]:
        """``RouteActivity.queryAssignment``: one assignment (queue id -1) per readable broker,
        or every read queue for a FIFO group."""
        perms = messages.protocol().enum_descriptor("Permission").values_by_name
        assignments = []
        for name, tc in self.topic_configs(topic_resource.name):
            if not tc.perm & PERM_READ or tc.read_queue_nums <= 0:
                continue
            broker = self._broker_message(name, endpoints)
            ids: Iterable[int] = range(tc.read_queue_nums) if fifo else (-1,)
            for queue_id in ids:
                assignment = messages.message_class("Assignment")()
                mq = assignment.message_queue
                mq.topic.CopyFrom(topic_resource)
                mq.id = queue_id
                mq.permission = perms[_permission(tc.perm)].number
                mq.broker.CopyFrom(broker)
                assignments.append(assignment)
        return assignments

    def write_queues(self, topic: str, configs: list[tuple[str, Any]] | None = None
                     ) -> list[QueueRef]:
        """The writable queues of a topic across brokers (the write selector's queues);
        ``configs`` are :meth:`topic_configs` if the caller has them."""
        out = []
        for name, tc in configs if configs is not None else self.topic_configs(topic):
            if tc.perm & PERM_WRITE:
                out.extend(QueueRef(name, i) for i in range(tc.write_queue_nums))
        return out

    def select_for_send(self, topic: str, message_group: str | None,
                        configs: list[tuple[str, Any]] | None = None) -> QueueRef:
        """``SendMessageQueueSelector``: a message group's queue by consistent hash, else the
        next queue round robin; ProxyError FORBIDDEN without a writable queue."""
        writable = [(name, tc.write_queue_nums) for name, tc in
                    (configs if configs is not None else self.topic_configs(topic))
                    if tc.perm & PERM_WRITE and tc.write_queue_nums > 0]
        total = sum(n for _name, n in writable)
        if not total:
            raise ProxyError(Code.FORBIDDEN, "no writable queue")
        if message_group:
            index = consistent_hash(java_string_hash(message_group), total)
        else:
            index = next(self._round_robin) % total
        # The index-th queue of write_queues(), without building the list.
        for name, count in writable:
            if index < count:
                return QueueRef(name, index)
            index -= count
        raise AssertionError("unreachable: index < total")

    def select_for_receive(self, topic: str, broker_name: str) -> str:
        """``ReceiveMessageQueueSelector``: the named broker if it has the topic, else the first
        with a readable queue."""
        configs = self.topic_configs(topic)
        for name, _tc in configs:
            if name == broker_name:
                return name
        for name, tc in configs:
            if tc.perm & PERM_READ:
                return name
        raise ProxyError(Code.FORBIDDEN, "no readable queue")
