"""What the remoting benchmarks share: the SEND_MESSAGE_V2 and PULL_MESSAGE frames a Java client
writes, the checks of the answers, the bare-Twisted floor server and a broker on a temporary
store (``bench/send_pull.py`` for throughput, ``bench/send_pull_cpu.py`` for in-process CPU).
"""

from __future__ import annotations

import os
import socket
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from rocketmq_emu.broker.commitlog.record import I32 as RECORD_SIZE  # noqa: E402
from rocketmq_emu.broker.remoting.command import FRAME_LENGTH  # noqa: E402

TOPIC = "BenchTopic"
GROUP = "bench_group"
BODY_SIZE = 1024
#: The one account of the ``--acl`` runs: PUB on :data:`TOPIC`, no white address (so every
#: request's signature is checked), not admin.
ACL_ACCESS_KEY = "benchAccessKey"
ACL_SECRET_KEY = "benchSecretKey1234"
#: The header-length bits of the word after a frame's length (RemotingCommand.markProtocolType).
_HEADER_LENGTH_MASK = 0xFFFFFF


# --- frames (built with the project's codec so the broker sees what a client sends) ----------


def send_frame(queue_id: int = 0, credentials: tuple[str, str] | None = None) -> bytes:
    """One SEND_MESSAGE_V2 frame as a Java 4.9 producer writes it (abbreviated header a..n).

    With ``credentials`` (access key, secret key) the frame is signed as ``AclClientRPCHook``
    signs it (AccessKey and Signature in the extFields, over the other values and the body):
    the signature stays valid however often the same bytes are sent.
    """
    from rocketmq_emu.broker.acl.signer import sign_request
    from rocketmq_emu.broker.message import properties_to_string
    from rocketmq_emu.broker.remoting.command import RemotingCommand

    props = properties_to_string(
        {"UNIQ_KEY": "7F0000010000" + "0" * 20, "WAIT": "true", "TAGS": "TagA", "KEYS": "k"}
    )
    ext = {
        "a": "bench_producer", "b": TOPIC, "c": "TBW102", "d": "4", "e": str(queue_id),
        "f": "0", "g": str(int(time.time() * 1000)), "h": "0", "i": props, "j": "0",
        "k": "false", "m": "false",
    }
    body = b"x" * BODY_SIZE
    if credentials is not None:
        sign_request(ext, body, *credentials)
    cmd = RemotingCommand.request(310, ext, body, opaque=1)
    return cmd.encode()


def pull_frame(offset: int, queue_id: int = 0, max_nums: int = 32) -> bytes:
    """One PULL_MESSAGE frame: subscription flag (4) only, so no heartbeat is needed and a
    pull that finds nothing is answered at once (no suspend flag)."""
    from rocketmq_emu.broker.remoting.command import RemotingCommand

    ext = {
        "consumerGroup": GROUP, "topic": TOPIC, "queueId": str(queue_id),
        "queueOffset": str(offset), "maxMsgNums": str(max_nums), "sysFlag": "4",
        "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
        "subVersion": "0", "expressionType": "TAG",
    }
    return RemotingCommand.request(11, ext, opaque=1).encode()


# --- answers ------------------------------------------------------------------------------


def response_ok(buf: bytearray, start: int) -> bool:
    """True if the JSON response header at ``start`` (after the length) says code 0.

    A cheap byte search, no JSON parse: the broker writes compact JSON.
    """
    hlen = FRAME_LENGTH.unpack_from(buf, start)[0] & _HEADER_LENGTH_MASK
    return buf.find(b'"code":0,', start + 4, start + 4 + hlen) >= 0


def count_records(buf: bytearray, start: int, end: int) -> int:
    """Number of commitlog records in the pull response body of the frame at ``start``."""
    hlen = FRAME_LENGTH.unpack_from(buf, start)[0] & _HEADER_LENGTH_MASK
    pos = start + 4 + hlen
    n = 0
    while pos + 4 <= end:
        size = RECORD_SIZE.unpack_from(buf, pos)[0]
        if size <= 0:
            break
        pos += size
        n += 1
    return n


# --- the floor server -------------------------------------------------------------------------


def floor_factory():
    """A bare Twisted server: bytearray framing, one fixed response per frame, one write per read."""
    from twisted.internet.protocol import Factory, Protocol

    from rocketmq_emu.broker.remoting.command import RemotingCommand

    response = RemotingCommand.request(310, opaque=1).response(
        0, None, {"msgId": "7F00000100002A9F0000000000000000", "queueId": "0",
                  "queueOffset": "0", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    ).encode()

    class Floor(Protocol):
        def connectionMade(self) -> None:
            self.buf = bytearray()
            # The same socket option the broker's connections set (Netty's TCP_NODELAY); the
            # --cpu run's StringTransport has no socket.
            set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
            if set_no_delay is not None:
                set_no_delay(True)

        def dataReceived(self, data: bytes) -> None:
            buf = self.buf
            buf += data
            pos = 0
            n = 0
            blen = len(buf)
            while blen - pos >= 4:
                flen = FRAME_LENGTH.unpack_from(buf, pos)[0]
                if blen - pos - 4 < flen:
                    break
                pos += 4 + flen
                n += 1
            if pos:
                del buf[:pos]
                self.transport.write(response * n)

    return Factory.forProtocol(Floor)


# --- the broker -------------------------------------------------------------------------------


def write_acl_home(home: str) -> str:
    """Write ``home/conf/plain_acl.yml`` with the bench account (PUB on the bench topic only,
    no global or account white list); returns ``home`` (the broker's ``rocketmqHome``)."""
    conf = os.path.join(home, "conf")
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "plain_acl.yml"), "w", encoding="utf-8") as f:
        f.write(
            "globalWhiteRemoteAddresses: []\n"
            "accounts:\n"
            f"  - accessKey: {ACL_ACCESS_KEY}\n"
            f"    secretKey: {ACL_SECRET_KEY}\n"
            "    admin: false\n"
            "    defaultTopicPerm: DENY\n"
            "    defaultGroupPerm: DENY\n"
            "    topicPerms:\n"
            f"      - {TOPIC}=PUB\n"
        )
    return home


def start_broker(reactor, store_dir: str, acl_home: str | None = None, business_clock=None,
                 **settings):
    """A BrokerController (not yet started) with a temporary store and no name server; with
    ``acl_home`` it has ``aclEnable=true`` and that ``rocketmqHome``; ``business_clock`` is the
    controller's (default: the reactor); ``settings`` are further BrokerConfig fields
    (``tls=None``: no TLS switch). Returns it and its port."""
    from rocketmq_emu.broker.config import BrokerConfig
    from rocketmq_emu.broker.controller import BrokerController

    cfg = BrokerConfig(
        store_path_root_dir=store_dir,
        listen_port=free_port(),
        namesrv_addr=None,
        mapped_file_size_commit_log=256 * 1024 * 1024,
        acl_enable=acl_home is not None,
        rocketmq_home=acl_home,
        **settings,
    )
    controller = BrokerController(cfg, reactor=reactor, host="127.0.0.1",
                                  business_clock=business_clock)
    return controller, cfg.listen_port


def fed_cpu(proto, data: bytes, profiler=None) -> float:
    """Process CPU seconds of ``proto.dataReceived(data)``, profiled by ``profiler`` (a
    ``cProfile.Profile``) when given: the one timed step of the in-process benches."""
    if profiler is not None:
        profiler.enable()
    t0 = time.process_time()
    proto.dataReceived(data)
    cpu = time.process_time() - t0
    if profiler is not None:
        profiler.disable()
    return cpu


def free_port() -> int:
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port - 2))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port")


def check_acl_refuses(controller) -> None:
    """Raise unless the broker with ACL on refuses an unsigned and a wrongly signed send with
    the AclException answer, and accepts a correctly signed one (over a ``StringTransport``):
    proof that the ``--acl`` runs measure a broker that checks signatures."""
    from twisted.internet.testing import StringTransport

    if controller.acl is None:
        raise RuntimeError("the ACL broker has no ACL service")
    proto = controller.factory.buildProtocol(("127.0.0.1", 1))
    transport = StringTransport()
    proto.makeConnection(transport)
    cases = [
        ("unsigned", send_frame(0), False),
        ("wrong secret", send_frame(0, (ACL_ACCESS_KEY, "not-the-secret")), False),
        ("signed", send_frame(0, (ACL_ACCESS_KEY, ACL_SECRET_KEY)), True),
    ]
    for name, frame, allowed in cases:
        proto.dataReceived(frame)
        out = bytearray(transport.value())
        transport.clear()
        if len(out) < 8 or response_ok(out, 4) != allowed or \
                (not allowed and b"AclException" not in out):
            raise RuntimeError(f"ACL broker answered the {name} send unexpectedly: "
                               f"{bytes(out[:300])!r}")
    proto.connectionLost(None)
