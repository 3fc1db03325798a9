"""The host side of one egress session: the decision log's lines, the proxy forked as
the agent, its listeners in the session's namespace, the probe from inside before
Claude is released (the module doc of :mod:`sandbox_setup.launcher.egress.network` says
how a session goes).

Apart from :mod:`~sandbox_setup.launcher.egress.network` (what bwrap gets, the
environment and the notices) so that a launch without a proxy (the host's network,
none) does not import the proxy and the namespace's sockets.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.launcher.egress.netns import (
    BACKLOG,
    PROBE_SOCKETS,
    SandboxSockets,
    open_in_namespace,
    open_in_sandbox,
)
from sandbox_setup.launcher.egress.network import build_policy, exposed_ports, open_egress_log
from sandbox_setup.launcher.egress.proxy import (
    ProxyProcess,
    ProxyStart,
    fork_proxy,
    probe_proxy,
)
from sandbox_setup.policy.network import SANDBOX_PROXY_PORT, EgressPolicy

if TYPE_CHECKING:
    # the server runs in the proxy process only (asyncio-free, but not the launcher's)
    from sandbox_setup.launcher.egress.server import Resolver
    from sandbox_setup.policy.credentials import GatewaySpec

PROBE_TIMEOUT = 5.0


def _log(fd: int, **fields: object) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = json.dumps({"time": stamp, **fields}, sort_keys=True) + "\n"
    with contextlib.suppress(OSError):
        os.write(fd, line.encode())


class EgressSession:
    """The host side of one allowlist session (see the module docstring)."""

    def __init__(
        self,
        policy: EgressPolicy,
        ports: tuple[int, ...],
        uid: int,
        gid: int,
        log_fd: int,
    ) -> None:
        self.policy = policy
        self.ports = ports
        self.uid, self.gid = uid, gid
        self.log_fd = log_fd
        self.proxy: ProxyProcess | None = None
        self.proxy_port = SANDBOX_PROXY_PORT  # where it listens inside the namespace
        self.gateway_port: int | None = None  # the API gateway's, when it has one

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
        mode: str | None = None,
        proxy_port: int = SANDBOX_PROXY_PORT,
        gateway: GatewaySpec | None = None,
    ) -> EgressSession:
        """Before bwrap starts: the policy (a bad pattern refuses the launch), the log,
        and the proxy forked as ``uid:gid``, which waits for its listeners (its start-up
        overlaps the sandbox's; :meth:`ready` hands them over). ``resolver`` and
        ``after_drop``: see :class:`~sandbox_setup.launcher.egress.proxy.ProxyStart`.
        ``gateway``: the session's API gateway, served by the proxy (docs/design.md
        invariant 17), listening at its port inside the namespace too."""
        policy = build_policy(config)
        ports = (
            exposed_ports(config)
            if proxy_port == SANDBOX_PROXY_PORT
            else tuple(dict.fromkeys(config.loopback_ports))
        )
        log_fd = open_egress_log(log_dir)
        try:
            extra = {"mode": mode} if mode is not None else {}
            _log(log_fd, event="session start", launcher=os.getpid(), uid=uid,
                 allowed=[str(p) for p in (*policy.allowed, *policy.allowed_addresses)],
                 loopback_ports=list(ports), **extra)  # fmt: skip
            session = cls(policy, ports, uid, gid, log_fd)
            session.proxy_port = proxy_port
            session.gateway_port = gateway.port if gateway is not None else None
            session.proxy = fork_proxy(ProxyStart(
                policy, uid, gid, log_fd, later=True, resolver=resolver,
                after_drop=after_drop, gateway=gateway,
            ))  # fmt: skip
        except BaseException:
            os.close(log_fd)
            raise
        return session

    def ready(self, sandbox_pid: int) -> None:
        """Listen in the sandbox's namespace, fork the proxy on it as the agent, and
        probe it from inside; :class:`RefusedError` when any of it fails."""
        sockets = open_in_sandbox(
            sandbox_pid, self.proxy_port, self._listening(), agent=(self.uid, self.gid)
        )
        self._serve(sockets)

    def ready_in(self, netns: int) -> None:
        """:meth:`ready` for a user-mode session's network namespace, made by the
        launcher (``netns``: its fd; :func:`~sandbox_setup.launcher.egress.netns.new_namespace`)."""
        self._serve(open_in_namespace(netns, self.proxy_port, self._listening()))

    def _listening(self) -> tuple[int, ...]:
        """The ports made in the namespace beside the proxy's: the exposed ones, and
        the API gateway's (made the same way, then handed over as the gateway's)."""
        return (*self.ports, *filter(None, [self.gateway_port]))

    def ready_on_host(self) -> None:
        """:meth:`ready` for a user-mode session without a namespace of its own (root
        cannot make one: Landlock's ports are the wall): the proxy listens on an
        ephemeral port of the host's ``127.0.0.1`` (then :attr:`proxy_port`), which
        Landlock lets the agent connect to; no forwarders (Landlock lets the exposed
        ports through themselves). Another local account could connect to that port
        too: it gets the same allowlist, no more."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(BACKLOG)
        except OSError as exc:
            listener.close()
            if self.proxy is not None:
                self.proxy.stop()
            raise RefusedError(f"cannot listen for the egress proxy: {exc.strerror}") from None
        self.proxy_port = listener.getsockname()[1]
        _log(self.log_fd, event="listening", port=self.proxy_port)
        probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(PROBE_SOCKETS)]
        self._serve(SandboxSockets(proxy=[listener], probes=probes))

    def _serve(self, sockets: SandboxSockets) -> None:
        assert self.proxy is not None
        probes = list(sockets.probes)
        gateway = [s for s, port in sockets.forwards if port == self.gateway_port]
        forwards = [(s, port) for s, port in sockets.forwards if port != self.gateway_port]
        try:
            self.proxy.hand_over(sockets.proxy, forwards, gateway)  # closes them here
            self.proxy.wait_ready()

            def inside() -> socket.socket:
                sock = probes.pop()
                sock.settimeout(PROBE_TIMEOUT)
                sock.connect(("127.0.0.1", self.proxy_port))
                return sock

            probe_proxy(inside)
        finally:
            for sock in probes:
                sock.close()

    def close(self) -> None:
        """Stop the proxy, close the log (idempotent)."""
        if self.proxy is not None:
            self.proxy.stop()
        if self.log_fd >= 0:
            _log(self.log_fd, event="session end", launcher=os.getpid())
            os.close(self.log_fd)
            self.log_fd = -1
