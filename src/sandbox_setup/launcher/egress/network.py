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

The host side of an ``allowlist`` session is
:class:`~sandbox_setup.launcher.egress.session.EgressSession`: the decision log
opened by the launcher (``egress.log`` in the operator's state directory, 0600,
``O_APPEND`` and ``O_NOFOLLOW``; the proxy only holds the fd), and the proxy process (as
the agent, with the loopback forwarders in it). Its
:meth:`~sandbox_setup.launcher.egress.session.EgressSession.ready` runs after the sandbox
is verified and before Claude is released: it makes the listeners in the
sandbox's namespace, forks the proxy on them and probes it from inside that namespace
(:func:`~sandbox_setup.launcher.egress.proxy.probe_proxy`: it answers, and refuses what every policy
refuses). A proxy that cannot start refuses the launch (exit 3) and nothing falls back
to the host's network. It dies with the session however the session ends: the launcher
kills it when bwrap exits, and its parent-death signal kills it when the launcher itself
dies.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import platformdirs

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import APP
from sandbox_setup.policy.network import CLAUDE_ENDPOINTS, SANDBOX_PROXY_PORT, EgressPolicy
from sandbox_setup.policy.network_words import network_exposure

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


__all__ = [
    "network_env",
    "network_notes",
    "network_notice",
]
