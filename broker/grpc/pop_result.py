"""A broker's POP_MESSAGE answer as the proxy sees it (``LocalMessageService.popMessage``): the
status, and the popped messages each carrying its ``POP_CK`` extraInfo built from the response
header (startOffsetInfo / msgOffsetInfo / orderCountInfo), as a 5.x client builds it too."""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketmq_emu.broker.commitlog.record import MessageRecord, iter_records
from rocketmq_emu.broker.grpc.status import Code, ProxyError
from rocketmq_emu.broker.pop.extra_info import (
    build_extra_info,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    start_offset_info_key,
)
from rocketmq_emu.broker.pop.names import PROPERTY_FIRST_POP_TIME, PROPERTY_POP_CK
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

FOUND = "FOUND"
POLLING_FULL = "POLLING_FULL"
POLLING_NOT_FOUND = "POLLING_NOT_FOUND"


@dataclass
class PopResult:
    """``PopResult``: ``messages`` are decoded records with ``POP_CK`` set."""

    status: str
    messages: list[MessageRecord] = field(default_factory=list)
    pop_time: int = 0
    invisible_time: int = 0


def read_pop_response(response: RemotingCommand, topic: str, broker_name: str,
                      order: bool) -> PopResult:
    """Decode a POP_MESSAGE response for a request on ``topic`` to ``broker_name``."""
    code = response.code
    if code == ResponseCode.POLLING_FULL:
        return PopResult(POLLING_FULL)
    if code in (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
        return PopResult(POLLING_NOT_FOUND)
    if code != ResponseCode.SUCCESS:
        raise ProxyError(Code.INTERNAL_SERVER_ERROR, response.remark or str(code))
    ext = response.ext_fields
    pop_time = int(ext.get("popTime", "0"))
    invisible_time = int(ext.get("invisibleTime", "0"))
    revive_qid = int(ext.get("reviveQid", "0"))
    records = [rec for _pos, rec in iter_records(response.body)]
    start_info = parse_start_offset_info(ext.get("startOffsetInfo"))
    msg_info = parse_msg_offset_info(ext.get("msgOffsetInfo"))
    order_info = parse_order_count_info(ext.get("orderCountInfo"))
    sort_map: dict[str, list[int]] = {}
    for rec in records:
        key = start_offset_info_key(rec.topic, rec.queue_id, rec.properties.get(PROPERTY_POP_CK))
        sort_map.setdefault(key, []).append(rec.queue_offset)
    per_queue: dict[str, str] = {}
    for rec in records:
        props = dict(rec.properties)
        if start_info is None:
            key = f"{rec.topic}{rec.queue_id}"
            if key not in per_queue:
                per_queue[key] = build_extra_info(rec.queue_offset, pop_time, invisible_time,
                                                  revive_qid, rec.topic, broker_name,
                                                  rec.queue_id)
            props[PROPERTY_POP_CK] = f"{per_queue[key]} {rec.queue_offset}"
        elif PROPERTY_POP_CK not in props:
            key = start_offset_info_key(rec.topic, rec.queue_id)
            index = sort_map[key].index(rec.queue_offset)
            msg_queue_offset = (msg_info or {}).get(key, sort_map[key])[index]
            props[PROPERTY_POP_CK] = build_extra_info(
                start_info[key], pop_time, invisible_time, revive_qid, rec.topic, broker_name,
                rec.queue_id, msg_queue_offset)
            if order and order_info is not None:
                count = order_info.get(key)
                if count is not None and count > 0:
                    rec.reconsume_times = count
        props.setdefault(PROPERTY_FIRST_POP_TIME, str(pop_time))
        rec.set_properties(props)
        rec.topic = topic
    return PopResult(FOUND, records, pop_time, invisible_time)
