"""Harness for the schedule tests: the same scenario on the in-memory fake store or on the real
MessageStore (tiny mapped files), a fake clock, and crash simulation (process state dropped,
store reopened from its files without a shutdown)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from schedule_fake_store import FakeStore
from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.schedule import ScheduleConfig, ScheduleServices, transform_for_put
from rocketmq_emu.broker.schedule.timer_service import TimerConfig
from rocketmq_emu.broker.store import MessageStore, PutMessageResult, PutMessageStatus
from rocketmq_emu.broker.store_config import MessageStoreConfig

STORE_KINDS = ["fake", "real"]


def open_real_store(root: str, clock: Clock) -> MessageStore:
    cfg = MessageStoreConfig(
        store_path_root_dir=os.path.join(root, "store"),
        mapped_file_size_commitlog=256 * 1024,
        mapped_file_size_consume_queue=20 * 2048,
        warm_mapped_file_enable=False,
        message_index_enable=False,
    )
    store = MessageStore(cfg, clock)
    assert store.load(), store.load_error
    store.start()
    return store


@dataclass
class Harness:
    kind: str
    root: str
    clock: Clock
    store: Any
    services: ScheduleServices
    timer_kwargs: dict

    # -- scenario helpers --------------------------------------------------------------------
    def now(self) -> int:
        return int(self.clock.seconds() * 1000)

    def send(self, topic="T", queue_id=1, body=b"x", **props) -> Any:
        rec = MessageRecord(topic=topic, body=body, queue_id=queue_id, properties=dict(props),
                            born_timestamp=self.now())
        services = self.services
        return self.store.put_message(transform_for_put(
            rec, self.now(), services.levels,
            timer_max_delay_sec=services.config.timer.max_delay_sec))

    def messages(self, topic: str, queue_id: int | None = None) -> list[MessageRecord]:
        if isinstance(self.store, FakeStore):
            return self.store.messages(topic, queue_id)
        out = []
        for qid in ([queue_id] if queue_id is not None else range(32)):
            lo = self.store.get_min_offset_in_queue(topic, qid)
            hi = self.store.get_max_offset_in_queue(topic, qid)
            for off, _size, _tags in self.store.get_consume_queue_units(topic, qid, lo, hi - lo):
                out.append(self.store.look_message_by_offset(off))
        return out

    def by_key(self, topic: str = "T") -> dict[str, MessageRecord]:
        return {m.properties["UNIQ_KEY"]: m for m in self.messages(topic)}

    def tags_codes(self, topic: str, queue_id: int) -> list[int]:
        lo = self.store.get_min_offset_in_queue(topic, queue_id)
        return [t for _o, _s, t in self.store.get_consume_queue_units(topic, queue_id, lo, 1000)]

    def fail_puts(self, n: int) -> None:
        """Make the next ``n`` puts answer SERVICE_NOT_AVAILABLE."""
        store = self.store
        if isinstance(store, FakeStore):
            store.fail_puts = n
            return
        real = type(store).put_message
        left = [n]

        def put_message(record):
            if left[0] > 0:
                left[0] -= 1
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
            return real(store, record)

        store.put_message = put_message

    def run_until(self, ms: int, step_ms: int | None = None, jump: bool = False) -> None:
        """Advance like a real reactor, stopping at every pending call (and every step_ms);
        ``jump`` advances in one go (pending calls then run late, at ``ms``)."""
        clock = self.clock
        if jump:
            clock.advance(max(ms - self.now(), 0) / 1000)
            return
        target = ms / 1000
        while self.now() < ms:
            nxt = min([c.getTime() for c in clock.getDelayedCalls()] + [target])
            if step_ms is not None:
                nxt = min(nxt, clock.seconds() + step_ms / 1000)
            clock.advance(max(nxt - clock.seconds(), 0.0001))


def boot(tmp_path, kind: str = "fake", at_ms: int = 1_700_000_000_000, store=None,
         **timer) -> Harness:
    """Start store (unless given) and services at ``at_ms`` on a fresh Clock."""
    clock = Clock()
    clock.advance(at_ms / 1000)
    root = str(tmp_path)
    if store is None:
        store = FakeStore(clock) if kind == "fake" else open_real_store(root, clock)
    else:
        store.clock = clock
    sched_root = root if kind == "fake" else store.config.store_path_root_dir
    cfg = ScheduleConfig(store_path_root_dir=sched_root, timer=TimerConfig(**timer))
    services = ScheduleServices(store, clock, cfg)
    services.load()
    services.start()
    return Harness(kind, root, clock, store, services, timer)


def crash_and_reboot(h: Harness, at_ms: int | None = None) -> Harness:
    """Drop all process state without any shutdown; reopen the store from its files."""
    at = h.now() if at_ms is None else at_ms
    if h.kind == "fake":
        return boot(h.root, "fake", at, store=h.store, **h.timer_kwargs)
    clock = Clock()
    clock.advance(at / 1000)
    h.store.running = False  # the dead process's store must not be used again
    store = open_real_store(h.root, clock)
    return boot(h.root, "real", at, store=store, **h.timer_kwargs)


def clean_restart(h: Harness, at_ms: int | None = None) -> Harness:
    """Orderly shutdown of services and store, then start again."""
    at = h.now() if at_ms is None else at_ms
    h.services.shutdown()
    if h.kind == "fake":
        return boot(h.root, "fake", at, store=h.store, **h.timer_kwargs)
    h.store.shutdown()
    clock = Clock()
    clock.advance(at / 1000)
    return boot(h.root, "real", at, store=open_real_store(h.root, clock), **h.timer_kwargs)
