"""Startup failures described in one line (rocketmq_emu.broker.cli_errors)."""

from __future__ import annotations

import errno

from twisted.internet.error import CannotListenError

from rocketmq_emu.broker.cli_errors import PortRole, describe_startup_failure
from rocketmq_emu.broker.commitlog.store_lock import StoreLockedError
from rocketmq_emu.broker.configs.base import ConfigFileError

ROLES = [PortRole(9876, "name server port", "--namesrv-port")]


def _in_use(port: int) -> CannotListenError:
    return CannotListenError("127.0.0.1", port, OSError(errno.EADDRINUSE, "Address already in use"))


def test_port_in_use_names_port_role_and_option():
    """A taken port is named with what it is for and the option that changes it."""
    message = describe_startup_failure(_in_use(9876), ROLES)
    assert message == ("cannot listen on 127.0.0.1:9876 (name server port): address already in "
                       "use; stop the process using it or choose another port with --namesrv-port")


def test_store_lock_behind_a_runtime_error_is_found():
    """The cause chain is searched: a RuntimeError raised from StoreLockedError names the lock."""
    try:
        try:
            raise StoreLockedError(errno.EAGAIN, "locked")
        except StoreLockedError as e:
            raise RuntimeError("store did not load") from e
    except RuntimeError as outer:
        message = describe_startup_failure(outer, [], "/data/store")
    assert message is not None and "/data/store/lock" in message and "--store" in message


def test_os_error_inside_the_store_names_the_store():
    """An OSError on a path under the store root says the store cannot be written."""
    exc = PermissionError(errno.EACCES, "Permission denied", "/data/store/commitlog")
    message = describe_startup_failure(exc, [], "/data/store")
    assert message is not None
    assert message.startswith("cannot create or write the store at /data/store: Permission denied")


def test_config_file_error_is_one_line():
    """A ConfigFileError whose text spans lines comes out as one line."""
    message = describe_startup_failure(ConfigFileError("/s/config/topics.json:\nbad"), [])
    assert message is not None and "\n" not in message and "/s/config/topics.json" in message


def test_an_unexpected_error_is_not_described():
    """A bug (any other exception) gets None: the caller shows its traceback."""
    assert describe_startup_failure(KeyError("x"), ROLES, "/data/store") is None
