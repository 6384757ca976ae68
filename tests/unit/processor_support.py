"""Shared setup of the processor unit tests: a real store on tiny files, a task.Clock, a fake
connection. Not a test module (no ``test_`` prefix)."""

from __future__ import annotations

import json

from twisted.internet import task

from rocketmq_emu.broker.config import BrokerConfig
from rocketmq_emu.broker.longpoll import PullRequestHoldService
from rocketmq_emu.broker.message import properties_to_string
from rocketmq_emu.broker.processors.context import BrokerContext
from rocketmq_emu.broker.remoting.codes import RequestCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.store import MessageStore
from rocketmq_emu.broker.store_config import MessageStoreConfig

STORE_HOST = ("10.0.0.5", 10911)
T0 = 1_700_000_000.0


class FakeConn:
    """Stands in for a RemotingProtocol: peer address, close callbacks, oneway sends."""

    def __init__(self, port: int = 50000, host: str = "192.168.1.20") -> None:
        self.peer = (host, port)
        self.client_id = None
        self.closed = False
        self.sent: list[RemotingCommand] = []
        self._close_callbacks = []

    @property
    def peer_addr(self) -> str:
        return f"{self.peer[0]}:{self.peer[1]}"

    def add_close_callback(self, fn) -> None:
        self._close_callbacks.append(fn)

    def send_oneway(self, cmd: RemotingCommand) -> None:
        self.sent.append(cmd)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for fn in self._close_callbacks:
                fn(self)

    def notified(self) -> list[str]:
        """consumerGroup of each NOTIFY_CONSUMER_IDS_CHANGED received."""
        return [c.ext_fields["consumerGroup"] for c in self.sent
                if c.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]


def make_context(tmp_path, *, sync_flush: bool = False, reactor_clock: bool = False,
                 **config) -> BrokerContext:
    """A BrokerContext around a started store in ``tmp_path`` on a task.Clock at T0."""
    clock = task.Clock()
    clock.advance(T0)
    store_cfg = MessageStoreConfig(
        store_path_root_dir=str(tmp_path / "store"),
        mapped_file_size_commitlog=256 * 1024,
        mapped_file_size_consume_queue=200 * 20,
        flush_disk_type="SYNC_FLUSH" if sync_flush else "ASYNC_FLUSH",
        warm_mapped_file_enable=False,
        max_message_size=config.pop("max_message_size", 64 * 1024),
    )
    store = MessageStore(store_cfg, clock, clock if reactor_clock else None)
    assert store.load()
    store.start()
    cfg = BrokerConfig(store_path_root_dir=store_cfg.store_path_root_dir, **config)
    ctx = BrokerContext(cfg, store, clock, STORE_HOST)
    return ctx


def attach_long_polling(ctx: BrokerContext, pull_processor) -> PullRequestHoldService:
    """Wire the hold service and the store's arrival listener as the controller does."""
    hold = PullRequestHoldService(ctx.clock, pull_processor.execute_when_wakeup)
    ctx.hold_service = hold
    ctx.store.add_arrival_listener(
        lambda topic, qid, off, tags, rec: hold.notify_message_arriving(topic, qid, off + 1, tags))
    return hold


def send_v2(topic: str, body: bytes = b"body", queue_id: int = 0, props=None,
            code: int = RequestCode.SEND_MESSAGE_V2, oneway: bool = False, **extra):
    """A SEND_MESSAGE_V2-style request (letters a..l plus ``extra``)."""
    props = {"TAGS": "tagA", "WAIT": "true"} if props is None else props
    ext = {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
           "g": "1700000000000", "h": "0", "i": properties_to_string(props), "j": "0",
           "k": "false"}
    ext.update(extra)
    return RemotingCommand.request(code, ext, body, oneway=oneway)


def send_v1(topic: str, body: bytes = b"body", queue_id: int = 0, props=None, **extra):
    """A SEND_MESSAGE (10) request with V1 field names."""
    props = {"TAGS": "tagA"} if props is None else props
    ext = {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102",
           "defaultTopicQueueNums": "4", "queueId": str(queue_id), "sysFlag": "0",
           "bornTimestamp": "1700000000000", "flag": "0",
           "properties": properties_to_string(props)}
    ext.update(extra)
    return RemotingCommand.request(RequestCode.SEND_MESSAGE, ext, body)


def pull_cmd(topic: str, queue_id: int, offset: int, *, group: str = "cg", sub: str = "*",
             suspend_ms: int | None = None, commit_offset: int | None = None,
             with_subscription: bool = True, sub_version: int = 0, max_msgs: int = 32):
    """A PULL_MESSAGE request; sysFlag from the options."""
    flag = (0x4 if with_subscription else 0) | (0x2 if suspend_ms is not None else 0) | (
        0x1 if commit_offset is not None else 0)
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": group, "topic": topic, "queueId": str(queue_id),
        "queueOffset": str(offset), "maxMsgNums": str(max_msgs), "sysFlag": str(flag),
        "commitOffset": str(commit_offset or 0), "suspendTimeoutMillis": str(suspend_ms or 0),
        "subscription": sub, "subVersion": str(sub_version), "expressionType": "TAG"})


def heartbeat_cmd(client_id: str, group: str, topic: str, sub: str = "*",
                  sub_version: int = 1, enums_as_ints: bool = False, producer: str | None = None):
    """A HEART_BEAT with one consumer group subscribed to ``topic``."""
    tags = [t.strip() for t in sub.split("||")] if sub != "*" else []
    consumer = {
        "groupName": group,
        "consumeType": 1 if enums_as_ints else "CONSUME_PASSIVELY",
        "messageModel": 1 if enums_as_ints else "CLUSTERING",
        "consumeFromWhere": 0 if enums_as_ints else "CONSUME_FROM_LAST_OFFSET",
        "unitMode": False,
        "subscriptionDataSet": [{"topic": topic, "subString": sub, "tagsSet": tags,
                                 "codeSet": [], "subVersion": sub_version,
                                 "classFilterMode": False, "expressionType": "TAG"}],
    }
    body = {"clientID": client_id, "consumerDataSet": [consumer] if group else [],
            "producerDataSet": [{"groupName": producer}] if producer else []}
    return RemotingCommand.request(RequestCode.HEART_BEAT,
                                   body=json.dumps(body).encode() + b"\n")
