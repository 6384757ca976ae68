"""What every gRPC activity shares (the 5.x proxy's ``MessagingProcessor`` in Local mode):
the brokers of this process, routes, client settings and channels, and the one way to hand a
remoting request to a broker: its :class:`~rocketmq_emu.broker.remoting.dispatcher.RequestDispatcher`,
the path every remoting client's request takes too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from rocketmq_emu.broker.client_manager import ClientChannelInfo, SubscriptionData
from rocketmq_emu.broker.grpc import messages
from rocketmq_emu.broker.grpc.channel import (
    ChannelManager,
    GrpcClientChannel,
    InvocationChannel,
    TransactionDataManager,
)
from rocketmq_emu.broker.grpc.context import ProxyContext
from rocketmq_emu.broker.grpc.routes import Routes
from rocketmq_emu.broker.grpc.settings import ClientSettingsManager
from rocketmq_emu.broker.grpc.status import Code, ProxyError
from rocketmq_emu.broker.remoting.command import RemotingCommand

#: ``MQVersion.Version.V5_0_0.ordinal()``, the version a 5.x client's channel reports.
V5_0_0 = 453


class ProxyState:
    """``brokers()`` returns the running brokers by name (BrokerControllers: ``dispatcher``,
    ``ctx``); ``grpc_port()`` the port clients reach this server on; ``clock`` the liveness
    clock (deadlines, long polls)."""

    def __init__(self, brokers: Callable[[], dict[str, Any]], grpc_port: Callable[[], int],
                 clock: Any) -> None:
        self.brokers = brokers
        self.clock = clock
        self.routes = Routes(brokers, grpc_port)
        self.transactions = TransactionDataManager()
        self.channels = ChannelManager(self.transactions)
        self.settings = ClientSettingsManager(self.group_config)

    # --- brokers -----------------------------------------------------------------------------
    def broker(self, name: str) -> Any:
        """The running broker called ``name`` (ProxyError BAD_REQUEST if there is none, as the
        proxy's INVALID_BROKER_NAME)."""
        broker = self.brokers().get(name)
        if broker is None:
            raise ProxyError(Code.BAD_REQUEST, f"cannot find broker {name}")
        return broker

    def any_broker(self) -> Any:
        """A running broker (ProxyError if none runs)."""
        brokers = self.brokers()
        if not brokers:
            raise ProxyError(Code.INTERNAL_SERVER_ERROR, "no broker is running")
        return brokers[sorted(brokers)[0]]

    def now_ms(self) -> int:
        """Business time (the brokers' clock, the same for all of them) in ms."""
        for broker in self.brokers().values():
            return broker.ctx.now_ms()
        raise ProxyError(Code.INTERNAL_SERVER_ERROR, "no broker is running")

    def group_config(self, group: str) -> Any:
        """A subscription group's config from the first broker that has it (no auto-create)."""
        for _name, broker in sorted(self.brokers().items()):
            table = broker.ctx.subscription_groups.subscription_group_table
            if group in table:
                return table[group]
        return None

    def invoke(self, broker_name: str, cmd: RemotingCommand, conn: Any) -> defer.Deferred:
        """Dispatch a remoting request to a broker; fires with its response (None for a
        oneway request)."""
        return defer.maybeDeferred(self._dispatch, self.broker(broker_name), cmd, conn)

    def invoke_then(self, broker_name: str, cmd: RemotingCommand, conn: Any,
                    then: Callable[[Any], Any]) -> Any:
        """:meth:`invoke` and ``then(response)``: its result at once when the broker answered
        at once (a send with asynchronous flush), else a Deferred of it (the dispatcher never
        raises: a failing handler is a SYSTEM_ERROR response)."""
        answer = self._dispatch(self.broker(broker_name), cmd, conn)
        if isinstance(answer, defer.Deferred):
            return answer.addCallback(then)
        return then(answer)

    @staticmethod
    def _dispatch(broker: Any, cmd: RemotingCommand, conn: Any) -> Any:
        """Hand a request to the broker's dispatcher. With ACL on, past the broker's ACL hook:
        the proxy in Local mode calls the broker's processors directly (the gRPC side has
        checked the caller's credentials; these requests carry no remoting signature), while
        the interceptors after it (fault rules) still apply."""
        acl = getattr(broker, "acl", None)
        if acl is None:
            return broker.dispatcher.dispatch(cmd, conn)
        return broker.dispatcher.proceed(cmd, conn, after=acl.intercept)

    def request(self, ctx: ProxyContext, code: int, ext: dict[str, Any], body: bytes = b"",
                oneway: bool = False) -> RemotingCommand:
        """A remoting request as the proxy's ``LocalRemotingCommand`` builds it."""
        return RemotingCommand.request(code, ext, body, oneway=oneway,
                                       language=_language(ctx.language))

    # --- clients -----------------------------------------------------------------------------
    def channel(self, ctx: ProxyContext, broker_name: str) -> GrpcClientChannel:
        """The client's channel to a broker (where the broker registers it and writes to it)."""
        return self.channels.channel(ctx.client_id, broker_name, ctx.remote_address)

    @staticmethod
    def conn(ctx: ProxyContext) -> InvocationChannel:
        """The connection a request dispatched for this call comes from."""
        return InvocationChannel(ctx.remote_address, ctx.client_id, ctx.call)

    def register_producer(self, ctx: ProxyContext, topic: str, telemetry: Any = None) -> None:
        """``ClientActivity.registerProducer`` in every broker (the topic is the group)."""
        for name, broker in self.brokers().items():
            channel = self.channel(ctx, name)
            if telemetry is not None:
                channel.telemetry = telemetry
            info = ClientChannelInfo(channel, ctx.client_id, _language(ctx.language), V5_0_0)
            broker.ctx.producer_manager.register_producer(topic, info)

    def register_consumer(self, ctx: ProxyContext, group: str, client_type: int,
                          entries: Any, update_subscription: bool,
                          telemetry: Any = None) -> None:
        """``ClientActivity.registerConsumer`` in every broker."""
        subs = [self.subscription(e.topic.name, e.expression) for e in entries]
        types = messages.protocol().enum_descriptor("ClientType").values_by_number
        consume_type = ("CONSUME_PASSIVELY" if types[client_type].name == "PUSH_CONSUMER"
                        else "CONSUME_ACTIVELY")
        for name, broker in self.brokers().items():
            channel = self.channel(ctx, name)
            if telemetry is not None:
                channel.telemetry = telemetry
            info = ClientChannelInfo(channel, ctx.client_id, _language(ctx.language), V5_0_0)
            manager = broker.ctx.consumer_manager
            # A heartbeat (update_subscription False) carries the same subscriptions as the
            # settings; it refreshes the channel without announcing a change.
            manager.register_consumer(group, info, consume_type, "CLUSTERING",
                                      "CONSUME_FROM_LAST_OFFSET", subs,
                                      notify=update_subscription)

    @staticmethod
    def subscription(topic: str, expression: Any) -> SubscriptionData:
        """``buildSubscriptionData``: a FilterExpression as SubscriptionData."""
        kind = "SQL92" if expression.type == _filter_type("SQL") else "TAG"
        try:
            return SubscriptionData.build(topic, expression.expression, kind)
        except Exception as exc:
            raise ProxyError(Code.ILLEGAL_FILTER_EXPRESSION,
                             "expression format is not correct") from exc


def _filter_type(name: str) -> int:
    return messages.protocol().enum_descriptor("FilterType").values_by_name[name].number


def _language(language: str) -> str:
    """The SDKs send ``x-mq-language`` as a LanguageCode name (PYTHON, NODE_JS, JAVA, ...)."""
    return (language or "JAVA").upper()
