"""Headers of RocketMQ 5's POP consumption: pop, ack, change invisible time, peek, notification and
polling info (request codes 200050-200055, :class:`~rocketmq_emu.broker.remoting.codes.RequestCode`).

Field wire names, Java types and ``@CFNotNull`` flags follow
``org.apache.rocketmq.remoting.protocol.header`` of Apache RocketMQ 5.3.3 (unchanged on the 5.x
development branch up to commit 8fc57f1). The request headers extend Java's
``TopicQueueRequestHeader`` -> ``TopicRequestHeader`` -> ``RpcRequestHeader``, whose fields Java
decodes and encodes too (``RemotingCommand.getClazzFields`` walks the superclasses): ``lo``,
``ns``, ``nsd``, ``bname`` and ``oway``, all optional; :data:`_RPC_FIELDS` lists them.

Nothing here is wired into the broker yet; the ``extraInfo`` strings these headers carry are read
and built by :mod:`rocketmq_emu.broker.pop.extra_info`.
"""

from __future__ import annotations

from rocketmq_emu.broker.remoting.headers.base import (
    BOOL,
    INT,
    LONG,
    CommandHeader,
    header,
    opt,
    req,
)

__all__ = [
    "AckMessageRequestHeader",
    "ChangeInvisibleTimeRequestHeader",
    "ChangeInvisibleTimeResponseHeader",
    "NotificationRequestHeader",
    "NotificationResponseHeader",
    "PeekMessageRequestHeader",
    "PollingInfoRequestHeader",
    "PollingInfoResponseHeader",
    "PopMessageRequestHeader",
    "PopMessageResponseHeader",
]

#: Wire names of the optional fields every request header below inherits: ``lo`` (logical,
#: ``TopicRequestHeader``), ``ns`` (namespace), ``nsd`` (namespaced), ``bname`` (broker name),
#: ``oway`` (oneway) from ``RpcRequestHeader``.
_RPC_FIELDS = ("lo", "ns", "nsd", "bname", "oway")


@header
class PopMessageRequestHeader(CommandHeader):
    """POP_MESSAGE (200050), Java ``PopMessageRequestHeader``.

    ``invisible_time`` and ``poll_time`` are milliseconds; ``born_time`` is the client's clock in
    epoch ms; ``init_mode`` is ``ConsumeInitMode`` (0 MIN, 1 MAX); ``exp_type``/``exp`` the
    subscription (TAG or SQL92). ``order`` marks an orderly pop (Java ``Boolean order =
    FALSE``). A negative ``queue_id`` asks for any queue: Java's ``getQueueId`` reads every
    negative value as -1 (so do NOTIFICATION and POLLING_INFO).
    """

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    max_msg_nums: int | None = req("maxMsgNums", INT)
    invisible_time: int | None = req("invisibleTime", LONG)
    poll_time: int | None = req("pollTime", LONG)
    born_time: int | None = req("bornTime", LONG)
    init_mode: int | None = req("initMode", INT)
    exp_type: str | None = opt("expType")
    exp: str | None = opt("exp")
    order: bool = opt("order", BOOL, False)
    attempt_id: str | None = opt("attemptId")
    lo: bool | None = opt("lo", BOOL)
    ns: str | None = opt("ns")
    nsd: bool | None = opt("nsd", BOOL)
    bname: str | None = opt("bname")
    oway: bool | None = opt("oway", BOOL)


@header
class PopMessageResponseHeader(CommandHeader):
    """Answer to POP_MESSAGE, Java ``PopMessageResponseHeader``.

    ``rest_num`` is what is left in the queue(s); ``start_offset_info``, ``msg_offset_info`` and
    ``order_count_info`` are the ``;``-joined strings of
    :mod:`rocketmq_emu.broker.pop.extra_info` (``ExtraInfoUtil``).
    """

    pop_time: int | None = req("popTime", LONG)
    invisible_time: int | None = req("invisibleTime", LONG)
    revive_qid: int | None = req("reviveQid", INT)
    rest_num: int | None = req("restNum", LONG)
    start_offset_info: str | None = opt("startOffsetInfo")
    msg_offset_info: str | None = opt("msgOffsetInfo")
    order_count_info: str | None = opt("orderCountInfo")


@header
class AckMessageRequestHeader(CommandHeader):
    """ACK_MESSAGE (200051), Java ``AckMessageRequestHeader``.

    ``extra_info`` is the message's ``POP_CK`` string (:class:`~rocketmq_emu.broker.pop.
    extra_info.ExtraInfo`), ``offset`` the acknowledged message's queue offset.
    """

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    extra_info: str | None = req("extraInfo")
    offset: int | None = req("offset", LONG)
    lo: bool | None = opt("lo", BOOL)
    ns: str | None = opt("ns")
    nsd: bool | None = opt("nsd", BOOL)
    bname: str | None = opt("bname")
    oway: bool | None = opt("oway", BOOL)


@header
class ChangeInvisibleTimeRequestHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053), Java ``ChangeInvisibleTimeRequestHeader``.

    ``extra_info`` as in :class:`AckMessageRequestHeader`; ``invisible_time`` (ms) is the new
    invisible duration counted from now.
    """

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    extra_info: str | None = req("extraInfo")
    offset: int | None = req("offset", LONG)
    invisible_time: int | None = req("invisibleTime", LONG)
    lo: bool | None = opt("lo", BOOL)
    ns: str | None = opt("ns")
    nsd: bool | None = opt("nsd", BOOL)
    bname: str | None = opt("bname")
    oway: bool | None = opt("oway", BOOL)


@header
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    """Answer to CHANGE_MESSAGE_INVISIBLETIME, Java ``ChangeInvisibleTimeResponseHeader``: the
    new check point's pop time, invisible time and revive queue."""

    pop_time: int | None = req("popTime", LONG)
    invisible_time: int | None = req("invisibleTime", LONG)
    revive_qid: int | None = req("reviveQid", INT)


@header
class PeekMessageRequestHeader(CommandHeader):
    """PEEK_MESSAGE (200052), Java ``PeekMessageRequestHeader``."""

    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    max_msg_nums: int | None = req("maxMsgNums", INT)
    consumer_group: str | None = req("consumerGroup")
    lo: bool | None = opt("lo", BOOL)
    ns: str | None = opt("ns")
    nsd: bool | None = opt("nsd", BOOL)
    bname: str | None = opt("bname")
    oway: bool | None = opt("oway", BOOL)


@header
class NotificationRequestHeader(CommandHeader):
    """NOTIFICATION (200054), Java ``NotificationRequestHeader``: wait up to ``poll_time`` ms
    for a message to pop."""

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    poll_time: int | None = req("pollTime", LONG)
    born_time: int | None = req("bornTime", LONG)
    order: bool = opt("order", BOOL, False)
    attempt_id: str | None = opt("attemptId")
    lo: bool | None = opt("lo", BOOL)
    ns: str | None = opt("ns")
    nsd: bool | None = opt("nsd", BOOL)
    bname: str | None = opt("bname")
    oway: bool | None = opt("oway", BOOL)


@header
class NotificationResponseHeader(CommandHeader):
    """Answer to NOTIFICATION, Java ``NotificationResponseHeader`` (``hasMsg`` required,
    ``pollingFull`` a primitive defaulting to false)."""

    has_msg: bool | None = req("hasMsg", BOOL)
    polling_full: bool = opt("pollingFull", BOOL, False)


@header
class PollingInfoRequestHeader(CommandHeader):
    """POLLING_INFO (200055), Java ``PollingInfoRequestHeader``."""

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = req("topic")
    queue_id: int | None = req("queueId", INT)
    lo: bool | None = opt("lo", BOOL)
    ns: str | None = opt("ns")
    nsd: bool | None = opt("nsd", BOOL)
    bname: str | None = opt("bname")
    oway: bool | None = opt("oway", BOOL)


@header
class PollingInfoResponseHeader(CommandHeader):
    """Answer to POLLING_INFO, Java ``PollingInfoResponseHeader``: requests waiting on the
    queue."""

    polling_num: int | None = req("pollingNum", INT)
