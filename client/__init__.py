"""Python client for RocketMQ (and rmq-emu) plus the test harness.

Twisted API (every call returns a Deferred): :class:`Producer`, :class:`PushConsumer`,
:class:`PullConsumer`, :class:`LitePullConsumer`, :class:`Admin`. Blocking API:
:class:`BlockingProducer`, :class:`BlockingPushConsumer`, :class:`BlockingPullConsumer`,
:class:`BlockingLitePullConsumer`, :class:`BlockingAdmin`. Messages: :class:`Message`,
:class:`MessageExt`, :class:`MessageQueue`, :class:`SendResult`, :class:`SendStatus`,
:class:`ConsumeStatus`. Harness: :class:`EmbeddedCluster`, :class:`ControllableClock`,
:class:`FaultInjector`.

Names are imported lazily (PEP 562): pytest imports this package for the plugin in every project
that installed rocketmq-emu, and that must stay cheap.
"""

from __future__ import annotations

from rocketmq_emu.broker.lazy import lazy_getattr

_EXPORTS = {
    "Producer": "rocketmq_emu.client.producer",
    "PushConsumer": "rocketmq_emu.client.push_consumer",
    "ConsumeStatus": "rocketmq_emu.client.consume",
    "ConsumeContext": "rocketmq_emu.client.consume",
    "PullConsumer": "rocketmq_emu.client.pull_consumer",
    "LitePullConsumer": "rocketmq_emu.client.pull_consumer",
    "Admin": "rocketmq_emu.client.admin",
    "BlockingProducer": "rocketmq_emu.client.blocking",
    "BlockingPushConsumer": "rocketmq_emu.client.blocking",
    "BlockingPullConsumer": "rocketmq_emu.client.blocking",
    "BlockingLitePullConsumer": "rocketmq_emu.client.blocking",
    "BlockingAdmin": "rocketmq_emu.client.blocking",
    "Message": "rocketmq_emu.client.message",
    "MessageExt": "rocketmq_emu.client.message",
    "MessageQueue": "rocketmq_emu.client.message",
    "SendResult": "rocketmq_emu.client.message",
    "SendStatus": "rocketmq_emu.client.message",
    "MQBrokerError": "rocketmq_emu.client.message",
    "MQClientError": "rocketmq_emu.client.message",
    "EmbeddedCluster": "rocketmq_emu.client.testing",
    "ControllableClock": "rocketmq_emu.client.clock",
    "FaultInjector": "rocketmq_emu.client.faults",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr('client', _EXPORTS)
