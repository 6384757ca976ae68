"""Consumer-side broker calls (Java ``MQClientAPIImpl`` / ``PullAPIWrapper``), as coroutines.

Each function builds one request with :meth:`RemotingCommand.request`, sends it through a
:class:`rocketmq_emu.client.instance.ClientInstance` and maps the response the way the Java client does.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.instance import ClientInstance
from rocketmq_emu.client.message import (
    MessageExt,
    MessageQueue,
    MQBrokerError,
    MQClientError,
    decode_messages,
)
from rocketmq_emu.client.rebalance import Subscription

# PullSysFlag bits (protocol.md §3.2).
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_LITE_PULL_MESSAGE = 0x10


class PullStatus(enum.Enum):
    """Java ``PullStatus``."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(slots=True)
class PullResult:
    """Java ``PullResult``: status, next offset, queue bounds and the (tag-filtered) messages."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)


def broker_addr(instance: ClientInstance, mq: MessageQueue) -> str:
    """The master address of ``mq``'s broker, or :class:`MQClientError`."""
    addr = instance.master_addr(mq.broker_name) or instance.any_addr(mq.broker_name)
    if addr is None:
        raise MQClientError(f"The broker[{mq.broker_name}] not exist")
    return addr


async def _call(instance: ClientInstance, mq: MessageQueue, code: int, ext: dict,
                body: bytes = b"", timeout: float | None = None) -> RemotingCommand:
    addr = broker_addr(instance, mq)
    return await instance.invoke(addr, RemotingCommand.request(code, ext, body), timeout)


async def pull(
    instance: ClientInstance,
    group: str,
    mq: MessageQueue,
    sub: Subscription,
    offset: int,
    max_nums: int = 32,
    *,
    commit_offset: int = 0,
    suspend_ms: int = 15000,
    timeout: float = 30.0,
    send_subscription: bool = False,
    lite: bool = False,
) -> PullResult:
    """PULL_MESSAGE (11); FOUND messages are decoded with ``iter_records`` then filtered by exact
    tag and stamped with MIN_OFFSET / MAX_OFFSET (``PullAPIWrapper.processPullResult``)."""
    sys_flag = FLAG_SUSPEND if suspend_ms > 0 else 0
    if commit_offset > 0:
        sys_flag |= FLAG_COMMIT_OFFSET
    if send_subscription:
        sys_flag |= FLAG_SUBSCRIPTION
    if lite:
        sys_flag |= FLAG_LITE_PULL_MESSAGE
    ext = {
        "consumerGroup": group,
        "topic": mq.topic,
        "queueId": str(mq.queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": str(max_nums),
        "sysFlag": str(sys_flag),
        "commitOffset": str(commit_offset),
        "suspendTimeoutMillis": str(suspend_ms),
        "subscription": sub.expression,
        "subVersion": str(sub.sub_version),
        "expressionType": getattr(sub, "expression_type", "TAG"),
        "bname": mq.broker_name,
    }
    resp = await _call(instance, mq, RequestCode.PULL_MESSAGE, ext, timeout=timeout)
    status = _PULL_STATUS.get(resp.code)
    if status is None:
        raise MQBrokerError(resp.code, resp.remark, broker_addr(instance, mq))
    h = resp.ext_fields
    result = PullResult(
        status,
        int(h.get("nextBeginOffset", offset)),
        int(h.get("minOffset", 0)),
        int(h.get("maxOffset", 0)),
    )
    if status is PullStatus.FOUND and resp.body:
        msgs = decode_messages(resp.body, mq.broker_name)
        for m in msgs:
            m.properties["MIN_OFFSET"] = str(result.min_offset)
            m.properties["MAX_OFFSET"] = str(result.max_offset)
        result.messages = [m for m in msgs if sub.matches(m.tags)]
    return result


async def query_consumer_offset(instance: ClientInstance, group: str, mq: MessageQueue) -> int:
    """QUERY_CONSUMER_OFFSET (14): the stored offset, or -1 for QUERY_NOT_FOUND."""
    resp = await _call(instance, mq, RequestCode.QUERY_CONSUMER_OFFSET, {
        "consumerGroup": group, "topic": mq.topic, "queueId": str(mq.queue_id),
    })
    if resp.code == ResponseCode.QUERY_NOT_FOUND:
        return -1
    if resp.code != ResponseCode.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark)
    return int(resp.ext_fields.get("offset", -1))


async def update_consumer_offset(instance: ClientInstance, group: str, mq: MessageQueue,
                                 offset: int, oneway: bool = True) -> None:
    """UPDATE_CONSUMER_OFFSET (15), oneway like ``RemoteBrokerOffsetStore.persistAll``."""
    ext = {"consumerGroup": group, "topic": mq.topic, "queueId": str(mq.queue_id),
           "commitOffset": str(offset)}
    cmd = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext, oneway=oneway)
    addr = broker_addr(instance, mq)
    if oneway:
        await instance.invoke_oneway(addr, cmd)
    else:
        resp = await instance.invoke(addr, cmd)
        if resp.code != ResponseCode.SUCCESS:
            raise MQBrokerError(resp.code, resp.remark, addr)


async def _offset_call(instance: ClientInstance, mq: MessageQueue, code: int, extra: dict | None = None,
                       key: str = "offset") -> int:
    ext = {"topic": mq.topic, "queueId": str(mq.queue_id)}
    ext.update(extra or {})
    resp = await _call(instance, mq, code, ext)
    if resp.code != ResponseCode.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark)
    return int(resp.ext_fields.get(key, 0))


async def max_offset(instance: ClientInstance, mq: MessageQueue) -> int:
    """GET_MAX_OFFSET (30): exclusive max logical offset."""
    return await _offset_call(instance, mq, RequestCode.GET_MAX_OFFSET)


async def min_offset(instance: ClientInstance, mq: MessageQueue) -> int:
    """GET_MIN_OFFSET (31)."""
    return await _offset_call(instance, mq, RequestCode.GET_MIN_OFFSET)


async def search_offset(instance: ClientInstance, mq: MessageQueue, timestamp_ms: int) -> int:
    """SEARCH_OFFSET_BY_TIMESTAMP (29)."""
    return await _offset_call(instance, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                              {"timestamp": str(timestamp_ms)})


async def earliest_msg_store_time(instance: ClientInstance, mq: MessageQueue) -> int:
    """GET_EARLIEST_MSG_STORETIME (32)."""
    return await _offset_call(instance, mq, RequestCode.GET_EARLIEST_MSG_STORETIME, key="timestamp")


async def send_back(instance: ClientInstance, group: str, msg: MessageExt, delay_level: int,
                    max_reconsume_times: int = 16) -> None:
    """CONSUMER_SEND_MSG_BACK (36) to the broker the message came from."""
    ext = {
        "offset": str(msg.commitlog_offset),
        "group": group,
        "delayLevel": str(delay_level),
        "originMsgId": msg.msg_id,
        "originTopic": msg.topic,
        "unitMode": "false",
        "maxReconsumeTimes": str(max_reconsume_times),
        "bname": msg.broker_name,
    }
    addr = instance.master_addr(msg.broker_name) or f"{msg.store_host[0]}:{msg.store_host[1]}"
    resp = await instance.invoke(addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, ext))
    if resp.code != ResponseCode.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, addr)


async def consumer_ids(instance: ClientInstance, group: str, addr: str) -> list[str]:
    """GET_CONSUMER_LIST_BY_GROUP (38)."""
    resp = await instance.invoke(addr, RemotingCommand.request(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}))
    if resp.code != ResponseCode.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, addr)
    return list(jsonutil.loads(resp.body).get("consumerIdList") or [])


def _mq_set_body(instance: ClientInstance, group: str, mqs: Iterable[MessageQueue]) -> bytes:
    return jsonutil.dumps({"clientId": instance.client_id, "consumerGroup": group,
                           "mqSet": [m.to_json() for m in mqs]})


async def lock_batch(instance: ClientInstance, group: str, addr: str,
                     mqs: Iterable[MessageQueue]) -> set[MessageQueue]:
    """LOCK_BATCH_MQ (41): the queues the broker locked for us."""
    resp = await instance.invoke(addr, RemotingCommand.request(
        RequestCode.LOCK_BATCH_MQ, body=_mq_set_body(instance, group, mqs)))
    if resp.code != ResponseCode.SUCCESS:
        raise MQBrokerError(resp.code, resp.remark, addr)
    obj = jsonutil.loads(resp.body) if resp.body else {}
    return {MessageQueue.from_json(o) for o in obj.get("lockOKMQSet") or []}


async def unlock_batch(instance: ClientInstance, group: str, addr: str,
                       mqs: Iterable[MessageQueue]) -> None:
    """UNLOCK_BATCH_MQ (42), oneway."""
    await instance.invoke_oneway(addr, RemotingCommand.request(
        RequestCode.UNLOCK_BATCH_MQ, body=_mq_set_body(instance, group, mqs), oneway=True))
