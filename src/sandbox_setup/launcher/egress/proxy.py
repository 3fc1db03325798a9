"""The launcher's egress proxy (invariant 7): start it unprivileged, tied to the launcher.

In ``allowlist`` mode the sandbox has its own network namespace with loopback only.
Its one way out is this proxy, serving HTTP CONNECT, plain HTTP forwarding and SOCKS5
(:mod:`sandbox_setup.launcher.egress.server`) on listeners made inside that namespace
(:mod:`sandbox_setup.launcher.egress.netns`); it also serves a unix socket of its own where one is
asked for (the tests' way to reach it).

The launcher, as root (:class:`sandbox_setup.launcher.egress.network.EgressSession`):

1. builds an :class:`~sandbox_setup.policy.network.EgressPolicy` and opens the decision log
   (root-owned; the proxy only ever holds the fd);
2. calls :func:`fork_proxy` once bwrap is started (while it sets the sandbox up): the
   child first closes every fd but its own, then drops to the given uid/gid for good
   (``setgroups([])``, ``setresgid``, ``setresuid``, checked, and a failed
   ``setuid(0)`` proves it), arms ``PR_SET_PDEATHSIG(SIGKILL)`` so it dies with the
   launcher however the launcher ends, and waits for its listeners
   (:meth:`ProxyProcess.hand_over`, once the sandbox is verified); then it serves and
   writes its ready byte, or the launcher kills it and refuses (exit 3: nothing falls
   back to the host's network);
3. runs :func:`probe_proxy` from inside the sandbox's namespace before releasing
   Claude: a destination every policy refuses must come back refused, by this proxy,
   on both protocols.

Why SOCKS5 too: Claude Code's inner (Bash) sandbox, sandbox-runtime, sends its
commands' ``ALL_PROXY``/``FTP_PROXY``/``RSYNC_PROXY`` and git-over-ssh through a SOCKS
port (``sandbox.network.socksProxyPort``); when only the HTTP port is external it
starts a SOCKS proxy of its own, which would bypass this policy. Both ports point at
the one listener; the first byte tells the protocols apart.

Seams, passed in as arguments and never read from the environment (a launch's
environment is the operator's, and the proxy's DNS is not theirs to replace):
``resolver`` replaces the proxy's DNS (every address it gives still passes the address
rules); ``after_drop`` runs in the proxy process right after its privilege drop, before
it serves (a test exits there: a proxy that cannot start, as the launcher sees it). A
launch passes them from :class:`sandbox_setup.launcher.seams.LaunchSeams`.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.agent_step import agent_may_retry, as_agent
from sandbox_setup.launcher.egress.netns import MAX_SOCKETS
from sandbox_setup.launcher.egress.wire import PROXY_HEADER
from sandbox_setup.policy.addresses import parse_address
from sandbox_setup.policy.network import REFUSED_PREFIX, EgressPolicy

if TYPE_CHECKING:
    import ssl

    from sandbox_setup.launcher.egress.server import EgressProxy, Resolver
    from sandbox_setup.policy.credentials import GatewaySpec

START_TIMEOUT = 5.0
PROBE_TIMEOUT = 5.0
# Always refused, whatever the operator allowed: the unspecified address means "this
# host" and no exact allowance lifts that rule.
PROBE_DESTINATION = ("0.0.0.0", 9)
NOT_STARTED = (
    "the egress proxy did not start; refusing to launch (nothing falls back to the host's network)"
)
PR_SET_PDEATHSIG = 1
PR_GET_PDEATHSIG = 2
PR_SET_NO_NEW_PRIVS = 38
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


def serve(
    socket_path: str | Path,
    policy: EgressPolicy,
    log_fd: int | None,
    ready_fd: int | None,
    *,
    sock: socket.socket | None = None,
    resolver: Resolver | None = None,
    forwards: Sequence[tuple[socket.socket, int]] = (),
    more: Sequence[socket.socket] = (),
    launcher: int | None = None,
    gateway: tuple[GatewaySpec, Sequence[socket.socket], ssl.SSLContext | None] | None = None,
    egress: EgressProxy | None = None,
) -> None:
    """Serve the proxy on ``socket_path`` (or the already bound ``sock``) until killed.

    Writes one byte to ``ready_fd`` (and closes it) once accepting connections.
    Decisions go to ``log_fd``, one JSON line each. ``resolver``: how names are
    resolved (default: DNS, :func:`~sandbox_setup.launcher.egress.server.resolve_by_dns`).
    ``forwards``: listening sockets whose connections go to ``127.0.0.1:PORT`` of this
    network namespace, unfiltered (``--allow-loopback-port``). ``more``: further
    listening sockets served like ``sock`` (the sandbox's ``[::1]`` listener).
    ``launcher``: the pid of the launcher that forked it, in every log record (which
    session a decision belongs to, for ``sandbox-setup --status``).
    ``gateway``: the session's API gateway, its listeners and TLS context
    (:mod:`sandbox_setup.launcher.egress.gateway`), served beside the proxy.
    ``egress``: the proxy made already (:func:`fork_proxy`'s, while it waited for its
    listeners), else made here from ``policy``, ``resolver`` and ``launcher``.
    """
    # why: loaded by whoever serves (fork_proxy loads it before its fork, _preload).
    from sandbox_setup.launcher.egress import server as proxy_server

    if sock is None:
        sock = bind_socket(socket_path)
    proxy = egress or proxy_server.EgressProxy(
        policy, log_fd, resolver, read_host_addresses(), launcher=launcher
    )
    if gateway is not None and gateway[1]:
        from sandbox_setup.launcher.egress.gateway import Gateway

        Gateway(gateway[0], log_fd, gateway[2]).start(gateway[1])
    proxy_server.run(sock, proxy, ready_fd, read_host_addresses, forwards=forwards, more=more)


def bind_socket(
    socket_path: str | Path, owner: tuple[int, int] | None = None, mode: int = 0o600
) -> socket.socket:
    """A listening unix socket at ``socket_path`` (which must not exist), with owner and mode."""
    path = str(socket_path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # Created 0600 from the start (umask), then given to the account that connects.
        old = os.umask(0o177)
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        if owner is not None and (os.geteuid() == 0 or owner != (os.getuid(), os.getgid())):
            os.chown(path, *owner)
        os.chmod(path, mode)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise RefusedError(f"egress proxy socket {path}: {exc.strerror}") from None
    return sock


class ProxyProcess:
    """A proxy process forked by :func:`fork_proxy`: wait until it serves, then stop it."""

    def __init__(
        self,
        pid: int,
        ready_fd: int,
        paths: Sequence[str],
        remove: bool,
        control: socket.socket | None = None,
        ids: tuple[int, int] | None = None,
    ) -> None:
        self.pid = pid
        self._ids = ids  # the proxy's uid and gid
        self._ready_fd: int | None = ready_fd
        self._paths = tuple(paths)
        self._remove = remove  # the sockets are ours to unlink at the end
        self._reaped = False
        self._control = control  # a proxy forked with later=True waits on it

    def hand_over(
        self,
        listeners: Sequence[socket.socket],
        forwards: Sequence[tuple[socket.socket, int]],
        gateway: Sequence[socket.socket] = (),
    ) -> None:
        """Give a proxy forked with ``later=True`` its listening sockets (closed here
        after); it starts serving them, then reports ready (:meth:`wait_ready`).
        ``gateway``: the API gateway's listeners (a proxy forked with its spec)."""
        control, self._control = self._control, None
        socks = [*listeners, *(s for s, _ in forwards), *gateway]
        try:
            if control is None:
                raise RefusedError("the egress proxy was not started to be handed sockets")
            spec = [["proxy", 0] for _ in listeners] + [["forward", p] for _, p in forwards]
            spec += [["gateway", 0] for _ in gateway]
            try:
                socket.send_fds(control, [json.dumps(spec).encode()], [s.fileno() for s in socks])
            except OSError:  # it is gone: it never started (the same refusal as wait_ready)
                self.stop()
                raise RefusedError(NOT_STARTED) from None
        finally:
            if control is not None:
                control.close()
            for sock in socks:
                sock.close()

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Return once the proxy accepts connections; else stop it and :class:`RefusedError`."""
        fd, self._ready_fd = self._ready_fd, None
        if fd is None:
            return
        try:
            readable, _, _ = select.select([fd], [], [], timeout)
            ready = bool(readable) and os.read(fd, 1) == b"R"
        finally:
            os.close(fd)
        if not ready:
            self.stop()
            raise RefusedError(NOT_STARTED)

    def _kill(self) -> None:
        """SIGKILL the proxy. Root without CAP_KILL (a container that dropped it) may
        not signal another account's process, and the reap would then wait for ever:
        the signal is then sent by a child with the proxy's effective uid (root's real
        and saved ones: :mod:`sandbox_setup.launcher.agent_step`), which may."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except PermissionError:
            if self._ids is None or not agent_may_retry(self._ids[0]):
                return
            pid = self.pid
            with contextlib.suppress(OSError):
                as_agent(*self._ids, lambda: os.kill(pid, signal.SIGKILL))
        except OSError:
            pass

    def stop(self) -> None:
        """Kill and reap the proxy (idempotent); remove its sockets when it made them."""
        if self._ready_fd is not None:
            os.close(self._ready_fd)
            self._ready_fd = None
        if self._control is not None:
            self._control.close()
            self._control = None
        if not self._reaped:
            self._kill()
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
            self._reaped = True
        if self._remove:
            for path in self._paths:
                with contextlib.suppress(OSError):
                    os.unlink(path)


def start_proxy_process(
    socket_path: str | Path,
    policy: EgressPolicy,
    log_fd: int | None,
    uid: int,
    gid: int,
    *,
    socket_owner: tuple[int, int] | None = None,
    socket_mode: int = 0o600,
    timeout: float = START_TIMEOUT,
    listener: socket.socket | None = None,
    forwards: Mapping[int, str | Path] | None = None,
    resolver: Resolver | None = None,
    after_drop: Callable[[], None] | None = None,
) -> int:
    """Fork the proxy as ``uid:gid``; its pid once it is accepting, else :class:`RefusedError`.

    Call it from the launcher's main thread: the parent-death signal fires when the
    *thread* that forked ends. The caller reaps the child (``waitpid``) and removes
    ``socket_path`` at the end of the session. ``socket_owner`` is the account that
    connects (default ``uid:gid``). ``listener``: serve this listening socket instead
    of binding ``socket_path`` (e.g. a TCP socket the launcher made inside the
    sandbox's network namespace); it is closed in the caller either way.
    ``forwards``: ``{port: socket path}``; ``resolver``, ``after_drop``: see :class:`ProxyStart`.
    """
    process = fork_proxy(ProxyStart(
        policy, uid, gid, log_fd, socket_path, socket_owner=socket_owner,
        socket_mode=socket_mode, listener=listener, forwards=forwards, resolver=resolver,
        after_drop=after_drop,
    ))  # fmt: skip
    process.wait_ready(timeout)
    return process.pid


@dataclass(frozen=True, slots=True)
class ProxyStart:
    """What :func:`fork_proxy` starts: the proxy's policy, account and log, and what it
    listens on.

    It serves ``socket_path`` (a unix socket bound here, for ``socket_owner``, default
    ``uid:gid``, with ``socket_mode``), or ``listener`` (a listening socket made
    elsewhere, e.g. inside the sandbox's network namespace: the proxy's after the call,
    closed in the caller either way). ``forwards`` maps a port of this namespace's
    loopback to a unix socket (bound here, like ``socket_path``) whose connections go
    to ``127.0.0.1:PORT``. ``later``: the proxy starts now (its start-up overlaps the
    sandbox's) and waits for its sockets until :meth:`ProxyProcess.hand_over` gives them
    (instead of any of the above). ``resolver``: the proxy's DNS (default: the real
    one). ``after_drop``: called in the proxy right after its privilege drop, before it
    serves (a test's seam; an exit or an exception there is a proxy that did not
    start). ``gateway``: the session's API gateway (with ``later``), whose listeners
    :meth:`ProxyProcess.hand_over` gives; its secrets reach the proxy by the fork,
    never through an argument or the environment.
    """

    policy: EgressPolicy
    uid: int
    gid: int
    log_fd: int | None = None
    socket_path: str | Path | None = None
    socket_owner: tuple[int, int] | None = None
    socket_mode: int = 0o600
    listener: socket.socket | None = None
    forwards: Mapping[int, str | Path] | None = None
    later: bool = False
    resolver: Resolver | None = None
    after_drop: Callable[[], None] | None = None
    gateway: GatewaySpec | None = None


def fork_proxy(start: ProxyStart) -> ProxyProcess:
    """Bind the sockets and fork the proxy as ``start.uid:gid``, without waiting for it.

    The caller then calls :meth:`ProxyProcess.wait_ready` (and :func:`probe_proxy`)
    before it releases Claude.
    """
    socket_path, listener, log_fd = start.socket_path, start.listener, start.log_fd
    uid, gid, later, gateway = start.uid, start.gid, start.later, start.gateway
    given = [listener] if listener is not None else []
    try:
        if uid == 0 or gid == 0:
            raise RefusedError("the egress proxy never runs as root")
        if socket_path is None and not given and not later:
            raise RefusedError("the egress proxy has nothing to listen on")
    except BaseException:
        for sock in given:
            sock.close()
        raise
    owner = start.socket_owner or (uid, gid)
    paths: list[str] = []
    serving: list[socket.socket] = [*given]
    bound: list[tuple[socket.socket, int]] = []
    try:
        if socket_path is not None and listener is None:
            serving.insert(0, bind_socket(socket_path, owner, start.socket_mode))
            paths.append(str(socket_path))
        for port, path in (start.forwards or {}).items():
            bound.append((bind_socket(path, owner, start.socket_mode), port))
            paths.append(str(path))
    except BaseException:
        for sock in (*serving, *(f for f, _ in bound)):
            sock.close()
        for path in paths:
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise
    control, control_child = (
        socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) if later else (None, None)
    )
    parent = os.getpid()
    # Loaded here, not in the child: imported after the fork they cost it twice as much
    # (the launcher's pages copied on write), on the way to Claude's release.
    _preload()
    ready_r, ready_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the proxy
        code = 70
        try:
            os.close(ready_r)
            keep = {ready_w, *_fds(log_fd), *(s.fileno() for s in serving),
                    *(f.fileno() for f, _ in bound)}  # fmt: skip
            if control_child is not None:
                keep.add(control_child.fileno())
            # First of all: a launch forks the proxy once bwrap is started, and the
            # sandbox's gate and block pipes must be the launcher's alone (the
            # launcher's signal wake-up fd goes first, so no signal writes to a number
            # closed here and reused).
            with contextlib.suppress(OSError):
                signal.set_wakeup_fd(-1)
            _close_other_fds(keep)
            _preload()
            context = _gateway_context(gateway)  # the CA files are read while root
            _become_proxy(uid, gid, parent, keep=keep)
            if start.after_drop is not None:
                start.after_drop()
            # why: preloaded above (no import after the drop).
            from sandbox_setup.launcher.egress.server import EgressProxy

            # Made before its listeners come: what does not need them is not on the way.
            egress = EgressProxy(
                start.policy, log_fd, start.resolver, read_host_addresses(), launcher=parent
            )
            gateway_socks: list[socket.socket] = []
            if control_child is not None:
                serving, bound, gateway_socks = _receive_listeners(control_child)
            served = (gateway, gateway_socks, context) if gateway is not None else None
            serve(socket_path or "", start.policy, log_fd, ready_w, sock=serving[0],
                  resolver=start.resolver, forwards=bound, more=serving[1:],
                  gateway=served, launcher=parent, egress=egress)  # fmt: skip
            code = 0
        except BaseException as exc:
            if log_fd is not None:
                line = json.dumps({"event": "proxy failed", "error": _failure(exc)})
                with contextlib.suppress(OSError):
                    os.write(log_fd, (line + "\n").encode())
        finally:
            os._exit(code)
    for sock in (*serving, *(f for f, _ in bound)):
        sock.close()
    if control_child is not None:
        control_child.close()
    os.close(ready_w)
    return ProxyProcess(pid, ready_r, paths, remove=True, control=control, ids=(uid, gid))


def _failure(exc: BaseException) -> str:
    """A failed proxy's traceback, for the log; imported on failure only (``traceback``
    and its ``textwrap`` are a millisecond of every launch's fork otherwise)."""
    try:
        import traceback
    except ImportError:  # after the drop, where the proxy cannot read the install
        return f"{type(exc).__name__}: {exc}"
    return traceback.format_exc()


def _gateway_context(gateway: GatewaySpec | None) -> ssl.SSLContext | None:
    """While root: load the gateway (and ssl) and read the CA files it needs."""
    if gateway is None:
        return None
    # why: the gateway is the proxy process's own; the launcher never loads it.
    from sandbox_setup.launcher.egress.gateway import tls_context

    return tls_context() if gateway.upstream.startswith("https:") else None


def _receive_listeners(
    control: socket.socket,
) -> tuple[list[socket.socket], list[tuple[socket.socket, int]], list[socket.socket]]:
    """In a proxy forked with ``later``: the sockets :meth:`ProxyProcess.hand_over`
    sends; with none (the launcher gave up), the proxy just ends."""
    message, fds, _flags, _addr = socket.recv_fds(control, 65536, MAX_SOCKETS)
    control.close()
    spec = json.loads(message or b"[]")
    if not fds or not isinstance(spec, list) or len(spec) != len(fds):
        os._exit(0)
    serving: list[socket.socket] = []
    bound: list[tuple[socket.socket, int]] = []
    gateway: list[socket.socket] = []
    for (role, port), fd in zip(spec, fds, strict=True):
        sock = socket.socket(fileno=fd)
        if role == "proxy":
            serving.append(sock)
        elif role == "gateway":
            gateway.append(sock)
        else:
            bound.append((sock, int(port)))
    if not serving:
        os._exit(0)
    return serving, bound, gateway


def _preload() -> None:
    """Load, while still root, every module and codec the proxy will need (the
    launcher, before it forks the proxy; the child again, which then finds them loaded).

    After the drop the proxy's account may not be able to read the Python install
    (a venv under /root is 0700): a lazy import or codec lookup there would fail.
    """
    # why: the proxy's server, loaded by a launch with a proxy only.
    from sandbox_setup.launcher.egress import server as proxy_server  # noqa: F401

    for codec in ("ascii", "latin-1", "utf-8", "idna"):  # idna: getaddrinfo of a str
        codecs.lookup(codec)
    "preload.invalid".encode("idna")


def _fds(fd: int | None) -> set[int]:
    return set() if fd is None else {fd}


def _become_proxy(uid: int, gid: int, parent: int, keep: set[int]) -> None:
    """In the child: leave the terminal, drop privileges for good, die with the launcher."""
    # Out of the launcher's session and process group: a Ctrl-C at the terminal is for
    # Claude, and must not kill the sandbox's only way out.
    os.setsid()
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                   signal.SIGWINCH, signal.SIGCHLD, signal.SIGTSTP, signal.SIGTTOU):  # fmt: skip
        signal.signal(number, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        signal.set_wakeup_fd(-1)
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    elif (os.getuid(), os.getgid()) == (uid, gid):
        # A non-root operator's own account: nothing to drop but the saved ids.
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    else:
        raise RefusedError("only root can start the proxy as another account")
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise RefusedError("the egress proxy's privilege drop did not stick")
    if _can_become_root():
        raise RefusedError("the egress proxy could regain root")
    libc = ctypes.CDLL(None, use_errno=True)
    # After the uid change: changing credentials clears the parent-death signal.
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise RefusedError("PR_SET_NO_NEW_PRIVS failed for the egress proxy")
    # Not dumpable (a uid change already made it so; said here, and checked): the agent
    # may run as the same account, and must not read the proxy's memory or environment
    # (the API gateway's secrets, the launcher's environment it was forked with) through
    # /proc or ptrace (docs/design.md invariant 17).
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0):
        raise RefusedError("the egress proxy could not be made non-dumpable")
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise RefusedError("PR_SET_PDEATHSIG failed for the egress proxy")
    armed = ctypes.c_int(0)
    libc.prctl(PR_GET_PDEATHSIG, ctypes.byref(armed), 0, 0, 0)
    if armed.value != signal.SIGKILL:
        raise RefusedError("the egress proxy's parent-death signal is not armed")
    if os.getppid() != parent:
        os._exit(0)  # the launcher died before the signal was armed: nobody to serve
    _close_other_fds(keep)


def _can_become_root() -> bool:
    try:
        os.setuid(0)
    except PermissionError:
        return False
    return True


def _close_other_fds(keep: set[int]) -> None:
    """Every fd but ``keep`` closed; 0, 1 and 2 are /dev/null unless kept."""
    null = os.open("/dev/null", os.O_RDWR)
    for std in (0, 1, 2):
        if std not in keep and std != null:
            os.dup2(null, std)
    keep = keep | {0, 1, 2}
    if null not in keep:
        os.close(null)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def read_host_addresses(proc_net: str = "/proc/net") -> set[str]:
    """Every address of this host's interfaces (in this network namespace), IPv4 and IPv6."""
    addresses: set[str] = set()
    try:
        trie = Path(proc_net, "fib_trie").read_text(encoding="ascii")
    except OSError:
        trie = ""
    addresses |= parse_fib_trie(trie)
    try:
        inet6 = Path(proc_net, "if_inet6").read_text(encoding="ascii")
    except OSError:
        inet6 = ""
    addresses |= parse_if_inet6(inet6)
    return addresses


def parse_fib_trie(text: str) -> set[str]:
    """The local IPv4 addresses in ``/proc/net/fib_trie`` (``|-- A`` then ``/32 host LOCAL``)."""
    found, last = set(), None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|-- "):
            last = stripped[4:]
        elif last and stripped.startswith("/32 ") and stripped.endswith(" LOCAL"):
            found.add(last)
    return found


def parse_if_inet6(text: str) -> set[str]:
    """The IPv6 addresses in ``/proc/net/if_inet6`` (32 hex digits first on each line)."""
    found = set()
    for line in text.splitlines():
        fields = line.split()
        if fields and len(fields[0]) == 32:
            groups = ":".join(fields[0][i : i + 4] for i in range(0, 32, 4))
            address = parse_address(groups)
            if address is not None:
                found.add(address.compressed)
    return found


Target = str | Path | Callable[[], socket.socket]


def probe_proxy(target: Target, timeout: float = PROBE_TIMEOUT) -> None:
    """Check, before Claude is released, that *this* proxy answers and refuses.

    ``target`` is the proxy's unix socket, or a function returning a new socket
    connected to it (a session's: from inside the sandbox's network namespace).

    Both protocols ask for :data:`PROBE_DESTINATION`, which every policy refuses: HTTP
    must answer ``403`` with the proxy's marker header and message, SOCKS5 must answer
    "not allowed by ruleset". Anything else (no answer, another program on the socket,
    an allowed connection) is :class:`RefusedError`.
    """
    host, port = PROBE_DESTINATION
    answer = _probe_exchange(
        target, [f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()],
        timeout,
    )  # fmt: skip
    head, _, body = answer.partition(b"\r\n\r\n")
    if not (
        head.startswith(b"HTTP/1.1 403 ")
        and f"\r\n{PROXY_HEADER}: refused".encode() in head
        and body.startswith(REFUSED_PREFIX.encode())
    ):
        raise RefusedError(
            f"the egress proxy probe over HTTP got {answer[:120]!r}, not the proxy's refusal"
        )
    socks = _probe_exchange(
        target,
        [b"\x05\x01\x00", b"\x05\x01\x00\x01" + socket.inet_aton(host) + port.to_bytes(2, "big")],
        timeout,
    )
    if socks[:2] != b"\x05\x00" or socks[2:4] != b"\x05\x02":
        raise RefusedError(
            f"the egress proxy probe over SOCKS5 got {socks[:12]!r}, "
            "not 'connection not allowed by ruleset'"
        )


def _probe_exchange(target: Target, messages: list[bytes], timeout: float) -> bytes:
    answer = b""
    where = "in the sandbox" if callable(target) else f"at {target}"
    try:
        if callable(target):
            sock = target()
        else:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(str(target))
        with sock:
            sock.settimeout(timeout)
            for message in messages:
                sock.sendall(message)
                if message is not messages[-1]:
                    answer += sock.recv(2)
            while chunk := sock.recv(65536):
                answer += chunk
    except OSError as exc:
        raise RefusedError(f"the egress proxy {where} does not answer: {exc}") from None
    return answer
