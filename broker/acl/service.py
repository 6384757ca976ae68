"""ACL 1.0 on the broker's remoting ports: the accounts loaded at start, the check of every
request, and the reload when a file changes (RocketMQ 4.9.8 ``BrokerController.initialAcl``,
``PlainAccessValidator`` as an ``RPCHook``, ``AclFileWatchService``).

Built only with ``aclEnable=true``: a broker without it has no interceptor and pays nothing.
``$ROCKETMQ_HOME`` is ``rocketmqHome`` of ``broker.conf``, else the environment variable (Java's
``BrokerConfig.rocketmqHome`` defaults to it). The files are those of
:func:`~rocketmq_emu.broker.acl.config.acl_file_paths`.

A rejected request is answered SYSTEM_ERROR with the ``AclException`` remark, as Java's
``NettyRemotingAbstract.processRequestCommand`` answers an exception of ``doBeforeRequest``
(a oneway request gets no answer); the connection stays open.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from twisted.internet.task import LoopingCall

from rocketmq_emu.broker.acl.config import (
    DEFAULT_PLAIN_FILE,
    AclConfig,
    AclConfigError,
    acl_file_paths,
    load_acl,
)
from rocketmq_emu.broker.acl.validator import validate_exc
from rocketmq_emu.broker.remoting.codes import ResponseCode
from rocketmq_emu.broker.remoting.command import RemotingCommand
from rocketmq_emu.broker.remoting.dispatcher import DROP, error_response

log = logging.getLogger(__name__)

#: ``AclFileWatchService.WATCH_INTERVAL`` (ms in Java): how often the files' mtimes are polled.
WATCH_INTERVAL_S = 5.0
#: Environment variable ``MixAll.ROCKETMQ_HOME_ENV``.
ROCKETMQ_HOME_ENV = "ROCKETMQ_HOME"


def resolve_home(configured: str | None) -> str | None:
    """``BrokerConfig.rocketmqHome``: the ``broker.conf`` value, else ``$ROCKETMQ_HOME``."""
    return configured or os.environ.get(ROCKETMQ_HOME_ENV) or None


class AclService:
    """The broker's ACL state (Java ``PlainPermissionManager`` + ``AclFileWatchService``).

    Constructing it loads the files: a bad file raises
    :class:`~rocketmq_emu.broker.acl.config.AclConfigError` (a start error naming file and key).
    """

    def __init__(self, home: str | None, plain_file: str = DEFAULT_PLAIN_FILE) -> None:
        self.home = home
        self.plain_file = plain_file
        if not home:
            log.warning("aclEnable=true but neither rocketmqHome nor $%s is set: no accounts, "
                        "every request that needs one is refused", ROCKETMQ_HOME_ENV)
        self.config: AclConfig = load_acl(home, plain_file)
        self._stamps = self._file_stamps()
        self._loop: LoopingCall | None = None
        log.info("ACL enabled: %d account(s) from %s", len(self.config.accounts),
                 ", ".join(self.config.files) or "no file")

    # --- the check (PlainAccessValidator as the server's RPCHook) -----------------------------
    def intercept(self, cmd: RemotingCommand, conn: Any) -> Any:
        """Dispatcher interceptor: None lets the request through; a refusal is answered
        SYSTEM_ERROR with the AclException remark (oneway: dropped)."""
        peer = getattr(conn, "peer", None)
        addr = f"{peer[0]}:{peer[1]}" if peer else None
        exc = validate_exc(self.config, cmd.code, cmd.ext_fields, cmd.body, addr)
        if exc is None:
            return None
        # NettyRemotingAbstract.processRequestCommand logs the hook's exception ("process
        # request exception") at ERROR; one line here, so a misconfigured client is visible.
        log.warning("ACL refused request code %d from %s: %s", cmd.code, addr, exc.message)
        if cmd.is_oneway:
            return DROP
        return error_response(cmd, ResponseCode.SYSTEM_ERROR, exc.remark())

    # --- the file watch (AclFileWatchService) --------------------------------------------------
    def _file_stamps(self) -> dict[str, tuple[int, int]]:
        """``(mtime_ns, size)`` of every ACL file there is now."""
        if not self.home:
            return {}
        stamps = {}
        for path in acl_file_paths(self.home, self.plain_file):
            try:
                st = os.stat(path)
            except OSError:
                continue
            stamps[path] = (st.st_mtime_ns, st.st_size)
        return stamps

    def poll(self) -> bool:
        """Reload if a file appeared, changed or went away; True if the config was replaced.
        A file that does not load keeps the old config (logged)."""
        stamps = self._file_stamps()
        if stamps == self._stamps:
            return False
        self._stamps = stamps
        try:
            config = load_acl(self.home, self.plain_file)
        except AclConfigError as exc:
            log.error("ACL files changed but not reloaded, the previous accounts stay: %s", exc)
            return False
        self.config = config
        log.info("ACL reloaded: %d account(s) from %s", len(config.accounts),
                 ", ".join(config.files) or "no file")
        return True

    def reload(self) -> bool:
        """Reload now (after an admin request wrote a file), as the watch would."""
        self._stamps = {}
        return self.poll()

    @property
    def default_file(self) -> str | None:
        """``$home/`` + ``rocketmq.acl.plain.file``: where new accounts are written."""
        return os.path.abspath(os.path.join(self.home, self.plain_file)) if self.home else None

    def start(self, clock: Any, interval: float = WATCH_INTERVAL_S) -> None:
        """Poll the files every ``interval`` seconds on ``clock``."""
        if self._loop is not None or not self.home:
            return
        loop = LoopingCall(self._safe_poll)
        loop.clock = clock
        loop.start(interval, now=False)
        self._loop = loop

    def _safe_poll(self) -> None:
        try:
            self.poll()
        except Exception:
            log.exception("ACL file watch failed")

    def stop(self) -> None:
        """Stop polling."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
