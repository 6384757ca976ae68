"""The producer (Java ``DefaultMQProducer`` / ``DefaultMQProducerImpl``), Twisted API.

Every send method returns a Deferred: ``await producer.send(msg)`` is the "sync" send,
keeping the Deferred is the "async" send, :meth:`Producer.send_oneway` fires once written.
The blocking facade (:mod:`rocketmq_emu.client.blocking`) turns these into plain calls.

Behaviour copied from the Java client:

* route lookup from the name server on first use; TOPIC_NOT_EXIST -> the ``TBW102`` route with
  ``min(defaultTopicQueueNums, readQueueNums)`` queues per broker, so the broker auto-creates the
  topic (``tryToFindTopicPublishInfo``); routes refresh every ``poll_interval``;
* SEND_MESSAGE_V2 (310) with the abbreviated header, SEND_BATCH_MESSAGE (320) for batches;
* a UNIQ_KEY set on every message (``MessageClientIDSetter``), the batch's msgId = joined ids;
* bodies of 4 KiB or more compressed with zlib (``compressMsgBodyOverHowmuch``);
* ``retry_times`` further attempts (default 2) on connection errors, timeouts and the retryable
  response codes, each on a queue of another broker when there is one (``sendDefaultImpl``);
  selector (orderly) and oneway sends are not retried.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.message import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    COMPRESSED_FLAG,
    RETRY_GROUP_TOPIC_PREFIX,
    UniqIdGenerator,
    properties_to_string,
)
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.protocol import RemotingConnectionError, RemotingTimeoutError
from rocketmq_emu.client.instance import ClientInstance
from rocketmq_emu.client.message import (
    Message,
    MessageError,
    MessageQueue,
    MQBrokerError,
    MQClientError,
    SendResult,
    encode_batch,
    send_result_from_response,
)
from rocketmq_emu.client.route import DEFAULT_TOPIC_QUEUE_NUMS, TopicPublishInfo, publish_queues

log = logging.getLogger(__name__)

#: ``DefaultMQProducer.retryResponseCodes``.
RETRY_RESPONSE_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)
ZLIB_COMPRESSION_TYPE = 0x300  # MessageSysFlag compression type ZLIB (4.9.x sets it with bit 0)

Selector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]


def select_by_hash(queues: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """``SelectMessageQueueByHash``: ``abs(hash(arg)) % len(queues)`` (int args used as is)."""
    value = arg if isinstance(arg, int) else hash(str(arg))
    return queues[abs(value) % len(queues)]


class Producer:
    """A producer group member. Call :meth:`start` (returns a Deferred) before sending."""

    def __init__(
        self,
        group: str,
        namesrv_addr: str | list[str],
        *,
        reactor: Any = None,
        instance: ClientInstance | None = None,
        send_timeout: float = 3.0,
        retry_times: int = 2,
        create_topic_key: str = AUTO_CREATE_TOPIC_KEY_TOPIC,
        default_topic_queue_nums: int = DEFAULT_TOPIC_QUEUE_NUMS,
        compress_over: int = 4096,
        max_message_size: int = 4 * 1024 * 1024,
        client_ip: str = "127.0.0.1",
        poll_interval: float = 30.0,
        heartbeat_interval: float = 30.0,
        credentials: Any = None,
        tls: bool = False,
    ) -> None:
        self.group = group
        self.instance = instance or ClientInstance(
            namesrv_addr, reactor, client_ip, poll_interval=poll_interval,
            heartbeat_interval=heartbeat_interval, credentials=credentials, tls=tls,
        )
        self._own_instance = instance is None
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self.compress_over = compress_over
        self.max_message_size = max_message_size
        self.publish_info: dict[str, TopicPublishInfo] = {}
        self.uniq_ids = UniqIdGenerator(client_ip)
        self.instance.route_listeners.append(self._on_route)

    @property
    def client_id(self) -> str:
        """This producer's client id (``ip@instance``)."""
        return self.instance.client_id

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> defer.Deferred:
        """Register the group and start the client's periodic tasks."""
        self.instance.producer_groups.add(self.group)
        self.instance.start()
        return defer.succeed(None)

    def shutdown(self) -> defer.Deferred:
        """Unregister from the brokers and close connections."""
        return defer.ensureDeferred(self._shutdown())

    async def _shutdown(self) -> None:
        self.instance.producer_groups.discard(self.group)
        await self.instance.unregister(producer_group=self.group)
        if self._own_instance:
            await self.instance.shutdown()

    # --- routes -------------------------------------------------------------------------------
    def _on_route(self, topic: str, route: Any) -> None:
        queues = publish_queues(topic, route)
        if queues:
            info = self.publish_info.get(topic)
            if info is None:
                self.publish_info[topic] = TopicPublishInfo(topic, queues)
            else:
                info.queues = queues
                info.have_route = True

    async def find_publish_info(self, topic: str) -> TopicPublishInfo:
        """Queues to write ``topic`` to (``tryToFindTopicPublishInfo``)."""
        info = self.publish_info.get(topic)
        if info is not None and info.ok():
            return info
        route = await self.instance.update_route(topic)
        info = self.publish_info.get(topic)
        if route is not None and info is not None and info.ok():
            return info
        default = await self.instance.fetch_route(self.create_topic_key)
        if default is None:
            raise MQClientError(
                f"No route info of this topic: {topic} (and no {self.create_topic_key} route)"
            )
        for bd in default.broker_datas:
            self.instance.broker_addrs[bd.broker_name] = dict(bd.broker_addrs)
        queues = publish_queues(topic, default, max_queues=self.default_topic_queue_nums)
        info = TopicPublishInfo(topic, queues, have_route=False)
        self.publish_info[topic] = info
        # Remember the topic so the periodic refresh picks up the real route once created.
        self.instance.routes.setdefault(topic, default)
        if not info.ok():
            raise MQClientError(f"No route info of this topic: {topic}")
        return info

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues of ``topic`` a selector chooses from."""
        return list((await self.find_publish_info(topic)).queues)

    # --- building requests -------------------------------------------------------------------------
    def _prepare(self, msg: Message) -> tuple[bytes, int, dict[str, str], str]:
        msg.validate(self.max_message_size)
        uniq = msg.properties.get("UNIQ_KEY") or self.uniq_ids.next()
        props = msg.wire_properties(uniq)
        body = msg.body
        sys_flag = 0
        if len(body) >= self.compress_over:
            body = zlib.compress(body, 5)
            sys_flag |= COMPRESSED_FLAG | ZLIB_COMPRESSION_TYPE
        return body, sys_flag, props, uniq

    def _header(
        self, mq: MessageQueue, sys_flag: int, flag: int, props: str, batch: bool = False
    ) -> dict[str, str]:
        header = {
            "a": self.group,
            "b": mq.topic,
            "c": self.create_topic_key,
            "d": str(self.default_topic_queue_nums),
            "e": str(mq.queue_id),
            "f": str(sys_flag),
            "g": str(int(time.time() * 1000)),
            "h": str(flag),
            "i": props,
            "j": "0",
            "k": "false",
            "m": "true" if batch else "false",
            "n": mq.broker_name,
        }
        if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            header["l"] = "16"
        return header

    # --- sending ------------------------------------------------------------------------------
    def send(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: Selector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> defer.Deferred:
        """Send one message; fires with a :class:`SendResult` (or fails with
        :class:`MQBrokerError` / :class:`MQClientError` / remoting errors).

        ``queue`` sends to that queue; ``selector(queues, msg, arg)`` picks one (orderly
        messages: same ``arg`` -> same queue). Neither: round-robin with retries.
        """
        return defer.ensureDeferred(self._send(msg, queue, selector, arg, timeout))

    def send_orderly(self, msg: Message, arg: Any, selector: Selector = select_by_hash, **kw: Any) -> defer.Deferred:
        """Send with a queue selector (default: by hash of ``arg``)."""
        return self.send(msg, selector=selector, arg=arg, **kw)

    def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None,
                    selector: Selector | None = None, arg: Any = None) -> defer.Deferred:
        """Send without waiting for the broker; fires with None once written."""
        return defer.ensureDeferred(self._send_oneway(msg, queue, selector, arg))

    def send_batch(self, msgs: Sequence[Message], *, queue: MessageQueue | None = None,
                   timeout: float | None = None) -> defer.Deferred:
        """Send messages of one topic as one SEND_BATCH_MESSAGE (320); fires with a SendResult
        whose ``msg_id`` joins the messages' UNIQ_KEYs with commas."""
        return defer.ensureDeferred(self._send_batch(list(msgs), queue, timeout))

    async def _choose(self, msg: Message, queue: MessageQueue | None, selector: Selector | None,
                      arg: Any, last_broker: str | None) -> MessageQueue:
        if queue is not None:
            return queue
        info = await self.find_publish_info(msg.topic)
        if selector is not None:
            mq = selector(list(info.queues), msg, arg)
            if mq is None:
                raise MQClientError("the selector returned no queue")
            return mq
        return info.select_one(last_broker)

    async def _send(self, msg: Message, queue: MessageQueue | None, selector: Selector | None,
                    arg: Any, timeout: float | None) -> SendResult:
        body, sys_flag, props, uniq = self._prepare(msg)
        props_str = properties_to_string(props)
        fixed = queue is not None or selector is not None
        return await self._with_retries(
            msg, queue, selector, arg, timeout, fixed,
            lambda mq: RemotingCommand.request(
                RequestCode.SEND_MESSAGE_V2, self._header(mq, sys_flag, msg.flag, props_str), body
            ),
            uniq,
        )

    async def _with_retries(self, msg: Message, queue: MessageQueue | None, selector: Selector | None,
                            arg: Any, timeout: float | None, fixed: bool,
                            build: Callable[[MessageQueue], RemotingCommand], uniq: str) -> SendResult:
        timeout = self.send_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        attempts = 1 if fixed else 1 + max(self.retry_times, 0)
        last_broker: str | None = None
        last_exc: Exception | None = None
        for attempt in range(attempts):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            mq = await self._choose(msg, queue, selector, arg, last_broker)
            addr = self.instance.master_addr(mq.broker_name)
            if addr is None:
                await self.instance.update_route(msg.topic)
                addr = self.instance.master_addr(mq.broker_name)
            if addr is None:
                last_exc = MQClientError(f"The broker[{mq.broker_name}] not exist")
                last_broker = mq.broker_name
                continue
            try:
                resp = await self.instance.invoke(addr, build(mq), left)
                return send_result_from_response(resp.code, resp.ext_fields, mq, uniq, addr, resp.remark)
            except MQBrokerError as exc:
                last_exc = exc
                if exc.code not in RETRY_RESPONSE_CODES:
                    raise
            except (RemotingConnectionError, RemotingTimeoutError, MQClientError) as exc:
                last_exc = exc
            last_broker = mq.broker_name
            log.info("send to %s failed (attempt %d/%d): %s", mq, attempt + 1, attempts, last_exc)
        if isinstance(last_exc, MQBrokerError):
            raise last_exc
        raise MQClientError(
            f"Send [{attempts}] times, still failed, topic {msg.topic}: {last_exc}"
        ) from last_exc

    async def _send_oneway(self, msg: Message, queue: MessageQueue | None, selector: Selector | None,
                           arg: Any) -> None:
        body, sys_flag, props, _uniq = self._prepare(msg)
        mq = await self._choose(msg, queue, selector, arg, None)
        addr = self.instance.master_addr(mq.broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        header = self._header(mq, sys_flag, msg.flag, properties_to_string(props))
        await self.instance.invoke_oneway(
            addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, body, oneway=True)
        )

    async def _send_batch(self, msgs: list[Message], queue: MessageQueue | None,
                          timeout: float | None) -> SendResult:
        if not msgs:
            raise MessageError("an empty batch")
        topic = msgs[0].topic
        items = []
        ids = []
        for m in msgs:
            # MessageBatch.generateFromList: one topic, no delay, no retry topic.
            if m.topic != topic:
                raise MessageError("the messages of a batch must share one topic")
            if m.delay_level > 0 or m.deliver_at is not None or m.delay is not None:
                raise MessageError("TimeDelayLevel is not supported for batching")
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                raise MessageError("Retry Group is not supported for batching")
            m.validate(self.max_message_size)
            uniq = m.properties.get("UNIQ_KEY") or self.uniq_ids.next()
            ids.append(uniq)
            items.append((m.body, m.flag, m.wire_properties(uniq)))
        body = encode_batch(items)
        if len(body) > self.max_message_size:
            raise MessageError(f"the batch body size {len(body)} exceeds {self.max_message_size}")
        batch_props = properties_to_string({"WAIT": "true" if msgs[0].wait_store_msg_ok else "false"})
        return await self._with_retries(
            msgs[0], queue, None, None, timeout, queue is not None,
            lambda mq: RemotingCommand.request(
                RequestCode.SEND_BATCH_MESSAGE, self._header(mq, 0, 0, batch_props, batch=True), body
            ),
            ",".join(ids),
        )
