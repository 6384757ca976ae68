"""Old home of the delay-level table, now :mod:`rocketmq_emu.broker.delay_levels` (formats
layer, so the store can compute SCHEDULE_TOPIC_XXXX tagsCodes without importing scheduling).

Kept only for ``reports/`` (another area) until it imports the new module; nothing in
``broker/`` uses it. Delete it then.
"""

from rocketmq_emu.broker.delay_levels import (  # noqa: F401 (re-exported)
    DEFAULT_MESSAGE_DELAY_LEVEL,
    DelayLevelError,
    DelayLevels,
    parse_delay_levels,
)
