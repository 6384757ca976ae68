"""The admin CLI's TLS switch and the one line that names a refused plain connection.

``rmq-emu admin`` connects with TLS given ``--tls``, or ``-Dtls.enable=true`` in ``$JAVA_OPT``:
the switch mqadmin reads (its launcher ``bin/tools.sh`` passes ``JAVA_OPT`` to the JVM, and
``ClientConfig.useTLS`` defaults to the ``tls.enable`` system property, Java
``TlsSystemConfig.tlsEnable``), so a script written for mqadmin works unchanged. Like a Java
client in test mode (``tls.test.mode.enable``, the default) the admin client trusts any server
certificate (:class:`rocketmq_emu.broker.tls.context.InsecureClientCreator`).
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from rocketmq_emu.broker.remoting.client import UnansweredCloseError

#: The JVM system property that turns TLS on for RocketMQ's clients and tools.
TLS_ENABLE_PROPERTY = "tls.enable"


def java_opt_tls_enable(java_opt: str) -> bool:
    """Whether ``JAVA_OPT`` sets ``-Dtls.enable=true`` (the last ``-Dtls.enable`` wins, as in
    the JVM; ``Boolean.parseBoolean``: only ``true``, in any case, is true)."""
    try:
        words = shlex.split(java_opt)
    except ValueError:  # unbalanced quotes: the JVM would not start; read the words as they are
        words = java_opt.split()
    enabled = False
    prefix = f"-D{TLS_ENABLE_PROPERTY}"
    for word in words:
        if word == prefix or word.startswith(prefix + "="):
            enabled = word[len(prefix) + 1:].strip().lower() == "true"
    return enabled


def tls_requested(args: Any, environ: dict[str, str] | None = None) -> bool:
    """Whether the admin command connects with TLS: ``--tls``, else ``-Dtls.enable=true`` in
    ``$JAVA_OPT``."""
    if getattr(args, "tls", False):
        return True
    env = os.environ if environ is None else environ
    return java_opt_tls_enable(env.get("JAVA_OPT", ""))


def tls_hint(exc: BaseException) -> str | None:
    """The one-line explanation of a failure caused by a server that closed a plain connection
    without answering (it enforces TLS), or None for any other failure."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, UnansweredCloseError):
            return f"{cur} try --tls"
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None
