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
#: The header-length bits of the word after a frame's length (RemotingCommand.markProtocolType).
_HEADER_LENGTH_MASK = 0xFFFFFF


# --- frames (built with the project's codec so the broker sees what a client sends) ----------


def send_frame(queue_id: int = 0) -> bytes:
    """One SEND_MESSAGE_V2 frame as a Java 4.9 producer writes it (abbreviated header a..n)."""
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
    cmd = RemotingCommand.request(310, ext, b"x" * BODY_SIZE, opaque=1)
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


def start_broker(reactor, store_dir: str):
    """Start a BrokerController with a temporary store and no name server; returns it and its port."""
    from rocketmq_emu.broker.config import BrokerConfig
    from rocketmq_emu.broker.controller import BrokerController

    cfg = BrokerConfig(
        store_path_root_dir=store_dir,
        listen_port=free_port(),
        namesrv_addr=None,
        mapped_file_size_commit_log=256 * 1024 * 1024,
    )
    controller = BrokerController(cfg, reactor=reactor, host="127.0.0.1")
    return controller, cfg.listen_port


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
