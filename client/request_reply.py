"""Request-reply messaging (Java ``DefaultMQProducer.request``, ``MessageUtil.createReplyMessage``,
``ClientRemotingProcessor.receiveReplyMessage``), Twisted API.

Requester::

    reply = await request(producer, Message("Svc", b"ping"), timeout=3.0)   # a MessageExt

sends the message with ``CORRELATION_ID`` (a fresh UUID), ``REPLY_TO_CLIENT`` (this client's id)
and ``TTL`` (the timeout in ms) and waits for PUSH_REPLY_MESSAGE_TO_CLIENT (326) carrying the same
``CORRELATION_ID``; :class:`RequestTimeoutError` after ``timeout``.

Replier (e.g. in a push consumer's listener)::

    await send_reply(producer, create_reply_message(request_msg, b"pong"))

sends to ``<CLUSTER>_REPLY_TOPIC`` with SEND_REPLY_MESSAGE_V2 (325); the broker pushes it to the
requester's connection (found among its registered producers by client id).
"""

from __future__ import annotations

import logging
import time
import uuid
import zlib
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.message import (
    COMPRESSED_FLAG,
    PROPERTY_CLUSTER,
    PROPERTY_CORRELATION_ID,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MESSAGE_TTL,
    PROPERTY_MESSAGE_TYPE,
    properties_to_string,
    split_addr,
    string_to_properties,
)
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.message import Message, MessageExt, MQClientError, SendResult
from rocketmq_emu.client.producer import Producer

log = logging.getLogger(__name__)

REPLY_MESSAGE_FLAG = "reply"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
PROPERTY_REPLY_MESSAGE_ARRIVE_TIME = "ARRIVE_TIME"


class RequestTimeoutError(MQClientError):
    """No reply within the request's timeout (Java ``RequestTimeoutException``)."""


class _Futures:
    """``RequestFutureHolder``: correlation id → the Deferred waiting for the reply."""

    def __init__(self) -> None:
        self.waiting: dict[str, defer.Deferred] = {}


def _futures(instance: Any) -> _Futures:
    holder = getattr(instance, "request_futures", None)
    if holder is None:
        holder = instance.request_futures = _Futures()
        instance.dispatcher.register(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
            lambda cmd, conn: _on_reply(holder, cmd, conn))
    return holder


def install(producer: Producer) -> None:
    """Register the PUSH_REPLY_MESSAGE_TO_CLIENT handler on the producer's client (idempotent)."""
    _futures(producer.instance)


def _host(text: str | None) -> tuple[str, int]:
    """``"/1.2.3.4:5"`` (InetSocketAddress.toString) or ``"1.2.3.4:5"`` → (ip, port)."""
    if not text:
        return "0.0.0.0", 0
    try:
        return split_addr(text.rsplit("/", 1)[-1])
    except ValueError:
        return "0.0.0.0", 0


def reply_from_push(cmd: RemotingCommand) -> MessageExt:
    """The MessageExt of a PUSH_REPLY_MESSAGE_TO_CLIENT request (``receiveReplyMessage``)."""
    ext = cmd.ext_fields
    sys_flag = int(ext.get("sysFlag", "0") or 0)
    body = cmd.body
    if sys_flag & COMPRESSED_FLAG:
        body = zlib.decompress(body)
    props = string_to_properties(ext.get("properties", ""))
    props[PROPERTY_REPLY_MESSAGE_ARRIVE_TIME] = str(int(time.time() * 1000))
    store_host = _host(ext.get("storeHost"))
    return MessageExt(
        topic=ext.get("topic", ""),
        body=body,
        queue_id=int(ext.get("queueId", "0") or 0),
        queue_offset=0,
        commitlog_offset=0,
        properties=props,
        flag=int(ext.get("flag", "0") or 0),
        sys_flag=sys_flag,
        born_timestamp=int(ext.get("bornTimestamp", "0") or 0),
        store_timestamp=int(ext.get("storeTimestamp", "0") or 0),
        born_host=_host(ext.get("bornHost")),
        store_host=store_host,
        reconsume_times=int(ext.get("reconsumeTimes", "0") or 0),
        body_crc=0,
        offset_msg_id="",
    )


def _on_reply(holder: _Futures, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
    try:
        msg = reply_from_push(cmd)
    except Exception as exc:
        log.warning("bad reply message from %s: %s", getattr(conn, "peer_addr", "?"), exc)
        return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
    correlation = msg.properties.get(PROPERTY_CORRELATION_ID)
    waiting = holder.waiting.pop(correlation, None) if correlation else None
    if waiting is None:
        log.warning("receive reply message, but not matched any request, CorrelationId: %s",
                    correlation)
    elif not waiting.called:
        waiting.callback(msg)
    return cmd.response(ResponseCode.SUCCESS)


def request(producer: Producer, msg: Message, timeout: float = 3.0) -> defer.Deferred:
    """Send ``msg`` as a request; fires with the reply MessageExt (or RequestTimeoutError)."""
    return defer.ensureDeferred(_request(producer, msg, timeout))


async def _request(producer: Producer, msg: Message, timeout: float) -> MessageExt:
    holder = _futures(producer.instance)
    correlation = str(uuid.uuid4())
    msg.properties[PROPERTY_CORRELATION_ID] = correlation
    msg.properties[PROPERTY_MESSAGE_REPLY_TO_CLIENT] = producer.client_id
    msg.properties[PROPERTY_MESSAGE_TTL] = str(int(timeout * 1000))
    reactor = producer.instance.reactor
    waiting: defer.Deferred = defer.Deferred()
    holder.waiting[correlation] = waiting
    try:
        # The broker pushes the reply to a *registered producer* connection: make sure this
        # client has heartbeated to the brokers of the topic before the replier can answer.
        await producer.find_publish_info(msg.topic)
        await producer.instance.send_heartbeat_to_all_brokers()
        await producer.send(msg, timeout=timeout)
        timer = reactor.callLater(timeout, _expire, waiting, correlation, timeout)
        try:
            return await waiting
        finally:
            if timer.active():
                timer.cancel()
    finally:
        holder.waiting.pop(correlation, None)


def _expire(waiting: defer.Deferred, correlation: str, timeout: float) -> None:
    if not waiting.called:
        waiting.errback(RequestTimeoutError(
            f"send request message to <{correlation}> OK, but wait reply message timeout, "
            f"{int(timeout * 1000)} ms."))


def create_reply_message(request_msg: MessageExt, body: bytes) -> Message:
    """``MessageUtil.createReplyMessage``: topic ``<CLUSTER>_REPLY_TOPIC``, the request's
    CORRELATION_ID / REPLY_TO_CLIENT / TTL and ``MSG_TYPE=reply``."""
    cluster = request_msg.properties.get(PROPERTY_CLUSTER)
    correlation = request_msg.properties.get(PROPERTY_CORRELATION_ID)
    reply_to = request_msg.properties.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)
    if not cluster or not correlation or not reply_to:
        raise MQClientError("create reply message fail, requestMessage error, property["
                            f"{PROPERTY_CLUSTER}] is null.")
    props = {
        PROPERTY_CORRELATION_ID: correlation,
        PROPERTY_MESSAGE_REPLY_TO_CLIENT: reply_to,
        PROPERTY_MESSAGE_TTL: request_msg.properties.get(PROPERTY_MESSAGE_TTL, "3000"),
        PROPERTY_MESSAGE_TYPE: REPLY_MESSAGE_FLAG,
    }
    return Message(f"{cluster}_{REPLY_TOPIC_POSTFIX}", body, properties=props)


def send_reply(producer: Producer, reply: Message, timeout: float | None = None,
               ) -> defer.Deferred:
    """Send a reply with SEND_REPLY_MESSAGE_V2 (325), as Java does for ``MSG_TYPE=reply``."""
    return defer.ensureDeferred(_send_reply(producer, reply, timeout))


async def _send_reply(producer: Producer, reply: Message, timeout: float | None) -> SendResult:
    body, sys_flag, props, uniq = producer._prepare(reply)
    props_str = properties_to_string(props)
    return await producer._with_retries(
        reply, None, None, None, timeout, False,
        lambda mq: RemotingCommand.request(
            RequestCode.SEND_REPLY_MESSAGE_V2,
            producer._header(mq, sys_flag, reply.flag, props_str), body),
        uniq,
    )


# --- blocking facade ------------------------------------------------------------------------------
def blocking_request(producer: Any, msg: Message, timeout: float = 3.0) -> MessageExt:
    """:func:`request` for a :class:`~client.blocking.BlockingProducer` (or a Producer) from
    code that does not use Twisted: returns the reply or raises RequestTimeoutError."""
    from rocketmq_emu.client.blocking import run_blocking

    target = getattr(producer, "_target", producer)
    return run_blocking(request, target, msg, timeout, timeout=timeout + 5.0)


def blocking_send_reply(producer: Any, reply: Message) -> SendResult:
    """:func:`send_reply` for a blocking producer."""
    from rocketmq_emu.client.blocking import run_blocking

    target = getattr(producer, "_target", producer)
    return run_blocking(send_reply, target, reply)
