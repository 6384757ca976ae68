"""rocketmq_emu.broker.jsonutil: fastjson's object-keyed maps written the one way every caller uses."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emu.broker import jsonutil
from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.bodies import decode_mq_map, encode_mq_map

mq_keys = st.tuples(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8),
                    st.integers(0, 255))


def test_object_keyed_map_is_written_as_fastjson_writes_it():
    """Keys are the MessageQueue objects themselves, values plain JSON, no spaces."""
    mq = {"brokerName": "b", "queueId": 1, "topic": "T"}
    assert jsonutil.dumps_object_keyed([(mq, 7), (mq, {"a": 1})]) == (
        b'{{"brokerName":"b","queueId":1,"topic":"T"}:7,'
        b'{"brokerName":"b","queueId":1,"topic":"T"}:{"a":1}}')


def test_empty_map():
    """No entries: ``{}``."""
    assert jsonutil.dumps_object_keyed([]) == b"{}"


@given(st.dictionaries(mq_keys, st.integers(-(2**63), 2**63 - 1), max_size=6))
def test_mq_map_round_trips_through_the_lenient_reader(table):
    """encode_mq_map then loads_lenient + decode_mq_map gives the table back."""
    assert decode_mq_map(loads_lenient(encode_mq_map(table))) == table
