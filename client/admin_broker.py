"""Broker admin operations of :class:`rocketmq_emu.client.admin.Admin` (``DefaultMQAdminExt``
4.9.8): consume time span (303), correction offset (308), clone group offset (314), broker stats
data (315), broker consume stats (317), consume queue (321), producer table (328) and the three
store cleanings (306, 316, 329). Every method returns a Deferred; bodies are parsed as fastjson
wrote them (``Map<MessageQueue, ...>`` keys become ``(topic, brokerName, queueId)``).
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.bodies import decode_mq_map
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.message import MQBrokerError


def _bool(value: bool) -> str:
    return "true" if value else "false"


class BrokerAdminMixin:
    """Mixed into ``Admin`` (needs ``self.instance``)."""

    instance: Any

    async def _call(self, addr: str, code: int, ext: dict[str, str] | None = None,
                    timeout: float | None = None) -> RemotingCommand:
        resp = await self.instance.invoke(addr, RemotingCommand.request(code, ext or {}),
                                          timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise MQBrokerError(resp.code, resp.remark, addr)
        return resp

    async def _json(self, addr: str, code: int, ext: dict[str, str] | None = None,
                    timeout: float | None = None) -> Any:
        resp = await self._call(addr, code, ext, timeout)
        return loads_lenient(resp.body) if resp.body else None

    def query_consume_time_span(self, addr: str, topic: str, group: str) -> defer.Deferred:
        """QUERY_CONSUME_TIME_SPAN (303): the list of ``QueueTimeSpan`` dicts."""
        async def run() -> list[dict[str, Any]]:
            doc = await self._json(addr, RequestCode.QUERY_CONSUME_TIME_SPAN,
                                   {"topic": topic, "group": group})
            return list((doc or {}).get("consumeTimeSpanSet") or [])
        return defer.ensureDeferred(run())

    def query_correction_offset(self, addr: str, topic: str, compare_group: str,
                                filter_groups: list[str] | None = None) -> defer.Deferred:
        """QUERY_CORRECTION_OFFSET (308): ``{queueId: offset}``."""
        async def run() -> dict[int, int]:
            ext = {"topic": topic, "compareGroup": compare_group}
            if filter_groups:
                ext["filterGroups"] = ",".join(filter_groups)
            doc = await self._json(addr, RequestCode.QUERY_CORRECTION_OFFSET, ext)
            return {int(k): int(v) for k, v in ((doc or {}).get("correctionOffsets")
                                                or {}).items()}
        return defer.ensureDeferred(run())

    def clone_group_offset(self, addr: str, src_group: str, dest_group: str,
                           topic: str | None = None, offline: bool = False) -> defer.Deferred:
        """CLONE_GROUP_OFFSET (314) on one broker (mqadmin's ``cloneGroupOffset`` does not use
        it: it copies the offsets with 208 and 15)."""
        ext = {"srcGroup": src_group, "destGroup": dest_group, "offline": _bool(offline)}
        if topic:
            ext["topic"] = topic
        return defer.ensureDeferred(self._call(addr, RequestCode.CLONE_GROUP_OFFSET, ext))

    def view_broker_stats_data(self, addr: str, stats_name: str,
                               stats_key: str) -> defer.Deferred:
        """VIEW_BROKER_STATS_DATA (315): ``BrokerStatsData`` (``statsMinute`` / ``statsHour``
        / ``statsDay`` of ``{"sum", "tps", "avgpt"}``); MQBrokerError when the broker keeps no
        such item."""
        return defer.ensureDeferred(self._json(
            addr, RequestCode.VIEW_BROKER_STATS_DATA,
            {"statsName": stats_name, "statsKey": stats_key}))

    def fetch_consume_stats_in_broker(self, addr: str, is_order: bool = False,
                                      timeout: float = 50.0) -> defer.Deferred:
        """GET_BROKER_CONSUME_STATS (317): ``{"brokerAddr", "totalDiff", "consumeStatsList":
        [{group: [{"consumeTps", "offsetTable": {(topic, broker, qid): OffsetWrapper}}]}]}``."""
        async def run() -> dict[str, Any]:
            doc = await self._json(addr, RequestCode.GET_BROKER_CONSUME_STATS,
                                   {"isOrder": _bool(is_order)}, timeout) or {}
            for entry in doc.get("consumeStatsList") or []:
                for stats in entry.values():
                    for one in stats:
                        one["offsetTable"] = decode_mq_map(one.get("offsetTable"))
            return doc
        return defer.ensureDeferred(run())

    def query_consume_queue(self, addr: str, topic: str, queue_id: int, index: int,
                            count: int, consumer_group: str | None = None) -> defer.Deferred:
        """QUERY_CONSUME_QUEUE (321): ``QueryConsumeQueueResponseBody`` as a dict (empty when
        the broker has no unit at ``index``)."""
        ext = {"topic": topic, "queueId": str(queue_id), "index": str(index),
               "count": str(count)}
        if consumer_group is not None:
            ext["consumerGroup"] = consumer_group

        async def run() -> dict[str, Any]:
            return await self._json(addr, RequestCode.QUERY_CONSUME_QUEUE, ext) or {}
        return defer.ensureDeferred(run())

    def get_all_producer_info(self, addr: str) -> defer.Deferred:
        """GET_ALL_PRODUCER_INFO (328): ``{group: [ProducerInfo dict]}``."""
        async def run() -> dict[str, list[dict[str, Any]]]:
            doc = await self._json(addr, RequestCode.GET_ALL_PRODUCER_INFO)
            return dict((doc or {}).get("data") or {})
        return defer.ensureDeferred(run())

    def _clean(self, addr: str, code: int) -> defer.Deferred:
        return defer.ensureDeferred(self._call(addr, code)).addCallback(lambda _: True)

    def clean_expired_consume_queue(self, addr: str) -> defer.Deferred:
        """CLEAN_EXPIRED_CONSUMEQUEUE (306); fires True on success."""
        return self._clean(addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)

    def clean_unused_topic(self, addr: str) -> defer.Deferred:
        """CLEAN_UNUSED_TOPIC (316); fires True on success."""
        return self._clean(addr, RequestCode.CLEAN_UNUSED_TOPIC)

    def delete_expired_commitlog(self, addr: str) -> defer.Deferred:
        """DELETE_EXPIRED_COMMITLOG (329); fires True on success."""
        return self._clean(addr, RequestCode.DELETE_EXPIRED_COMMITLOG)
