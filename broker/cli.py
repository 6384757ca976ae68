"""Command line entry point ``rmq-emu`` (placeholder until the services land)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the ``rmq-emu`` command."""
    print("rmq-emu: not yet implemented", file=sys.stderr)
    return 2
