"""One SparkSession per test run, and one small store with every kind of message in it.

The store content is fixed by hand so the report tests can compare against hand counts:

* TopicA: 12 messages, queue i % 4, one every 20 s from T0 (so 3 per minute over 4 minutes),
  tags TagA/TagB alternating, producer 10.0.0.1, body length 10*i + 5.
* TopicB: 5 messages in queue 0 one hour later (T0 + 1 h + i s), producer 10.0.0.2, body 100;
  message 3 has an IPv6 born host, message 4 a zlib-compressed body (sysFlag 0x301).
* TopicC: one committed transactional message; RMQ_SYS_TRANS_HALF_TOPIC: one prepared half.
* Delay levels (SCHEDULE_TOPIC_XXXX): D1 level 2 (5 s) re-put 200 ms late; D2 level 3 (10 s)
  re-put 1000 ms late; D3 level 3 never re-put (pending). All real topic TopicA queue 0.
* Timer (rmq_sys_wheel_timer): M1 deliver S+60 s re-put 500 ms late to TopicC; M2 pending.
* Retries: group G1 retried TopicA message R twice (level 3 then 4, each re-put into %RETRY%G1
  1500 ms and 2500 ms late) and then sent it to %DLQ%G1; group G2 retried TopicB message Q once
  (level 3, re-put 100 ms late into %RETRY%G2).
* consumerOffset.json: TopicA@G1 {0:1,1:3,2:3,3:0}, TopicB@G2 {0:2}, %RETRY%G1@G1 {0:1}.

A second store, ``pop_store``, is written by a broker serving RocketMQ 5 POP: see
``storegen.build_pop_store``.
"""

from __future__ import annotations

import os
import sys
import zlib

import pytest

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.message import (
    COMPRESSED_FLAG,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    TIMER_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
)

sys.path.insert(0, os.path.dirname(__file__))
from storegen import T0, BrokerStore, S, build_pop_store  # noqa: E402

STORE_HOST = ("192.168.0.10", 10911)
FILE_SIZE = 2048


@pytest.fixture(scope="session")
def spark():
    """The run's only SparkSession (local[2]), with both data sources registered."""
    from rocketmq_emu.reports.session import get_session

    session = get_session("local[2]", app_name="rocketmq-emu-tests")
    yield session
    session.stop()


def _rec(topic, i, **kw) -> MessageRecord:
    kw.setdefault("store_host", STORE_HOST)
    return MessageRecord(topic=topic, **kw)


def build_store(root: str) -> BrokerStore:
    """Write the store described in the module docstring with the broker's MessageStore."""
    st = BrokerStore(root, file_size=FILE_SIZE, cq_units_per_file=4)
    for i in range(12):
        st.put(_rec(
            "TopicA", i, body=bytes([65 + i % 26]) * (10 * i + 5), queue_id=i % 4, flag=i,
            properties={"UNIQ_KEY": f"A{i:031d}", "TAGS": "TagA" if i % 2 == 0 else "TagB",
                        "KEYS": f"k{i} order{i}", "WAIT": "true"},
            born_timestamp=T0 + i * 20_000 - 5, born_host=("10.0.0.1", 5001),
            store_timestamp=T0 + i * 20_000,
        ))
    for i in range(5):
        body = b"b" * 100
        sys_flag = 0
        born = ("10.0.0.2", 5002)
        if i == 3:
            born = ("::1", 6000)
        if i == 4:
            body = zlib.compress(b"b" * 5000)
            sys_flag = COMPRESSED_FLAG | 0x300
        st.put(_rec(
            "TopicB", i, body=body, sys_flag=sys_flag,
            properties={"UNIQ_KEY": f"B{i:031d}", "TAGS": "TagQ"},
            born_timestamp=T0 + 3_600_000 + i * 1000 - 7, born_host=born,
            store_timestamp=T0 + 3_600_000 + i * 1000,
        ))
    st.put(_rec(
        "TopicC", 0, body=b"committed", sys_flag=TRANSACTION_COMMIT_TYPE,
        properties={"UNIQ_KEY": "C" * 32, "PGROUP": "pg"}, prepared_transaction_offset=77,
        born_timestamp=T0 + 100, born_host=("10.0.0.3", 5003), store_timestamp=T0 + 200,
    ))
    st.put(_rec(
        RMQ_SYS_TRANS_HALF_TOPIC, 0, body=b"half", sys_flag=TRANSACTION_PREPARED_TYPE,
        properties={"UNIQ_KEY": "H" * 32, "REAL_TOPIC": "TopicC", "REAL_QID": "0",
                    "TRAN_MSG": "true"},
        born_timestamp=T0 + 300, born_host=("10.0.0.3", 5003), store_timestamp=T0 + 400,
    ))

    def delayed(uniq, level, at, late, topic="TopicA", qid=0, reconsume=0, extra=None):
        props = {"UNIQ_KEY": uniq, "DELAY": str(level), "REAL_TOPIC": topic,
                 "REAL_QID": str(qid), **(extra or {})}
        st.put(_rec(
            RMQ_SYS_SCHEDULE_TOPIC, 0, body=b"delayed " + uniq.encode(), queue_id=level - 1,
            properties=props, reconsume_times=reconsume, born_timestamp=at - 1,
            born_host=("10.0.0.4", 5004), store_timestamp=at,
        ))
        if late is not None:
            delay = {2: 5_000, 3: 10_000, 4: 30_000}[level]
            st.put(_rec(
                topic, 0, body=b"delayed " + uniq.encode(), queue_id=qid, properties=props,
                reconsume_times=reconsume, born_timestamp=at - 1, born_host=("10.0.0.4", 5004),
                store_timestamp=at + delay + late,
            ))

    delayed("D1" + "0" * 30, 2, S, 200)
    delayed("D2" + "0" * 30, 3, S + 1000, 1000)
    delayed("D3" + "0" * 30, 3, S + 2000, None)
    for uniq, late in (("M1" + "0" * 30, 500), ("M2" + "0" * 30, None)):
        props = {"UNIQ_KEY": uniq, "TIMER_OUT_MS": str(S + 60_000), "REAL_TOPIC": "TopicC",
                 "REAL_QID": "0", "TIMER_DELAY_SEC": "60"}
        st.put(_rec(TIMER_TOPIC, 0, body=b"timer", properties=props, born_timestamp=S - 1,
                    born_host=("10.0.0.5", 5005), store_timestamp=S))
        if late is not None:
            st.put(_rec("TopicC", 0, body=b"timer", properties=props, born_timestamp=S - 1,
                        born_host=("10.0.0.5", 5005), store_timestamp=S + 60_000 + late))
    retry_props = {"RETRY_TOPIC": "TopicA", "ORIGIN_MESSAGE_ID": "ORIG1", "TAGS": "TagA"}
    delayed("R" * 32, 3, S + 5000, 1500, topic="%RETRY%G1", reconsume=1, extra=retry_props)
    delayed("R" * 32, 4, S + 20_000, 2500, topic="%RETRY%G1", reconsume=2, extra=retry_props)
    st.put(_rec(
        "%DLQ%G1", 0, body=b"delayed " + b"R" * 32, reconsume_times=3,
        properties={"UNIQ_KEY": "R" * 32, **retry_props}, born_timestamp=S + 4999,
        born_host=("10.0.0.4", 5004), store_timestamp=S + 60_000,
    ))
    delayed("Q" * 32, 3, S + 6000, 100, topic="%RETRY%G2", reconsume=1,
            extra={"RETRY_TOPIC": "TopicB", "ORIGIN_MESSAGE_ID": "ORIG2"})
    st.commit_offsets({
        "TopicA@G1": {0: 1, 1: 3, 2: 3, 3: 0},
        "TopicB@G2": {0: 2},
        "%RETRY%G1@G1": {0: 1},
    })
    st.close()
    return st


@pytest.fixture(scope="session")
def store(tmp_path_factory) -> BrokerStore:
    """The shared store (read-only for tests: copy it before damaging it)."""
    return build_store(str(tmp_path_factory.mktemp("store")))


@pytest.fixture(scope="session")
def pop_store(tmp_path_factory) -> str:
    """The root of the POP store (``storegen.build_pop_store``), read-only for tests."""
    root = str(tmp_path_factory.mktemp("pop-store"))
    build_pop_store(root)
    return root
