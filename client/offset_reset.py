"""Consumer side of offset reset and consumer status (Java ``ClientRemotingProcessor``
``resetOffset`` / ``getConsumeStatus`` and ``MQClientInstance.resetOffset``).

:func:`install` registers, on a :class:`~client.instance.ClientInstance`'s dispatcher:

* RESET_CONSUMER_CLIENT_OFFSET (220, oneway from the broker): for each queue of the table the
  consumer drops its process queue, adopts the offset (persisting it to the broker for clustering
  consumers; broadcasting consumers keep it client-side) and rebalances, so pulling restarts
  there;
* GET_CONSUMER_STATUS_FROM_CLIENT (221): answers ``{"messageQueueTable":{{mq}:offset}}`` with the
  in-memory offsets of the topic's queues.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.remoting.bodies import decode_offset_table, encode_mq_map
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client import api
from rocketmq_emu.client.message import MessageQueue

log = logging.getLogger(__name__)


def install(instance: Any) -> None:
    """Register the 220 / 221 handlers on ``instance`` (idempotent)."""
    if getattr(instance, "_offset_reset_installed", False):
        return
    instance._offset_reset_installed = True
    instance.dispatcher.register(
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
        lambda cmd, conn: _on_reset(instance, cmd, conn))
    instance.dispatcher.register(
        RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
        lambda cmd, conn: _on_status(instance, cmd, conn))


def _on_reset(instance: Any, cmd: RemotingCommand, conn: Any) -> Any:
    group = cmd.ext_fields.get("group", "")
    topic = cmd.ext_fields.get("topic", "")
    consumer = instance.consumers.get(group)
    if consumer is None:
        log.info("RESET_CONSUMER_CLIENT_OFFSET for unknown group %s", group)
        return None if cmd.is_oneway else cmd.response(ResponseCode.SUCCESS)
    try:
        table = decode_offset_table(cmd.body)
    except Exception as exc:
        log.warning("bad ResetOffsetBody for %s/%s: %s", group, topic, exc)
        return None if cmd.is_oneway else cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
    d = defer.ensureDeferred(reset_offsets(consumer, {
        MessageQueue(t, b, q): off for (t, b, q), off in table.items()}))
    d.addErrback(lambda f: log.error("offset reset of %s failed: %s", group, f.getTraceback()))
    return None if cmd.is_oneway else cmd.response(ResponseCode.SUCCESS)


async def reset_offsets(consumer: Any, table: dict[MessageQueue, int]) -> None:
    """Drop the queues' pull loops, adopt the offsets, persist (clustering) and rebalance."""
    for mq, offset in table.items():
        pq = consumer.process_queues.pop(mq, None)
        if pq is not None:
            pq.dropped = True
        consumer.offsets[mq] = offset
        if consumer.clustering:
            try:
                await api.update_consumer_offset(consumer.instance, consumer.group, mq, offset)
            except Exception as exc:
                log.warning("persisting the reset offset of %s failed: %s", mq, exc)
        log.info("[reset-offset] %s %s now at %d", consumer.group, mq, offset)
    consumer.rebalance_soon()


def _on_status(instance: Any, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
    group = cmd.ext_fields.get("group", "")
    topic = cmd.ext_fields.get("topic", "")
    consumer = instance.consumers.get(group)
    table: dict[tuple[str, str, int], int] = {}
    if consumer is not None:
        for mq, offset in consumer.offsets.items():
            if mq.topic == topic:
                table[(mq.topic, mq.broker_name, mq.queue_id)] = offset
    body = ('{"consumerTable":{},"messageQueueTable":' + encode_mq_map(table) + "}").encode()
    return cmd.response(ResponseCode.SUCCESS, body=body)
