"""The default reactor for the server commands, imported without pyOpenSSL.

Importing ``twisted.internet.reactor`` imports pyOpenSSL (and ``cryptography``'s bindings) at
once: ``twisted.internet.posixbase`` imports ``twisted.protocols.tls`` and
``twisted.internet.ssl`` for ``listenSSL``/``connectSSL``, and ``twisted.internet.tcp`` imports
``twisted.internet._newtls`` for ``ITLSTransport.startTLS``. That is about half of the reactor's
import (measured here: 330 ms → 163 ms with a bytecode cache, slow hour; ``bench/startup.py``),
paid by every start although TLS is a feature used on demand.

This project needs none of those three: its server ports wrap ``TLSMemoryBIOFactory``
themselves on the first ClientHello (``broker/tls/sniff.py``) and its client side uses
``endpoints.wrapClientTLS``, both of which import ``twisted.protocols.tls`` when first used. So
the server commands import the reactor as Twisted is imported where pyOpenSSL is not
installed, a configuration Twisted supports (those modules fall back on ``ImportError``), and
pyOpenSSL is importable again right after, for the first TLS connection.

The cost of this: the reactor does not provide ``IReactorSSL`` and its TCP transports have no
``startTLS``; nothing in this project calls either. Only the process entry points call this,
never a library import (a test process or an application embedding the cluster keeps the
reactor it has).
"""

from __future__ import annotations

import sys
from typing import Any


def default_reactor() -> Any:
    """Install and return Twisted's default reactor, without importing pyOpenSSL for it."""
    if "twisted.internet.reactor" in sys.modules or "OpenSSL" in sys.modules:
        # Already paid (or TLS configured before the reactor): nothing to save.
        from twisted.internet import reactor

        return reactor
    sys.modules["OpenSSL"] = None  # type: ignore[assignment]  # "import OpenSSL" raises ImportError
    try:
        from twisted.internet import reactor
    finally:
        del sys.modules["OpenSSL"]
    return reactor
