"""Suite-wide settings."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from rocketmq_emu.client.local_offsets import ENV_DIR

# Broadcasting consumers write their offsets files (LocalFileOffsetStore) under the home
# directory by default, as the Java client does: the suite keeps them in a directory of its own.
if ENV_DIR not in os.environ:
    os.environ[ENV_DIR] = tempfile.mkdtemp(prefix="rmq-emu-offsets-")
    atexit.register(shutil.rmtree, os.environ[ENV_DIR], True)
