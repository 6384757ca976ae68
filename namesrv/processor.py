"""Name-server request handlers (Java ``namesrv/processor/DefaultRequestProcessor``, 4.9.8).

``NamesrvProcessor(route_info, kv_config).register(dispatcher)`` wires every handled code into a
:class:`~broker.remoting.protocol.RequestDispatcher`. Handlers are synchronous: state in, one
response out. Bad headers raise HeaderError, which the dispatcher turns into SYSTEM_ERROR.
"""

from __future__ import annotations

import logging
import weakref
import zlib
from typing import Any

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.remoting.codes import RequestCode, ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RegisterTopicRequestHeader,
    UnregisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketmq_emu.broker.remoting.protocol import RequestDispatcher
from rocketmq_emu.namesrv.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from rocketmq_emu.namesrv.register_body import RegisterBodyError, decode_register_body
from rocketmq_emu.namesrv.route_info import QueueData, RouteInfoManager, topic_list_body

log = logging.getLogger(__name__)

#: FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL), appended by Java to TOPIC_NOT_EXIST remarks.
APPLY_TOPIC_SUGGESTION = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


def java_crc32(data: bytes) -> int:
    """``UtilAll.crc32``: CRC-32 with the sign bit cleared."""
    return zlib.crc32(data) & 0x7FFFFFFF


class NamesrvProcessor:
    """Handlers for the name-server request codes."""

    def __init__(
        self,
        route_info: RouteInfoManager,
        kv_config: KVConfigManager,
        config: dict[str, str] | None = None,
        order_message_enable: bool = False,
    ) -> None:
        self.route_info = route_info
        self.kv_config = kv_config
        self.config = config if config is not None else {}
        self.order_message_enable = order_message_enable
        self._watched: weakref.WeakSet[Any] = weakref.WeakSet()

    def register(self, dispatcher: RequestDispatcher) -> None:
        """Register every name-server handler on ``dispatcher``."""
        rc = RequestCode
        for code, handler in (
            (rc.PUT_KV_CONFIG, self.put_kv_config),
            (rc.GET_KV_CONFIG, self.get_kv_config),
            (rc.DELETE_KV_CONFIG, self.delete_kv_config),
            (rc.GET_KVLIST_BY_NAMESPACE, self.get_kv_list_by_namespace),
            (rc.REGISTER_BROKER, self.register_broker),
            (rc.UNREGISTER_BROKER, self.unregister_broker),
            (rc.QUERY_DATA_VERSION, self.query_data_version),
            (rc.GET_ROUTEINFO_BY_TOPIC, self.get_route_info_by_topic),
            (rc.GET_BROKER_CLUSTER_INFO, self.get_broker_cluster_info),
            (rc.WIPE_WRITE_PERM_OF_BROKER, self.wipe_write_perm_of_broker),
            (rc.ADD_WRITE_PERM_OF_BROKER, self.add_write_perm_of_broker),
            (rc.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, self.get_all_topic_list),
            (rc.DELETE_TOPIC_IN_NAMESRV, self.delete_topic_in_namesrv),
            (rc.REGISTER_TOPIC_IN_NAMESRV, self.register_topic_in_namesrv),
            (rc.GET_TOPICS_BY_CLUSTER, self.get_topics_by_cluster),
            (rc.GET_SYSTEM_TOPIC_LIST_FROM_NS, self.get_system_topic_list),
            (rc.GET_UNIT_TOPIC_LIST, self.get_unit_topic_list),
            (rc.GET_HAS_UNIT_SUB_TOPIC_LIST, self.get_has_unit_sub_topic_list),
            (rc.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, self.get_has_unit_sub_ununit_topic_list),
            (rc.UPDATE_NAMESRV_CONFIG, self.update_namesrv_config),
            (rc.GET_NAMESRV_CONFIG, self.get_namesrv_config),
        ):
            dispatcher.register(code, handler)

    # --- KV config ---------------------------------------------------------------------------
    def put_kv_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = PutKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        self.kv_config.put(h.namespace, h.key, h.value)
        return cmd.response(ResponseCode.SUCCESS)

    def get_kv_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = GetKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        value = self.kv_config.get(h.namespace, h.key)
        if value is None:
            return cmd.response(
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {h.namespace} Key: {h.key}",
            )
        return cmd.response(
            ResponseCode.SUCCESS, ext_fields=GetKVConfigResponseHeader(value).to_ext_fields()
        )

    def delete_kv_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = DeleteKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        self.kv_config.delete(h.namespace, h.key)
        return cmd.response(ResponseCode.SUCCESS)

    def get_kv_list_by_namespace(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = GetKVListByNamespaceRequestHeader.from_ext_fields(cmd.ext_fields)
        body = self.kv_config.kv_list_body(h.namespace)
        if body is None:
            return cmd.response(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace}"
            )
        return cmd.response(ResponseCode.SUCCESS, body=body)

    # --- brokers -----------------------------------------------------------------------------
    def register_broker(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = RegisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        if h.body_crc32 and cmd.body and java_crc32(cmd.body) != h.body_crc32:
            log.warning(
                "receive registerBroker request, crc32 not match, from %s",
                getattr(conn, "peer_addr", "?"),
            )
            return cmd.response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        try:
            body = decode_register_body(cmd.body, h.compressed)
        except RegisterBodyError as exc:
            return cmd.response(ResponseCode.SYSTEM_ERROR, str(exc))
        result = self.route_info.register_broker(
            h.cluster_name,
            h.broker_addr,
            h.broker_name,
            h.broker_id,
            h.ha_server_addr,
            body["topicConfigSerializeWrapper"],
            body.get("filterServerList"),
            conn,
        )
        if conn is not None and hasattr(conn, "add_close_callback") and conn not in self._watched:
            # BrokerHousekeepingService: a closed broker channel drops the broker at once.
            self._watched.add(conn)
            conn.add_close_callback(self.route_info.on_channel_destroy)
        kv = self.kv_config.kv_list(NAMESPACE_ORDER_TOPIC_CONFIG) or {}
        return cmd.response(
            ResponseCode.SUCCESS,
            ext_fields=RegisterBrokerResponseHeader(
                result.ha_server_addr, result.master_addr
            ).to_ext_fields(),
            body=jsonutil.dumps({"table": kv}),
        )

    def unregister_broker(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = UnregisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        self.route_info.unregister_broker(h.cluster_name, h.broker_addr, h.broker_name, h.broker_id)
        return cmd.response(ResponseCode.SUCCESS)

    def query_data_version(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = QueryDataVersionRequestHeader.from_ext_fields(cmd.ext_fields)
        data_version = jsonutil.loads(cmd.body) if cmd.body else {}
        changed = self.route_info.is_broker_topic_config_changed(h.broker_addr, data_version)
        if not changed:
            self.route_info.update_broker_info_update_timestamp(h.broker_addr)
        ns_version = self.route_info.query_broker_data_version(h.broker_addr)
        return cmd.response(
            ResponseCode.SUCCESS,
            ext_fields=QueryDataVersionResponseHeader(changed).to_ext_fields(),
            body=jsonutil.dumps(ns_version) if ns_version is not None else b"",
        )

    def wipe_write_perm_of_broker(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = WipeWritePermOfBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        count = self.route_info.operate_write_perm_of_broker(h.broker_name, add=False)
        log.info("wipe write perm of broker[%s], %d topics", h.broker_name, count)
        return cmd.response(
            ResponseCode.SUCCESS,
            ext_fields=WipeWritePermOfBrokerResponseHeader(count).to_ext_fields(),
        )

    def add_write_perm_of_broker(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = AddWritePermOfBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        count = self.route_info.operate_write_perm_of_broker(h.broker_name, add=True)
        log.info("add write perm of broker[%s], %d topics", h.broker_name, count)
        return cmd.response(
            ResponseCode.SUCCESS,
            ext_fields=AddWritePermOfBrokerResponseHeader(count).to_ext_fields(),
        )

    # --- routes and topics -------------------------------------------------------------------
    def get_route_info_by_topic(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = GetRouteInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        route = self.route_info.pickup_topic_route_data(h.topic)
        if route is None:
            return cmd.response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {h.topic}"
                + APPLY_TOPIC_SUGGESTION,
            )
        if self.order_message_enable:
            conf = self.kv_config.get(NAMESPACE_ORDER_TOPIC_CONFIG, h.topic)
            if conf is not None:
                route = {
                    "brokerDatas": route["brokerDatas"],
                    "filterServerTable": route["filterServerTable"],
                    "orderTopicConf": conf,
                    "queueDatas": route["queueDatas"],
                }
        # Always the standard form (quoted keys), which every client parses (protocol.md §3.9).
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(route))

    def get_broker_cluster_info(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        return cmd.response(
            ResponseCode.SUCCESS, body=jsonutil.dumps(self.route_info.cluster_info())
        )

    def get_all_topic_list(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        return cmd.response(
            ResponseCode.SUCCESS, body=topic_list_body(self.route_info.all_topics())
        )

    def delete_topic_in_namesrv(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = DeleteTopicRequestHeader.from_ext_fields(cmd.ext_fields)
        self.route_info.delete_topic(h.topic)
        return cmd.response(ResponseCode.SUCCESS)

    def register_topic_in_namesrv(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = RegisterTopicRequestHeader.from_ext_fields(cmd.ext_fields)
        route = jsonutil.loads(cmd.body) if cmd.body else {}
        queue_datas = [QueueData.from_json(q) for q in (route.get("queueDatas") or [])]
        if queue_datas:
            self.route_info.register_topic(h.topic, queue_datas)
        return cmd.response(ResponseCode.SUCCESS)

    def get_topics_by_cluster(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        h = GetTopicsByClusterRequestHeader.from_ext_fields(cmd.ext_fields)
        topics = self.route_info.topics_by_cluster(h.cluster)
        return cmd.response(ResponseCode.SUCCESS, body=topic_list_body(topics))

    def get_system_topic_list(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        body = self.route_info.system_topic_list()
        return cmd.response(ResponseCode.SUCCESS, body=jsonutil.dumps(body))

    def get_unit_topic_list(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        topics = self.route_info.unit_topics(want_unit=True, want_unit_sub=None)
        return cmd.response(ResponseCode.SUCCESS, body=topic_list_body(topics))

    def get_has_unit_sub_topic_list(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        topics = self.route_info.unit_topics(want_unit=None, want_unit_sub=True)
        return cmd.response(ResponseCode.SUCCESS, body=topic_list_body(topics))

    def get_has_unit_sub_ununit_topic_list(
        self, cmd: RemotingCommand, conn: Any
    ) -> RemotingCommand:
        topics = self.route_info.unit_topics(want_unit=False, want_unit_sub=True)
        return cmd.response(ResponseCode.SUCCESS, body=topic_list_body(topics))

    # --- name-server config (Java properties text) -------------------------------------------
    def update_namesrv_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        try:
            text = cmd.body.decode("utf-8")
        except UnicodeDecodeError:
            return cmd.response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "!")) or "=" not in line:
                continue
            key, _, value = line.partition("=")
            self.config[key.strip()] = value.strip()
        return cmd.response(ResponseCode.SUCCESS)

    def get_namesrv_config(self, cmd: RemotingCommand, conn: Any) -> RemotingCommand:
        text = "".join(f"{k}={v}\n" for k, v in sorted(self.config.items()))
        return cmd.response(ResponseCode.SUCCESS, body=text.encode("utf-8"))
