"""Remoting helpers shared by the ``rmq-emu admin`` command modules."""

from __future__ import annotations

from typing import Any

from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.message import MQBrokerError, MQClientError


async def invoke(admin: Any, addr: str, code: int, ext: dict[str, str] | None = None,
                 ok: tuple[int, ...] = (ResponseCode.SUCCESS,),
                 timeout: float | None = None) -> RemotingCommand:
    """Send one request to ``addr``; MQBrokerError unless the answer's code is in ``ok``."""
    resp = await admin.instance.invoke(addr, RemotingCommand.request(code, ext or {}), timeout)
    if resp.code not in ok:
        raise MQBrokerError(resp.code, resp.remark, addr)
    return resp


async def masters(admin: Any, cluster: str | None) -> dict[str, str]:
    """brokerName → master address (of ``cluster`` when given)."""
    info = await admin.cluster_info()
    brokers = info.get("brokerAddrTable") or {}
    names = set(brokers)
    if cluster is not None:
        clusters = info.get("clusterAddrTable") or {}
        if cluster not in clusters:
            raise MQClientError(f"cluster [{cluster}] not exist")
        names = set(clusters[cluster] or [])
    out = {}
    for name in sorted(names):
        addrs = (brokers.get(name) or {}).get("brokerAddrs") or {}
        addr = addrs.get("0") or addrs.get(0)
        if addr:
            out[name] = addr
    return out


async def all_addrs(admin: Any, cluster: str | None) -> list[str]:
    """Every broker address (masters and slaves) of ``cluster``, or of every cluster when
    None or empty (``ClusterInfo.retrieveAllAddrByCluster`` over the clusters)."""
    info = await admin.cluster_info()
    brokers = info.get("brokerAddrTable") or {}
    clusters = info.get("clusterAddrTable") or {}
    names = (clusters.get(cluster) or []) if cluster else \
        [n for members in clusters.values() for n in members or []]
    out: list[str] = []
    for name in sorted(set(names)):
        addrs = (brokers.get(name) or {}).get("brokerAddrs") or {}
        out.extend(addr for _bid, addr in sorted(addrs.items(), key=lambda kv: int(kv[0])))
    return out


async def route_masters(admin: Any, topic: str) -> dict[str, str]:
    """brokerName → master address of the brokers serving ``topic``."""
    route = await admin.instance.update_route(topic)
    if route is None:
        raise MQClientError(f"No topic route info in name server for the topic: {topic}")
    return dict(sorted(route.master_addrs().items()))


async def consumer_connection(admin: Any, group: str, addr: str | None = None) -> dict[str, Any]:
    """``DefaultMQAdminExtImpl.examineConsumerConnectionInfo``: the group's
    ``ConsumerConnection`` (GET_CONSUMER_CONNECTION_LIST, 203) from ``addr``, or from a broker
    of the group's ``%RETRY%`` topic; MQClientError when no consumer of the group is online."""
    if addr is None:
        serving = await route_masters(admin, f"%RETRY%{group}")
        addr = next(iter(serving.values()), None)
    if addr is not None:
        resp = await invoke(admin, addr, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                            {"consumerGroup": group},
                            ok=(ResponseCode.SUCCESS, ResponseCode.CONSUMER_NOT_ONLINE))
        if resp.code == ResponseCode.SUCCESS:
            doc = loads_lenient(resp.body)
            if doc.get("connectionSet"):
                return doc
    raise MQClientError(f"CODE: {int(ResponseCode.CONSUMER_NOT_ONLINE)} DESC: Not found the "
                        "consumer group connection")
