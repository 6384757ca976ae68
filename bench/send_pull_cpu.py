"""In-process CPU per message of the broker's request paths, without sockets: the frames a client
writes fed into the protocol over a ``StringTransport`` (``bench/send_pull.py --cpu``)."""

from __future__ import annotations

import gc
import tempfile
import time

from remoting_bench import (
    ACL_ACCESS_KEY,
    ACL_SECRET_KEY,
    FRAME_LENGTH,
    check_acl_refuses,
    count_records,
    fed_cpu,
    floor_factory,
    pull_frame,
    response_ok,
    send_frame,
    start_broker,
    write_acl_home,
)


def _send_cost(proto, batch: bytes, count: int, between=None, warmup: int = 100) -> float:
    """CPU µs per frame of feeding ``batch`` (32 frames) into ``proto`` ``count // 32`` times
    after ``warmup`` unmeasured feeds; raises unless every answer was a success. ``between()``
    runs unmeasured after each feed (the store's warmer, as in ``cpu_costs``)."""
    from twisted.internet.testing import StringTransport

    transport = StringTransport()
    proto.makeConnection(transport)
    for _ in range(warmup):  # topic creation, first file pages, caches
        proto.dataReceived(batch)
        _check_all_ok(transport.value())
        transport.clear()
        if between is not None:
            between()
    cpu = 0.0
    for _ in range(count // 32):
        cpu += fed_cpu(proto, batch)
        _check_all_ok(transport.value())
        transport.clear()
        if between is not None:
            between()
    return cpu / (count // 32 * 32) * 1e6


def _check_all_ok(out: bytes) -> None:
    """Raise unless every response frame in ``out`` says code 0."""
    buf = bytearray(out)
    pos = 0
    while pos + 4 <= len(buf):
        if not response_ok(buf, pos + 4):
            raise RuntimeError(f"send answered with an error: {bytes(buf[pos:pos + 300])!r}")
        pos += 4 + FRAME_LENGTH.unpack_from(buf, pos)[0]


def _alternate(controllers, batches, labels, n: int, repeat: int,
               profile: str | None = None) -> tuple[float, float]:
    """Send ``batches[i]`` into a fresh protocol of ``controllers[i]`` (two started brokers),
    alternating ``repeat`` rounds; the lowest CPU µs/msg of each. With ``profile``, a cProfile
    of the second side's rounds is written there. The stores' queued index entries are built
    between rounds."""
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    protos = [c.factory.buildProtocol(("127.0.0.1", 1)) for c in controllers]
    best = [float("inf"), float("inf")]
    for i in range(repeat):
        line = f"round {i + 1}:"
        for side in (0, 1):
            if side and profiler is not None:
                profiler.enable()
            cost = _send_cost(protos[side], batches[side], n, controllers[side].store.warmer.tick)
            if side and profiler is not None:
                profiler.disable()
            line += f"   {labels[side]} {cost:6.2f} us/msg"
            best[side] = min(best[side], cost)
        print(line)
        for controller in controllers:
            controller.store.build_queued_index()
    if profiler is not None:
        profiler.dump_stats(profile)
        print(f"profile of the {labels[1]} rounds written to {profile}")
    return best[0], best[1]


def acl_cpu_costs(n: int = 20000, repeat: int = 3, profile: str | None = None) -> int:
    """``--acl --cpu``: CPU µs per SEND_MESSAGE_V2 of a broker without ACL and of one with
    ``aclEnable=true`` fed signed frames (32 per read), alternating ``repeat`` times, lowest of
    each; then the check alone (the ACL interceptor on the decoded request)."""
    import shutil

    from twisted.internet import reactor

    from rocketmq_emu.broker.remoting.command import RemotingCommand

    credentials = (ACL_ACCESS_KEY, ACL_SECRET_KEY)
    plain_batch = b"".join(send_frame(q) for q in range(4)) * 8
    signed_frames = [send_frame(q, credentials) for q in range(4)]
    signed_batch = b"".join(signed_frames) * 8
    dirs = [tempfile.mkdtemp(prefix="rmq-emu-bench-"), tempfile.mkdtemp(prefix="rmq-emu-bench-acl-")]
    home = write_acl_home(tempfile.mkdtemp(prefix="rmq-emu-bench-home-"))
    controllers = []
    try:
        plain, _ = start_broker(reactor, dirs[0])
        acl, _ = start_broker(reactor, dirs[1], acl_home=home)
        for controller in (plain, acl):
            controller.store.load()
            controller.store.start()
            controllers.append(controller)
        check_acl_refuses(acl)
        gc.freeze()  # as `rmq-emu up` / `broker` do once started (broker/cli.py)
        off, on = _alternate(controllers, (plain_batch, signed_batch), ("ACL off", "ACL on (signed)"),
                             n, repeat, profile)
        acl_proto = acl.factory.buildProtocol(("127.0.0.1", 1))
        # The check alone: the interceptor the broker runs before the send processor.
        cmds = [RemotingCommand.decode(f) for f in signed_frames]
        intercept = acl.acl.intercept
        for cmd in cmds:
            if intercept(cmd, acl_proto) is not None:
                raise RuntimeError("the ACL check refused a signed frame")
        rounds = n // 4
        t0 = time.process_time()
        for _ in range(rounds):
            for cmd in cmds:
                intercept(cmd, acl_proto)
        alone = (time.process_time() - t0) / (rounds * len(cmds)) * 1e6
        for controller in controllers:
            controller.store.shutdown()
    finally:
        for path in (*dirs, home):
            shutil.rmtree(path, ignore_errors=True)
    print(f"broker send CPU, ACL off          {off:6.2f} us/msg   (lowest of {repeat}; 1 KiB "
          f"bodies, 32 per read)")
    print(f"broker send CPU, ACL on (signed)  {on:6.2f} us/msg")
    print(f"CPU ratio ACL on/off              {on / off:6.3f}   (the check: {on - off:+.2f} "
          f"us/msg, {(on - off) / off * 100:+.0f} % of a send)"
          + ("; the ACL-on rounds ran under cProfile, not comparable" if profile else ""))
    print(f"  the ACL interceptor alone       {alone:6.2f} us/msg   (parse, signature, "
          f"permissions)")
    return 0


def control_cpu_costs(n: int = 20000, repeat: int = 3, profile: str | None = None) -> int:
    """``--control --cpu``: CPU µs per SEND_MESSAGE_V2 of a bare broker and of one wired as
    ``rmq-emu up --control-port`` wires it (a controllable clock for business time, a
    ``FaultInjector`` with no rules attached to its dispatcher, recording the request log),
    alternating ``repeat`` times, lowest of each."""
    import shutil

    from twisted.internet import reactor

    from rocketmq_emu.client.clock import ControllableClock
    from rocketmq_emu.client.faults import FaultInjector

    batch = b"".join(send_frame(q) for q in range(4)) * 8
    dirs = [tempfile.mkdtemp(prefix="rmq-emu-bench-"), tempfile.mkdtemp(prefix="rmq-emu-bench-ctl-")]
    clock = ControllableClock("follow", reactor)
    faults = FaultInjector(reactor, clock=clock)
    controllers = []
    try:
        bare, _ = start_broker(reactor, dirs[0])
        controlled, _ = start_broker(reactor, dirs[1], business_clock=clock)
        faults.attach("broker", controlled.dispatcher, controlled.config.broker_name)
        for controller in (bare, controlled):
            controller.store.load()
            controller.store.start()
            controllers.append(controller)
        gc.freeze()  # as `rmq-emu up` / `broker` do once started (broker/cli.py)
        off, on = _alternate(controllers, (batch, batch), ("bare", "controlled"), n, repeat,
                             profile)
        recorded = len(faults.records())
        for controller in controllers:
            controller.store.shutdown()
    finally:
        clock.stop()
        for path in dirs:
            shutil.rmtree(path, ignore_errors=True)
    print(f"broker send CPU, bare broker             {off:6.2f} us/msg   (lowest of {repeat}; "
          f"1 KiB bodies, 32 per read)")
    print(f"broker send CPU, as up --control-port    {on:6.2f} us/msg   ({recorded} requests in "
          f"the request log)")
    print(f"the control wiring costs                 {on - off:+6.2f} us/msg "
          f"({(on - off) / off * 100:+.0f} % of a send)"
          + ("; the controlled rounds ran under cProfile, not comparable" if profile else ""))
    return 0


def cpu_costs(n: int = 20000, profile: str | None = None) -> int:
    """CPU µs per SEND_MESSAGE_V2 through the floor protocol and through the broker, then per
    message of PULL_MESSAGE over what the sends stored (:func:`pull_cost`), in-process."""
    from twisted.internet import reactor
    from twisted.internet.testing import StringTransport

    batch = b"".join(send_frame(q) for q in range(4)) * 8  # 32 frames per read

    def cost(proto, count: int, between=None) -> float:
        """CPU µs per frame; ``between()`` runs unmeasured after each read (the store's
        warmer: in the broker it pre-touches the commitlog from its own thread every 50 ms,
        broker/commitlog/warm.py, which this loop without a running reactor stands in for)."""
        transport = StringTransport()
        proto.makeConnection(transport)
        for _ in range(100):  # warm up: topic creation, first file pages, caches
            proto.dataReceived(batch)
            transport.clear()
            if between is not None:
                between()
        cpu = 0.0
        for _ in range(count // 32):
            cpu += fed_cpu(proto, batch)
            transport.clear()
            if between is not None:
                between()
        return cpu / (count // 32 * 32) * 1e6

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
        broker = cost(proto, n, controller.store.warmer.tick)
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
    for _ in range(3):  # passes over the whole stored range: ~70,000 messages
        for data in reads:
            cpu += fed_cpu(proto, data, profiler)
            msgs += check_pull_responses(transport.value(), per_read)
            transport.clear()
    if profiler is not None:
        path = profile + ".pull"
        profiler.dump_stats(path)
        print(f"pull profile written to {path}")
    return cpu / msgs * 1e6, msgs
