"""Admin requests that clean the store (``AdminBrokerProcessor``, 4.9.8):
306 CLEAN_EXPIRED_CONSUMEQUEUE, 316 CLEAN_UNUSED_TOPIC, 329 DELETE_EXPIRED_COMMITLOG.

Each answers SUCCESS with no body once the store's retention (``broker/commitlog/retention.py``)
has done the work, as Java does.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand

log = logging.getLogger(__name__)

#: ``MixAll.LMQ_PREFIX``: light message queue topics, never cleaned as unused.
LMQ_PREFIX = "%LMQ%"


class AdminStoreProcessor:
    """Handlers for 306, 316 and 329."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[int, Any]:
        """Request code → handler."""
        return {
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
            RequestCode.CLEAN_UNUSED_TOPIC: self.clean_unused_topic,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commitlog,
        }

    def clean_expired_consume_queue(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """306: destroy consume queues whose messages all left the commitlog."""
        log.warning("invoke cleanExpiredConsumeQueue start.")
        # 4.9.8 spares only SCHEDULE_TOPIC_XXXX; RocketMQ 5 (ConsumeQueueStore.cleanExpired)
        # every system topic, which the timer topic (rmq_sys_wheel_timer) here needs.
        self.ctx.store.clean_expired_consume_queues(self.ctx.topic_config.is_system_topic)
        log.warning("invoke cleanExpiredConsumeQueue end.")
        return cmd.response(ResponseCode.SUCCESS)

    def clean_unused_topic(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """316: destroy consume queues of topics the broker no longer has a config for."""
        log.warning("invoke cleanUnusedTopic start.")
        topics = self.ctx.topic_config

        def keep(topic: str) -> bool:
            # DefaultMessageStore.cleanUnusedTopic (5.x): configured, system and LMQ topics
            # stay; 4.9.8 listed the schedule and transaction-op topics, missing the timer's.
            return (topic in topics.topic_config_table or topics.is_system_topic(topic)
                    or topic.startswith(LMQ_PREFIX))

        self.ctx.store.clean_unused_topics(keep)
        log.warning("invoke cleanUnusedTopic end.")
        return cmd.response(ResponseCode.SUCCESS)

    def delete_expired_commitlog(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        """329 (``DefaultMessageStore.executeDeleteFilesManually``): Java makes its clean
        service delete commitlog files older than ``fileReservedTime`` on its next runs whatever
        the hour; done here at once, with the consume-queue and index files below."""
        log.warning("invoke deleteExpiredCommitLog start.")
        self.ctx.store.clean_expired_files()
        log.warning("invoke deleteExpiredCommitLog end.")
        return cmd.response(ResponseCode.SUCCESS)
