"""``python -m rocketmq_emu.reports NAME --store DIR``: the report command without the broker CLI."""

import sys

from rocketmq_emu.reports.cli import run_argv

sys.exit(run_argv())
