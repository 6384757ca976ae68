"""Consumer offsets and queue offsets: GET_CONSUMER_LIST_BY_GROUP (38), QUERY_CONSUMER_OFFSET (14),
UPDATE_CONSUMER_OFFSET (15), QUERY_BROKER_OFFSET (13), SEARCH_OFFSET_BY_TIMESTAMP (29),
GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32).

Mirrors ``ConsumerManageProcessor`` and the offset handlers of ``AdminBrokerProcessor`` (4.9.8).
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import (
    GetConsumerListByGroupRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)

log = logging.getLogger(__name__)


class ConsumerManageProcessor:
    """Handlers for 38, 14, 15, 13, 29, 30, 31, 32."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RequestCode.QUERY_BROKER_OFFSET: self.query_broker_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
        }

    def get_consumer_list_by_group(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """38: client ids of the group's connections (rebalance input)."""
        h = GetConsumerListByGroupRequestHeader.from_ext_fields(cmd.ext_fields)
        group_info = self.ctx.consumer_manager.get_consumer_group_info(h.consumer_group)
        if group_info is not None:
            ids = group_info.all_client_ids()
            if ids:
                body = jsonutil.dumps({"consumerIdList": ids})
                return cmd.response(ResponseCode.SUCCESS, body=body)
            log.warning("getAllClientId failed, %s %s", h.consumer_group, conn.peer_addr)
        else:
            log.warning("getConsumerGroupInfo failed, %s %s", h.consumer_group, conn.peer_addr)
        return cmd.response(ResponseCode.SYSTEM_ERROR,
                            f"no consumer for this group, {h.consumer_group}")

    def query_consumer_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """14: the committed offset; a new group on a queue still starting at 0 gets 0."""
        ctx = self.ctx
        h = QueryConsumerOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = ctx.consumer_offsets.query_offset(h.consumer_group, h.topic, h.queue_id)
        if offset >= 0:
            return cmd.response(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})
        min_offset = ctx.store.get_min_offset_in_queue(h.topic, h.queue_id)
        # R5 setZeroIfNotFound=false forces "not found".
        if h.set_zero_if_not_found is not False and min_offset <= 0 and \
                not self._in_disk(h.topic, h.queue_id, 0):
            return cmd.response(ResponseCode.SUCCESS, ext_fields={"offset": "0"})
        return cmd.response(ResponseCode.QUERY_NOT_FOUND,
                            "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")

    def _in_disk(self, topic: str, queue_id: int, offset: int) -> bool:
        # DefaultMessageStore.checkInDiskByConsumeOffset: is the message already out of the page
        # cache window? The emulator keeps no such window unless the store says otherwise.
        check = getattr(self.ctx.store, "check_in_disk_by_consume_offset", None)
        return bool(check(topic, queue_id, offset)) if check is not None else False

    def update_consumer_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """15 (usually oneway): store a committed offset."""
        h = UpdateConsumerOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        self.ctx.consumer_offsets.commit_offset(conn.peer_addr, h.consumer_group, h.topic,
                                                h.queue_id, h.commit_offset)
        return cmd.response(ResponseCode.SUCCESS)

    def query_broker_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """13: the commitlog's max physical offset."""
        return cmd.response(ResponseCode.SUCCESS,
                            ext_fields={"offset": str(self.ctx.store.max_physical_offset)})

    def search_offset_by_timestamp(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """29: the queue offset whose message was stored closest to ``timestamp``."""
        h = SearchOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = self.ctx.store.get_offset_in_queue_by_time(h.topic, h.queue_id, h.timestamp)
        return cmd.response(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})

    def get_max_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """30: the queue's exclusive max offset."""
        h = GetMaxOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = self.ctx.store.get_max_offset_in_queue(h.topic, h.queue_id)
        return cmd.response(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})

    def get_min_offset(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """31: the queue's min offset."""
        h = GetMinOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = self.ctx.store.get_min_offset_in_queue(h.topic, h.queue_id)
        return cmd.response(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)})

    def get_earliest_msg_storetime(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """32: store timestamp of the queue's first message (-1 if none)."""
        h = GetEarliestMsgStoretimeRequestHeader.from_ext_fields(cmd.ext_fields)
        ts = self.ctx.store.get_earliest_message_time(h.topic, h.queue_id)
        return cmd.response(ResponseCode.SUCCESS, ext_fields={"timestamp": str(ts)})
