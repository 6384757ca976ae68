"""END_TRANSACTION (37): ``EndTransactionProcessor`` of Apache RocketMQ 4.9.8, plus the
transaction check-back service it feeds (:mod:`rocketmq_emu.broker.transaction`).

The Java producer sends END_TRANSACTION oneway: no response goes back then (the protocol layer
drops it); a request-response END_TRANSACTION gets SUCCESS or SYSTEM_ERROR with RocketMQ's
remarks ("Find prepared transaction message failed", "The producer group wrong", ...).
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.message import decode_offset_msg_id
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import EndTransactionRequestHeader
from rocketmq_emu.broker.transaction.bridge import TransactionalMessageBridge
from rocketmq_emu.broker.transaction.check_service import TransactionCheckService
from rocketmq_emu.broker.transaction.service import TransactionalMessageService

log = logging.getLogger(__name__)


class EndTransactionProcessor:
    """Handler for 37; owns the transaction service and its check loop."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        store_config = getattr(ctx.store, "config", None)
        max_size = int(getattr(store_config, "max_message_size", 4 * 1024 * 1024))
        self.bridge = TransactionalMessageBridge(
            ctx.store, ctx.store_host, ctx.now_ms, ctx.topic_config, ctx.consumer_offsets)
        self.service = TransactionalMessageService(self.bridge, ctx.config, max_size)
        self.check_service = TransactionCheckService(
            self.service, ctx.producer_manager, ctx.clock, ctx.config)
        ctx.transaction_service = self.service

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {RequestCode.END_TRANSACTION: self.process,
                RequestCode.RESUME_CHECK_HALF_MESSAGE: self.resume_check_half_message}

    def start(self) -> None:
        """Load the decided set from the op queue and start the check loop."""
        # The advertised address is only known once listening.
        self.bridge.store_host = self.ctx.store_host
        if not self.service.loaded:
            self.service.load()
        self.check_service.start()

    def stop(self) -> None:
        """Stop the check loop."""
        self.check_service.stop()

    def process(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand | None:
        """37: commit (message to its real topic + op record), rollback (op record), unknown
        (nothing)."""
        ctx = self.ctx
        if ctx.setting("broker_role", "ASYNC_MASTER") == "SLAVE":
            log.warning("Message store is slave mode, so end transaction is forbidden.")
            return cmd.response(ResponseCode.SLAVE_NOT_AVAILABLE)
        header = EndTransactionRequestHeader.from_ext_fields(cmd.ext_fields)
        self.bridge.store_host = ctx.store_host
        result = self.service.end_transaction(header, getattr(conn, "peer_addr", "?"),
                                              cmd.remark)
        if result.stored is not None:
            ctx.stats.on_put(result.stored.topic, 1, len(result.stored.body))
        if result.code is None or cmd.is_oneway:
            return None
        if result.code != ResponseCode.SUCCESS:
            log.warning("END_TRANSACTION from %s refused: %s", getattr(conn, "peer_addr", "?"),
                        result.remark)
        return cmd.response(result.code, result.remark)

    def resume_check_half_message(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """323 (``mqadmin resumeCheckHalfMessage -i msgId``): the message the offset msgId names
        goes back on the half queue with its check count reset
        (``AdminBrokerProcessor.resumeCheckHalfMessage``, 4.9.8: same codes and remarks)."""
        msg_id = cmd.ext_fields.get("msgId") or ""
        try:
            _host, _port, offset = decode_offset_msg_id(msg_id)
            record = self.ctx.store.look_message_by_offset(offset)
            if record is None:
                raise LookupError(f"no message at commitlog offset {offset}")
            ok = self.bridge.put_resumed(record)
        except Exception as exc:
            log.error("Exception was thrown when putting message back to "
                      "RMQ_SYS_TRANS_HALF_TOPIC (msgId %r): %s", msg_id, exc)
            return cmd.response(ResponseCode.SYSTEM_ERROR, "Exception was thrown when putting "
                                "message back to RMQ_SYS_TRANS_HALF_TOPIC.")
        if not ok:
            log.error("Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed (msgId %s).", msg_id)
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
        log.info("Put message back to RMQ_SYS_TRANS_HALF_TOPIC OK (msgId %s).", msg_id)
        return cmd.response(ResponseCode.SUCCESS)
