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

from broker.lazy import lazy_getattr

_EXPORTS = {
    "Producer": "client.producer",
    "PushConsumer": "client.push_consumer",
    "ConsumeStatus": "client.consume",
    "ConsumeContext": "client.consume",
    "PullConsumer": "client.pull_consumer",
    "LitePullConsumer": "client.pull_consumer",
    "Admin": "client.admin",
    "BlockingProducer": "client.blocking",
    "BlockingPushConsumer": "client.blocking",
    "BlockingPullConsumer": "client.blocking",
    "BlockingLitePullConsumer": "client.blocking",
    "BlockingAdmin": "client.blocking",
    "Message": "client.message",
    "MessageExt": "client.message",
    "MessageQueue": "client.message",
    "SendResult": "client.message",
    "SendStatus": "client.message",
    "MQBrokerError": "client.message",
    "MQClientError": "client.message",
    "EmbeddedCluster": "client.testing",
    "ControllableClock": "client.clock",
    "FaultInjector": "client.faults",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr('client', _EXPORTS)
