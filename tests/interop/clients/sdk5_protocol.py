"""Run in a subprocess by test_sdk5_protocol.py: loads the emulator's ``apache.rocketmq.v2``
classes and the real rocketmq-python-client 5.x SDK in ONE process (in the order given), compares
their descriptors and round-trips messages between them, and prints one JSON object.

Usage: ``python sdk5_protocol.py SDK_DIR (ours-first|sdk-first)``. SDK_DIR (a ``pip install
--target`` of the SDK) goes at the end of ``sys.path``: this environment's protobuf is used.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def load_sdk() -> dict[str, Any]:
    """Import the SDK as a user does (``import rocketmq``) and return its generated modules."""
    import rocketmq  # noqa: F401  (registers apache.rocketmq.v2 in the default pool)
    from rocketmq.grpc_protocol import admin_pb2, definition_pb2, service_pb2
    return {"definition": definition_pb2, "service": service_pb2, "admin": admin_pb2}


def load_ours():
    """The emulator's protocol (a private descriptor pool)."""
    from rocketmq_emu.broker.grpc import messages
    messages.protocol()
    return messages


def descriptor_mismatches(sdk: dict[str, Any], ours) -> list[str]:
    """Names of the messages, enums and services whose descriptors differ between the two."""
    from google.protobuf import descriptor_pb2

    def strip_json_names(p) -> None:
        # protoc records json_name in a descriptor set, the SDK's embedded files do not; the
        # wire does not use it (JSON mapping only), so it is left out of the comparison.
        for f in p.field:
            f.ClearField("json_name")
        for nested in p.nested_type:
            strip_json_names(nested)

    def proto_of(desc, kind):
        p = kind()
        desc.CopyToProto(p)
        if kind is descriptor_pb2.DescriptorProto:
            strip_json_names(p)
        return p

    bad = []
    for module in sdk.values():
        fd = module.DESCRIPTOR
        for name, desc in fd.message_types_by_name.items():
            mine = ours.protocol().pool.FindMessageTypeByName(desc.full_name)
            if proto_of(desc, descriptor_pb2.DescriptorProto) != proto_of(
                    mine, descriptor_pb2.DescriptorProto):
                bad.append(name)
        for name, desc in fd.enum_types_by_name.items():
            mine = ours.protocol().pool.FindEnumTypeByName(desc.full_name)
            if proto_of(desc, descriptor_pb2.EnumDescriptorProto) != proto_of(
                    mine, descriptor_pb2.EnumDescriptorProto):
                bad.append(name)
        for name, desc in fd.services_by_name.items():
            mine = ours.protocol().pool.FindServiceByName(desc.full_name)
            a, b = (proto_of(d, descriptor_pb2.ServiceDescriptorProto) for d in (desc, mine))
            for m in (*a.method, *b.method):
                m.ClearField("options")
            if a != b:
                bad.append(name)
    return sorted(bad)


def fill_send_request(ns) -> Any:
    """A SendMessageRequest with two messages using most fields, built from module/namespace ``ns``."""
    req = ns.SendMessageRequest()
    for i, body in enumerate((b"order-1 \x00\xff", b"")):
        msg = req.messages.add()
        msg.topic.name = "Orders"
        msg.topic.resource_namespace = "ns-1"
        msg.user_properties["k"] = "v\u00e9"
        msg.user_properties[f"n{i}"] = str(i)
        sp = msg.system_properties
        sp.tag = "TagA" if i == 0 else ""
        sp.keys.extend(["key-1", "key-2"])
        sp.message_id = f"01ABCDEF{i:024d}"
        sp.body_digest.type = 2  # MD5
        sp.body_digest.checksum = "0" * 32
        sp.body_encoding = 1  # IDENTITY
        sp.message_type = 2 if i == 0 else 1  # FIFO / NORMAL
        sp.born_timestamp.seconds = 1_700_000_000 + i
        sp.born_timestamp.nanos = 123_000_000
        sp.born_host = "10.0.0.1"
        sp.delivery_timestamp.seconds = 1_700_000_100
        sp.message_group = "group-a"
        sp.trace_context = "00-trace"
        sp.invisible_duration.seconds = 30
        msg.body = body
    return req


def fill_receive_responses(ns) -> list[Any]:
    """The three shapes of a ReceiveMessageResponse (oneof content): status, message, timestamp."""
    status = ns.ReceiveMessageResponse()
    status.status.code = 40402  # TOPIC_NOT_FOUND
    status.status.message = "no route"
    message = ns.ReceiveMessageResponse()
    m = message.message
    m.topic.name = "Orders"
    m.body = b"payload"
    m.system_properties.receipt_handle = "handle-1"
    m.system_properties.queue_id = 3
    m.system_properties.queue_offset = 42
    m.system_properties.delivery_attempt = 1
    m.system_properties.store_timestamp.seconds = 1_700_000_000
    m.system_properties.store_host = "127.0.0.1:8081"
    delivery = ns.ReceiveMessageResponse()
    delivery.delivery_timestamp.seconds = 1_700_000_200
    return [status, message, delivery]


def fill_telemetry(ns) -> Any:
    """A TelemetryCommand carrying producer Settings (the oneof command)."""
    cmd = ns.TelemetryCommand()
    cmd.settings.client_type = 1  # PRODUCER
    cmd.settings.request_timeout.seconds = 3
    cmd.settings.publishing.topics.add().name = "Orders"
    cmd.settings.user_agent.language = 6
    cmd.settings.user_agent.version = "5.1.2"
    return cmd


class _SdkNamespace:
    """The SDK's classes looked up by name over its generated modules."""

    def __init__(self, sdk: dict[str, Any]) -> None:
        self._modules = list(sdk.values())

    def __getattr__(self, name: str) -> Any:
        for module in self._modules:
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(name)


def round_trips(sdk: dict[str, Any], ours) -> dict[str, dict[str, bool]]:
    """For each sample: built on one side, parsed on the other; bytes and fields compared."""
    from google.protobuf.json_format import MessageToDict

    theirs = _SdkNamespace(sdk)
    pairs = {
        "SendMessageRequest": (fill_send_request(ours), fill_send_request(theirs)),
        "TelemetryCommand": (fill_telemetry(ours), fill_telemetry(theirs)),
    }
    for i, (a, b) in enumerate(zip(fill_receive_responses(ours), fill_receive_responses(theirs),
                                   strict=True)):
        pairs[f"ReceiveMessageResponse[{i}]"] = (a, b)
    result = {}
    for name, (mine, sdks) in pairs.items():
        ours_cls, sdk_cls = type(mine), type(sdks)
        mine_bytes = mine.SerializeToString(deterministic=True)
        sdk_bytes = sdks.SerializeToString(deterministic=True)
        sdk_parsed = sdk_cls.FromString(mine_bytes)
        ours_parsed = ours_cls.FromString(sdk_bytes)
        result[name] = {
            "same_bytes": mine_bytes == sdk_bytes,
            "ours_to_sdk": MessageToDict(sdk_parsed) == MessageToDict(mine)
            and sdk_parsed == sdks,
            "sdk_to_ours": MessageToDict(ours_parsed) == MessageToDict(sdks)
            and ours_parsed == mine,
            "oneof": [sdk_parsed.WhichOneof(o.name) == mine.WhichOneof(o.name)
                      for o in mine.DESCRIPTOR.oneofs] == [True] * len(mine.DESCRIPTOR.oneofs),
        }
    return result


def main() -> None:
    sys.path.append(sys.argv[1])
    if sys.argv[2] == "ours-first":
        ours = load_ours()
        sdk = load_sdk()
    else:
        sdk = load_sdk()
        ours = load_ours()
    from google.protobuf import descriptor_pool
    default_has_sdk = descriptor_pool.Default().FindMessageTypeByName(
        "apache.rocketmq.v2.SendMessageRequest") is sdk["service"].SendMessageRequest.DESCRIPTOR
    print(json.dumps({
        "default_pool_is_the_sdks": default_has_sdk,
        "classes_distinct": ours.SendMessageRequest is not sdk["service"].SendMessageRequest,
        "mismatches": descriptor_mismatches(sdk, ours),
        "round_trips": round_trips(sdk, ours),
    }))


if __name__ == "__main__":
    main()
