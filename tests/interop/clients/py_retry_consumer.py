"""A PyPI rocketmq 0.4.4 push consumer whose callback returns RECONSUME_LATER the first time it
sees a message (reconsume times 0) and CONSUME_SUCCESS afterwards.

0.4.4's ``PushConsumer.subscribe`` wrapper can only fail a message by raising, and re-raises
out of the ctypes callback, so the status the C++ client gets is undefined. This script
registers its own ctypes callback (the wrapper's ``_register_callback``) that returns the
status value itself. Prints ``{"event": "msg", ..., "status": "RECONSUME_LATER"|...}`` per
delivery; stops after ``--expect`` deliveries (plus ``--linger`` seconds) or ``--timeout``.
"""

from __future__ import annotations

import argparse
import threading
import time

from _common import consume_until_done, emit, text, watchdog
from rocketmq.client import PushConsumer, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import _CConsumeStatus, dll

PROPS = ("RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "REAL_TOPIC", "DELAY", "UNIQ_KEY",
         "MAX_OFFSET", "MIN_OFFSET")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--namesrv", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--expect", type=int, default=2, help="deliveries to wait for")
    p.add_argument("--linger", type=float, default=2.0)
    p.add_argument("--timeout", type=float, default=60)
    args = p.parse_args()
    watchdog(args.timeout + 15)

    received = 0
    lock = threading.Lock()
    enough = threading.Event()

    def on_message(_consumer, handle):
        nonlocal received
        msg = RecvMessage(handle)
        fail = msg.reconsume_times == 0
        status = _CConsumeStatus.RECONSUME_LATER if fail else _CConsumeStatus.CONSUME_SUCCESS
        emit(event="msg", topic=text(msg.topic), tags=text(msg.tags), keys=text(msg.keys),
             body=text(msg.body), msg_id=text(msg.id), queue_id=msg.queue_id,
             queue_offset=msg.queue_offset, reconsume_times=msg.reconsume_times,
             born_timestamp=msg.born_timestamp, store_timestamp=msg.store_timestamp,
             received_ms=int(time.time() * 1000), status=status.name,
             properties={k: text(msg.get_property(k)) for k in PROPS})
        with lock:
            received += 1
            if received >= args.expect:
                enough.set()
        return status.value

    consumer = PushConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    consumer.set_thread_count(1)
    ffi_check(dll.Subscribe(consumer._handle, args.topic.encode(), b"*"))
    consumer._register_callback(on_message)
    consumer.start()
    consume_until_done(consumer, enough, lock, lambda: received, args.timeout, args.linger)


if __name__ == "__main__":
    main()
