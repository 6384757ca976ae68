"""``MessageStoreConfig``: the store's settings with RocketMQ's names in snake_case and its
defaults (``store/config/MessageStoreConfig.java``, 4.9.x) unless noted."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rocketmq_emu.broker.delay_levels import DEFAULT_MESSAGE_DELAY_LEVEL

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"


@dataclass
class MessageStoreConfig:
    """Store configuration. Paths default under ``store_path_root_dir``."""

    store_path_root_dir: str = os.path.join(os.path.expanduser("~"), "store")
    store_path_commit_log: str | None = None
    #: 1 GiB commitlog files (``mappedFileSizeCommitLog``).
    mapped_file_size_commitlog: int = 1024 * 1024 * 1024
    #: 300,000 units of 20 bytes (``mappedFileSizeConsumeQueue``).
    mapped_file_size_consume_queue: int = 300_000 * 20
    flush_disk_type: str = ASYNC_FLUSH
    #: ASYNC_FLUSH period (``flushIntervalCommitLog``, ms).
    flush_interval_commit_log: int = 500
    #: A periodic flush is skipped below this many dirty pages (``flushCommitLogLeastPages``).
    flush_commit_log_least_pages: int = 4
    #: ...unless this long passed since the last full flush (``flushCommitLogThoroughInterval``).
    flush_commit_log_thorough_interval: int = 10_000
    #: Extra (ours): flush as soon as this many pages are dirty, without waiting for the timer.
    flush_commit_log_max_dirty_pages: int = 16_384
    flush_interval_consume_queue: int = 1000
    flush_consume_queue_least_pages: int = 2
    #: SYNC_FLUSH: how long a put waits for its flush (``syncFlushTimeout``, ms).
    sync_flush_timeout: int = 5000
    #: Retention in hours (``fileReservedTime``).
    file_reserved_time: int = 72
    #: Retention check period (``cleanResourceInterval``, ms).
    clean_resource_interval: int = 10_000
    #: Hours of the day (local time, ``;``-separated) at which expired files are deleted
    #: (``deleteWhen``).
    delete_when: str = "04"
    #: Used disk percentage above which files are cleaned whatever the hour
    #: (``diskMaxUsedSpaceRatio``, clamped to 10..95).
    disk_max_used_space_ratio: int = 75
    #: Used disk percentage above which puts are refused. RocketMQ 4.9 reads it (as 0.90)
    #: from the JVM property ``rocketmq.broker.diskSpaceWarningLevelRatio``; the key and
    #: percentage are RocketMQ 5's ``diskSpaceWarningLevelRatio``.
    disk_space_warning_level_ratio: int = 90
    #: Used disk percentage above which unexpired files are deleted too (4.9: the JVM property
    #: ``rocketmq.broker.diskSpaceCleanForciblyRatio``, 0.85; 5: ``diskSpaceCleanForciblyRatio``).
    disk_space_clean_forcibly_ratio: int = 85
    #: Allow that forced clean (``cleanFileForciblyEnable``).
    clean_file_forcibly_enable: bool = True
    #: Body size limit (``maxMessageSize``).
    max_message_size: int = 1024 * 1024 * 4
    check_crc_on_recover: bool = True
    #: Pre-touch new mapped files (RocketMQ's ``warmMapedFileEnable`` defaults to false; we
    #: measured the first touch at 4-6x, so ours defaults to true).
    warm_mapped_file_enable: bool = True
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    max_transfer_bytes_on_message_in_memory: int = 1024 * 256
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 1024 * 64
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    #: Write V2 magic for topics over 127 bytes (``autoMessageVersionOnTopicLen``, R5).
    auto_message_version_on_topic_len: bool = True
    #: The broker's ip:port written as STOREHOSTADDRESS when a record leaves it unset.
    store_host: str = "127.0.0.1:10911"

    @property
    def commitlog_dir(self) -> str:
        """``storePathCommitLog``, default ``{root}/commitlog``."""
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        """``{root}/consumequeue``."""
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        """``{root}/index``."""
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def config_dir(self) -> str:
        """``{root}/config``."""
        return os.path.join(self.store_path_root_dir, "config")

    @property
    def checkpoint_path(self) -> str:
        """``{root}/checkpoint``."""
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def abort_path(self) -> str:
        """``{root}/abort``."""
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def sync_flush(self) -> bool:
        """True under SYNC_FLUSH."""
        return self.flush_disk_type == SYNC_FLUSH
