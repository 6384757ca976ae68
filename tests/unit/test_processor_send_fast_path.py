"""SEND_MESSAGE_V2's plain-request fast path stores the same record and answers the same
response as the general path, and hands every unusual request to the general path."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from processor_support import FakeConn, make_context, send_v2

import rocketmq_emu.broker.processors.send as send_mod
from rocketmq_emu.broker.commitlog.record import iter_records
from rocketmq_emu.broker.processors.send import SendMessageProcessor

PROPS = st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "a", "DELAY",
                                         "TRAN_MSG", "TIMER_DELAY_SEC"]),
                        st.sampled_from(["x", "true", "1", "k1 k2"]), max_size=4)


def _run(tmp_path, name, cmds, general: bool):
    ctx = make_context(tmp_path / name)
    proc = SendMessageProcessor(ctx, random.Random(7))
    if general:
        proc._send_v2_plain = lambda cmd, conn: send_mod._GENERAL
    answers = []
    for cmd in cmds:
        try:
            r = proc.process_send(cmd, FakeConn(4242))
        except Exception as exc:  # the dispatcher answers SYSTEM_ERROR with this text
            answers.append(f"{type(exc).__name__}: {exc}")
            continue
        answers.append(None if r is None or not hasattr(r, "code") else
                       (r.code, r.remark, r.ext_fields))
    raw = []
    for topic in {c.ext_fields.get("b") for c in cmds if c.ext_fields.get("b")}:
        for qid in range(8):
            res = ctx.store.get_message("g", topic, qid, 0, 64)
            raw += [(topic, qid, rec.queue_offset, rec.properties_str or rec.properties, rec.body,
                     rec.sys_flag, rec.flag, rec.born_timestamp, rec.reconsume_times)
                    for m in res.messages for _, rec in iter_records(m)]
    ctx.store.shutdown()
    return answers, sorted(raw, key=repr)


@pytest.mark.parametrize("extra", [
    {}, {"m": "false", "k": "false"}, {"j": "2", "l": "16"}, {"m": "1"}, {"k": "true"},
    {"e": "-1"}, {"e": "99"}, {"f": "x"}, {"j": "x"}, {"b": "bad topic"},
    {"b": "%RETRY%cg"}, {"b": "SCHEDULE_TOPIC_XXXX"}, {"g": "12345678901234567890"},
])
def test_fast_and_general_paths_agree_on_header_variants(tmp_path, extra):
    """Same answers and stored records for plain and unusual headers."""
    cmds = [send_v2("T1", queue_id=q % 4, props={"TAGS": "a", "KEYS": "k"}) for q in range(6)]
    for c in cmds:
        for k, v in extra.items():
            c.ext_fields[k] = v
    assert _run(tmp_path, "fast", cmds, False) == _run(tmp_path, "general", cmds, True)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(PROPS, min_size=1, max_size=4))
def test_fast_and_general_paths_agree_on_properties(tmp_path_factory, props_list):
    """Same answers and stored records whatever the properties (WAIT, DELAY, TRAN_MSG...)."""
    tmp = tmp_path_factory.mktemp("p")
    cmds = [send_v2("T1", queue_id=i % 2, props=p) for i, p in enumerate(props_list)]
    assert _run(tmp, "fast", cmds, False) == _run(tmp, "general", cmds, True)
