"""Regenerate ``rocketmq_v2.binpb``, the serialized ``FileDescriptorSet`` of this folder's
``.proto`` files, which ``rocketmq_emu.broker.grpc.messages`` loads into a private descriptor pool.

A development tool: it needs ``grpcio-tools`` (the ``[test]`` extra), the runtime does not. From the
repository root::

    python broker/grpc/proto/build.py

which runs (with the paths made absolute)::

    python -m grpc_tools.protoc -I broker/grpc/proto --include_imports \
        --descriptor_set_out=broker/grpc/proto/rocketmq_v2.binpb \
        apache/rocketmq/v2/definition.proto apache/rocketmq/v2/service.proto \
        apache/rocketmq/v2/admin.proto

``--include_imports`` puts google/protobuf/timestamp.proto and duration.proto into the set, so the
set loads on its own; no source info is kept, so comments do not change the bytes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: This folder: the protoc include root (the .proto files sit under apache/rocketmq/v2/).
PROTO_ROOT = Path(__file__).resolve().parent
#: The committed descriptor set.
DESCRIPTOR_SET = PROTO_ROOT / "rocketmq_v2.binpb"
#: The .proto files, as protoc names them (relative to PROTO_ROOT), in dependency order.
PROTO_FILES = (
    "apache/rocketmq/v2/definition.proto",
    "apache/rocketmq/v2/service.proto",
    "apache/rocketmq/v2/admin.proto",
)


def protoc_command(out: Path, python: str = sys.executable) -> list[str]:
    """The grpc_tools.protoc command line that writes the descriptor set to ``out``."""
    return [python, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}", "--include_imports",
            f"--descriptor_set_out={out}", *PROTO_FILES]


def build(out: Path = DESCRIPTOR_SET) -> Path:
    """Run protoc (grpcio-tools, in a subprocess) and return the path it wrote."""
    proc = subprocess.run(protoc_command(out), capture_output=True, text=True, cwd=PROTO_ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"grpc_tools.protoc failed ({proc.returncode}):\n{proc.stderr}")
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else DESCRIPTOR_SET))
