"""An idle broker's schedule services write nothing: the timer checkpoint is written when its
cursors move (or at shutdown), not on every period of a store that has seen no timer message
(issue 26: an idle start then never writes the file nor loads crc32c)."""

from __future__ import annotations

import os

from schedule_support import boot, clean_restart

T0 = 1_700_000_000_000


def test_a_fresh_store_writes_its_timer_checkpoint_at_shutdown_not_while_idle(tmp_path):
    """No timer message: five checkpoint periods (timerFlushIntervalMs, 1 s) write no
    schedule_checkpoint; the clean shutdown writes it."""
    h = boot(tmp_path, "real", T0)
    h.clock.advance(5)
    assert not os.path.exists(h.services.timer.checkpoint_path)
    clean_restart(h)
    assert os.path.exists(h.services.timer.checkpoint_path)
