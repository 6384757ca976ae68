"""What-if: CPU cost of a fused SEND_MESSAGE_V2 path over the real store, in-process.

Not product code: a measurement to size the gap found by ``bench/send_pull.py --cpu``. The same
frames as send_pull.py (1 KiB body, 32 per read) go through a minimal path that does the work a
send must do and nothing else: cut the frame, ``orjson.loads`` the header once, read the V2
letters directly, keep the properties as the wire string (drop ``WAIT=true``, append
``CLUSTER`` with string operations, split it once for the dispatcher's TAGS/KEYS), append through
``MessageStore.put_message`` and format the response header from a bytes template. It skips
validation, topic auto-creation and error paths, so it is a lower bound, not a design.

Prints CPU µs/msg for: the fused path, ``store.put_message`` alone, and the broker's real path
(``BrokerController`` protocol over a StringTransport, as ``send_pull.py --cpu``).
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (ROOT, os.path.dirname(os.path.abspath(__file__))):
    if p not in sys.path:
        sys.path.insert(0, p)

_PREFIX = struct.Struct(">ii")
_RESPONSE = (b'{"code":0,"extFields":{"MSG_REGION":"DefaultRegion","TRACE_ON":"true",'
             b'"msgId":"%s%016X","queueId":"%d","queueOffset":"%d"},"flag":1,"language":"JAVA",'
             b'"opaque":%d,"serializeTypeCurrentRPC":"JSON","version":409}')


def fused_handler(store, store_host: tuple[str, int], born_host: tuple[str, int]):
    """A ``handle(buffer) -> list of response frames`` doing the minimum of a V2 send."""
    import orjson

    from broker.commitlog.record import MessageRecord
    from broker.message import pack_host

    host_hex = pack_host(*store_host).hex().upper().encode()

    def handle(buf: bytes) -> list[bytes]:
        out = []
        pos, n = 0, len(buf)
        while n - pos >= 8:
            flen, word = _PREFIX.unpack_from(buf, pos)
            hlen = word & 0xFFFFFF
            header = orjson.loads(buf[pos + 8 : pos + 8 + hlen])
            body = buf[pos + 8 + hlen : pos + 4 + flen]
            ext = header["extFields"]
            props = ext["i"].replace("WAIT\x01true\x02", "").replace("\x02WAIT\x01true", "")
            props = props + "\x02CLUSTER\x01DefaultCluster" if props else "CLUSTER\x01DefaultCluster"
            rec = MessageRecord(
                topic=ext["b"], body=body, queue_id=int(ext["e"]), flag=int(ext["h"]),
                properties=dict(kv.split("\x01", 1) for kv in props.split("\x02")),
                sys_flag=int(ext["f"]), born_timestamp=int(ext["g"]), born_host=born_host,
                store_host=store_host, reconsume_times=0)
            rec.properties_str = props
            append = store.put_message(rec).append
            hdr = _RESPONSE % (host_hex, append.wrote_offset, rec.queue_id, append.queue_offset,
                               header["opaque"])
            out.append(_PREFIX.pack(4 + len(hdr), len(hdr)) + hdr)
            pos += 4 + flen
        return out

    return handle


def main() -> int:
    logging.basicConfig(level=logging.ERROR)
    from send_pull import cpu_costs, send_frame
    from twisted.internet import reactor

    from broker.commitlog.record import MessageRecord
    from broker.store import MessageStore
    from broker.store_config import MessageStoreConfig

    n = 20000
    store_dir = tempfile.mkdtemp(prefix="rmq-emu-fused-")
    try:
        store = MessageStore(MessageStoreConfig(store_path_root_dir=store_dir,
                                                mapped_file_size_commitlog=256 << 20),
                             reactor, reactor)
        store.load()
        store.start()
        handle = fused_handler(store, ("127.0.0.1", 10911), ("127.0.0.1", 5555))
        batch = b"".join(send_frame(q) for q in range(4)) * 8
        for _ in range(100):
            b"".join(handle(batch))
        t0 = time.process_time()
        for _ in range(n // 32):
            b"".join(handle(batch))
        fused = (time.process_time() - t0) / (n // 32 * 32) * 1e6
        t0 = time.process_time()
        for i in range(n):
            rec = MessageRecord(topic="BenchTopic", body=b"x" * 1024, queue_id=i % 4, flag=0,
                                properties={"TAGS": "TagA"}, sys_flag=0, born_timestamp=1,
                                born_host=("127.0.0.1", 5555), store_host=("127.0.0.1", 10911))
            rec.properties_str = "TAGS\x01TagA\x02CLUSTER\x01DefaultCluster"
            store.put_message(rec)
        put = (time.process_time() - t0) / n * 1e6
        store.shutdown()
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    print(f"fused V2 send path CPU {fused:8.2f} us/msg")
    print(f"store.put_message CPU  {put:8.2f} us/msg")
    cpu_costs(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
