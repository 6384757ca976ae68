"""The harness and blocking facade outside pytest (reactor in a crochet thread), as a plain
script uses them; run in a subprocess so no pytest-twisted reactor is involved."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent('''
    import json, time
    from rocketmq_emu.client.message import Message
    from rocketmq_emu.client.testing import EmbeddedCluster

    out = {}
    with EmbeddedCluster(clock="manual") as cluster:
        producer = cluster.producer()
        inbox = cluster.collector("ScriptTopic")
        out["status"] = producer.send(Message("ScriptTopic", b"now")).status.name
        producer.send(Message("ScriptTopic", b"later", delay_level=18))
        out["first"] = [m.body.decode() for m in inbox.wait_for(1)]
        got = []

        def listener(msgs, ctx):
            time.sleep(0.01)  # may block: it runs in a worker thread
            got.extend(m.body.decode() for m in msgs)
            return True

        cluster.push_consumer("ScriptTopic", listener,
                              consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.clock.advance(7200)
        out["second"] = sorted(m.body.decode() for m in inbox.wait_for(2))
        deadline = time.time() + 10
        while len(got) < 2 and time.time() < deadline:
            time.sleep(0.05)
        out["listener"] = sorted(got)
        store = cluster.store_dir
    out["store_removed"] = not store.exists()
    print(json.dumps(out))
''')


def test_blocking_facade_in_a_plain_script(tmp_path):
    """Send, collect, time-travel and a blocking listener work with the reactor in a thread."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"status": "SEND_OK", "first": ["now"], "second": ["later", "now"],
                   "listener": ["later", "now"], "store_removed": True}
