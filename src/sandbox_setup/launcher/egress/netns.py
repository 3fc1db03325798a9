"""Sockets made inside the sandbox's network namespace, for the egress proxy outside it.

In ``allowlist`` mode the sandbox's network namespace has loopback only. Its way out is
the egress proxy, which runs on the host side (as the agent) but listens *inside*: on
``127.0.0.1:PORT`` (and ``[::1]:PORT`` where the namespace has IPv6 loopback) of the
sandbox's own namespace. A socket belongs to the namespace it was made in, wherever its
fd goes afterwards, so :func:`open_in_sandbox` makes them from inside the namespace
(the launcher's thread for the moment, or a helper that hands the fds back); the proxy
then accepts on them from the host side and dials out from there. No bridge process
runs in the sandbox and no socket of the host is bound into it.

As root, the launcher's thread joins the network namespace (``setns(CLONE_NEWNET)``,
which changes only that thread), makes them and joins its own again; a launcher that
is not root (its own account is the agent) forks a helper instead, which first joins
the user namespace that owns the network namespace (``NS_GET_USERNS``), where it holds
the capabilities ``setns`` needs (joining a user namespace takes a process of one
thread), and sends the fds back (``SCM_RIGHTS``). Made are the listeners, plus
unconnected TCP sockets for the launcher's probe
(:func:`sandbox_setup.launcher.egress.proxy.probe_proxy`), which therefore connects
from inside the sandbox's namespace exactly as Claude will. The launcher checks that
every socket it got really lives in the sandbox's namespace (``SIOCGSKNS``) and listens
where it should, or refuses the launch.

Root without those capabilities (a container's defaults: no ``CAP_SYS_PTRACE`` to open
the sandbox's ``/proc/PID/ns/net``, no ``CAP_SYS_ADMIN`` to join it, no ``CAP_NET_ADMIN``
for ``SIOCGSKNS``) does each refused step as the agent, which owns the sandbox's user
namespace: the same helper, run with the agent's effective ids
(:mod:`sandbox_setup.launcher.agent_step`); the checks stay the launcher's.

It runs while the sandbox waits on its release (after verification, before Claude
starts): bwrap has brought the namespace's loopback up by then.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.launcher.agent_step import (
    agent_may_retry,
    as_agent,
    become_agent,
    denied,
    open_as_agent,
    prepare,
)
from sandbox_setup.policy.limits import MAX_LOOPBACK_PORTS

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
NS_GET_USERNS = 0xB701  # ioctl on a namespace fd: the user namespace that owns it
SIOCGSKNS = 0x894C  # ioctl on a socket: an fd of its network namespace
HELPER_TIMEOUT = 5.0
# A quarter of what the proxy serves at once (limits.MAX_CONNECTIONS): a burst of
# connects (npm opens hundreds) waits in the queue. Past a full queue the kernel drops
# the handshake and the client retries after a second (bench/connections.py: 124 drops
# in 3 bursts of 200 at 128, each burst 0.5 s -> 1.2 s).
BACKLOG = 512
PROBE_SOCKETS = 2  # probe_proxy makes two connections (HTTP, then SOCKS5)
# The most sockets one launch makes in the namespace and passes on in one SCM_RIGHTS
# message: the proxy's port and every exposed port, each IPv4 and IPv6, plus the probes.
MAX_SOCKETS = 2 * (1 + MAX_LOOPBACK_PORTS) + PROBE_SOCKETS
SCM_MAX_FD = 253  # Linux: the most descriptors one SCM_RIGHTS message carries
assert MAX_SOCKETS <= SCM_MAX_FD, "MAX_LOOPBACK_PORTS: more than one message carries"
# The namespace has no IPv6 loopback (ipv6.disable=1, or no ::1 on lo): IPv4 only.
NO_IPV6 = frozenset({errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT})


@dataclass(slots=True)
class SandboxSockets:
    """What :func:`open_in_sandbox` made, all in the sandbox's network namespace."""

    proxy: list[socket.socket] = field(default_factory=list)  # the proxy port, v4 (+v6)
    forwards: list[tuple[socket.socket, int]] = field(default_factory=list)  # exposed ports
    probes: list[socket.socket] = field(default_factory=list)  # unconnected TCP (IPv4)

    def all(self) -> list[socket.socket]:
        return [*self.proxy, *(s for s, _ in self.forwards), *self.probes]

    def close(self) -> None:
        for sock in self.all():
            sock.close()


def _setns(fd: int, kind: int, what: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, kind) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"setns({what}): {os.strerror(code)}")


def _join(netns: int) -> None:
    """In the helper: enter the sandbox's network namespace (see the module docstring)."""
    if os.geteuid() != 0:
        owner = fcntl.ioctl(netns, NS_GET_USERNS)
        _setns(owner, CLONE_NEWUSER, "the sandbox's user namespace")
        os.close(owner)
    _setns(netns, CLONE_NEWNET, "the sandbox's network namespace")


def _listen(family: socket.AddressFamily, address: str, port: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


def _make(
    proxy_port: int, exposed: Sequence[int], probes: int
) -> tuple[list[socket.socket], list[object]]:
    """In the helper: the sockets and their description (``[role, family, port]`` each)."""
    made: list[socket.socket] = []
    spec: list[object] = []
    ipv6 = True
    try:
        for role, port in [("proxy", proxy_port), *(("forward", p) for p in exposed)]:
            made.append(_listen(socket.AF_INET, "127.0.0.1", port))
            spec.append([role, 4, port])
            if not ipv6:
                continue
            try:
                made.append(_listen(socket.AF_INET6, "::1", port))
                spec.append([role, 6, port])
            except OSError as exc:
                if exc.errno not in NO_IPV6:
                    raise
                ipv6 = False
        for _ in range(probes):
            made.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            spec.append(["probe", 4, 0])
    except BaseException:
        for sock in made:  # the thread's are ours: none may stay open
            sock.close()
        raise
    return made, spec


def _helper(
    netns: int,
    channel: socket.socket,
    proxy_port: int,
    exposed: Sequence[int],
    probes: int,
    agent: tuple[int, int] | None = None,
) -> None:
    """The forked helper's whole life; never returns."""
    code = 1
    try:
        if agent is not None:
            become_agent(*agent)
        _join(netns)
        made, spec = _make(proxy_port, exposed, probes)
        socket.send_fds(channel, [json.dumps(spec).encode()], [s.fileno() for s in made])
        code = 0
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            channel.sendall(json.dumps({"error": str(exc) or type(exc).__name__}).encode())
    finally:
        os._exit(code)


def _namespace_id(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _socket_namespace(sock: socket.socket) -> tuple[int, int]:
    fd = fcntl.ioctl(sock.fileno(), SIOCGSKNS)
    try:
        return _namespace_id(fd)
    finally:
        os.close(fd)


def _socket_namespaces(
    socks: Sequence[socket.socket], agent: tuple[int, int] | None
) -> list[tuple[int, int]]:
    """Which network namespace each socket is in (``SIOCGSKNS``: as root, that takes
    CAP_NET_ADMIN over the sandbox's user namespace; without it, asked as the agent,
    which owns that namespace: :mod:`sandbox_setup.launcher.agent_step`)."""
    try:
        try:
            return [_socket_namespace(sock) for sock in socks]
        except OSError as exc:
            if agent is None or not (denied(exc) and agent_may_retry(agent[0])):
                raise
        found = as_agent(*agent, lambda: [list(_socket_namespace(s)) for s in socks])
        if not isinstance(found, list) or len(found) != len(socks):
            raise OSError(errno.EIO, "a malformed answer")
        return [(int(dev), int(ino)) for dev, ino in found]
    except OSError as exc:
        raise RefusedError(
            f"cannot check which network namespace a socket made in the sandbox is in: "
            f"ioctl(SIOCGSKNS): {exc.strerror or exc}"
        ) from None


def _adopt(
    spec: object, fds: list[int], netns: int, agent: tuple[int, int] | None = None
) -> SandboxSockets:
    """The helper's fds as sockets, each checked; RefusedError (all closed) otherwise."""
    result = SandboxSockets()
    socks = [socket.socket(fileno=fd) for fd in fds]
    try:
        if not isinstance(spec, list) or len(spec) != len(socks):
            raise RefusedError("the sandbox's network helper sent a malformed answer")
        expected = _namespace_id(netns)
        found = _socket_namespaces(socks, agent)
        for entry, sock, where in zip(spec, socks, found, strict=True):
            role, family, port = entry
            if where != expected:
                raise RefusedError(
                    f"a socket for port {port} is not in the sandbox's network namespace"
                )
            if role == "probe":
                result.probes.append(sock)
                continue
            host = "127.0.0.1" if family == 4 else "::1"
            if sock.getsockname()[:2] != (host, port):
                raise RefusedError(f"the sandbox's listener for {host} port {port} is not there")
            if role == "proxy":
                result.proxy.append(sock)
            else:
                result.forwards.append((sock, port))
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return result


def open_in_sandbox(
    pid: int,
    proxy_port: int,
    exposed: Sequence[int] = (),
    timeout: float = HELPER_TIMEOUT,
    probes: int = PROBE_SOCKETS,
    agent: tuple[int, int] | None = None,
) -> SandboxSockets:
    """Listeners for ``proxy_port`` and each ``exposed`` port, and the probe's sockets,
    made in the network namespace of the sandbox process ``pid`` (its init, which waits
    on its release); :class:`RefusedError` when they cannot be. ``agent``: the
    ``(uid, gid)`` the sandbox runs as; root does as the agent what it lacks the
    capability for (:mod:`sandbox_setup.launcher.agent_step`)."""
    path = f"/proc/{pid}/ns/net"
    try:
        try:
            netns = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            if agent is None or not (denied(exc) and agent_may_retry(agent[0])):
                raise
            netns = open_as_agent(path, *agent)
    except OSError as exc:
        raise RefusedError(f"cannot open the sandbox's network namespace: {exc}") from None
    try:
        return _open_in(netns, proxy_port, exposed, timeout, probes, agent)
    finally:
        os.close(netns)


def open_in_namespace(
    netns: int,
    proxy_port: int,
    exposed: Sequence[int] = (),
    timeout: float = HELPER_TIMEOUT,
    probes: int = PROBE_SOCKETS,
) -> SandboxSockets:
    """:func:`open_in_sandbox` for a network namespace the launcher (root) made itself
    (:func:`new_namespace`, a user-mode session's): ``netns`` is its fd, kept open."""
    return _open_in(netns, proxy_port, exposed, timeout, probes, None)


def _open_in(
    netns: int,
    proxy_port: int,
    exposed: Sequence[int],
    timeout: float,
    probes: int,
    agent: tuple[int, int] | None,
) -> SandboxSockets:
    own = os.stat("/proc/self/ns/net")
    if _namespace_id(netns) == (own.st_dev, own.st_ino):
        raise RefusedError("the sandbox shares the launcher's network namespace")
    if os.geteuid() != 0:
        answer, fds = _by_helper(netns, proxy_port, exposed, probes, timeout)
    else:
        answer, fds = _by_this_thread(netns, proxy_port, exposed, probes)
        if agent is not None and _join_refused(answer) and agent_may_retry(agent[0]):
            answer, fds = _by_helper(netns, proxy_port, exposed, probes, timeout, agent)
    if isinstance(answer, dict) or not fds:
        for fd in fds:
            os.close(fd)
        why = answer.get("error") if isinstance(answer, dict) else "no sockets"
        raise RefusedError(
            f"cannot listen inside the sandbox's network namespace: {why}; refusing to "
            "launch (nothing falls back to the host's network)"
        )
    return _adopt(answer, fds, netns, agent)


# The step of :func:`_by_this_thread` that failed, in its answer (typed, beside the words).
JOIN_STEP = "join"


def _join_refused(answer: object) -> bool:
    """Root's thread could not join (no CAP_SYS_ADMIN over the sandbox's namespaces):
    the answer's typed step and errno, never its words."""
    if not isinstance(answer, dict):
        return False
    return answer.get("step") == JOIN_STEP and answer.get("errno") == errno.EPERM


Made = tuple[object, list[int]]  # the sockets' description (or {"error": ...}), their fds


def _by_this_thread(netns: int, proxy_port: int, exposed: Sequence[int], probes: int) -> Made:
    """As root: this thread joins the namespace (a network namespace is per thread: the
    launcher's other threads stay where they are), makes the sockets and joins its own
    again. Not a thread of its own: a new thread waits for a scheduler slice before it
    runs (2-3 ms on a busy machine), on the way to Claude's release. Should the way
    back fail, the launch is refused, its thread left in the sandbox's namespace
    (loopback only: less reach, never more)."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    step = JOIN_STEP
    made: list[socket.socket] = []
    try:
        _setns(netns, CLONE_NEWNET, "the sandbox's network namespace")
        try:
            step = "make"
            made, spec = _make(proxy_port, exposed, probes)
        finally:
            step = "return"
            _setns(own, CLONE_NEWNET, "the launcher's own network namespace")
        return spec, [sock.detach() for sock in made]
    except OSError as exc:
        for sock in made:  # ours: none may stay open
            sock.close()
        return {"error": str(exc) or type(exc).__name__, "step": step, "errno": exc.errno}, []
    finally:
        os.close(own)


def _by_helper(
    netns: int,
    proxy_port: int,
    exposed: Sequence[int],
    probes: int,
    timeout: float,
    agent: tuple[int, int] | None = None,
) -> Made:
    """Not root: a forked helper (one thread, as joining a user namespace needs) joins
    the owning user namespace, then the network namespace, and sends the fds back.
    Root without the capabilities for it: the same helper, as the agent (``agent``,
    which owns the sandbox's user namespace; :func:`~sandbox_setup.launcher.agent_step.
    become_agent`)."""
    prepare()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        helper = os.fork()
        if helper == 0:
            ours.close()
            _helper(netns, theirs, proxy_port, exposed, probes, agent)
        theirs.close()
        try:
            ours.settimeout(timeout)
            message, fds, _flags, _addr = socket.recv_fds(ours, 65536, MAX_SOCKETS)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.kill(helper, 9)  # a helper that hangs must not hang the launcher
            raise RefusedError(f"the sandbox's network helper did not answer: {exc}") from None
        finally:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(helper, 0)
    finally:
        ours.close()
        with contextlib.suppress(OSError):
            theirs.close()
    try:
        answer = json.loads(message.decode("utf-8", "replace") or "null")
    except ValueError:
        answer = None
    return answer, fds


@contextlib.contextmanager
def held_sandbox(
    bwrap: str,
    prefix: Sequence[str] = (),
    timeout: float = HELPER_TIMEOUT,
    unshare: Sequence[str] = (),
) -> Iterator[int]:
    """A bwrap sandbox with a network namespace of its own, held before its release as a
    launch holds it (its command never runs): the pid of its init once it dropped its
    capabilities. ``prefix`` switches user first (``setpriv ...``); ``unshare`` adds
    namespaces (``--unshare-ipc``, ...). For the bench, the tests and the ``launch.path``
    check (:mod:`sandbox_setup.launcher.startup_probe`), which try this path; released
    at the end (it then runs ``true`` and exits)."""
    status_r, status_w = os.pipe()
    block_r, block_w = os.pipe()
    try:
        process = subprocess.Popen(
            [*prefix, bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", *unshare,
             "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--json-status-fd", str(status_w), "--block-fd", str(block_r), "--", "true"],
            pass_fds=(status_w, block_r), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
    except OSError as exc:
        for fd in (status_r, status_w, block_r, block_w):
            os.close(fd)
        raise RefusedError(f"cannot start {bwrap}: {exc.strerror}") from None
    os.close(status_w)
    os.close(block_r)
    try:
        yield _held_pid(process, status_r, time.monotonic() + timeout)
    finally:
        # Released, it runs `true` and ends (a killed bwrap can leave its held child,
        # and that child our stderr pipe, behind for a while).
        os.close(block_w)
        try:
            process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        os.close(status_r)


def _held_pid(process: subprocess.Popen[bytes], status_r: int, deadline: float) -> int:
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([status_r], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(status_r, 1) if ready else b""
        if not chunk:
            process.kill()
            _, err = process.communicate()
            why = err.decode("utf-8", "replace").strip() or f"exit status {process.returncode}"
            raise RefusedError(f"bwrap did not start the sandbox: {why}")
        line += chunk
    pid = json.loads(line).get("child-pid")
    if not isinstance(pid, int):
        raise RefusedError("bwrap did not report the sandbox's pid")
    while True:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as handle:
                if "CapEff:\t0000000000000000" in handle.read():
                    return pid
        except OSError:
            raise RefusedError("the sandbox exited during its setup") from None
        if time.monotonic() > deadline:
            raise RefusedError("the sandbox did not drop its capabilities in time")
        time.sleep(0.0005)


# --- a network namespace of the launcher's own (user mode) ---------------------------

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH22x"  # struct ifreq: the name, then ifr_flags (a union of 24 bytes)


@dataclass(frozen=True, slots=True)
class NamespaceVerdict:
    """Whether the launcher may give a user-mode session a network namespace of its own
    here (``possible``), and why not (for people; decisions use ``possible``)."""

    possible: bool
    why: str = ""


def _unshare_net() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"unshare(CLONE_NEWNET): {os.strerror(code)}")


def _loopback_up() -> None:
    """Bring ``lo`` up in the calling thread's network namespace (as bwrap does in the
    sandbox's): 127.0.0.1, and ::1 where the namespace has IPv6."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        got = fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0))
        flags = struct.unpack(IFREQ, got)[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


def _in_new_thread(work: Callable[[], int | None], timeout: float) -> int | None:
    """``work`` in a thread of its own (a network namespace is per thread: the
    launcher's other threads stay where they are); its result, or its exception."""
    result: list[int | BaseException | None] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=run, name="session-netns", daemon=True)
    thread.start()
    thread.join(timeout)
    if not result:
        raise OSError(errno.ETIMEDOUT, "making a network namespace timed out")
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def namespace_possible(timeout: float = HELPER_TIMEOUT) -> NamespaceVerdict:
    """Can the launcher make a network namespace here? Tried live (a thread unshares
    one and ends, the namespace with it): root holding CAP_SYS_ADMIN can; a launcher
    that is not root, or root without that capability (Docker's defaults), cannot."""
    if os.geteuid() != 0:
        return NamespaceVerdict(False, "the launcher is not root (the agent is your own uid)")

    def attempt() -> None:
        _unshare_net()
        _loopback_up()

    try:
        _in_new_thread(attempt, timeout)
    except OSError as exc:
        return NamespaceVerdict(
            False,
            f"root cannot create a network namespace here ({exc.strerror or exc}; e.g. a "
            "container without CAP_SYS_ADMIN)",
        )
    return NamespaceVerdict(True)


def new_namespace(timeout: float = HELPER_TIMEOUT) -> int:
    """As root: a new network namespace with loopback up (nothing else: no route out);
    an fd of it (O_CLOEXEC), which keeps it alive until closed. The session joins it
    (:func:`join_namespace`) before anything of the agent runs. RefusedError when it
    cannot be made: nothing falls back to the host's network."""

    def make() -> int:
        _unshare_net()
        _loopback_up()
        return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)

    try:
        fd = _in_new_thread(make, timeout)
    except OSError as exc:
        raise RefusedError(
            f"cannot make the session's network namespace: {exc.strerror or exc}; refusing "
            "to launch (nothing falls back to the host's network)"
        ) from None
    assert fd is not None
    own = os.stat("/proc/self/ns/net")
    if _namespace_id(fd) == (own.st_dev, own.st_ino):
        os.close(fd)
        raise RefusedError("the session's network namespace is the launcher's")
    return fd


def join_namespace(netns: int) -> None:
    """In the session's first process, before it execs: enter ``netns``."""
    _setns(netns, CLONE_NEWNET, "the session's network namespace")
