"""The broker's listening ports: ``listenPort`` and the VIP channel's (Java ``BrokerController``'s
``remotingServer`` and ``fastRemotingServer``, the latter on ``listenPort - 2``).

Port 0 binds a free port that is then read back, as Java's ``NettyRemotingServer.start`` does;
what was bound is what the broker registers and advertises.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet.error import CannotListenError

log = logging.getLogger(__name__)

#: How many free ports ``listenPort`` 0 tries for one whose port - 2 is free too.
FREE_PAIR_ATTEMPTS = 20


def listen_broker_ports(reactor: Any, host: str, listen_port: int, factory: Any,
                        vip_factory: Any = None, vip_port: int | None = None) -> tuple[Any, Any]:
    """Listen with ``factory`` on ``listen_port`` and, unless ``vip_factory`` is None, with it on
    ``vip_port`` (None: ``listenPort - 2``); returns the listening ports (main, VIP or None).

    ``listen_port`` 0 (with no ``vip_port``) takes a free port P whose P - 2 is free too, so that
    clients deriving the VIP address from the registered one (``MixAll.brokerVIPChannel``) reach
    it; should no such pair come up, the VIP channel takes any free port (Java 5 gives
    ``fastConfig`` listenPort 0 when ``listenPort - 2`` is negative). With a port given, a VIP
    port that cannot be bound fails the start, as Java's ``BrokerController.start`` does.
    """

    def listen(port: int, f: Any) -> Any:
        return reactor.listenTCP(port, f, interface=host)

    if vip_factory is None:
        return listen(listen_port, factory), None
    if listen_port == 0 and vip_port is None:
        return _free_pair(listen, factory, vip_factory)
    main = listen(listen_port, factory)
    wanted = vip_port if vip_port is not None else max(main.getHost().port - 2, 0)
    try:
        return main, listen(wanted, vip_factory)
    except BaseException:
        main.stopListening()
        raise


def _free_pair(listen: Any, factory: Any, vip_factory: Any) -> tuple[Any, Any]:
    for _ in range(FREE_PAIR_ATTEMPTS):
        main = listen(0, factory)
        try:
            return main, listen(main.getHost().port - 2, vip_factory)
        except CannotListenError:  # P - 2 is taken: let P go, try another
            main.stopListening()
    main = listen(0, factory)
    try:
        vip = listen(0, vip_factory)
    except BaseException:
        main.stopListening()
        raise
    log.warning("no free port P with P-2 free after %d tries: the VIP channel listens on %d, "
                "which clients deriving it from the broker's address (port - 2, "
                "vipChannelEnabled) will not find", FREE_PAIR_ATTEMPTS, vip.getHost().port)
    return main, vip
