"""Offsets of a BROADCASTING consumer kept on the client's disk, as the Java client's
``LocalFileOffsetStore`` keeps them (4.9.x).

Every member of a broadcasting group reads every queue, so the broker stores nothing for it;
the Java client writes ``{dir}/{clientId}/{group}/offsets.json`` where ``dir`` is the system
property ``rocketmq.client.localOffsetStoreDir`` (default ``~/.rocketmq_offsets``). The file is
fastjson's ``OffsetSerializeWrapper``: ``{"offsetTable":{<MessageQueue object>:offset,...}}``
(an object as map key, not strict JSON; Java pretty-prints it, we write it compact, and
fastjson reads either). ``MixAll.string2File`` writes ``offsets.json.tmp``,
keeps the previous file as ``offsets.json.bak``, then renames; a reader that finds the main file
unreadable falls back to the ``.bak``. A restarted consumer with the same client id resumes
from there.

Here ``dir`` comes from the ``local_offset_store_dir`` argument, else the environment variable
``ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR``, else ``~/.rocketmq_offsets``.
"""

from __future__ import annotations

import logging
import os

from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.bodies import decode_mq_map, encode_offset_table
from rocketmq_emu.client.message import MessageQueue

log = logging.getLogger(__name__)

ENV_DIR = "ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR"


def default_dir() -> str:
    """The Java client's default, overridable through :data:`ENV_DIR`."""
    return os.environ.get(ENV_DIR) or os.path.join(os.path.expanduser("~"), ".rocketmq_offsets")


class LocalFileOffsetStore:
    """``load`` / ``persist`` of one broadcasting consumer's offsets."""

    def __init__(self, client_id: str, group: str, base_dir: str | None = None) -> None:
        self.path = os.path.join(base_dir or default_dir(), client_id, group, "offsets.json")

    def load(self) -> dict[MessageQueue, int]:
        """The stored offsets (empty when there is no file yet); a corrupt file is logged and
        its ``.bak`` used instead (``LocalFileOffsetStore.readLocalOffset``)."""
        for path in (self.path, self.path + ".bak"):
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("cannot read local offsets %s: %s", path, exc)
                continue
            if not text.strip():
                continue
            try:
                table = decode_mq_map(loads_lenient(text).get("offsetTable"))
                return {MessageQueue(t, b, q): int(v) for (t, b, q), v in table.items()}
            except Exception as exc:
                log.warning("local offsets file %s is corrupt (%s); trying its backup", path, exc)
        return {}

    def persist(self, offsets: dict[MessageQueue, int]) -> None:
        """Write all offsets (``persistAll``): tmp file, previous file to ``.bak``, rename."""
        # The same wrapper as ResetOffsetBody: {"offsetTable":{<mq>:offset}}.
        table = {(mq.topic, mq.broker_name, mq.queue_id): off for mq, off in offsets.items()}
        text = encode_offset_table(dict(sorted(table.items()))).decode("utf-8")
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(self.path):
            os.replace(self.path, self.path + ".bak")
        os.replace(tmp, self.path)
