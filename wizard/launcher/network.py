"""The sandbox's network (invariant 7): what bwrap gets, and the egress proxy of a session.

``network`` of ``launcher.toml`` (sandbox mode):

* ``allowlist``: the sandbox has a network namespace of its own (``--unshare-net``:
  loopback only, no route anywhere). Its one way out is a directory bound read-only at
  :data:`INSIDE_DIR` holding unix sockets of processes the launcher started outside:
  ``egress.sock``, the egress proxy (:mod:`wizard.launcher.proxy`, which decides by
  :class:`~wizard.policy.network.EgressPolicy`), and one ``loopback-PORT.sock`` per
  ``--allow-loopback-port``, forwarded to the host's ``127.0.0.1:PORT``. Inside, the
  gate (:data:`BRIDGE_SCRIPT`, run after the release token) starts one socat bridge per
  socket on ``127.0.0.1:PORT`` (and ``[::1]:PORT`` where the namespace has IPv6), waits
  until each listens, and only then execs Claude. ``HTTPS_PROXY``, ``HTTP_PROXY``,
  ``ALL_PROXY`` (and the lowercase forms) point at ``127.0.0.1:SANDBOX_PROXY_PORT``;
  ``NO_PROXY`` names loopback (and the exposed ports), nothing else.
* ``none``: ``--unshare-net`` and nothing else: Claude cannot reach its API.
* ``host``: the host's network namespace, shared; :func:`network_notice` says so on
  stderr at every launch.

The host side of an ``allowlist`` session is :class:`EgressSession`: a socket directory
(``/run/sandbox-launch/net-PID-XXXX``, root's, mode 0711: the agent can reach the
sockets it is given, list nothing and create nothing), the decision log opened by the
launcher (``egress.log`` in the operator's state directory, 0600, ``O_APPEND`` and
``O_NOFOLLOW``; the proxy only holds the fd), and the proxy process (as the agent, with
the loopback forwarders in it). It is forked before bwrap starts, and
:meth:`EgressSession.ready` (the proxy is accepting, and :func:`probe_proxy` shows it
refuses what every policy refuses) runs after the sandbox is verified and before Claude
is released: a proxy that cannot start refuses the launch (exit 3) and nothing falls
back to the host's network. It dies with the session however the session ends: the
launcher kills it when bwrap exits, and its parent-death signal kills it when the
launcher itself dies; the bridges live inside the sandbox's pid namespace and end with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.base.choices import Mode, Network
from wizard.base.errors import InputError, RefusedError
from wizard.base.launcher_config import LauncherConfig

if TYPE_CHECKING:
    from wizard.launcher.proxy import ProxyProcess
    from wizard.policy.network import EgressPolicy

# wizard.policy.network (ipaddress, its address tables: ~5 ms) is imported only where a
# sandbox with its own network needs it; user and unsafe launches never pay for it.
SANDBOX_PROXY_PORT = 3128  # == wizard.policy.network.SANDBOX_PROXY_PORT (a unit test says so)

# Inside the sandbox: the directory of sockets (on the sandbox's own /run tmpfs).
INSIDE_DIR = "/run/sandbox-launch"
EGRESS_SOCKET = "egress.sock"
# The host-side directory in bwrap's argv: known only at launch (like the pipe fds).
NET_DIR = "{net-dir}"
RUN_BASE = Path("/run/sandbox-launch")
DIR_PREFIX = "net-"
LOG_NAME = "egress.log"
LOG_ROTATE_BYTES = 16 * 1024 * 1024  # egress.log beyond this is moved to egress.log.1
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
BRIDGE_BUFFER = 262144  # socat -b: its 8 KiB default costs a third of the throughput

# After the gate's release: one socat bridge per "PORT:HEXPORT:SOCKET" argument, on
# 127.0.0.1:PORT (and [::1]:PORT when the namespace's loopback has ::1), then wait until
# every one listens (read from /proc/net/tcp{,6}: only this namespace's sockets are
# there) and exec the rest of the arguments (Claude). $1 is socat. A bridge that does not
# come up within about five seconds refuses: Claude never starts without its way out.
BRIDGE_SCRIPT = (
    "socat=$1; shift; v6=; "
    "while read -r addr _; do [ $addr = 00000000000000000000000000000001 ] && v6=1; "
    "done < /proc/net/if_inet6; "
    "want=; "
    'while [ $# -gt 0 ] && [ "$1" != -- ]; do '
    "port=${1%%:*}; rest=${1#*:}; hex=${rest%%:*}; sock=${rest#*:}; shift; "
    f'"$socat" -b {BRIDGE_BUFFER} TCP4-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr '
    'UNIX-CONNECT:$sock & want="$want tcp:$hex"; '
    'if [ -n "$v6" ]; then '
    f'"$socat" -b {BRIDGE_BUFFER} TCP6-LISTEN:$port,bind=[::1],fork,reuseaddr,ipv6only=1 '
    'UNIX-CONNECT:$sock & want="$want tcp6:$hex"; fi; '
    "done; shift; "
    "listening() { while read -r _ local _ state _; do "
    '[ "$state" = 0A ] && [ "${local##*:}" = "$2" ] && return 0; '
    'done < "/proc/net/$1"; return 1; }; '
    "tries=0; for w in $want; do "
    "until listening ${w%%:*} ${w#*:}; do tries=$((tries+1)); "
    "if [ $tries -gt 2500 ]; then echo \"sandbox-launch: the sandbox's network bridge "
    '(${w%%:*} port 0x${w#*:}) did not start; Claude Code was not started" >&2; exit 126; fi; '
    "sleep 0.002; done; done; "
    'exec "$@"'
)


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


def loopback_socket(port: int) -> str:
    return f"loopback-{port}.sock"


def proxy_url() -> str:
    return f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"


def network_binds(config: LauncherConfig) -> list[str]:
    """bwrap options for the network (after ``--tmpfs /run``): the socket directory."""
    if not is_allowlist(config):
        return []
    return ["--ro-bind", NET_DIR, INSIDE_DIR]


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


def bridge_specs(config: LauncherConfig) -> list[str]:
    """``PORT:HEXPORT:SOCKET`` for each bridge :data:`BRIDGE_SCRIPT` starts."""
    pairs = [(SANDBOX_PROXY_PORT, EGRESS_SOCKET)]
    pairs += [(port, loopback_socket(port)) for port in exposed_ports(config)]
    return [f"{port}:{port:04X}:{INSIDE_DIR}/{name}" for port, name in pairs]


def network_gate(config: LauncherConfig, socat: str | None) -> list[str]:
    """What the gate execs before Claude (allowlist: the bridges), else nothing."""
    if not is_allowlist(config):
        return []
    if socat is None:
        raise RefusedError("network allowlist needs socat for the sandbox's bridge to its proxy")
    return ["/bin/sh", "-c", BRIDGE_SCRIPT, "sandbox-bridges", socat, *bridge_specs(config), "--"]


def check_socat_visible(socat: str) -> None:
    """socat runs inside the sandbox, which sees the host's /usr only."""
    if not socat.startswith("/usr/"):
        raise RefusedError(
            f"socat resolves to {socat}, outside /usr, which is all of the host the sandbox "
            "sees; install socat from the distribution (apt-get install socat)"
        )


def network_notice(config: LauncherConfig) -> str | None:
    """The line on stderr at each launch for a sandbox without the allowlist, else None."""
    if config.mode != Mode.SANDBOX or config.network == Network.ALLOWLIST:
        return None
    from wizard.policy.network import network_exposure

    return f"sandbox-launch: network {config.network}: {network_exposure(config.network)}"


def network_notes(config: LauncherConfig) -> tuple[str, ...]:
    """What ``--dry-run`` says about the network."""
    if config.mode != Mode.SANDBOX:
        return ()
    from wizard.policy.network import CLAUDE_ENDPOINTS, network_exposure

    if config.network != Network.ALLOWLIST:
        return (f"network {config.network}: {network_exposure(config.network)}",)
    ports = exposed_ports(config)
    allowed = ", ".join((*CLAUDE_ENDPOINTS, *config.allowed_domains))
    notes = [
        f"network allowlist: a network namespace of its own; egress only through the "
        f"launcher's proxy (run as the agent, started and probed before Claude is released) "
        f"at {proxy_url()} inside, allowing {allowed}; {NET_DIR} is the session's socket "
        "directory, made at launch",
    ]
    if ports:
        notes.append(
            "loopback ports of the host seen inside at the same 127.0.0.1:PORT: "
            + ", ".join(map(str, ports))
        )
    return tuple(notes)


def build_policy(config: LauncherConfig) -> EgressPolicy:
    """Claude's endpoints plus the config's patterns; a bad pattern refuses the launch."""
    from wizard.policy.network import EgressPolicy

    try:
        return EgressPolicy.build(config.allowed_domains)
    except InputError as exc:
        raise RefusedError(f"launcher config: sandbox.allowed_domains: {exc}") from None


# --- the host side of one session -------------------------------------------------


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_dirs(base: Path) -> None:
    """Socket directories of launchers that died (SIGKILL leaves them): removed."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    euid = os.geteuid()
    for entry in entries:
        parts = entry.name.split("-")
        if len(parts) < 3 or parts[0] + "-" != DIR_PREFIX or not parts[1].isdigit():
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == euid and not _pid_alive(int(parts[1])):
            shutil.rmtree(entry.path, ignore_errors=True)


def _run_base(environ: Mapping[str, str]) -> tuple[Path, str]:
    """Where socket directories go, and the prefix of their names."""
    if os.geteuid() == 0:
        return RUN_BASE, DIR_PREFIX
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime), f"sandbox-launch-{DIR_PREFIX}"
    import tempfile

    return Path(tempfile.gettempdir()), f"sandbox-launch-{DIR_PREFIX}"


def make_socket_dir(environ: Mapping[str, str]) -> Path:
    """A fresh directory of ours, mode 0711, for the session's sockets."""
    import tempfile

    base, prefix = _run_base(environ)
    if base == RUN_BASE:
        try:
            base.mkdir(mode=0o755, exist_ok=True)
            info = os.lstat(base)
        except OSError as exc:
            raise RefusedError(f"cannot create {base}: {exc.strerror}") from None
        if (
            not stat.S_ISDIR(info.st_mode)
            or info.st_uid != os.geteuid()
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            raise RefusedError(
                f"{base} is not a directory of root's that only root can write; remove it"
            )
        remove_stale_dirs(base)
    try:
        path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=base))
        path.chmod(0o711)
    except OSError as exc:
        raise RefusedError(
            f"cannot create the sandbox's socket directory in {base}: {exc}"
        ) from None
    return path


def state_dir() -> Path:
    """The operator's state directory (where the journal and crash.log are too)."""
    import platformdirs  # only when a session needs it

    return Path(platformdirs.user_state_path("sandbox-setup"))


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
    import json

    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = json.dumps({"time": stamp, **fields}, sort_keys=True) + "\n"
    with contextlib.suppress(OSError):
        os.write(fd, line.encode())


class EgressSession:
    """The host side of one allowlist session (see the module docstring)."""

    def __init__(self, directory: Path, log_fd: int, proxy: ProxyProcess) -> None:
        self.directory = directory
        self.log_fd = log_fd
        self.proxy = proxy

    @property
    def socket_path(self) -> Path:
        return self.directory / EGRESS_SOCKET

    @classmethod
    def start(
        cls,
        config: LauncherConfig,
        uid: int,
        gid: int,
        environ: Mapping[str, str],
        log_dir: Path,
    ) -> EgressSession:
        """Make the directory, open the log, fork the proxy as ``uid:gid`` (not waited for)."""
        from wizard.launcher.proxy import fork_proxy

        policy = build_policy(config)
        ports = exposed_ports(config)
        log_fd = open_egress_log(log_dir)
        directory: Path | None = None
        try:
            directory = make_socket_dir(environ)
            _log(log_fd, event="session start", launcher=os.getpid(), uid=uid,
                 allowed=[str(p) for p in (*policy.allowed, *policy.allowed_addresses)],
                 loopback_ports=list(ports))  # fmt: skip
            proxy = fork_proxy(
                directory / EGRESS_SOCKET,
                policy,
                log_fd,
                uid,
                gid,
                environ=environ,
                forwards={port: directory / loopback_socket(port) for port in ports},
            )
        except BaseException:
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
            os.close(log_fd)
            raise
        return cls(directory, log_fd, proxy)

    def bind(self, argv: tuple[str, ...]) -> tuple[str, ...]:
        """``argv`` with the socket directory filled in."""
        return tuple(str(self.directory) if arg == NET_DIR else arg for arg in argv)

    def ready(self) -> None:
        """The proxy accepts, and refuses what every policy refuses; else RefusedError."""
        from wizard.launcher.proxy import probe_proxy

        self.proxy.wait_ready()
        probe_proxy(self.socket_path)

    def close(self) -> None:
        """Stop the proxy, remove the sockets, close the log (idempotent)."""
        self.proxy.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
        if self.log_fd >= 0:
            _log(self.log_fd, event="session end", launcher=os.getpid())
            os.close(self.log_fd)
            self.log_fd = -1


@contextlib.contextmanager
def egress_session(
    config: LauncherConfig, uid: int, gid: int, environ: Mapping[str, str], log_dir: Path
) -> Iterator[EgressSession | None]:
    """An :class:`EgressSession` for an allowlist sandbox (None otherwise), always closed."""
    if not is_allowlist(config):
        yield None
        return
    session = EgressSession.start(config, uid, gid, environ, log_dir)
    try:
        yield session
    finally:
        session.close()


__all__ = [
    "BRIDGE_SCRIPT",
    "INSIDE_DIR",
    "NET_DIR",
    "EgressSession",
    "egress_session",
    "network_binds",
    "network_env",
    "network_gate",
    "network_notes",
    "network_notice",
]
