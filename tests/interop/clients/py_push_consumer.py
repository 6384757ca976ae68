"""Consume with the PyPI rocketmq 0.4.4 push consumer (concurrent or orderly).

Prints ``{"event": "msg", ...}`` per message; stops after ``--expect`` messages (plus
``--linger`` seconds to catch duplicates), on ``--timeout``, or when stdin is closed.
"""

from __future__ import annotations

import argparse
import threading
import time

from _common import consume_until_done, emit, text, watchdog
from rocketmq.client import PushConsumer


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--namesrv", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--expr", default="*")
    p.add_argument("--orderly", action="store_true")
    p.add_argument("--expect", type=int, default=0, help="0: run until stdin closes")
    p.add_argument("--linger", type=float, default=1.0)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--access-key", help="ACL 1.0: set_session_credentials(ak, sk, channel)")
    p.add_argument("--secret-key", default="")
    p.add_argument("--channel", default="")
    args = p.parse_args()
    watchdog(args.timeout + 15)

    received = 0
    lock = threading.Lock()
    enough = threading.Event()

    def on_message(msg):
        nonlocal received
        emit(event="msg", topic=text(msg.topic), tags=text(msg.tags), keys=text(msg.keys),
             body=text(msg.body), msg_id=text(msg.id), queue_id=msg.queue_id,
             queue_offset=msg.queue_offset, reconsume_times=msg.reconsume_times,
             born_timestamp=msg.born_timestamp, store_timestamp=msg.store_timestamp,
             delay=text(msg.get_property("DELAY")), received_ms=int(time.time() * 1000),
             thread=threading.get_ident())
        with lock:
            received += 1
            if args.expect and received >= args.expect:
                enough.set()

    consumer = PushConsumer(args.group, orderly=args.orderly)
    consumer.set_namesrv_addr(args.namesrv)
    if args.access_key is not None:
        consumer.set_session_credentials(args.access_key, args.secret_key, args.channel)
    consumer.set_thread_count(1 if args.orderly else 2)
    consumer.subscribe(args.topic, on_message, args.expr)
    consumer.start()
    consume_until_done(consumer, enough, lock, lambda: received, args.timeout, args.linger)


if __name__ == "__main__":
    main()
