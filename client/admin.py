"""Admin operations (a small ``DefaultMQAdminExt``), Twisted API.

create topic (UPDATE_AND_CREATE_TOPIC 17 on every master of the cluster), list topics (206),
cluster info (106), consumer progress (stored offsets vs. max offsets, lag per queue), query a
message by id (VIEW_MESSAGE_BY_ID 33 for an offset id, QUERY_MESSAGE by UNIQ_KEY otherwise) or by
key (QUERY_MESSAGE 12).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.message import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    decode_offset_msg_id,
)
from rocketmq_emu.broker.remoting.bodies import decode_mq_map
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client import api
from rocketmq_emu.client.admin_broker import BrokerAdminMixin
from rocketmq_emu.client.instance import ClientInstance
from rocketmq_emu.client.message import (
    MessageExt,
    MessageQueue,
    MQBrokerError,
    MQClientError,
    decode_messages,
)
from rocketmq_emu.client.route import subscribe_queues

log = logging.getLogger(__name__)

#: ``Long.MAX_VALUE``: the end of ``queryMessageByUniqKey``'s time range.
JAVA_LONG_MAX = 2**63 - 1


@dataclass(slots=True)
class QueueProgress:
    """One queue of a consumer group's progress."""

    mq: MessageQueue
    broker_offset: int
    consumer_offset: int

    @property
    def lag(self) -> int:
        """Messages not yet consumed."""
        return max(self.broker_offset - max(self.consumer_offset, 0), 0)


def _d(coro: Any) -> defer.Deferred:
    return defer.ensureDeferred(coro)


class Admin(BrokerAdminMixin):
    """Admin client; every method returns a Deferred (broker operations: :mod:`.admin_broker`)."""

    def __init__(self, namesrv_addr: str | list[str], *, reactor: Any = None,
                 instance: ClientInstance | None = None, timeout: float = 5.0,
                 credentials: Any = None, tls: bool = False) -> None:
        self.instance = instance or ClientInstance(namesrv_addr, reactor, timeout=timeout,
                                                   credentials=credentials, tls=tls)
        self._own_instance = instance is None

    def start(self) -> defer.Deferred:
        """Nothing to start (kept for symmetry with the other clients)."""
        return defer.succeed(None)

    def shutdown(self) -> defer.Deferred:
        """Close connections."""
        if self._own_instance:
            return _d(self.instance.shutdown())
        return defer.succeed(None)

    # --- cluster and topics ------------------------------------------------------------------
    def cluster_info(self) -> defer.Deferred:
        """GET_BROKER_CLUSTER_INFO: ``{"brokerAddrTable": ..., "clusterAddrTable": ...}``."""
        return _d(self._cluster_info())

    async def _cluster_info(self) -> dict:
        resp = await self.instance.invoke_namesrv(
            RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
        if resp.code != ResponseCode.SUCCESS:
            raise MQBrokerError(resp.code, resp.remark)
        return jsonutil.loads(resp.body)

    async def _master_addrs(self, cluster: str | None = None) -> list[str]:
        info = await self._cluster_info()
        brokers = info.get("brokerAddrTable") or {}
        names = set(brokers)
        if cluster is not None:
            names = set((info.get("clusterAddrTable") or {}).get(cluster) or [])
        out = []
        for name in sorted(names):
            addrs = (brokers.get(name) or {}).get("brokerAddrs") or {}
            addr = addrs.get("0") or addrs.get(0)
            if addr:
                out.append(addr)
        return out

    def create_topic(self, topic: str, queue_nums: int = 8, *, perm: int = 6, order: bool = False,
                     cluster: str | None = None, broker_addr: str | None = None,
                     attributes: str | None = None) -> defer.Deferred:
        """Create or update ``topic`` with ``queue_nums`` read and write queues on ``broker_addr``
        or every master (of ``cluster``); fires with the list of broker addresses.

        ``attributes`` is RocketMQ 5's modification (mqadmin ``-a``), e.g.
        ``"+message.type=FIFO"``; a refusal fails with :class:`MQBrokerError` and the remark."""
        return _d(self._create_topic(topic, queue_nums, perm, order, cluster, broker_addr,
                                     attributes))

    async def _create_topic(self, topic: str, queue_nums: int, perm: int, order: bool,
                            cluster: str | None, broker_addr: str | None,
                            attributes: str | None = None) -> list[str]:
        addrs = [broker_addr] if broker_addr else await self._master_addrs(cluster)
        if not addrs:
            raise MQClientError("no broker to create the topic on")
        ext = {
            "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queue_nums),
            "writeQueueNums": str(queue_nums), "perm": str(perm), "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": "0", "order": "true" if order else "false",
        }
        if attributes is not None:
            ext["attributes"] = attributes
        for addr in addrs:
            resp = await self.instance.invoke(
                addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext))
            if resp.code != ResponseCode.SUCCESS:
                raise MQBrokerError(resp.code, resp.remark, addr)
        return addrs

    def list_topics(self) -> defer.Deferred:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER: sorted topic names."""
        async def run() -> list[str]:
            resp = await self.instance.invoke_namesrv(
                RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
            if resp.code != ResponseCode.SUCCESS:
                raise MQBrokerError(resp.code, resp.remark)
            return sorted(jsonutil.loads(resp.body).get("topicList") or [])
        return _d(run())

    def route(self, topic: str) -> defer.Deferred:
        """The topic's route (``TopicRouteData``) or None."""
        return _d(self.instance.fetch_route(topic))

    # --- offsets ------------------------------------------------------------------------------
    def consumer_progress(self, group: str, topics: list[str] | None = None) -> defer.Deferred:
        """A list of :class:`QueueProgress` for ``group``.

        Without ``topics``, the topics come from the brokers' offset tables
        (GET_ALL_CONSUMER_OFFSET, 43), i.e. the topics the group has committed offsets for.
        """
        return _d(self._consumer_progress(group, topics))

    async def _group_topics(self, group: str) -> list[str]:
        topics: set[str] = set()
        for addr in await self._master_addrs():
            try:
                resp = await self.instance.invoke(
                    addr, RemotingCommand.request(RequestCode.GET_ALL_CONSUMER_OFFSET))
            except Exception as exc:
                log.debug("GET_ALL_CONSUMER_OFFSET at %s failed: %s", addr, exc)
                continue
            if resp.code != ResponseCode.SUCCESS or not resp.body:
                continue
            table = jsonutil.loads(resp.body).get("offsetTable") or {}
            for key in table:
                topic, _, g = key.rpartition("@")
                if g == group:
                    topics.add(topic)
        return sorted(topics)

    async def _consumer_progress(self, group: str, topics: list[str] | None) -> list[QueueProgress]:
        if topics is None:
            topics = await self._group_topics(group)
        out: list[QueueProgress] = []
        for topic in topics:
            route = await self.instance.update_route(topic)
            if route is None:
                continue
            for mq in subscribe_queues(topic, route):
                broker_offset = await api.max_offset(self.instance, mq)
                consumer_offset = await api.query_consumer_offset(self.instance, group, mq)
                out.append(QueueProgress(mq, broker_offset, consumer_offset))
        return out

    def reset_offset(self, group: str, mq: MessageQueue, offset: int) -> defer.Deferred:
        """Store ``offset`` for ``group`` on ``mq`` (UPDATE_CONSUMER_OFFSET, sync)."""
        async def run() -> None:
            if self.instance.master_addr(mq.broker_name) is None:
                await self.instance.update_route(mq.topic)
            await api.update_consumer_offset(self.instance, group, mq, offset, oneway=False)
        return _d(run())

    def reset_offset_by_time(self, group: str, topic: str, timestamp_ms: int, *,
                             force: bool = True) -> defer.Deferred:
        """INVOKE_BROKER_TO_RESET_OFFSET (222) on every master of ``topic``: the group's online
        consumers move to the offsets of ``timestamp_ms`` (-1: the queue ends)."""
        async def run() -> None:
            route = await self.instance.update_route(topic)
            if route is None:
                raise MQClientError(f"No route info of this topic, {topic}")
            ext = {"topic": topic, "group": group, "timestamp": str(timestamp_ms),
                   "isForce": "true" if force else "false"}
            for addr in sorted(route.master_addrs().values()):
                resp = await self.instance.invoke(addr, RemotingCommand.request(
                    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext))
                if resp.code != ResponseCode.SUCCESS:
                    raise MQBrokerError(resp.code, resp.remark, addr)
        return _d(run())

    def consumer_running_info(self, group: str, client_id: str, broker_addr: str | None = None) -> defer.Deferred:
        """GET_CONSUMER_RUNNING_INFO (307) relayed by a broker to one consumer; fires with the
        parsed ``ConsumerRunningInfo`` (queue-keyed maps as ``{(topic, broker, qid): value}``)."""
        async def run() -> dict:
            addr = broker_addr or (await self._master_addrs())[0]
            resp = await self.instance.invoke(addr, RemotingCommand.request(
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                {"consumerGroup": group, "clientId": client_id, "jstackEnable": "false"}))
            if resp.code != ResponseCode.SUCCESS:
                raise MQBrokerError(resp.code, resp.remark, addr)
            info = loads_lenient(resp.body)
            info["mqTable"] = decode_mq_map(info.get("mqTable"))
            return info
        return _d(run())

    def queue_owners(self, group: str, broker_addrs: list[str]) -> defer.Deferred:
        """Fires with ``{(topic, brokerName, queueId): client IP}`` for the queues the group's
        live consumers hold, as mqadmin's ``ConsumerProgressSubCommand
        .getMessageQueueAllocationResult`` finds them: the group's connections (203), then each
        client's running info (307, relayed by the broker) for its ``mqTable``. Best effort
        like the Java tool: a group offline or a client not answering leaves its queues out."""
        async def run() -> dict[tuple[str, str, int], str]:
            owners: dict[tuple[str, str, int], str] = {}
            for addr in broker_addrs:
                try:
                    resp = await self.instance.invoke(addr, RemotingCommand.request(
                        RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}))
                except Exception:  # the Java tool ignores any failure here
                    continue
                if resp.code != ResponseCode.SUCCESS:
                    continue
                for conn in loads_lenient(resp.body).get("connectionSet") or []:
                    ip = str(conn.get("clientAddr") or "").rsplit(":", 1)[0]
                    try:
                        info = await self.consumer_running_info(
                            group, conn.get("clientId") or "", addr)
                    except Exception:
                        continue
                    for mq in info.get("mqTable") or {}:
                        owners[mq] = ip
                if owners:
                    break  # every broker relays to the same clients: one answer is enough
            return owners
        return _d(run())

    def consume_message_directly(self, group: str, client_id: str, msg_id: str) -> defer.Deferred:
        """CONSUME_MESSAGE_DIRECTLY (309): the broker named in the offset ``msg_id`` hands that
        message to one consumer; fires with ``ConsumeMessageDirectlyResult`` as a dict."""
        async def run() -> dict:
            host, port, _ = decode_offset_msg_id(msg_id)
            addr = f"{host}:{port}"
            resp = await self.instance.invoke(addr, RemotingCommand.request(
                RequestCode.CONSUME_MESSAGE_DIRECTLY,
                {"consumerGroup": group, "clientId": client_id, "msgId": msg_id}), 10.0)
            if resp.code != ResponseCode.SUCCESS:
                raise MQBrokerError(resp.code, resp.remark, addr)
            return jsonutil.loads(resp.body)
        return _d(run())

    # --- queries --------------------------------------------------------------------------------
    def view_message(self, msg_id: str, topic: str | None = None) -> defer.Deferred:
        """The message with ``msg_id`` (``DefaultMQAdminExtImpl.viewMessage(topic, msgId)``):
        an offset id is read with VIEW_MESSAGE_BY_ID from the broker it names; a client-side id
        (UNIQ_KEY), or an offset id that finds nothing, is looked up with QUERY_MESSAGE on
        ``topic`` (``MQAdminImpl.queryMessageByUniqKey``)."""
        return _d(self._view_message(msg_id, topic))

    async def _offset_id_broker(self, msg_id: str) -> tuple[str, int] | None:
        """(broker address, commitlog offset) an offset msgId names, or None.

        A UNIQ_KEY has the offset id's length (32 hex chars), so decoding alone cannot tell
        them apart: Java's ``MessageDecoder.decodeMessageId`` fails only when the port is out of
        range (``InetSocketAddress``) and otherwise connects to whatever the bytes say. Here the
        address must also be a broker the name server knows, so a client-side id never makes
        us connect to an unrelated host:port."""
        try:
            host, port, offset = decode_offset_msg_id(msg_id)
        except ValueError:
            return None
        if not 0 < port <= 0xFFFF:
            return None
        addr = f"{host}:{port}"
        try:
            info = await self._cluster_info()
        except Exception as exc:  # no name server answer: decide as Java does
            log.debug("cluster info unavailable (%s); trusting the decoded address", exc)
            return addr, offset
        known = {a for b in (info.get("brokerAddrTable") or {}).values()
                 for a in ((b or {}).get("brokerAddrs") or {}).values()}
        return (addr, offset) if addr in known else None

    async def _view_message(self, msg_id: str, topic: str | None) -> MessageExt:
        target = await self._offset_id_broker(msg_id)
        if target is not None:
            addr, offset = target
            try:
                resp = await self.instance.invoke(addr, RemotingCommand.request(
                    RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)}))
                if resp.code == ResponseCode.SUCCESS and resp.body:
                    return decode_messages(resp.body)[0]
            except Exception as exc:
                log.debug("VIEW_MESSAGE_BY_ID at %s failed: %s", addr, exc)
        if topic is None:
            # MQAdminImpl.viewMessage's answer when the id names no broker / no message.
            raise MQClientError(f"CODE: {int(ResponseCode.NO_MESSAGE)} DESC: query message by "
                                f"id finished, but no message. ({msg_id} is not an offset id "
                                "of a known broker; a client-side id needs -t topic)")
        try:
            begin = max(uniq_key_time_ms(msg_id) - 1000, 0)
        except ValueError:
            begin = 0
        found = await self._query(topic, msg_id, 32, begin, JAVA_LONG_MAX, unique=True)
        for m in found:
            if m.msg_id == msg_id:
                return m
        raise MQClientError(f"CODE: {int(ResponseCode.NO_MESSAGE)} DESC: query message by id "
                            f"finished, but no message. (topic {topic}, id {msg_id})")

    def query_by_key(self, topic: str, key: str, max_num: int = 32, begin_ms: int = 0,
                     end_ms: int | None = None) -> defer.Deferred:
        """Messages of ``topic`` whose KEYS contain ``key`` (QUERY_MESSAGE on every master)."""
        if end_ms is None:
            end_ms = int(time.time() * 1000) + 86400000
        return _d(self._query(topic, key, max_num, begin_ms, end_ms, unique=False))

    async def _query(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int,
                     unique: bool) -> list[MessageExt]:
        route = await self.instance.update_route(topic)
        if route is None:
            raise MQClientError(f"No route info of this topic, {topic}")
        ext = {"topic": topic, "key": key, "maxNum": str(max_num),
               "beginTimestamp": str(begin_ms), "endTimestamp": str(end_ms)}
        if unique:
            ext["_UNIQUE_KEY_QUERY"] = "true"
        out: list[MessageExt] = []
        for name, addr in sorted(route.master_addrs().items()):
            resp = await self.instance.invoke(addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, ext))
            if resp.code == ResponseCode.QUERY_NOT_FOUND:
                continue
            if resp.code != ResponseCode.SUCCESS:
                raise MQBrokerError(resp.code, resp.remark, addr)
            for m in decode_messages(resp.body, name):
                if m.topic != topic:
                    continue
                if unique and m.msg_id != key:
                    continue
                if not unique and key not in m.keys:
                    continue
                out.append(m)
        return out


def uniq_key_time_ms(uniq_key: str) -> int:
    """``MessageClientIDSetter.getNearlyTimeFromID``: the send time encoded in a UNIQ_KEY (ms
    since the start of this month, or of the last one if that would be in the future)."""
    raw = bytes.fromhex(uniq_key)
    ip_len = 16 if len(raw) == 28 else 4
    if len(raw) < ip_len + 10:
        raise ValueError(f"not a UNIQ_KEY: {uniq_key!r}")
    span = int.from_bytes(raw[ip_len + 6:ip_len + 10], "big")
    now = datetime.now()
    month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start = month.timestamp() * 1000
    if start + span >= now.timestamp() * 1000:
        start = (month - timedelta(days=1)).replace(day=1).timestamp() * 1000
    return int(start + span)


def is_system_topic(topic: str) -> bool:
    """Topics users did not create (retry, DLQ, schedule, TBW102, rmq_sys_*)."""
    return (topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX, "rmq_sys_"))
            or topic in ("TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC",
                         "RMQ_SYS_TRANS_OP_HALF_TOPIC", "BenchmarkTest", "OFFSET_MOVED_EVENT",
                         "SELF_TEST_TOPIC")
            or topic.endswith("_REPLY_TOPIC"))
