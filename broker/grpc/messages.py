"""The ``apache.rocketmq.v2`` message classes and service methods, built at run time from the
committed descriptor set (``proto/rocketmq_v2.binpb``, made by ``proto/build.py`` from this
project's ``.proto`` files) in a private descriptor pool.

Why a private pool: the RocketMQ 5 Python SDK registers the same ``apache.rocketmq.v2`` names in
protobuf's default pool, and a user's test process holds both the emulator's fixture and the SDK.
Nothing here touches ``descriptor_pool.Default()``, so either side can load first.

Only this module imports protobuf, and nothing on the broker's start path imports this module.

Usage::

    from rocketmq_emu.broker.grpc import messages
    req = messages.SendMessageRequest()          # a message class, by its short name
    code = messages.Code.Value("OK")             # an enum (an EnumTypeWrapper)
    for m in messages.service_methods():         # what a gRPC server registers
        m.path, m.kind, m.request, m.response
"""

from __future__ import annotations

import functools
from collections.abc import Mapping as _Mapping
from dataclasses import dataclass as _dataclass
from dataclasses import field as _field
from pathlib import Path as _Path
from types import MappingProxyType as _MappingProxyType
from typing import Any as _Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor as _Descriptor
from google.protobuf.descriptor import EnumDescriptor as _EnumDescriptor
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper as _EnumTypeWrapper
from google.protobuf.message import Message as _PbMessage

#: Module-level names are underscored or upper-case so that none shadows a protocol name
#: (``messages.Message`` is RocketMQ's Message, not protobuf's base class).

#: The protobuf package of the RocketMQ 5 gRPC protocol.
PACKAGE = "apache.rocketmq.v2"
#: The service RocketMQ 5 clients call (17 RPCs).
MESSAGING_SERVICE = f"{PACKAGE}.MessagingService"
#: The proxy's admin service (one RPC).
ADMIN_SERVICE = f"{PACKAGE}.Admin"
#: The serialized FileDescriptorSet, with google/protobuf/{timestamp,duration}.proto included.
DESCRIPTOR_SET = _Path(__file__).resolve().parent / "proto" / "rocketmq_v2.binpb"

#: gRPC's name for each (client streaming, server streaming) pair, as in grpc's
#: ``<kind>_rpc_method_handler`` functions.
_KINDS = {
    (False, False): "unary_unary",
    (False, True): "unary_stream",
    (True, False): "stream_unary",
    (True, True): "stream_stream",
}


@_dataclass(frozen=True)
class Method:
    """One RPC of a service: its HTTP/2 path, its message classes and its streaming kind."""

    service: str
    name: str
    request: type[_PbMessage]
    response: type[_PbMessage]
    client_streaming: bool
    server_streaming: bool
    #: The gRPC method path, e.g. ``/apache.rocketmq.v2.MessagingService/SendMessage``.
    path: str = _field(init=False, compare=False)
    #: ``unary_unary``, ``unary_stream``, ``stream_unary`` or ``stream_stream``.
    kind: str = _field(init=False, compare=False)

    def __post_init__(self) -> None:
        # Plain attributes, not properties: the transport reads both several times a call.
        object.__setattr__(self, "path", f"/{self.service}/{self.name}")
        object.__setattr__(self, "kind", _KINDS[(self.client_streaming, self.server_streaming)])


class Protocol:
    """The loaded protocol: a private pool and the classes built from it."""

    def __init__(self, serialized_set: bytes) -> None:
        self.pool = descriptor_pool.DescriptorPool()
        files = descriptor_pb2.FileDescriptorSet.FromString(serialized_set).file
        for file_proto in files:  # protoc lists dependencies before their dependents
            self.pool.Add(file_proto)
        messages: dict[str, type[_PbMessage]] = {}
        enums: dict[str, _EnumTypeWrapper] = {}
        for file_proto in files:
            if file_proto.package != PACKAGE:
                continue
            fd = self.pool.FindFileByName(file_proto.name)
            for desc in fd.message_types_by_name.values():
                self._collect(desc, messages, enums)
            for enum_desc in fd.enum_types_by_name.values():
                enums[self._short(enum_desc.full_name)] = _EnumTypeWrapper(enum_desc)
        self.messages: _Mapping[str, type[_PbMessage]] = _MappingProxyType(messages)
        self.enums: _Mapping[str, _EnumTypeWrapper] = _MappingProxyType(enums)

    @staticmethod
    def _short(full_name: str) -> str:
        """``apache.rocketmq.v2.Foo.Bar`` -> ``Foo.Bar``."""
        return full_name[len(PACKAGE) + 1:]

    def _collect(self, desc: _Descriptor, messages: dict[str, type[_PbMessage]],
                 enums: dict[str, _EnumTypeWrapper]) -> None:
        """Build the class of ``desc`` and of its nested types (map entries left out)."""
        if desc.GetOptions().map_entry:
            return
        messages[self._short(desc.full_name)] = message_factory.GetMessageClass(desc)
        for nested in desc.nested_types:
            self._collect(nested, messages, enums)
        for enum_desc in desc.enum_types:
            enums[self._short(enum_desc.full_name)] = _EnumTypeWrapper(enum_desc)

    def enum_descriptor(self, name: str) -> _EnumDescriptor:
        """The descriptor of an enum by its name inside the package (``Code``)."""
        return self.pool.FindEnumTypeByName(f"{PACKAGE}.{name}")

    def methods(self, service: str = MESSAGING_SERVICE) -> tuple[Method, ...]:
        """The RPCs of ``service`` (a full name) in declaration order."""
        sd = self.pool.FindServiceByName(service)
        return tuple(
            Method(service=sd.full_name, name=md.name,
                   request=message_factory.GetMessageClass(md.input_type),
                   response=message_factory.GetMessageClass(md.output_type),
                   client_streaming=md.client_streaming, server_streaming=md.server_streaming)
            for md in sd.methods)


@functools.cache
def protocol() -> Protocol:
    """The protocol loaded once from the committed descriptor set."""
    return Protocol(DESCRIPTOR_SET.read_bytes())


def message_class(name: str) -> type[_PbMessage]:
    """A message class by its name inside the package, e.g. ``SendMessageRequest``."""
    return protocol().messages[name]


def service_methods(service: str = MESSAGING_SERVICE) -> tuple[Method, ...]:
    """The methods of a service (default: MessagingService), in declaration order."""
    return protocol().methods(service)


def __getattr__(name: str) -> _Any:
    """``messages.SendMessageRequest`` or ``messages.Code``: a class or an enum wrapper."""
    proto = protocol()
    if name in proto.messages:
        return proto.messages[name]
    if name in proto.enums:
        return proto.enums[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's own names plus the package's top-level messages and enums."""
    proto = protocol()
    return sorted({*globals(), *(n for n in (*proto.messages, *proto.enums) if "." not in n)})
