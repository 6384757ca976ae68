"""Write small stores for the Spark tests with the broker's own MessageStore.

Tiny mapped files (a 2 KiB commitlog file, 4-unit consume-queue files) give many files and a
BLANK filler at the end of each commitlog file. A manual clock sets every record's store
timestamp to the value the test wants (``int(clock.seconds() * 1000)``, as the store computes
it), so the report tests can compare against hand counts.
"""

from __future__ import annotations

from twisted.internet.task import Clock

from rocketmq_emu.broker.commitlog.record import MessageRecord
from rocketmq_emu.broker.store import MessageStore, MessageStoreConfig, PutMessageStatus

#: The fixture store's times (test modules import them from here: ``conftest`` is not one
#: module name in a suite with a conftest.py per folder).
T0 = 1_699_999_200_000  # 2023-11-14T22:00:00Z
S = T0 + 2 * 3_600_000  # schedule/timer/retry block starts two hours later


class BrokerStore:
    """A :class:`MessageStore` in ``root`` plus the records put into it, as stored."""

    def __init__(self, root: str, file_size: int = 2048, cq_units_per_file: int = 4) -> None:
        self.root = root
        self.file_size = file_size
        self.clock = Clock()
        cfg = MessageStoreConfig(
            store_path_root_dir=root,
            mapped_file_size_commitlog=file_size,
            mapped_file_size_consume_queue=cq_units_per_file * 20,
            max_hash_slot_num=100,
            max_index_num=400,
        )
        self.store = MessageStore(cfg, self.clock)
        assert self.store.load()
        self.store.start()
        self.records: list[MessageRecord] = []
        self.blanks: list[int] = []  # commitlog offsets where a BLANK filler was written
        self._end = 0

    def put(self, record: MessageRecord) -> MessageRecord:
        """Put ``record`` with store timestamp ``record.store_timestamp`` (ms); returns it with
        the offsets, CRC and sizes the store assigned."""
        # + 0.5 ms: int(seconds * 1000) must give back exactly the wanted millisecond.
        self.clock.rightNow = (record.store_timestamp + 0.5) / 1000
        result = self.store.put_message(record)
        assert result.status is PutMessageStatus.PUT_OK, result
        if record.physical_offset != self._end:
            self.blanks.append(self._end)
        self._end = record.physical_offset + record.total_size
        self.records.append(record)
        return record

    def commit_offsets(self, table: dict[str, dict[int, int]]) -> None:
        """Commit consumer offsets (``topic@group`` -> {queueId: offset}) as the broker does."""
        for key, offsets in table.items():
            topic, _, group = key.partition("@")
            for qid, offset in offsets.items():
                self.store.consumer_offsets.commit_offset("127.0.0.1", group, topic, qid, offset)

    def close(self) -> None:
        """Flush and persist everything (consumerOffset.json included)."""
        self.store.shutdown()
