"""In-process server CPU per message of a gRPC ``SendMessage`` beside a remoting
SEND_MESSAGE_V2, without sockets (``bench/grpc.py --cpu``).

The gRPC bytes are a real grpcio client's: one connection of the bench's gRPC send load
(``--grpc-window`` calls in flight) is recorded through a small proxy, read by read, then fed
again, read by read, into a fresh connection of the broker's gRPC server over a
``StringTransport`` (``--repeat`` times). The remoting side is ``bench/send_pull.py --cpu``'s: a
Java producer's SEND_MESSAGE_V2 frames, 32 per read, into the broker's remoting protocol. Only
``dataReceived`` is timed (``time.process_time``); every answer is checked outside the timing.

Printed, lowest of the rounds (they alternate gRPC / remoting):

* gRPC SendMessage and remoting SEND_MESSAGE_V2 CPU µs per message, and their ratio (the aim
  of issue #26: at most 3x);
* the gRPC side in absolute terms: gRPC minus remoting, and the gRPC server with the broker's
  request dispatch replaced by the answer of one real dispatch (HTTP/2, HPACK, protobuf, the
  conversion to the remoting request and back, the call's objects: what the gRPC layer costs
  whatever the send path costs).
"""

from __future__ import annotations

import gc
import socket
import threading
from typing import Any

from remoting_bench import fed_cpu, send_frame

_HEADER_SIZE = 9
_DATA, _HEADERS = 0, 1
_END_STREAM = 0x1


# --- recording a grpcio client's connection ---------------------------------------------------


class RecordingProxy:
    """A TCP proxy for one connection to ``upstream`` that keeps what the client wrote, read by
    read (threads: it runs beside the reactor, whose loop serves the upstream)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.reads: list[bytes] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        client, _ = self._listener.accept()
        self._listener.close()
        server = socket.create_connection(self.upstream)
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        back = threading.Thread(target=self._pump, args=(server, client, None), daemon=True)
        back.start()
        self._pump(client, server, self.reads)
        back.join()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, record: list[bytes] | None) -> None:
        try:
            while True:
                data = src.recv(1 << 20)
                if not data:
                    break
                if record is not None:
                    record.append(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def join(self, timeout: float) -> None:
        """Wait until both directions are closed."""
        self._thread.join(timeout)


# --- checking what the server wrote ------------------------------------------------------------


def _frames(data: bytes) -> Any:
    at, end = 0, len(data)
    while end - at >= _HEADER_SIZE:
        length = int.from_bytes(data[at:at + 3], "big")
        kind, flags = data[at + 3], data[at + 4]
        sid = int.from_bytes(data[at + 5:at + 9], "big") & 0x7FFFFFFF
        yield kind, flags, sid, data[at + _HEADER_SIZE:at + _HEADER_SIZE + length]
        at += _HEADER_SIZE + length


def count_requests(reads: list[bytes]) -> int:
    """The calls (client HEADERS opening a stream) in a recorded connection."""
    data = b"".join(reads)
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    seen = set()
    for kind, _flags, sid, _payload in _frames(data[len(preface):]):
        if kind == _HEADERS and sid & 1:
            seen.add(sid)
    return len(seen)


class ResponseCheck:
    """Reads the server's output as it comes (frames may straddle writes) and counts the
    SendMessageResponses whose status is OK; anything else is an error."""

    def __init__(self, response_class: Any, ok: int) -> None:
        self.response_class = response_class
        self.ok_code = ok
        self.pending = b""
        self.bodies: dict[int, bytearray] = {}
        self.ok = 0
        self.errors: list[str] = []

    def feed(self, out: bytes) -> None:
        """Take the bytes the server wrote since the last call."""
        data = self.pending + out
        used = 0
        for kind, flags, sid, payload in _frames(data):
            if len(payload) < int.from_bytes(data[used:used + 3], "big"):
                break  # the rest of this frame comes with a later write
            used += _HEADER_SIZE + len(payload)
            if kind == _DATA and payload:
                self.bodies.setdefault(sid, bytearray()).extend(payload)
            elif kind == _HEADERS and flags & _END_STREAM:  # the call's Trailers
                body = self.bodies.pop(sid, None)
                if body is None:
                    self.errors.append(f"stream {sid}: answered without a message")
                    continue
                resp = self.response_class.FromString(bytes(body[5:]))
                if resp.status.code == self.ok_code:
                    self.ok += 1
                else:
                    self.errors.append(f"stream {sid}: {resp.status.code} {resp.status.message}")
        self.pending = data[used:]


# --- the measurements ---------------------------------------------------------------------------


def grpc_cost(factory: Any, reads: list[bytes], calls: int, response_class: Any,
              ok: int, profiler: Any = None) -> float:
    """CPU µs per call of feeding the recorded ``reads`` into a fresh connection of
    ``factory``; raises unless all ``calls`` were answered OK."""
    from twisted.internet.address import IPv4Address
    from twisted.internet.testing import StringTransport

    transport = StringTransport(peerAddress=IPv4Address("TCP", "127.0.0.1", 40000))
    proto = factory.buildProtocol(("127.0.0.1", 40000))
    proto.makeConnection(transport)
    check = ResponseCheck(response_class, ok)
    cpu = 0.0
    for data in reads:
        cpu += fed_cpu(proto, data, profiler)
        while proto.h2.input_pending:
            # The rest of a read packed with calls waits for the next reactor turn (issue 27);
            # no reactor runs here, so hand it over as that turn would, timed too.
            cpu += fed_cpu(proto, b"", profiler)
        check.feed(transport.value())
        transport.clear()
    proto.connectionLost(None)
    if check.errors or check.ok != calls:
        raise RuntimeError(f"{check.ok} of {calls} SendMessage answered OK; "
                           f"{len(check.errors)} errors, first: {check.errors[:1]}")
    return cpu / calls * 1e6


def remoting_cost(factory: Any, count: int) -> float:
    """CPU µs per SEND_MESSAGE_V2 of 32-frame reads (``bench/send_pull.py --cpu``'s load, each
    answer checked), without warm-up: the rounds alternate with the gRPC ones."""
    from send_pull_cpu import _send_cost

    batch = b"".join(send_frame(q) for q in range(4)) * 8
    proto = factory.buildProtocol(("127.0.0.1", 1))
    cost = _send_cost(proto, batch, count, warmup=0)
    proto.connectionLost(None)
    return cost


def measure(cluster: Any, reads: list[bytes], repeat: int, profile: str | None) -> dict:
    """The rounds (in the reactor thread, the cluster started and the reads recorded)."""
    from rocketmq_emu.broker.grpc import messages

    response_class = messages.message_class("SendMessageResponse")
    ok = messages.Code.Value("OK")
    calls = count_requests(reads)
    endpoint = cluster.grpc
    grpc_factory = endpoint.factory
    remoting_factory = cluster.broker.factory
    state = endpoint.service.state
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    gc.freeze()  # as `rmq-emu up` / `broker` do once started (broker/cli.py)
    grpc_us: list[float] = []
    remoting_us: list[float] = []
    alone_us: list[float] = []
    for round_no in range(repeat):
        cluster.broker.store.build_queued_index()
        order = ("grpc", "remoting") if round_no % 2 == 0 else ("remoting", "grpc")
        for side in order:
            if side == "grpc":
                grpc_us.append(grpc_cost(grpc_factory, reads, calls, response_class, ok,
                                         profiler))
            else:
                remoting_us.append(remoting_cost(remoting_factory, calls))
        # The gRPC layer alone: the broker's dispatch answered with one real answer.
        real = state._dispatch
        sample: list[Any] = []

        def canned(broker: Any, cmd: Any, conn: Any, real: Any = real, sample: list = sample
                   ) -> Any:
            if not sample:
                sample.append(real(broker, cmd, conn))
            return sample[0]

        state._dispatch = canned
        try:
            alone_us.append(grpc_cost(grpc_factory, reads, calls, response_class, ok))
        finally:
            del state._dispatch
        print(f"round {round_no + 1}/{repeat}: gRPC SendMessage {grpc_us[-1]:6.2f} us/msg   "
              f"remoting SEND_MESSAGE_V2 {remoting_us[-1]:6.2f} us/msg   "
              f"gRPC with the dispatch stubbed {alone_us[-1]:6.2f} us/msg", flush=True)
    if profiler is not None:
        path = profile + ".grpc-send-cpu"
        profiler.dump_stats(path)
        print(f"profile of the gRPC rounds written to {path} (python -m pstats {path})")
    g, r, a = min(grpc_us), min(remoting_us), min(alone_us)
    print(f"\n{calls} gRPC calls per round ({len(reads)} reads of a grpcio client, recorded); "
          f"lowest of {repeat} rounds")
    print(f"gRPC SendMessage server CPU          {g:7.2f} us/msg")
    print(f"remoting SEND_MESSAGE_V2 server CPU  {r:7.2f} us/msg   (32 per read)")
    print(f"server CPU ratio gRPC/remoting, send {g / r:7.2f}x       (aim <= 3x)")
    print(f"gRPC side: gRPC - remoting           {g - r:7.2f} us/msg")
    print(f"gRPC layer alone (dispatch stubbed)  {a:7.2f} us/msg   (HTTP/2, HPACK, protobuf, "
          f"conversion, call objects)")
    return {"grpc": g, "remoting": r, "alone": a, "calls": calls}
