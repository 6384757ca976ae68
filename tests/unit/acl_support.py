"""Shared helpers of the tests/unit/test_acl_*.py files."""

from __future__ import annotations

import re
from pathlib import Path

from rocketmq_emu.broker.acl.config import AclConfig, merge, parse_acl_text
from rocketmq_emu.broker.remoting.command import RemotingCommand

CAPTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "captures"

#: The layout of RocketMQ 4.9.8's distribution/conf/plain_acl.yml (restated, not copied).
SAMPLE = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
"""


def config(text: str = SAMPLE, path: str = "/conf/plain_acl.yml") -> AclConfig:
    """The merged config of one YAML text."""
    data = parse_acl_text(text, path)
    return merge([data] if data is not None else [])


def captured_frames(name: str = "rocketmq-py044.txt") -> list[RemotingCommand]:
    """The complete (not cut at 512 bytes) frames of a capture file, decoded."""
    lines = (CAPTURES / name).read_text().splitlines()
    frames = []
    for i, line in enumerate(lines):
        m = re.match(r"--- .* total_len=(\d+) ", line)
        if not m or not lines[i + 1].startswith("hex: "):
            continue
        hexed = lines[i + 1][5:]
        if hexed.endswith("..."):
            continue
        raw = bytes.fromhex(hexed)
        if len(raw) == int(m.group(1)) + 4:
            frames.append(RemotingCommand.decode(raw))
    return frames
