"""What a replaying connection does with the requests the target pushes to it.

The replay speaks for the recorded clients: their heartbeats register its connections as the
clients' channels, so the target broker pushes to them what it pushes to clients (a consumer
joining or leaving: NOTIFY_CONSUMER_IDS_CHANGED; a pending half message: CHECK_TRANSACTION_STATE;
an admin's ``consumerStatus`` or ``resetOffsetByTime``...). No producer or consumer stands
behind a replaying connection, so it answers as Apache's ``ClientRemotingProcessor`` answers for
a group its client does not have, and logs at debug level only (what the target pushes is its
own business, not a difference; the recording's answers to pushes are not replayed either, see
:mod:`.plan`):

* CHECK_TRANSACTION_STATE (39, oneway): no producer of the group, nothing to check, no answer;
* NOTIFY_CONSUMER_IDS_CHANGED (40, oneway): would trigger a rebalance; nothing to rebalance;
* RESET_CONSUMER_CLIENT_OFFSET (220, oneway): no consumer whose offsets to reset;
* GET_CONSUMER_STATUS_FROM_CLIENT (221): SUCCESS with empty tables (``GetConsumerStatusBody``;
  ``MQClientInstance.getConsumerStatus`` of an unknown group is an empty map);
* GET_CONSUMER_RUNNING_INFO (307), CONSUME_MESSAGE_DIRECTLY (309): SYSTEM_ERROR ``The Consumer
  Group <G> not exist in this consumer``;
* PUSH_REPLY_MESSAGE_TO_CLIENT (326): SUCCESS (no request of this connection waits for the
  reply, which the Java client only logs);
* any other code: REQUEST_CODE_NOT_SUPPORTED, as ``NettyRemotingAbstract`` answers a code no
  processor is registered for.

A oneway push is never answered (the connection drops any answer to one).
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode, request_name
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.dispatcher import RequestDispatcher, not_supported

log = logging.getLogger(__name__)

#: Pushes a client takes without answering (the broker sends them oneway).
ONEWAY_PUSHES = frozenset({RequestCode.CHECK_TRANSACTION_STATE,
                           RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                           RequestCode.RESET_CONSUMER_CLIENT_OFFSET})
#: ``GetConsumerStatusBody`` with no queues (fastjson writes its fields in name order).
EMPTY_CONSUMER_STATUS = b'{"consumerTable":{},"messageQueueTable":{}}'


def replaying_dispatcher(reactor: Any) -> RequestDispatcher:
    """The dispatcher of a replaying connection: every pushed request handled quietly."""
    dispatcher = RequestDispatcher(reactor)
    dispatcher.register_default(answer_push)
    return dispatcher


def answer_push(cmd: RemotingCommand, conn: Any) -> RemotingCommand | None:
    """What a client without producers or consumers answers to the pushed request ``cmd``
    (None: no answer)."""
    code = cmd.code
    log.debug("%s pushed %s (%d)", getattr(conn, "peer_addr", "?"), request_name(code), code)
    if code in ONEWAY_PUSHES:
        return None
    if code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
        return cmd.response(ResponseCode.SUCCESS, body=EMPTY_CONSUMER_STATUS)
    if code in (RequestCode.GET_CONSUMER_RUNNING_INFO, RequestCode.CONSUME_MESSAGE_DIRECTLY):
        group = cmd.ext_fields.get("consumerGroup")
        return cmd.response(ResponseCode.SYSTEM_ERROR,
                            f"The Consumer Group <{group}> not exist in this consumer")
    if code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
        return cmd.response(ResponseCode.SUCCESS)
    return not_supported(cmd)
