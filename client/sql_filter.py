"""SQL92 subscriptions on the consumer side (Java ``DefaultMQPushConsumerImpl.checkClientInBroker``).

A consumer with a non-TAG subscription sends CHECK_CLIENT_CONFIG (46) with
``{"clientId", "group", "subscriptionData"}`` to a broker of each such topic before its first
heartbeat; a refusal (SYSTEM_ERROR when the broker's ``enablePropertyFilter`` is off,
SUBSCRIPTION_PARSE_FAILED for a bad expression) fails ``start()`` with
:class:`~client.message.MQClientError`, as Java throws ``MQClientException``.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.client.message import MQClientError

log = logging.getLogger(__name__)


def check_client_config_body(client_id: str, group: str, sub: Any) -> bytes:
    """``CheckClientRequestBody`` JSON (fastjson field order)."""
    return jsonutil.dumps({"clientId": client_id, "group": group,
                           "subscriptionData": sub.to_json()})


async def check_client_in_broker(consumer: Any) -> None:
    """Send 46 for each SQL92 subscription to one broker of its topic."""
    instance = consumer.instance
    for topic, sub in list(consumer.subscriptions.items()):
        if getattr(sub, "expression_type", "TAG") == "TAG":
            continue
        route = instance.routes.get(topic)
        addrs = []
        if route is not None:
            for bd in route.broker_datas:
                addr = bd.master_addr() or next(iter(bd.broker_addrs.values()), None)
                if addr:
                    addrs.append(addr)
        if not addrs:
            log.warning("no broker known for %s: CHECK_CLIENT_CONFIG skipped", topic)
            continue
        body = check_client_config_body(consumer.client_id, consumer.group, sub)
        resp = await instance.invoke(addrs[0], RemotingCommand.request(
            RequestCode.CHECK_CLIENT_CONFIG, body=body))
        if resp.code != ResponseCode.SUCCESS:
            raise MQClientError(
                f"Check client in broker error, maybe because you use {sub.expression_type} "
                f"filter, but server has not been upgraded. CODE: {resp.code} "
                f"DESC: {resp.remark}")
