"""ACL 1.0 signatures (broker/acl/signer.py, Java AclUtils.combineRequestContent / AclSigner).

Golden vectors: frames PyPI rocketmq 0.4.4 sent with an empty secret
(shared/fixtures/captures/rocketmq-py044.txt); three are restated here so the test stands alone.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from acl_support import CAPTURES, captured_frames
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker.acl.signer import content_to_sign, sign, sign_request

#: (extFields, body) of three captured frames: UNREGISTER_CLIENT, PULL_MESSAGE, HEART_BEAT.
GOLDEN = [
    ({"AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "jDH8jJErnc7RYhRChYiiOafO530=",
      "clientID": "14503-127.0.0.1@DEFAULT", "consumerGroup": "", "producerGroup": "PID_TEST"},
     b""),
    ({"AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "oosZfcfL5gnMhZyBXDmIxl8rk+Q=",
      "commitOffset": "-1", "consumerGroup": "GID_TEST", "maxMsgNums": "32", "queueId": "0",
      "queueOffset": "0", "subVersion": "1795298412901", "subscription": "TagA",
      "suspendTimeoutMillis": "15000", "sysFlag": "6", "topic": "TopicTest"}, b""),
    ({"AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "/+w/W9Y2T+GGOJxagvUiQMgHbe4="},
     b'{"clientID":"17343-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,'
     b'"consumeType":0,"groupName":"GID_TEST","messageModel":1}]}\n'),
]


@pytest.mark.parametrize("ext, body", GOLDEN)
def test_golden_vectors(ext: dict[str, str], body: bytes) -> None:
    """The captured Signature is Base64(HMAC-SHA1("", sorted values + body))."""
    assert sign(content_to_sign(ext, body), "") == ext["Signature"]


@pytest.mark.skipif(not (CAPTURES / "rocketmq-py044.txt").exists(), reason="no captures")
def test_every_captured_frame_reproduces() -> None:
    """Every complete signed frame of the capture reproduces."""
    frames = captured_frames()
    assert len(frames) > 100
    for cmd in frames:
        assert sign(content_to_sign(cmd.ext_fields, cmd.body), "") == cmd.ext_fields["Signature"]


def test_values_in_sorted_key_order_then_body() -> None:
    """Content is values by sorted key, Signature left out, then the body."""
    assert content_to_sign({"b": "2", "Signature": "x", "a": "1"}, b"B") == b"12B"


def test_java_key_order_is_utf16() -> None:
    """Keys sort by UTF-16 code units, as Java's TreeMap does (U+10000, a surrogate pair, sorts before U+FFFF)."""
    assert content_to_sign({"\U00010000": "a", "\uffff": "b"}, None) == b"ab"


def test_hmac_sha1_base64() -> None:
    """The signature is Base64 of HMAC-SHA1 keyed with the UTF-8 secret."""
    want = base64.b64encode(hmac.new(b"k\xc3\xa9", b"data", hashlib.sha1).digest()).decode()
    assert sign(b"data", "k\u00e9") == want


def test_sign_request_adds_access_key_and_signature() -> None:
    """The client hook adds AccessKey (signed too) and then Signature."""
    ext = sign_request({"topic": "T"}, b"", "ak0000001", "sk0000001")
    assert ext["AccessKey"] == "ak0000001"
    assert ext["Signature"] == sign(b"ak0000001T", "sk0000001")


@given(st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=6), st.binary(max_size=8))
def test_key_order_cache_matches_a_fresh_sort(ext: dict[str, str], body: bytes) -> None:
    """The remembered key order (per key set) gives what sorting afresh in Java order gives,
    whichever order the keys arrive in."""
    for keys in (list(ext), list(reversed(ext))):
        fields = {k: ext[k] for k in keys}
        fresh = sorted((k for k in fields if k != "Signature"),
                       key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        want = "".join(fields[k] for k in fresh).encode("utf-8", "replace") + body
        assert content_to_sign(fields, body) == want
