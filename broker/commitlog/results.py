"""Result types of appends, puts and gets, with RocketMQ's status names
(``AppendMessageStatus``, ``PutMessageStatus``, ``GetMessageStatus``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from broker.message import create_offset_msg_id


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


class AppendMessageResult:
    """``AppendMessageResult``: where a record (or batch) landed.

    ``msg_id`` (the offset msgId, comma-joined for a batch) is computed on first access: most
    callers never need it and the hex rendering costs more than the append.
    """

    __slots__ = (
        "status", "wrote_offset", "wrote_bytes", "store_timestamp", "queue_offset", "msg_num",
        "store_host", "_offsets", "_msg_id", "error",
    )

    def __init__(
        self, status: AppendMessageStatus, wrote_offset: int = 0, wrote_bytes: int = 0,
        store_timestamp: int = 0, queue_offset: int = 0, msg_num: int = 1,
        store_host: tuple[str, int] = ("127.0.0.1", 0), offsets: list[int] | None = None,
        error: str | None = None,
    ) -> None:
        self.status = status
        self.wrote_offset = wrote_offset
        self.wrote_bytes = wrote_bytes
        self.store_timestamp = store_timestamp
        self.queue_offset = queue_offset
        self.msg_num = msg_num
        self.store_host = store_host
        self._offsets = offsets
        self._msg_id: str | None = None
        self.error = error

    @property
    def logics_offset(self) -> int:
        """RocketMQ's name for the (first) queue offset."""
        return self.queue_offset

    @property
    def offsets(self) -> list[int]:
        """Commitlog offset of each record written."""
        return self._offsets if self._offsets is not None else [self.wrote_offset]

    @property
    def msg_id(self) -> str:
        """Offset msgId(s) (``MessageDecoder.createMessageId``), comma-joined for a batch."""
        if self._msg_id is None:
            host, port = self.store_host
            self._msg_id = ",".join(create_offset_msg_id(host, port, o) for o in self.offsets)
        return self._msg_id

    @property
    def ok(self) -> bool:
        return self.status is AppendMessageStatus.PUT_OK

    def __repr__(self) -> str:
        return (
            f"AppendMessageResult({self.status.name}, wrote_offset={self.wrote_offset}, "
            f"wrote_bytes={self.wrote_bytes}, queue_offset={self.queue_offset}, "
            f"msg_num={self.msg_num})"
        )


class PutMessageResult:
    """``PutMessageResult``. ``flushed`` is a Deferred fired with the final PutMessageStatus
    once the flush policy is met; under ASYNC_FLUSH (or on failure) it is created already
    fired, on first access (most callers under ASYNC_FLUSH never look at it)."""

    __slots__ = ("status", "append", "_flushed")

    def __init__(
        self, status: PutMessageStatus, append: AppendMessageResult | None = None,
        flushed: Any = None,
    ) -> None:
        self.status = status
        self.append = append
        self._flushed = flushed

    @property
    def flushed(self) -> Any:
        if self._flushed is None:
            from twisted.internet import defer

            self._flushed = defer.succeed(self.status)
        return self._flushed

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK

    def __repr__(self) -> str:
        return f"PutMessageResult({self.status.name}, {self.append!r})"


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
