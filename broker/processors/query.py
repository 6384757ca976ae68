"""QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33): ``QueryMessageProcessor`` (4.9.8)."""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import QueryMessageRequestHeader, ViewMessageRequestHeader

log = logging.getLogger(__name__)

#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``.
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
#: ``MessageStoreConfig.defaultQueryMaxNum``.
DEFAULT_QUERY_MAX_NUM = 32


class QueryMessageProcessor:
    """Handlers for 12 and 33."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.QUERY_MESSAGE: self.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
        }

    def query_message(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """12: records indexed under ``topic#key`` (a KEYS token, or UNIQ_KEY when
        ``_UNIQUE_KEY_QUERY=true``) stored within [beginTimestamp, endTimestamp]."""
        h = QueryMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        max_num = h.max_num
        if cmd.ext_fields.get(UNIQUE_MSG_QUERY_FLAG) == "true":
            max_num = int(self.ctx.setting("default_query_max_num", DEFAULT_QUERY_MAX_NUM))
        store = self.ctx.store
        result = store.query_message_offsets(h.topic, h.key, max_num, h.begin_timestamp,
                                             h.end_timestamp)
        records = []
        for off in result.phy_offsets:
            try:
                records.append(store.read_raw(off))
            except Exception as exc:  # a record aged out or corrupt: skip it, as Java does
                log.warning("query_message: skipping commitlog offset %d: %s", off, exc)
        ext = {
            "indexLastUpdateTimestamp": str(getattr(result, "index_last_update_timestamp", 0)),
            "indexLastUpdatePhyoffset": str(getattr(result, "index_last_update_phyoffset", 0)),
        }
        if records:
            return cmd.response(ResponseCode.SUCCESS, None, ext, b"".join(records))
        return cmd.response(ResponseCode.QUERY_NOT_FOUND,
                            "can not find message, maybe time range not correct", ext)

    def view_message_by_id(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """33: the raw record at a commitlog offset (decoded from an offset msgId)."""
        h = ViewMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        try:
            raw = self.ctx.store.read_raw(h.offset)
        except Exception as exc:
            log.info("view message by offset %d: %s", h.offset, exc)
            raw = b""
        if not raw:
            return cmd.response(ResponseCode.SYSTEM_ERROR,
                                f"can not find message by the offset, {h.offset}")
        return cmd.response(ResponseCode.SUCCESS, body=raw)
