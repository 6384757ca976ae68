"""Result types of appends, puts and gets, with RocketMQ's status names
(``AppendMessageStatus``, ``PutMessageStatus``, ``GetMessageStatus``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from rocketmq_emu.broker.message import create_offset_msg_id


class AppendMessageStatus(enum.Enum):
    """``store/AppendMessageStatus.java``."""

    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class PutMessageStatus(enum.Enum):
    """``store/PutMessageStatus.java``."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetMessageStatus(enum.Enum):
    """``store/GetMessageStatus.java``."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


_tuple_new = tuple.__new__


class AppendMessageResult(tuple):
    """``AppendMessageResult``: where a record (or batch) landed.

    A tuple underneath (the append path builds one per message; ``tuple.__new__`` costs a
    fraction of a Python ``__init__``). ``msg_id`` (the offset msgId, comma-joined for a batch)
    is computed on access: the hex rendering costs more than the append.
    """

    __slots__ = ()

    def __new__(
        cls, status: AppendMessageStatus, wrote_offset: int = 0, wrote_bytes: int = 0,
        store_timestamp: int = 0, queue_offset: int = 0, msg_num: int = 1,
        store_host: tuple[str, int] = ("127.0.0.1", 0), offsets: list[int] | None = None,
        error: str | None = None,
    ) -> AppendMessageResult:
        return _tuple_new(cls, (status, wrote_offset, wrote_bytes, store_timestamp,
                                queue_offset, msg_num, store_host, offsets, error))

    status = property(itemgetter(0), doc="AppendMessageStatus")
    wrote_offset = property(itemgetter(1), doc="commitlog offset of the (first) record")
    wrote_bytes = property(itemgetter(2), doc="bytes written (all records of a batch)")
    store_timestamp = property(itemgetter(3), doc="STORETIMESTAMP (ms)")
    queue_offset = property(itemgetter(4), doc="queue offset of the (first) record")
    msg_num = property(itemgetter(5), doc="records written")
    store_host = property(itemgetter(6), doc="(ip, port) of the store host")
    error = property(itemgetter(8), doc="why the append failed, if it did")

    @property
    def logics_offset(self) -> int:
        """RocketMQ's name for the (first) queue offset."""
        return self[4]

    @property
    def offsets(self) -> list[int]:
        """Commitlog offset of each record written."""
        return self[7] if self[7] is not None else [self[1]]

    @property
    def msg_id(self) -> str:
        """Offset msgId(s) (``MessageDecoder.createMessageId``), comma-joined for a batch."""
        host, port = self[6]
        return ",".join(create_offset_msg_id(host, port, o) for o in self.offsets)

    @property
    def ok(self) -> bool:
        return self[0] is AppendMessageStatus.PUT_OK

    def __repr__(self) -> str:
        return (
            f"AppendMessageResult({self[0].name}, wrote_offset={self[1]}, "
            f"wrote_bytes={self[2]}, queue_offset={self[4]}, msg_num={self[5]})"
        )


class PutMessageResult(tuple):
    """``PutMessageResult`` (status, append). ``flushed`` is a Deferred fired with the final
    PutMessageStatus once the flush policy is met; under ASYNC_FLUSH (or on failure) it is made
    already fired on access (each access gives a fresh fired Deferred)."""

    __slots__ = ()

    def __new__(
        cls, status: PutMessageStatus, append: AppendMessageResult | None = None,
        flushed: Any = None,
    ) -> PutMessageResult:
        return _tuple_new(cls, (status, append, flushed))

    status = property(itemgetter(0), doc="PutMessageStatus")
    append = property(itemgetter(1), doc="AppendMessageResult (None if nothing was appended)")

    @property
    def flushed(self) -> Any:
        d = self[2]
        if d is None:
            from twisted.internet import defer

            return defer.succeed(self[0])
        return d

    @property
    def ok(self) -> bool:
        return self[0] is PutMessageStatus.PUT_OK

    def __repr__(self) -> str:
        return f"PutMessageResult({self[0].name}, {self[1]!r})"


@dataclass
class GetMessageResult:
    """``GetMessageResult``: raw records (exactly as stored) and the offsets to report."""

    status: GetMessageStatus
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    messages: list[bytes] = field(default_factory=list)
    queue_offsets: list[int] = field(default_factory=list)
    commitlog_offsets: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.messages)

    def body(self) -> bytes:
        """The concatenated records (a pull response body, protocol.md §3.2)."""
        return b"".join(self.messages)
