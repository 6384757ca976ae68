"""The RocketMQ 5 gRPC protocol's classes: built from the committed descriptor set, kept out of
protobuf's default pool, and the MessagingService's 17 RPCs (broker/grpc/messages.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from google.protobuf import descriptor_pb2
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.grpc import messages

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "broker" / "grpc" / "proto" / "build.py"

#: The MessagingService RPCs in declaration order, with gRPC's streaming kind.
EXPECTED_RPCS = {
    "QueryRoute": "unary_unary",
    "Heartbeat": "unary_unary",
    "SendMessage": "unary_unary",
    "QueryAssignment": "unary_unary",
    "ReceiveMessage": "unary_stream",
    "AckMessage": "unary_unary",
    "ForwardMessageToDeadLetterQueue": "unary_unary",
    "PullMessage": "unary_stream",
    "UpdateOffset": "unary_unary",
    "GetOffset": "unary_unary",
    "QueryOffset": "unary_unary",
    "EndTransaction": "unary_unary",
    "Telemetry": "stream_stream",
    "NotifyClientTermination": "unary_unary",
    "ChangeInvisibleDuration": "unary_unary",
    "RecallMessage": "unary_unary",
    "SyncLiteSubscription": "unary_unary",
}


def _build_module():
    """broker/grpc/proto/build.py, loaded from its path (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location("rmq_emu_proto_build", BUILD_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(data: bytes) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    return {f.name: f for f in descriptor_pb2.FileDescriptorSet.FromString(data).file}


def test_committed_descriptor_set_is_what_protoc_makes_today(tmp_path: Path) -> None:
    """grpc_tools.protoc on the committed .proto files reproduces the committed descriptor set."""
    build = _build_module()
    fresh = _files(build.build(tmp_path / "fresh.binpb").read_bytes())
    committed = _files(messages.DESCRIPTOR_SET.read_bytes())
    assert list(fresh) == list(committed)
    # The protocol's own files exactly; the bundled well-known types may vary by protoc version.
    for name in build.PROTO_FILES:
        assert fresh[name] == committed[name], name


def test_loading_leaves_the_default_pool_without_rocketmq_symbols() -> None:
    """A fresh process that loads and uses every class finds no apache.rocketmq.v2 name in Default()."""
    code = """
import json
from google.protobuf import descriptor_pool
from rocketmq_emu.broker.grpc import messages
proto = messages.protocol()
for cls in proto.messages.values():
    cls.FromString(cls().SerializeToString())
found = []
for name in (*proto.messages, *proto.enums, "MessagingService", "Admin"):
    try:
        descriptor_pool.Default().FindFileContainingSymbol("apache.rocketmq.v2." + name)
        found.append(name)
    except KeyError:
        pass
print(json.dumps({"loaded": len(proto.messages), "found": found}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["loaded"] > 60 and result["found"] == []


def test_messaging_service_lists_its_17_rpcs_with_their_streaming_kinds() -> None:
    """MessagingService has the 17 RPCs, paths and streaming kinds RocketMQ 5 clients call."""
    methods = messages.service_methods()
    assert {m.name: m.kind for m in methods} == EXPECTED_RPCS
    assert [m.name for m in methods] == list(EXPECTED_RPCS)
    send = methods[2]
    assert send.path == "/apache.rocketmq.v2.MessagingService/SendMessage"
    assert (send.request, send.response) == (messages.SendMessageRequest,
                                             messages.SendMessageResponse)


def test_start_path_does_not_import_protobuf() -> None:
    """`up`'s modules leave protobuf (and the gRPC messages) unloaded."""
    code = ("from rocketmq_emu.broker import cli\ncli.build_parser(['up'])\n"
            "import rocketmq_emu.broker.controller, rocketmq_emu.namesrv.server\n"
            "import rocketmq_emu.broker.grpc\nimport sys\nprint(' '.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = out.stdout.split()
    assert [m for m in loaded if m.startswith(("google", "rocketmq_emu.broker.grpc."))] == []


_text = st.text(max_size=40)


@given(topic=_text, tag=_text, keys=st.lists(_text, max_size=3), body=st.binary(max_size=200),
       props=st.dictionaries(_text, _text, max_size=4), seconds=st.integers(0, 2**40))
def test_send_message_request_round_trips(topic: str, tag: str, keys: list[str], body: bytes,
                                          props: dict[str, str], seconds: int) -> None:
    """A SendMessageRequest parses back from its bytes to an equal message."""
    msg = messages.Message(body=body, user_properties=props)
    msg.topic.name = topic
    sysprops = msg.system_properties
    sysprops.tag = tag
    sysprops.keys.extend(keys)
    sysprops.message_type = messages.MessageType.Value("NORMAL")
    sysprops.born_timestamp.seconds = seconds
    request = messages.SendMessageRequest(messages=[msg])
    again = messages.SendMessageRequest.FromString(request.SerializeToString())
    assert again == request
    assert again.messages[0].system_properties.HasField("tag")


def test_optional_fields_keep_their_presence() -> None:
    """proto3 `optional` fields report presence (an unset tag differs from an empty one)."""
    props = messages.SystemProperties()
    assert not props.HasField("tag")
    props.tag = ""
    assert props.HasField("tag")
    assert messages.Code.Value("OK") == 20000 and messages.Code.Name(40402) == "TOPIC_NOT_FOUND"
