"""Consume with the PyPI rocketmq 0.4.4 pull consumer (code 11 without the suspend flag)."""

from __future__ import annotations

import argparse
import time

from _common import emit, hard_exit, text, watchdog
from rocketmq.client import PullConsumer


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--namesrv", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--expr", default="*")
    p.add_argument("--expect", type=int, required=True)
    p.add_argument("--timeout", type=float, default=40)
    p.add_argument("--drain", action="store_true",
                   help="after --expect messages, pull every queue once more and print extras")
    args = p.parse_args()
    watchdog(args.timeout + 15)

    consumer = PullConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    consumer.start()
    emit(event="started")
    received = 0
    rounds = 0
    deadline = time.monotonic() + args.timeout
    while received < args.expect and time.monotonic() < deadline:
        rounds += 1
        for msg in consumer.pull(args.topic, args.expr):
            received += 1
            emit(event="msg", topic=text(msg.topic), tags=text(msg.tags), keys=text(msg.keys),
                 body=text(msg.body), msg_id=text(msg.id), queue_id=msg.queue_id,
                 queue_offset=msg.queue_offset)
        if received < args.expect:
            time.sleep(0.2)
    if args.drain and received >= args.expect:
        # Anything still there is a message the test did not expect (e.g. a split batch).
        for msg in consumer.pull(args.topic, args.expr):
            received += 1
            emit(event="msg", extra=True, topic=text(msg.topic), tags=text(msg.tags),
                 keys=text(msg.keys), body=text(msg.body), msg_id=text(msg.id),
                 queue_id=msg.queue_id, queue_offset=msg.queue_offset)
    emit(event="done", received=received, rounds=rounds)
    watchdog(8)
    consumer.shutdown()
    emit(event="shutdown")
    hard_exit(0)


if __name__ == "__main__":
    main()
