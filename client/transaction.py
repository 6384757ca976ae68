"""Transactional producer (Java ``TransactionMQProducer`` / ``DefaultMQProducerImpl``
``sendMessageInTransaction``, ``endTransaction`` and ``checkTransactionState``), Twisted API.

::

    producer = TransactionProducer("tx-group", namesrv, check_listener=check)
    await producer.start()
    result = await producer.send_message_in_transaction(Message("Orders", b"..."), execute)
    # execute(msg, arg) -> LocalTransactionState (or a Deferred/coroutine of one)
    # check(msg_ext) -> LocalTransactionState, called when the broker asks (CHECK_TRANSACTION_STATE)

What goes on the wire is what the Java client sends: the half message as SEND_MESSAGE_V2 with
sysFlag ``TRANSACTION_PREPARED_TYPE`` (4) and properties ``TRAN_MSG=true`` / ``PGROUP``; then
END_TRANSACTION (37) **oneway** with ``producerGroup``, ``tranStateTableOffset`` (the half's queue
offset), ``commitLogOffset`` (decoded from the offset msgId), ``commitOrRollback`` (8 / 12 / 0),
``fromTransactionCheck``, ``msgId`` (the UNIQ_KEY), ``bname`` and, when the local transaction
raised, the remark ``executeLocalTransactionBranch exception: ...``. A check from the broker is
answered with another oneway END_TRANSACTION (``fromTransactionCheck=true``).
"""

from __future__ import annotations

import enum
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.commitlog.record import iter_records
from rocketmq_emu.broker.message import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    decode_offset_msg_id,
)
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.blocking import BlockingFacade, run_blocking, threaded_reactor
from rocketmq_emu.client.message import Message, MessageExt, MQClientError, SendResult, SendStatus
from rocketmq_emu.client.producer import Producer

log = logging.getLogger(__name__)

PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP = "PGROUP"


class LocalTransactionState(enum.Enum):
    """Java ``LocalTransactionState`` (``UNKNOW`` spelled as in Java)."""

    COMMIT_MESSAGE = TRANSACTION_COMMIT_TYPE
    ROLLBACK_MESSAGE = TRANSACTION_ROLLBACK_TYPE
    UNKNOW = TRANSACTION_NOT_TYPE


@dataclass(slots=True)
class TransactionSendResult:
    """``TransactionSendResult``: the half message's send result and the local outcome."""

    send_result: SendResult
    local_transaction_state: LocalTransactionState

    @property
    def msg_id(self) -> str:
        """The UNIQ_KEY of the message (also the transaction id)."""
        return self.send_result.msg_id


Executor = Callable[[Message, Any], Any]
CheckListener = Callable[[MessageExt], Any]


def end_transaction_header(group: str, send_result: SendResult, state: LocalTransactionState,
                           ) -> dict[str, str]:
    """The END_TRANSACTION extFields ``DefaultMQProducerImpl.endTransaction`` sends."""
    offset_id = send_result.offset_msg_id or send_result.msg_id
    ext = {
        "producerGroup": group,
        "tranStateTableOffset": str(send_result.queue_offset),
        "commitLogOffset": str(decode_offset_msg_id(offset_id)[2]),
        "commitOrRollback": str(state.value),
        "fromTransactionCheck": "false",
        "msgId": send_result.msg_id,
        "bname": send_result.message_queue.broker_name,
    }
    if send_result.transaction_id is not None:
        ext["transactionId"] = send_result.transaction_id
    return ext


async def _resolve(value: Any) -> Any:
    if isinstance(value, defer.Deferred):
        return await value
    if inspect.isawaitable(value):
        return await value
    return value


class TransactionProducer(Producer):
    """A producer that sends half messages and ends or answers transactions.

    ``check_listener(msg_ext)`` decides the state of an undecided transaction when the broker
    asks; it may return a Deferred or be a coroutine function.
    """

    def __init__(self, group: str, namesrv_addr: str | list[str], *,
                 check_listener: CheckListener | None = None, **kw: Any) -> None:
        super().__init__(group, namesrv_addr, **kw)
        self.check_listener = check_listener
        self._prepared: set[int] = set()
        self._announced: set[str] = set()
        #: CHECK_TRANSACTION_STATE requests seen (for tests and diagnostics).
        self.checks_received = 0

    def start(self) -> defer.Deferred:
        """Register the group and the CHECK_TRANSACTION_STATE handler, start the client."""
        registry = getattr(self.instance, "transaction_producers", None)
        if registry is None:
            registry = self.instance.transaction_producers = {}
            self.instance.dispatcher.register(
                RequestCode.CHECK_TRANSACTION_STATE,
                lambda cmd, conn: _on_check(self.instance, cmd, conn))
        registry[self.group] = self
        return super().start()

    def _prepare(self, msg: Message) -> tuple[bytes, int, dict[str, str], str]:
        body, sys_flag, props, uniq = super()._prepare(msg)
        if id(msg) in self._prepared:
            props[PROPERTY_TRANSACTION_PREPARED] = "true"
            props[PROPERTY_PRODUCER_GROUP] = self.group
            sys_flag |= TRANSACTION_PREPARED_TYPE
        return body, sys_flag, props, uniq

    # --- sending ------------------------------------------------------------------------------
    def send_message_in_transaction(self, msg: Message, executor: Executor,
                                    arg: Any = None) -> defer.Deferred:
        """Send ``msg`` as a half message, run ``executor(msg, arg)`` (the local transaction)
        and end the transaction with its outcome; fires with a TransactionSendResult."""
        return defer.ensureDeferred(self._send_in_transaction(msg, executor, arg))

    async def _send_in_transaction(self, msg: Message, executor: Executor,
                                   arg: Any) -> TransactionSendResult:
        if msg.delay_level or msg.deliver_at is not None or msg.delay is not None:
            # Java clears DELAY for transactional messages.
            msg.delay_level, msg.deliver_at, msg.delay = 0, None, None
        self._prepared.add(id(msg))
        try:
            send_result = await self.send(msg)
        except Exception as exc:
            raise MQClientError(f"send message Exception: {exc}") from exc
        finally:
            self._prepared.discard(id(msg))
        await self._announce(send_result.message_queue.broker_name)
        state = LocalTransactionState.UNKNOW
        error: BaseException | None = None
        if send_result.status is SendStatus.SEND_OK:
            try:
                outcome = await _resolve(executor(msg, arg))
                state = outcome if isinstance(outcome, LocalTransactionState) else \
                    LocalTransactionState.UNKNOW
            except Exception as exc:
                log.info("executeLocalTransactionBranch exception: %s", exc)
                error = exc
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            await self.end_transaction(send_result, state, error)
        except Exception as exc:
            log.warning("local transaction %s end %s failed: %s", send_result.msg_id, state, exc)
        return TransactionSendResult(send_result, state)

    async def _announce(self, broker_name: str) -> None:
        """Heartbeat once to a broker that now holds our half messages, so its check-back
        finds this producer's connection without waiting for the 30 s heartbeat."""
        if broker_name in self._announced:
            return
        self._announced.add(broker_name)
        try:
            await self.instance.send_heartbeat_to_all_brokers()
        except Exception as exc:
            log.debug("heartbeat after the first half message failed: %s", exc)

    async def end_transaction(self, send_result: SendResult, state: LocalTransactionState,
                              error: BaseException | None = None) -> None:
        """END_TRANSACTION (37), oneway, to the master that stored the half message."""
        addr = self.instance.master_addr(send_result.message_queue.broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{send_result.message_queue.broker_name}] not exist")
        remark = None
        if error is not None:
            remark = ("executeLocalTransactionBranch exception: "
                      f"{type(error).__name__}: {error}")
        cmd = RemotingCommand.request(
            RequestCode.END_TRANSACTION, end_transaction_header(self.group, send_result, state),
            oneway=True)
        cmd.remark = remark
        await self.instance.invoke_oneway(addr, cmd)

    async def answer_check(self, conn: Any, header: dict[str, str], msg: MessageExt) -> None:
        """``checkTransactionState``: ask the listener and send END_TRANSACTION
        (fromTransactionCheck) on the connection the check came in on."""
        self.checks_received += 1
        state = LocalTransactionState.UNKNOW
        remark = None
        if self.check_listener is None:
            log.warning("CheckTransactionState: no check listener for group %s", self.group)
        else:
            try:
                outcome = await _resolve(self.check_listener(msg))
                if isinstance(outcome, LocalTransactionState):
                    state = outcome
            except Exception as exc:
                log.error("Broker call checkTransactionState, but checkLocalTransactionState "
                          "exception: %s", exc)
                remark = f"checkLocalTransactionState Exception: {exc}"
        ext = {
            "commitLogOffset": header.get("commitLogOffset", "0"),
            "producerGroup": self.group,
            "tranStateTableOffset": header.get("tranStateTableOffset", "0"),
            "fromTransactionCheck": "true",
            "msgId": msg.properties.get("UNIQ_KEY") or msg.offset_msg_id,
            "commitOrRollback": str(state.value),
        }
        if header.get("transactionId") is not None:
            ext["transactionId"] = header["transactionId"]
        if header.get("bname"):
            ext["bname"] = header["bname"]
        cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, ext, oneway=True)
        cmd.remark = remark
        conn.send_oneway(cmd)


def _on_check(instance: Any, cmd: RemotingCommand, conn: Any) -> Any:
    """CHECK_TRANSACTION_STATE (39): find the producer by the message's PGROUP."""
    try:
        records = [rec for _, rec in iter_records(cmd.body)]
    except Exception as exc:
        log.warning("checkTransactionState, bad message body: %s", exc)
        records = []
    if not records:
        return None if cmd.is_oneway else cmd.response(ResponseCode.SYSTEM_ERROR, "no message")
    msg = MessageExt.from_record(records[0])
    group = msg.properties.get(PROPERTY_PRODUCER_GROUP)
    producer = (getattr(instance, "transaction_producers", {}) or {}).get(group)
    if producer is None:
        log.debug("checkTransactionState, pick producer by group[%s] failed", group)
        return None if cmd.is_oneway else cmd.response(ResponseCode.SUCCESS)
    d = defer.ensureDeferred(producer.answer_check(conn, dict(cmd.ext_fields), msg))
    d.addErrback(lambda f: log.error("answering a transaction check failed: %s",
                                     f.getTraceback()))
    return None if cmd.is_oneway else cmd.response(ResponseCode.SUCCESS)


# --- blocking facade ------------------------------------------------------------------------------
def _in_worker_thread(fn: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """Run a user callback in the reactor's thread pool when the reactor has its own thread
    (so it may block), else as is (pytest-twisted greenlet mode)."""
    if fn is None or not threaded_reactor():
        return fn
    from twisted.internet import threads

    def in_thread(*args: Any) -> defer.Deferred:
        return threads.deferToThread(fn, *args)

    return in_thread


class BlockingTransactionProducer(BlockingFacade):
    """:class:`TransactionProducer` with blocking calls (see :mod:`rocketmq_emu.client.blocking`):
    ``send_message_in_transaction(msg, executor) -> TransactionSendResult``; the executor and
    the check listener run in worker threads when the reactor has its own thread."""

    def __init__(self, group: str, namesrv_addr: str | list[str], *,
                 check_listener: CheckListener | None = None, timeout: float | None = 30.0,
                 **kw: Any) -> None:
        self._target = TransactionProducer(group, namesrv_addr,
                                           check_listener=_in_worker_thread(check_listener),
                                           **kw)
        self.timeout = timeout

    def send_message_in_transaction(self, msg: Message, executor: Executor,
                                    arg: Any = None) -> TransactionSendResult:
        """Blocking :meth:`TransactionProducer.send_message_in_transaction`."""
        return run_blocking(self._target.send_message_in_transaction, msg,
                            _in_worker_thread(executor), arg, timeout=self.timeout)
