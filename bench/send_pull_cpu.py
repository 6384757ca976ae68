"""In-process CPU per message of the broker's request paths, without sockets: the frames a client
writes fed into the protocol over a ``StringTransport`` (``bench/send_pull.py --cpu``)."""

from __future__ import annotations

import gc
import tempfile
import time

from remoting_bench import (
    FRAME_LENGTH,
    count_records,
    floor_factory,
    pull_frame,
    response_ok,
    send_frame,
    start_broker,
)


def cpu_costs(n: int = 20000, profile: str | None = None) -> int:
    """CPU µs per SEND_MESSAGE_V2 through the floor protocol and through the broker, then per
    message of PULL_MESSAGE over what the sends stored (:func:`pull_cost`), in-process."""
    from twisted.internet import reactor
    from twisted.internet.testing import StringTransport

    batch = b"".join(send_frame(q) for q in range(4)) * 8  # 32 frames per read

    def cost(proto, count: int) -> float:
        transport = StringTransport()
        proto.makeConnection(transport)
        for _ in range(100):  # warm up: topic creation, first file pages, caches
            proto.dataReceived(batch)
            transport.clear()
        t0 = time.process_time()
        for _ in range(count // 32):
            proto.dataReceived(batch)
            transport.clear()
        return (time.process_time() - t0) / (count // 32 * 32) * 1e6

    floor = cost(floor_factory().buildProtocol(("127.0.0.1", 1)), n * 5)
    store_dir = tempfile.mkdtemp(prefix="rmq-emu-bench-")
    try:
        controller, _ = start_broker(reactor, store_dir)
        controller.store.load()
        controller.store.start()
        gc.freeze()  # as `rmq-emu up` / `broker` do once started (broker/cli.py)
        proto = controller.factory.buildProtocol(("127.0.0.1", 1))
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        broker = cost(proto, n)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)
            print(f"profile written to {profile}")
        store = controller.store
        t0 = time.process_time()
        queued = store.build_queued_index()
        index = (time.process_time() - t0) / max(queued, 1) * 1e6
        # The same requests with the store's put replaced by the answer of one real put: what
        # the protocol and the send processor cost on their own.
        real_put = store.put_message
        sample: list = []

        def stub_put(record):
            if not sample:
                sample.append(real_put(record))
            return sample[0]

        store.put_message = stub_put
        alone = cost(proto, n)
        store.put_message = real_put
        pull, pulled = pull_cost(proto, (100 + n // 32) * 8, profile)
        controller.store.shutdown()
    finally:
        import shutil

        shutil.rmtree(store_dir, ignore_errors=True)
    print(f"broker send CPU  {broker:8.2f} us/msg   (target <= 10; 1 KiB bodies, 32 per read)")
    print(f"  remoting + send path with the put stubbed {alone:6.2f} us/msg; the store "
          f"{broker - alone:.2f}")
    print(f"  index entries of those sends, built after {queued} puts: {index:.2f} us/msg")
    print(f"broker pull CPU  {pull:8.2f} us/msg   (target <= 8; 32-message pulls, {pulled} "
          f"messages pulled)")
    print(f"floor path CPU   {floor:8.2f} us/msg   (reference: a bare Twisted server answering "
          f"each frame with a fixed response)")
    return 0


def check_pull_responses(out: bytes, expect_frames: int) -> int:
    """Messages in the PULL_MESSAGE responses ``out`` (frames back to back); raises unless there
    are ``expect_frames`` answers, each code 0 (FOUND) with 32 commitlog records."""
    buf = bytearray(out)
    pos = frames = msgs = 0
    while pos + 4 <= len(buf):
        flen = FRAME_LENGTH.unpack_from(buf, pos)[0]
        if not response_ok(buf, pos + 4):
            raise RuntimeError(f"pull answered with an error: {bytes(buf[pos:pos + 300])!r}")
        count = count_records(buf, pos + 4, pos + 4 + flen)
        if count != 32:
            raise RuntimeError(f"pull answer holds {count} records, not 32")
        msgs += count
        frames += 1
        pos += 4 + flen
    if frames != expect_frames or pos != len(buf):
        raise RuntimeError(f"{frames} pull answers ({len(buf) - pos} bytes left), "
                           f"expected {expect_frames}")
    return msgs


def pull_cost(proto, stored_per_queue: int, profile: str | None = None) -> tuple[float, int]:
    """CPU µs per MESSAGE of PULL_MESSAGE (32 per pull) over what the send phase stored in
    queues 0..3: successive offsets of every queue, 8 frames per read, every answer checked
    (FOUND, 32 records) outside the timed calls. Returns (µs/msg, messages pulled)."""
    from twisted.internet.testing import StringTransport

    per_read = 8
    pulls = [pull_frame(o, q) for o in range(0, stored_per_queue - 31, 32) for q in range(4)]
    reads = [b"".join(pulls[i:i + per_read]) for i in range(0, len(pulls) - per_read + 1, per_read)]
    transport = StringTransport()
    proto.makeConnection(transport)
    for data in reads[:20]:  # warm up
        proto.dataReceived(data)
        check_pull_responses(transport.value(), per_read)
        transport.clear()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    cpu = 0.0
    msgs = 0
    clock = time.process_time
    for _ in range(3):  # passes over the whole stored range: ~70,000 messages
        for data in reads:
            if profiler is not None:
                profiler.enable()
            t0 = clock()
            proto.dataReceived(data)
            cpu += clock() - t0
            if profiler is not None:
                profiler.disable()
            msgs += check_pull_responses(transport.value(), per_read)
            transport.clear()
    if profiler is not None:
        path = profile + ".pull"
        profiler.dump_stats(path)
        print(f"pull profile written to {path}")
    return cpu / msgs * 1e6, msgs
