"""The sandbox's network (invariant 7): what bwrap gets, and the egress proxy of a session.

``network`` of ``launcher.toml`` (sandbox mode):

* ``allowlist``: the sandbox has a network namespace of its own (``--unshare-net``:
  loopback only, no route anywhere). Its one way out is the egress proxy
  (:mod:`sandbox_setup.launcher.egress.proxy`, which decides by
  :class:`~sandbox_setup.policy.network.EgressPolicy`), a process of the host's side that listens
  inside: on ``127.0.0.1:SANDBOX_PROXY_PORT`` (and ``[::1]`` where the namespace has IPv6
  loopback) of the sandbox's own namespace, and likewise on each
  ``--allow-loopback-port`` PORT, forwarded to the host's ``127.0.0.1:PORT``. Those
  sockets are made in the namespace by
  :mod:`sandbox_setup.launcher.egress.netns`; nothing of the host
  is bound into the sandbox and no bridge runs in it. ``HTTPS_PROXY``, ``HTTP_PROXY``,
  ``ALL_PROXY`` (and the lowercase forms) point at ``127.0.0.1:SANDBOX_PROXY_PORT``;
  ``NO_PROXY`` names loopback (and the exposed ports), nothing else.
* ``none``: ``--unshare-net`` and nothing else: Claude cannot reach its API.
* ``host``: the host's network namespace, shared; :func:`network_notice` says so on
  stderr at every launch.

The host side of an ``allowlist`` session is :class:`EgressSession`: the decision log
opened by the launcher (``egress.log`` in the operator's state directory, 0600,
``O_APPEND`` and ``O_NOFOLLOW``; the proxy only holds the fd), and the proxy process (as
the agent, with the loopback forwarders in it). :meth:`EgressSession.ready` runs after
the sandbox is verified and before Claude is released: it makes the listeners in the
sandbox's namespace, forks the proxy on them and probes it from inside that namespace
(:func:`~sandbox_setup.launcher.egress.proxy.probe_proxy`: it answers, and refuses what every policy
refuses). A proxy that cannot start refuses the launch (exit 3) and nothing falls back
to the host's network. It dies with the session however the session ends: the launcher
kills it when bwrap exits, and its parent-death signal kills it when the launcher itself
dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import APP
from sandbox_setup.launcher.egress.netns import (
    BACKLOG,
    PROBE_SOCKETS,
    SandboxSockets,
    open_in_namespace,
    open_in_sandbox,
)
from sandbox_setup.launcher.egress.proxy import ProxyProcess, fork_proxy, probe_proxy
from sandbox_setup.policy.network import (
    CLAUDE_ENDPOINTS,
    SANDBOX_PROXY_PORT,
    EgressPolicy,
    network_exposure,
)

if TYPE_CHECKING:
    # the server runs in the proxy process only (asyncio-free, but not the launcher's)
    from sandbox_setup.launcher.egress.server import Resolver
    from sandbox_setup.policy.credentials import GatewaySpec

PROBE_TIMEOUT = 5.0

LOG_NAME = "egress.log"
LOG_ROTATE_BYTES = 16 * 1024 * 1024  # egress.log beyond this is moved to egress.log.1
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")


def is_allowlist(config: LauncherConfig) -> bool:
    return config.mode == Mode.SANDBOX and config.network == Network.ALLOWLIST


def exposed_ports(config: LauncherConfig) -> tuple[int, ...]:
    """The loopback ports the sandbox sees (deduplicated); refused when one is the proxy's."""
    ports = tuple(dict.fromkeys(config.loopback_ports))
    if SANDBOX_PROXY_PORT in ports:
        raise RefusedError(
            f"sandbox.loopback_ports: {SANDBOX_PROXY_PORT} is the port of the launcher's egress "
            "proxy inside the sandbox; it cannot also be an exposed loopback port"
        )
    return ports


def proxy_url() -> str:
    return f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"


def network_env(config: LauncherConfig) -> dict[str, str]:
    """The proxy variables inside the sandbox (allowlist only)."""
    if not is_allowlist(config):
        return {}
    env = dict.fromkeys(PROXY_ENV, proxy_url())
    bypass = ["localhost", "127.0.0.1", "::1"]
    for port in exposed_ports(config):
        bypass += [f"localhost:{port}", f"127.0.0.1:{port}"]
    env["NO_PROXY"] = env["no_proxy"] = ",".join(bypass)
    return env


def network_notice(config: LauncherConfig) -> str | None:
    """The line on stderr at each launch for a sandbox without the allowlist, else None."""
    if config.mode != Mode.SANDBOX or config.network == Network.ALLOWLIST:
        return None
    return f"sandbox-launch: network {config.network}: {network_exposure(config.network)}"


def network_notes(config: LauncherConfig) -> tuple[str, ...]:
    """What ``--dry-run`` says about the network."""
    if config.mode != Mode.SANDBOX:
        return ()
    if config.network != Network.ALLOWLIST:
        return (f"network {config.network}: {network_exposure(config.network)}",)
    ports = exposed_ports(config)
    allowed = ", ".join((*CLAUDE_ENDPOINTS, *config.allowed_domains))
    notes = [
        f"network allowlist: a network namespace of its own; egress only through the "
        f"launcher's proxy (run as the agent, listening at {proxy_url()} inside, started "
        f"and probed from inside before Claude is released), allowing {allowed}",
    ]
    if ports:
        notes.append(
            "loopback ports of the host seen inside at the same 127.0.0.1:PORT: "
            + ", ".join(map(str, ports))
        )
    return tuple(notes)


def build_policy(config: LauncherConfig) -> EgressPolicy:
    """Claude's endpoints plus the config's patterns; a bad pattern refuses the launch."""
    try:
        return EgressPolicy.build(config.allowed_domains)
    except InputError as exc:
        raise RefusedError(f"launcher config: sandbox.allowed_domains: {exc}") from None


# --- the host side of one session -------------------------------------------------


def state_dir() -> Path:
    """The operator's state directory (where the journal and crash.log are too)."""
    return platformdirs.user_state_path(APP)


def open_egress_log(directory: Path) -> int:
    """``directory/egress.log`` for appending (created 0600; never through a symlink)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = directory / LOG_NAME
        with contextlib.suppress(FileNotFoundError):
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) and info.st_size > LOG_ROTATE_BYTES:
                os.replace(path, directory / f"{LOG_NAME}.1")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        raise RefusedError(
            f"cannot open the egress decision log in {directory}: {exc.strerror or exc}; "
            "refusing to launch without it"
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_nlink != 1:
        os.close(fd)
        raise RefusedError(
            f"{path}: not a regular file of yours with one link; remove it (the egress "
            "decision log is recreated at the next launch)"
        )
    if info.st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


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
        ``after_drop``: see :func:`~sandbox_setup.launcher.egress.proxy.fork_proxy`.
        ``gateway``: the session's API gateway, served by the proxy (DESIGN.md
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
            session.proxy = fork_proxy(None, policy, log_fd, uid, gid, later=True,
                                       resolver=resolver, after_drop=after_drop,
                                       gateway=gateway)  # fmt: skip
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


__all__ = [
    "EgressSession",
    "network_env",
    "network_notes",
    "network_notice",
]
