"""The egress proxy of a user-mode session confined by Landlock (ABI >= 4).

User mode has no network namespace of its own; where the kernel's Landlock has TCP
rules, the agent may connect only to this proxy's port
(:mod:`sandbox_setup.policy.landlock`), so user mode gets the same allowlist as sandbox
mode (:class:`~sandbox_setup.policy.network.EgressPolicy`: Claude's endpoints and the
config's ``allowed_domains``). The proxy listens on an ephemeral port of the host's
``127.0.0.1``, bound here by the launcher, runs as the agent (never root), logs to the
operator's ``egress.log`` like a sandbox session's, is probed before Claude is released
(it answers, and refuses what every policy refuses) and dies with the session. A proxy
that cannot start refuses the launch; nothing falls back to the host's network.

Another local account could connect to that port too: it gets the same allowlist, no
more (the proxy refuses loopback, private ranges and the host's own addresses).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.launcher.egress.network import PROBE_TIMEOUT, _log, build_policy, open_egress_log
from sandbox_setup.launcher.egress.proxy import ProxyProcess, fork_proxy, probe_proxy

if TYPE_CHECKING:
    from sandbox_setup.launcher.egress.server import Resolver


class UserEgress:
    """The proxy of one user-mode session: :meth:`start`, then :attr:`port`, :meth:`close`."""

    def __init__(self, port: int, proxy: ProxyProcess, log_fd: int) -> None:
        self.port = port
        self.proxy = proxy
        self.log_fd = log_fd

    @classmethod
    def start(
        cls,
        config: LauncherConfig,
        uid: int,
        gid: int,
        log_dir: Path,
        *,
        resolver: Resolver | None = None,
        after_drop: Callable[[], None] | None = None,
    ) -> UserEgress:
        """Bind, fork as ``uid:gid``, wait until it serves, probe it; else RefusedError."""
        policy = build_policy(config)
        log_fd = open_egress_log(log_dir)
        try:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                listener.bind(("127.0.0.1", 0))
                listener.listen(128)
            except OSError as exc:
                listener.close()
                raise RefusedError(f"cannot listen for the egress proxy: {exc.strerror}") from None
            port = listener.getsockname()[1]
            _log(log_fd, event="session start", launcher=os.getpid(), uid=uid, mode="user",
                 port=port, allowed=[str(p) for p in (*policy.allowed,
                                                      *policy.allowed_addresses)])  # fmt: skip
            proxy = fork_proxy(None, policy, log_fd, uid, gid, listener=listener,
                               resolver=resolver, after_drop=after_drop)  # fmt: skip
        except BaseException:
            os.close(log_fd)
            raise
        session = cls(port, proxy, log_fd)
        try:
            proxy.wait_ready()
            probe_proxy(
                lambda: socket.create_connection(("127.0.0.1", port), timeout=PROBE_TIMEOUT)
            )
        except BaseException:
            session.close()
            raise
        return session

    def close(self) -> None:
        """Stop the proxy, close the log (idempotent)."""
        self.proxy.stop()
        if self.log_fd >= 0:
            _log(self.log_fd, event="session end", launcher=os.getpid())
            os.close(self.log_fd)
            self.log_fd = -1
