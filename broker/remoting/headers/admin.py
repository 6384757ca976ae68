"""Headers of client management, admin and name-server requests (docs/protocol.md §3.4, §3.7)."""

from __future__ import annotations

from rocketmq_emu.broker.remoting.headers.base import (
    BOOL,
    INT,
    LONG,
    CommandHeader,
    header,
    opt,
    req,
)


@header
class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35)."""

    client_id: str | None = req("clientID")
    producer_group: str | None = opt("producerGroup")
    consumer_group: str | None = opt("consumerGroup")


@header
class GetConsumerListByGroupRequestHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP (38)."""

    consumer_group: str | None = req("consumerGroup")


@header
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), broker -> consumer, oneway."""

    consumer_group: str | None = req("consumerGroup")


@header
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO (307), broker -> consumer."""

    consumer_group: str | None = req("consumerGroup")
    client_id: str | None = req("clientId")
    jstack_enable: bool = opt("jstackEnable", BOOL, False)


@header
class ResetOffsetRequestHeader(CommandHeader):
    """RESET_CONSUMER_CLIENT_OFFSET (220) / INVOKE_BROKER_TO_RESET_OFFSET (222)."""

    topic: str | None = req("topic")
    group: str | None = req("group")
    timestamp: int | None = req("timestamp", LONG)
    is_force: bool | None = req("isForce", BOOL)


@header
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17)."""

    topic: str | None = req("topic")
    default_topic: str | None = req("defaultTopic")
    read_queue_nums: int | None = req("readQueueNums", INT)
    write_queue_nums: int | None = req("writeQueueNums", INT)
    perm: int | None = req("perm", INT)
    topic_filter_type: str | None = req("topicFilterType")
    topic_sys_flag: int | None = opt("topicSysFlag", INT)
    order: bool = req("order", BOOL)
    #: RocketMQ 5: the attribute modification, ``+message.type=FIFO,-k`` (``AttributeParser``).
    attributes: str | None = opt("attributes")


@header
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215) / DELETE_TOPIC_IN_NAMESRV (216)."""

    topic: str | None = req("topic")


@header
class RegisterTopicRequestHeader(CommandHeader):
    """REGISTER_TOPIC_IN_NAMESRV (217, 5.x): body is a TopicRouteData."""

    topic: str | None = req("topic")


@header
class GetTopicStatsInfoRequestHeader(CommandHeader):
    """GET_TOPIC_STATS_INFO (202) / QUERY_TOPIC_CONSUME_BY_WHO (300)."""

    topic: str | None = req("topic")


@header
class GetConsumeStatsRequestHeader(CommandHeader):
    """GET_CONSUME_STATS (208)."""

    consumer_group: str | None = req("consumerGroup")
    topic: str | None = opt("topic")


@header
class GetConsumerConnectionListRequestHeader(CommandHeader):
    """GET_CONSUMER_CONNECTION_LIST (203)."""

    consumer_group: str | None = req("consumerGroup")


@header
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """DELETE_SUBSCRIPTIONGROUP (207): 4.9.8 names the offsets flag ``removeOffset``, 5.x
    ``cleanOffset``."""

    group_name: str | None = req("groupName")
    clean_offset: bool = opt("cleanOffset", BOOL, False)
    remove_offset: bool = opt("removeOffset", BOOL, False)


@header
class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105)."""

    topic: str | None = req("topic")
    accept_standard_json_only: bool | None = opt("acceptStandardJsonOnly", BOOL)


@header
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103); body RegisterBrokerBody JSON (custom-compressed if compressed)."""

    broker_name: str | None = req("brokerName")
    broker_addr: str | None = req("brokerAddr")
    cluster_name: str | None = req("clusterName")
    ha_server_addr: str | None = req("haServerAddr")
    broker_id: int | None = req("brokerId", LONG)
    heartbeat_timeout_millis: int | None = opt("heartbeatTimeoutMillis", LONG)
    enable_acting_master: bool | None = opt("enableActingMaster", BOOL)
    compressed: bool = opt("compressed", BOOL, False)
    body_crc32: int = opt("bodyCrc32", INT, 0)


@header
class RegisterBrokerResponseHeader(CommandHeader):
    """REGISTER_BROKER response: HA address and master address for slaves."""

    ha_server_addr: str | None = opt("haServerAddr")
    master_addr: str | None = opt("masterAddr")


@header
class UnregisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104)."""

    broker_name: str | None = req("brokerName")
    broker_addr: str | None = req("brokerAddr")
    cluster_name: str | None = req("clusterName")
    broker_id: int | None = req("brokerId", LONG)


@header
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322); body DataVersion JSON."""

    broker_name: str | None = req("brokerName")
    broker_addr: str | None = req("brokerAddr")
    cluster_name: str | None = req("clusterName")
    broker_id: int | None = req("brokerId", LONG)


@header
class QueryDataVersionResponseHeader(CommandHeader):
    """Whether the broker's topic config changed since the name server last saw it."""

    changed: bool | None = req("changed", BOOL)


@header
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER (205)."""

    broker_name: str | None = req("brokerName")


@header
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    """Number of topics whose write permission was removed."""

    wipe_topic_count: int | None = req("wipeTopicCount", INT)


@header
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER (327)."""

    broker_name: str | None = req("brokerName")


@header
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    """Number of topics whose write permission was added back."""

    add_topic_count: int | None = req("addTopicCount", INT)


@header
class PutKVConfigRequestHeader(CommandHeader):
    """PUT_KV_CONFIG (100)."""

    namespace: str | None = req("namespace")
    key: str | None = req("key")
    value: str | None = req("value")


@header
class GetKVConfigRequestHeader(CommandHeader):
    """GET_KV_CONFIG (101)."""

    namespace: str | None = req("namespace")
    key: str | None = req("key")


@header
class GetKVConfigResponseHeader(CommandHeader):
    """GET_KV_CONFIG answer."""

    value: str | None = opt("value")


@header
class DeleteKVConfigRequestHeader(CommandHeader):
    """DELETE_KV_CONFIG (102)."""

    namespace: str | None = req("namespace")
    key: str | None = req("key")


@header
class GetKVListByNamespaceRequestHeader(CommandHeader):
    """GET_KVLIST_BY_NAMESPACE (219)."""

    namespace: str | None = req("namespace")


@header
class GetTopicsByClusterRequestHeader(CommandHeader):
    """GET_TOPICS_BY_CLUSTER (224)."""

    cluster: str | None = req("cluster")


@header
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    """QUERY_CONSUME_TIME_SPAN (303)."""

    topic: str | None = req("topic")
    group: str | None = req("group")


@header
class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET (308); ``filterGroups`` is comma-separated."""

    filter_groups: str | None = opt("filterGroups")
    compare_group: str | None = req("compareGroup")
    topic: str | None = req("topic")


@header
class CloneGroupOffsetRequestHeader(CommandHeader):
    """CLONE_GROUP_OFFSET (314); a blank ``topic`` means every topic of ``srcGroup``."""

    src_group: str | None = req("srcGroup")
    dest_group: str | None = req("destGroup")
    topic: str | None = opt("topic")
    offline: bool = opt("offline", BOOL, False)


@header
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA (315): a BrokerStatsManager item (``TOPIC_PUT_NUMS`` + topic...)."""

    stats_name: str | None = req("statsName")
    stats_key: str | None = req("statsKey")


@header
class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS (317); the Java field is named ``isOrder`` on the wire."""

    is_order: bool | None = req("isOrder", BOOL)


@header
class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (321); Java primitives, so a missing number reads as 0."""

    topic: str | None = opt("topic")
    queue_id: int = opt("queueId", INT, 0)
    index: int = opt("index", LONG, 0)
    count: int = opt("count", INT, 0)
    consumer_group: str | None = opt("consumerGroup")


@header
class GetAllProducerInfoRequestHeader(CommandHeader):
    """GET_ALL_PRODUCER_INFO (328): no fields."""


__all__ = sorted(
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, CommandHeader) and value is not CommandHeader
)
