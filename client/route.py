"""Topic routes as the client sees them (pure): parse ``TopicRouteData`` and derive the queues a
producer may write and a consumer may read (Java ``MQClientInstance.topicRouteData2TopicPublishInfo``
/ ``topicRouteData2TopicSubscribeInfo``, ``TopicPublishInfo.selectOneMessageQueue``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.client.message import MessageQueue

PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1
MASTER_ID = 0
DEFAULT_TOPIC_QUEUE_NUMS = 4  # DefaultMQProducer.defaultTopicQueueNums


@dataclass(slots=True)
class QueueData:
    """One broker's queues of a topic."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@dataclass(slots=True)
class BrokerData:
    """A broker group: name, cluster and addresses by broker id (0 = master)."""

    broker_name: str
    cluster: str
    broker_addrs: dict[int, str]

    def master_addr(self) -> str | None:
        """Address of broker id 0, if any."""
        return self.broker_addrs.get(MASTER_ID)


@dataclass(slots=True)
class TopicRouteData:
    """Decoded ``GET_ROUTEINFO_BY_TOPIC`` body."""

    queue_datas: list[QueueData]
    broker_datas: list[BrokerData]
    order_topic_conf: str | None = None

    @classmethod
    def decode(cls, body: bytes) -> TopicRouteData:
        """Parse the JSON body, tolerating fastjson's unquoted integer keys and ``topicSynFlag``."""
        obj = jsonutil.loads(body)
        queues = [
            QueueData(
                broker_name=q["brokerName"],
                read_queue_nums=int(q.get("readQueueNums", 0)),
                write_queue_nums=int(q.get("writeQueueNums", 0)),
                perm=int(q.get("perm", 6)),
                topic_sys_flag=int(q.get("topicSysFlag", q.get("topicSynFlag", 0)) or 0),
            )
            for q in obj.get("queueDatas") or []
        ]
        brokers = [
            BrokerData(
                broker_name=b["brokerName"],
                cluster=b.get("cluster", ""),
                broker_addrs={int(k): v for k, v in (b.get("brokerAddrs") or {}).items()},
            )
            for b in obj.get("brokerDatas") or []
        ]
        return cls(queues, brokers, obj.get("orderTopicConf"))

    def master_addrs(self) -> dict[str, str]:
        """brokerName -> master address."""
        return {b.broker_name: a for b in self.broker_datas if (a := b.master_addr())}

    def all_addrs(self) -> list[str]:
        """Every broker address in the route (masters and slaves)."""
        return [a for b in self.broker_datas for a in b.broker_addrs.values()]


def publish_queues(topic: str, route: TopicRouteData, max_queues: int | None = None) -> list[MessageQueue]:
    """Writable queues of brokers with a master, in route order (``topicRouteData2TopicPublishInfo``).

    ``max_queues`` caps queues per broker (used with the TBW102 default route, where Java takes
    ``min(defaultTopicQueueNums, readQueueNums)``).
    """
    masters = route.master_addrs()
    out: list[MessageQueue] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not qd.perm & PERM_WRITE or qd.broker_name not in masters:
            continue
        n = qd.write_queue_nums
        if max_queues is not None:
            n = min(max_queues, qd.read_queue_nums)
        out.extend(MessageQueue(topic, qd.broker_name, i) for i in range(n))
    return out


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """Readable queues (``topicRouteData2TopicSubscribeInfo``)."""
    out = []
    for qd in route.queue_datas:
        if qd.perm & PERM_READ:
            out.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.read_queue_nums))
    return sorted(out)


@dataclass
class TopicPublishInfo:
    """The queues a producer writes to and the round-robin cursor (``TopicPublishInfo``)."""

    topic: str
    queues: list[MessageQueue]
    order_topic: bool = False
    have_route: bool = True
    _counter: itertools.count = field(default_factory=itertools.count, repr=False)

    def ok(self) -> bool:
        """True when there is at least one queue."""
        return bool(self.queues)

    def select_one(self, last_broker_name: str | None = None) -> MessageQueue:
        """Round-robin, skipping ``last_broker_name`` (the broker that just failed) when another
        broker has queues (``TopicPublishInfo.selectOneMessageQueue(lastBrokerName)``)."""
        if not self.queues:
            raise LookupError(f"no queue to write for topic {self.topic}")
        n = len(self.queues)
        if last_broker_name is not None:
            for _ in range(n):
                mq = self.queues[next(self._counter) % n]
                if mq.broker_name != last_broker_name:
                    return mq
        return self.queues[next(self._counter) % n]
