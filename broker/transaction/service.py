"""Transaction outcomes and check-back decisions (RocketMQ
``broker/transaction/queue/TransactionalMessageServiceImpl.java`` and
``broker/processor/EndTransactionProcessor.java``).

No sockets and no timers: :meth:`TransactionalMessageService.end_transaction` applies an
END_TRANSACTION, :meth:`TransactionalMessageService.check` runs one pass of the check service and
returns the half messages whose producer must be asked (``resolveHalfMsg``); the caller
(:mod:`rocketmq_emu.broker.transaction.check_service`) sends CHECK_TRANSACTION_STATE.

Deliberate difference from 4.9.8: END_TRANSACTION is idempotent. A second commit for a half
message already decided (same queue offset, or the same ``UNIQ_KEY`` — a check-back copy of a
message the producer already committed) records the op entry but does not write the message to
its real topic again (RocketMQ would duplicate it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import (
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TRANSACTION_CHECK_TIMES,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from rocketmq_emu.broker.processors.common import put_status_response, status_name
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.transaction.bridge import REMOVE_TAG, TransactionalMessageBridge

log = logging.getLogger(__name__)


@dataclass
class EndResult:
    """What END_TRANSACTION did: a response (code, remark) or None for "no response"."""

    code: int | None
    remark: str | None = None
    stored: MessageRecord | None = None


def _to_int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


class TransactionalMessageService:
    """Half-message bookkeeping of one broker.

    ``settings`` is any object with ``transaction_time_out`` (ms), ``transaction_check_max``
    and ``file_reserved_time`` (hours); missing ones take RocketMQ's defaults.
    """

    def __init__(self, bridge: TransactionalMessageBridge, settings: Any = None,
                 max_message_size: int = 4 * 1024 * 1024) -> None:
        self.bridge = bridge
        self.settings = settings
        self.max_message_size = max_message_size
        #: Half queue offsets with an op record.
        self.decided_offsets: set[int] = set()
        #: UNIQ_KEY → commit (8) / rollback (12) of transactions already decided.
        self.decided_ids: dict[str, int] = {}
        self.loaded = False

    # --- settings ---------------------------------------------------------------------------
    def _setting(self, name: str, default: int) -> int:
        return int(getattr(self.settings, name, default) or default)

    @property
    def transaction_timeout_ms(self) -> int:
        """``transactionTimeOut`` (default 6000 ms)."""
        return self._setting("transaction_time_out", 6_000)

    @property
    def transaction_check_max(self) -> int:
        """``transactionCheckMax`` (default 15)."""
        return self._setting("transaction_check_max", 15)

    # --- state from disk ----------------------------------------------------------------------
    def load(self) -> None:
        """Rebuild the decided sets from the op queue (and the half records it names), so
        idempotency survives a restart; the check cursor itself is in consumerOffset.json."""
        bridge = self.bridge
        offset = bridge.min_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC)
        end = bridge.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC)
        while offset < end:
            ops = bridge.read(RMQ_SYS_TRANS_OP_HALF_TOPIC, offset)
            if not ops:
                break
            for op in ops:
                half_offset = self._op_half_offset(op)
                if half_offset is not None:
                    self.decided_offsets.add(half_offset)
                offset = op.queue_offset + 1
        for half_offset in sorted(self.decided_offsets):
            half = bridge.half_message_at(half_offset)
            if half is not None:
                uniq = half.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                if uniq:
                    self.decided_ids.setdefault(uniq, TRANSACTION_COMMIT_TYPE)
        self.loaded = True
        log.info("transaction state loaded: %d decided half messages", len(self.decided_offsets))

    @staticmethod
    def _op_half_offset(op: MessageRecord) -> int | None:
        if op.properties.get("TAGS") != REMOVE_TAG:
            return None
        try:
            return int(op.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            log.error("op record at %d has a bad body %r", op.queue_offset, op.body[:32])
            return None

    # --- END_TRANSACTION -----------------------------------------------------------------------
    def end_transaction(self, header: Any, peer: str = "?", remark: str | None = None,
                        ) -> EndResult:
        """``EndTransactionProcessor.processRequest`` for a parsed EndTransactionRequestHeader."""
        kind = header.commit_or_rollback
        if kind == TRANSACTION_NOT_TYPE:
            if header.from_transaction_check:
                log.warning("Check producer[%s] transaction state, but it's pending status. "
                            "msgId %s Remark: %s", peer, header.msg_id, remark)
            else:
                log.warning("The producer[%s] end transaction in sending message, and it's "
                            "pending status. msgId %s Remark: %s", peer, header.msg_id, remark)
            return EndResult(None)
        if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            return EndResult(None)
        if header.from_transaction_check or kind == TRANSACTION_ROLLBACK_TYPE:
            log.info("producer[%s] %s transaction msgId %s (fromTransactionCheck=%s)", peer,
                     "commit" if kind == TRANSACTION_COMMIT_TYPE else "rollback", header.msg_id,
                     header.from_transaction_check)
        half = self.bridge.look_message_by_offset(header.commit_log_offset)
        if half is None or half.topic != RMQ_SYS_TRANS_HALF_TOPIC:
            return EndResult(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        error = self._check_prepare_message(half, header)
        if error is not None:
            return EndResult(ResponseCode.SYSTEM_ERROR, error)
        uniq = half.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if half.queue_offset in self.decided_offsets:
            log.info("half message %d already decided; END_TRANSACTION ignored",
                     half.queue_offset)
            return EndResult(ResponseCode.SUCCESS)
        earlier = self.decided_ids.get(uniq) if uniq else None
        stored = None
        if kind == TRANSACTION_COMMIT_TYPE and earlier is None:
            final = self.final_message(half)
            result = self.bridge.store.put_message(final)
            code, error_remark, ok = put_status_response(result.status, self.max_message_size)
            if not ok:
                log.warning("commit of half message %d failed: %s", half.queue_offset,
                            status_name(result.status))
                return EndResult(code, error_remark)
            stored = final
        elif earlier is not None:
            log.info("transaction %s already decided (%d); half copy %d only closed", uniq,
                     earlier, half.queue_offset)
        self._delete_prepare_message(half, kind, uniq)
        return EndResult(ResponseCode.SUCCESS, None, stored)

    @staticmethod
    def _check_prepare_message(half: MessageRecord, header: Any) -> str | None:
        """``EndTransactionProcessor.checkPrepareMessage``."""
        if half.properties.get(PROPERTY_PRODUCER_GROUP) != header.producer_group:
            return "The producer group wrong"
        if half.queue_offset != header.tran_state_table_offset:
            return "The transaction state table offset wrong"
        if half.physical_offset != header.commit_log_offset:
            return "The commit log offset wrong"
        return None

    @staticmethod
    def final_message(half: MessageRecord) -> MessageRecord:
        """``endMessageTransaction``: the committed message on its real topic/queue.

        The stored properties string is the half message's, unchanged: 4.9.8 clears
        REAL_TOPIC / REAL_QID / TRAN_MSG only from the map after copying the string, so the
        committed record keeps them (consumers ignore them).
        """
        props = dict(half.properties)
        sys_flag = (half.sys_flag & ~TRANSACTION_TYPE_MASK) | TRANSACTION_COMMIT_TYPE
        record = half.derive(
            props.get(PROPERTY_REAL_TOPIC, ""), _to_int(props.get(PROPERTY_REAL_QUEUE_ID), 0), props
        )
        record.sys_flag = sys_flag
        record.prepared_transaction_offset = half.physical_offset
        record.properties_str = half.properties_str
        return record

    def _delete_prepare_message(self, half: MessageRecord, kind: int, uniq: str | None) -> None:
        """``deletePrepareMessage``: the op record."""
        if self.bridge.put_op_message(half):
            self.decided_offsets.add(half.queue_offset)
            if uniq:
                self.decided_ids.setdefault(uniq, kind)

    # --- the check pass --------------------------------------------------------------------------
    def check(self, now_ms: int, file_reserved_hours: int = 72,
              born_ms: Callable[[int], int] | None = None) -> list[MessageRecord]:
        """One pass of ``TransactionalMessageServiceImpl.check`` over the half queue.

        A half message's age is ``now_ms`` minus its ``bornTimestamp``; ``born_ms`` puts that
        stamp (the producer's clock) on the time line of ``now_ms`` first, when the broker's
        clock is not the real one (see ``ControllableClock.from_wall``).

        Returns the put-back copies to send CHECK_TRANSACTION_STATE for (offsets of the copy,
        ``TRANSACTION_CHECK_TIMES`` already incremented). Messages checked
        ``transactionCheckMax`` times are moved to ``TRANS_CHECK_MAX_TIME_TOPIC`` and logged.
        """
        bridge = self.bridge
        half_topic, op_topic = RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
        if bridge.max_offset(half_topic) <= 0:
            return []
        half_offset = bridge.fetch_consume_offset(half_topic)
        op_offset = bridge.fetch_consume_offset(op_topic)
        removed, done_ops = self._fill_op_remove_map(op_offset, half_offset)
        timeout = self.transaction_timeout_ms
        check_max = self.transaction_check_max
        to_check: list[MessageRecord] = []
        new_offset = half_offset
        i = half_offset
        end = bridge.max_offset(half_topic)
        first = bridge.min_offset(half_topic)
        if i < first:
            # The files holding older half messages were deleted (retention).
            log.info("half queue offset %d is below the min offset %d: skipped ahead", i, first)
            new_offset = i = first
        while i < end:
            if i in removed:
                done_ops.add(removed.pop(i))
                new_offset = i = i + 1
                continue
            half = bridge.half_message_at(i)
            if half is None:
                log.info("half message at %d is not readable (removed?), skipped", i)
                new_offset = i = i + 1
                continue
            age = now_ms - (born_ms(half.born_timestamp) if born_ms else half.born_timestamp)
            if self._need_discard(half, check_max) or age > file_reserved_hours * 3_600_000:
                log.error("half message %s (queue offset %d, real topic %s) checked %s times or "
                          "too old: discarded to TRANS_CHECK_MAX_TIME_TOPIC",
                          half.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX), i,
                          half.properties.get(PROPERTY_REAL_TOPIC),
                          half.properties.get(PROPERTY_TRANSACTION_CHECK_TIMES))
                bridge.put_discarded(half)
                new_offset = i = i + 1
                continue
            if half.store_timestamp >= now_ms:
                break  # stored after this pass began
            immunity = timeout
            immunity_str = half.properties.get(PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
            if immunity_str is not None:
                immunity = _to_int(immunity_str, timeout // 1000) * 1000
                if age < immunity:
                    break
            elif 0 <= age < immunity:
                break
            copy = bridge.put_back_half_message(half)
            if copy is None:
                break  # the store refuses writes: retry this offset at the next pass
            to_check.append(copy)
            new_offset = i = i + 1
        if new_offset != half_offset:
            bridge.update_consume_offset(half_topic, new_offset)
        new_op_offset = op_offset
        while new_op_offset in done_ops:
            new_op_offset += 1
        if new_op_offset != op_offset:
            bridge.update_consume_offset(op_topic, new_op_offset)
        return to_check

    def _fill_op_remove_map(self, op_offset: int, half_offset: int,
                            ) -> tuple[dict[int, int], set[int]]:
        """``fillOpRemoveMap`` over every op record from ``op_offset``: half offsets decided
        (→ op queue offset) and op offsets already behind the half cursor."""
        bridge = self.bridge
        removed: dict[int, int] = {}
        done: set[int] = set()
        offset = op_offset
        end = bridge.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC)
        while offset < end:
            ops = bridge.read(RMQ_SYS_TRANS_OP_HALF_TOPIC, offset)
            if not ops:
                break
            for op in ops:
                target = self._op_half_offset(op)
                if target is None or target < half_offset:
                    done.add(op.queue_offset)
                else:
                    removed[target] = op.queue_offset
                    self.decided_offsets.add(target)
                offset = op.queue_offset + 1
        return removed, done

    @staticmethod
    def _need_discard(half: MessageRecord, check_max: int) -> bool:
        """``needDiscard``: count this check in ``TRANSACTION_CHECK_TIMES``; True once the
        message has been checked ``transactionCheckMax`` times."""
        props = dict(half.properties)
        times = props.get(PROPERTY_TRANSACTION_CHECK_TIMES)
        count = 1
        if times is not None:
            count = _to_int(times, 0)
            if count >= check_max:
                return True
            count += 1
        props[PROPERTY_TRANSACTION_CHECK_TIMES] = str(count)
        half.set_properties(props)
        return False


def check_message_view(copy: MessageRecord) -> MessageRecord:
    """The message sent in CHECK_TRANSACTION_STATE's body (``sendCheckMessage``): the half copy
    re-labelled with its real topic and queue (``MessageDecoder.encode`` layout)."""
    props = copy.properties
    view = MessageRecord(
        topic=props.get(PROPERTY_REAL_TOPIC, copy.topic),
        body=copy.body,
        queue_id=_to_int(props.get(PROPERTY_REAL_QUEUE_ID), copy.queue_id),
        flag=copy.flag,
        properties=dict(props),
        sys_flag=copy.sys_flag,
        born_timestamp=copy.born_timestamp,
        born_host=copy.born_host,
        store_host=copy.store_host,
        reconsume_times=copy.reconsume_times,
        prepared_transaction_offset=copy.prepared_transaction_offset,
        queue_offset=copy.queue_offset,
        physical_offset=copy.physical_offset,
        store_timestamp=copy.store_timestamp,
    )
    return view
