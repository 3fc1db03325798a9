"""Steps of root's launcher that it does as the agent, where root lacks the capability.

The sandbox's user namespace belongs to the agent (setpriv dropped to it before bwrap
made the namespace). A process whose *effective* uid is that namespace's owner holds
every capability in it, so the agent may do what root, in a container with default
capabilities (no ``CAP_SYS_PTRACE``, ``CAP_SYS_ADMIN``, ``CAP_NET_ADMIN``:
docs/design.md invariant 1), may not: read the sandbox's ``/proc/PID/ns/*`` (a ptrace
access check), join its network namespace, ask a socket which namespace it is in
(``SIOCGSKNS``).

So root retries a refused step in a forked child of the launcher (the launcher's own
code, one thread) that takes the agent's *effective* uid and gid only: its real and
saved ids stay 0, so no process of the agent may ptrace or signal it (the ptrace
check wants all three ids to match), and it is made non-dumpable. It does the one
step, hands back the result (JSON through a pipe, or descriptors over a unix socket)
and exits. The launcher itself keeps its ids and compares what it got: nothing is
released before that comparison passes (invariant 1).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import json
import os
import select
import socket
import time
from collections.abc import Callable
from typing import Any

TIMEOUT = 5.0
ACCESS_ERRORS = frozenset({errno.EACCES, errno.EPERM})
PR_SET_DUMPABLE = 4


def denied(exc: OSError) -> bool:
    """Whether ``exc`` is an access refusal (worth retrying as the agent)."""
    return exc.errno in ACCESS_ERRORS


def agent_may_retry(uid: int) -> bool:
    """Root launching for another uid: a step can be retried as that uid."""
    return os.geteuid() == 0 and uid != 0


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def prepare() -> None:
    """Before a fork: load what the child uses, so it takes no loader lock that
    another thread of the launcher might have held at the fork."""
    _libc()


def become_agent(uid: int, gid: int) -> None:
    """In a forked, single-threaded child: the agent's effective ids, root's real and
    saved ones (so the agent cannot ptrace it), not dumpable."""
    libc = _libc()
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    os.setresgid(-1, gid, -1)
    os.setresuid(-1, uid, -1)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # a uid change may have reset it


def _wait(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def as_agent(uid: int, gid: int, step: Callable[[], Any], timeout: float = TIMEOUT) -> Any:
    """``step()`` (returning JSON-able data) in a child as the agent (see the module
    docstring); its result, or its OSError raised here."""
    prepare()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's side; its result is what is tested)
        code = 1
        try:
            os.close(read_end)
            try:
                become_agent(uid, gid)
                answer: dict[str, Any] = {"ok": step()}
            except OSError as exc:
                answer = {"errno": exc.errno or errno.EIO, "error": str(exc)}
            except BaseException as exc:
                answer = {"errno": errno.EIO, "error": f"{type(exc).__name__}: {exc}"}
            os.write(write_end, json.dumps(answer).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    data = b""
    try:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([read_end], [], [], max(0.0, left))
            if not ready:
                os.kill(child, 9)
                raise TimeoutError("a step done as the agent did not finish in time")
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read_end)
        _wait(child)
    try:
        parsed = json.loads(data.decode("utf-8", "replace") or "null")
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise OSError(errno.EIO, "a step done as the agent gave no answer")
    if "ok" in parsed:
        return parsed["ok"]
    raise OSError(int(parsed.get("errno", errno.EIO)), str(parsed.get("error")))


def open_as_agent(path: str, uid: int, gid: int, timeout: float = TIMEOUT) -> int:
    """``os.open(path, O_RDONLY | O_CLOEXEC)`` done by a child as the agent; the
    descriptor, passed back over a unix socket (what it refers to does not change)."""
    prepare()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    child = os.fork()
    if child == 0:  # pragma: no cover
        code = 1
        try:
            ours.close()
            try:
                become_agent(uid, gid)
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                socket.send_fds(theirs, [b"{}"], [fd])
            except OSError as exc:
                theirs.sendall(json.dumps({"errno": exc.errno, "error": str(exc)}).encode())
            code = 0
        finally:
            os._exit(code)
    theirs.close()
    try:
        ours.settimeout(timeout)
        message, fds, _flags, _addr = socket.recv_fds(ours, 4096, 1)
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(child, 9)  # (a child that hangs must not hang the launcher)
        raise
    finally:
        ours.close()
        _wait(child)
    if fds:
        return fds[0]
    try:
        answer = json.loads(message.decode("utf-8", "replace") or "null")
    except ValueError:
        answer = None
    if isinstance(answer, dict) and "errno" in answer:
        raise OSError(int(answer["errno"] or errno.EIO), str(answer.get("error")))
    raise OSError(errno.EIO, f"{path} could not be opened as the agent")
