"""The dashboard of an :class:`~rocketmq_emu.client.testing.EmbeddedCluster`: its address, served
on request, and a pause that keeps it live while a failing test waits."""

from __future__ import annotations

from typing import Any

from rocketmq_emu.client.blocking import in_reactor_context, run_blocking


class DashboardAccess:
    """Mixed into ``EmbeddedCluster``, whose ``running``, ``cluster``, ``controls`` and
    ``control_port`` it uses."""

    running: bool
    cluster: Any
    controls: Any
    control_port: int | None
    @property
    def dashboard_url(self) -> str:
        """``http://127.0.0.1:PORT/``: the dashboard of this cluster in a browser (the control
        API's port, served from the first time this is asked if ``control_port`` was not given)."""
        if not self.running:
            raise RuntimeError("the cluster is not running: no dashboard to show")
        if self.control_port is None or self.controls.listening is None:
            if in_reactor_context():
                self.control_port = self.controls.serve(self.cluster, self.control_port or 0)
            else:
                self.control_port = run_blocking(lambda: self.controls.serve(
                    self.cluster, self.control_port or 0), timeout=30)
        return f"http://127.0.0.1:{self.control_port}/"  # Controls.serve's interface

    def pause(self, prompt: str | None = None) -> None:
        """Wait for Enter while the brokers and the dashboard keep serving: put it where a test
        fails and look at :attr:`dashboard_url` in a browser (run pytest with ``-s``)."""
        from twisted.internet import threads

        text = prompt or f"rmq-emu: dashboard at {self.dashboard_url} - press Enter to go on "
        run_blocking(threads.deferToThread, input, text, timeout=None)
