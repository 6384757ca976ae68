"""LocalFileOffsetStore: the broadcasting consumer's offsets file, as the Java client writes it."""

from __future__ import annotations

import os

from rocketmq_emu.broker.jsonutil import loads_lenient
from rocketmq_emu.broker.remoting.bodies import decode_mq_map
from rocketmq_emu.client.local_offsets import LocalFileOffsetStore
from rocketmq_emu.client.message import MessageQueue

A0 = MessageQueue("T", "broker-a", 0)
A1 = MessageQueue("T", "broker-a", 1)


def test_file_path_is_dir_client_id_group_offsets_json(tmp_path):
    """{dir}/{clientId}/{group}/offsets.json, as LocalFileOffsetStore names it."""
    store = LocalFileOffsetStore("10.0.0.7@123#0", "bc-g", str(tmp_path))
    assert store.path == os.path.join(str(tmp_path), "10.0.0.7@123#0", "bc-g", "offsets.json")


def test_file_is_fastjson_offset_serialize_wrapper(tmp_path):
    """offsetTable keyed by MessageQueue objects (fastjson's shape), offsets as numbers."""
    store = LocalFileOffsetStore("c", "g", str(tmp_path))
    store.persist({A1: 7, A0: 3})
    text = open(store.path, encoding="utf-8").read()
    assert text == ('{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:3,'
                    '{"brokerName":"broker-a","queueId":1,"topic":"T"}:7}}')
    assert decode_mq_map(loads_lenient(text)["offsetTable"]) == {
        ("T", "broker-a", 0): 3, ("T", "broker-a", 1): 7}


def test_load_returns_what_persist_wrote(tmp_path):
    """A new store object for the same client and group reads the offsets back."""
    LocalFileOffsetStore("c", "g", str(tmp_path)).persist({A0: 3, A1: 9})
    assert LocalFileOffsetStore("c", "g", str(tmp_path)).load() == {A0: 3, A1: 9}


def test_missing_file_loads_empty(tmp_path):
    """No file yet: no stored offsets."""
    assert LocalFileOffsetStore("c", "g", str(tmp_path)).load() == {}


def test_previous_file_is_kept_as_bak_and_used_when_main_is_corrupt(tmp_path):
    """Each write keeps the previous content in offsets.json.bak; a corrupt main file falls
    back to it (MixAll.string2File, readLocalOffsetBak)."""
    store = LocalFileOffsetStore("c", "g", str(tmp_path))
    store.persist({A0: 1})
    store.persist({A0: 2})
    with open(store.path, "w", encoding="utf-8") as f:
        f.write('{"offsetTable":{{"brokerName"')
    assert store.load() == {A0: 1}
