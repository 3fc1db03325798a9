"""Start the sandbox, verify it from outside, only then let Claude run.

bwrap is started with ``--json-status-fd`` (it reports the sandbox's pid) and
``--block-fd`` (the sandbox waits, after dropping its capabilities, until one
byte arrives). In between the launcher checks, from the host's side, that the
process really lives in new user/mnt/pid/ipc/uts namespaces, has no
capabilities, has no_new_privs set and runs as the agent's uid. Where root may
not read the agent's ``/proc/PID/ns`` (no ``CAP_SYS_PTRACE``, as in a container with
default capabilities), a child of the launcher reads them as the agent, which owns
the sandbox's user namespace (:mod:`sandbox_setup.launcher.agent_step`). Any failure
kills bwrap and refuses (exit 3); IS_SANDBOX=1 was given to bwrap for the
inside only, so nothing ever ran with it outside a verified sandbox.

bwrap also takes EOF on ``--block-fd`` as a release, so the sandbox's command
is a gate (:data:`sandbox_setup.launcher.command.GATE_SCRIPT`) that execs Claude only
after reading a token the launcher writes once verification passed: a
launcher that dies or fails mid-verification leaves EOF there, which refuses.

What the sandbox is compared with is a parameter (``host_namespaces``, default the
launcher's own namespaces): a test passes the sandbox's own instead, so verification
must fail. Nothing reads it from the environment.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.launcher.agent_step import agent_may_retry, as_agent, denied
from sandbox_setup.launcher.command import BLOCK_FD, GATE_FD, GATE_TOKEN, STATUS_FD
from sandbox_setup.launcher.launch import Launch

NAMESPACES = ("user", "mnt", "pid", "ipc", "uts")
NETWORK_NAMESPACE = "net"  # verified too when bwrap was asked for one (--unshare-net)
NamespaceReader = Callable[[int, Sequence[str]], dict[str, str]]
VERIFY_TIMEOUT = 10.0
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH, signal.SIGQUIT)


def read_namespaces(pid: int | str, kinds: Sequence[str] = NAMESPACES) -> dict[str, str]:
    """``{"user": "user:[4026531837]", ...}`` for ``/proc/PID/ns``."""
    return {kind: os.readlink(f"/proc/{pid}/ns/{kind}") for kind in kinds}


def launcher_namespaces(_sandbox_pid: int, kinds: Sequence[str]) -> dict[str, str]:
    """What verification compares the sandbox with: the launcher's own namespaces."""
    return read_namespaces("self", kinds)


def parse_status(text: str) -> dict[str, str]:
    """The ``Key: value`` lines of ``/proc/PID/status``."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def judge_sandbox(
    own: Mapping[str, str],
    child: Mapping[str, str],
    status: Mapping[str, str],
    expected_uid: int,
    kinds: Sequence[str] = NAMESPACES,
) -> list[str]:
    """Why the process is not a verified sandbox; empty when it is."""
    problems = []
    for kind in kinds:
        if kind not in child:
            problems.append(f"{kind} namespace of the sandbox could not be read")
        elif child[kind] == own.get(kind):
            problems.append(f"{kind} namespace is the launcher's own ({child[kind]})")
    for cap in ("CapEff", "CapPrm"):
        value = status.get(cap)
        if value is None or int(value, 16) != 0:
            problems.append(f"{cap} is {value!r}, expected all zero (capabilities not dropped)")
    if status.get("NoNewPrivs") != "1":
        problems.append(f"NoNewPrivs is {status.get('NoNewPrivs')!r}, expected '1'")
    uids = status.get("Uid", "").split()
    if not uids or any(int(u) != expected_uid for u in uids):
        problems.append(f"sandbox runs as uid {status.get('Uid')!r}, expected {expected_uid}")
    return problems


def parse_child_pid(line: str) -> int | None:
    """The ``child-pid`` of one ``--json-status-fd`` line, if it has one."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    pid = data.get("child-pid") if isinstance(data, dict) else None
    return pid if isinstance(pid, int) and pid > 0 else None


def children_of(pid: int) -> list[int]:
    """The direct children of ``pid``: below the sandbox's init, that is Claude."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after the last ')'.
        if int(stat[stat.rindex(b")") + 2 :].split()[1]) == pid:
            children.append(int(entry))
    return children


@dataclass(slots=True)
class _Supervision:
    bwrap: subprocess.Popen[bytes] | None = None
    child_pid: int | None = None
    released: bool = False
    new_session: bool = False
    interrupted: int | None = None
    namespaces: tuple[str, ...] = NAMESPACES  # what verification compares

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if not self.released or self.child_pid is None:
            if signum != signal.SIGWINCH:
                self.interrupted = signum
            return
        if signum in (signal.SIGINT, signal.SIGWINCH, signal.SIGQUIT) and not self.new_session:
            return  # the terminal already sent it to Claude, which shares our process group
        # Claude only, as a shell would: it decides what its own children get.
        targets = children_of(self.child_pid)
        if not targets and signum != signal.SIGWINCH:
            # Claude is not forked yet: ending the sandbox's init ends the sandbox.
            targets = [self.child_pid]
        for pid in targets:
            with contextlib.suppress(OSError):  # it may have exited meanwhile
                os.kill(pid, signum)


def _read_child_pid(status_r: int, state: _Supervision, deadline: float) -> int:
    buffer = b""
    while time.monotonic() < deadline and state.interrupted is None:
        ready, _, _ = select.select([status_r], [], [], 0.05)
        if not ready:
            continue
        chunk = os.read(status_r, 4096)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            pid = parse_child_pid(line.decode("utf-8", "replace"))
            if pid is not None:
                return pid
    assert state.bwrap is not None
    if state.interrupted is not None:
        raise RefusedError("interrupted before the sandbox was verified")
    try:
        code = state.bwrap.wait(timeout=1)
    except subprocess.TimeoutExpired:
        raise RefusedError("bwrap did not report the sandbox within the time limit") from None
    raise RefusedError(f"bwrap failed to start the sandbox (exit status {code}); see above")


def _wait_caps_dropped(pid: int, state: _Supervision, deadline: float) -> dict[str, str]:
    """The child's status once it dropped its capabilities (it then waits on --block-fd)."""
    fields: dict[str, str] = {}
    while time.monotonic() < deadline and state.interrupted is None:
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
                fields = parse_status(handle.read())
        except OSError:
            raise RefusedError(
                "bwrap failed to start the sandbox (its process exited during setup); see above"
            ) from None
        if fields.get("State", "").startswith("Z"):
            raise RefusedError(
                "bwrap failed to start the sandbox (its process exited during setup); see above"
            )
        if int(fields.get("CapEff", "1"), 16) == 0:
            return fields
        time.sleep(0.0005)
    return fields  # judged below: still holding capabilities is a refusal


def verify(
    child_pid: int,
    expected_uid: int,
    state: _Supervision,
    host_namespaces: NamespaceReader | None = None,
) -> None:
    kinds = state.namespaces
    deadline = time.monotonic() + VERIFY_TIMEOUT
    status = _wait_caps_dropped(child_pid, state, deadline)
    if state.interrupted is not None:
        raise RefusedError("interrupted before the sandbox was verified")
    try:
        child = _read_child_namespaces(child_pid, kinds, expected_uid, status)
    except OSError as exc:
        raise RefusedError(f"cannot read the sandbox's namespaces: {exc}") from None
    own = (host_namespaces or launcher_namespaces)(child_pid, kinds)
    problems = judge_sandbox(own, child, status, expected_uid, kinds)
    if problems:
        raise RefusedError("sandbox verification failed: " + "; ".join(problems))


def _read_child_namespaces(
    pid: int, kinds: Sequence[str], expected_uid: int, status: Mapping[str, str]
) -> dict[str, str]:
    """The sandbox's namespaces; as root without CAP_SYS_PTRACE (a container's default
    capabilities) the read is refused, so it is retried as the agent, which owns the
    sandbox's user namespace (:mod:`sandbox_setup.launcher.agent_step`)."""
    try:
        return read_namespaces(pid, kinds)
    except OSError as exc:
        if not (denied(exc) and agent_may_retry(expected_uid)):
            raise
    gids = status.get("Gid", "").split()
    if not gids or not gids[0].isdigit():
        raise PermissionError(errno.EACCES, "the sandbox's gid could not be read")
    found = as_agent(expected_uid, int(gids[0]), lambda: read_namespaces(pid, kinds))
    if not isinstance(found, dict) or not all(isinstance(found.get(k), str) for k in kinds):
        raise PermissionError(errno.EACCES, "the sandbox's namespaces could not be read")
    return {kind: str(found[kind]) for kind in kinds}


def _low_fd(fd: int) -> int:
    """``fd`` moved to a number from 3 to 9 (the gate's shell takes no other)."""
    low = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    if low > 9:
        os.close(low)
        raise RefusedError(
            "no free file descriptor from 3 to 9 for the sandbox's release gate; "
            "start sandbox-launch with fewer open files"
        )
    return low


def run_supervised(
    launch: Launch,
    expected_uid: int,
    before_release: Callable[[int], None] | None = None,
    after_start: Callable[[], None] | None = None,
    host_namespaces: NamespaceReader | None = None,
    after_release: Callable[[], None] | None = None,
) -> int:
    """Start, verify, release; then wait and return Claude's exit status.

    Claude starts only after the launcher wrote the gate's token, which it does
    only after verification passed (and ``before_release(sandbox_pid)``, e.g. the
    egress proxy's start in the sandbox's network namespace and its probe, returned).
    ``after_start()`` runs as soon as bwrap is started, while it sets the sandbox up
    (the egress proxy's policy and fork: their time overlaps bwrap's); an error in it
    is a refusal like any other before the release. ``after_release()`` runs once
    Claude is released, while the launcher only waits for it (work of the session's
    end done ahead, off the launch's wall clock). ``host_namespaces``: what the
    sandbox's namespaces must differ from (default :func:`launcher_namespaces`; a
    test's seam).
    On any failure (any exception, even one not foreseen) bwrap is killed before the
    pipes close, and a launcher that dies outright leaves the gate reading EOF, which
    means refuse.
    """
    state = _Supervision(new_session=launch.bwrap_new_session)
    if launch.bwrap_unshare_net:
        state.namespaces = (*NAMESPACES, NETWORK_NAMESPACE)
    gate_r, gate_w = os.pipe()
    to_close = [gate_w]
    try:
        gate_r = _low_fd(gate_r)
    except BaseException:
        os.close(gate_w)
        raise
    status_r, status_w = os.pipe()
    block_r, block_w = os.pipe()
    to_close += [status_r, block_w]
    fds = {STATUS_FD: str(status_w), BLOCK_FD: str(block_r), GATE_FD: str(gate_r)}
    argv = [fds.get(a, a) for a in launch.argv]
    previous = {sig: signal.signal(sig, state.on_signal) for sig in FORWARDED}
    try:
        try:
            state.bwrap = subprocess.Popen(
                argv,
                env=dict(launch.env),
                pass_fds=(status_w, block_r, gate_r),
                # Detached from the terminal's process group only when bwrap detaches
                # the sandbox anyway (--new-session): Ctrl-C then reaches the launcher,
                # which forwards it to Claude, instead of killing bwrap's monitor.
                process_group=0 if state.new_session else None,
            )
        except OSError as exc:
            raise RefusedError(f"cannot start {argv[0]}: {exc.strerror}") from None
        finally:
            os.close(status_w)
            os.close(block_r)
            os.close(gate_r)
        try:
            if after_start is not None:
                after_start()
            deadline = time.monotonic() + VERIFY_TIMEOUT
            state.child_pid = _read_child_pid(status_r, state, deadline)
            verify(state.child_pid, expected_uid, state, host_namespaces)
            if before_release is not None:
                before_release(state.child_pid)
                if state.interrupted is not None:
                    raise RefusedError("interrupted before the sandbox was released")
            os.write(gate_w, f"{GATE_TOKEN}\n".encode())
            os.write(block_w, b"1")
            state.released = True
        except BaseException as exc:
            # Kill first: closing the pipes of a live sandbox would release it.
            _kill(state)
            if state.interrupted is not None:
                print("sandbox-launch: interrupted before Claude started", file=sys.stderr)
                return int(ExitCode.INTERRUPTED)
            if isinstance(exc, Exception) and not isinstance(exc, RefusedError):
                raise RefusedError(
                    f"sandbox verification failed unexpectedly: {type(exc).__name__}: {exc}"
                ) from exc
            raise
        finally:
            for fd in (gate_w, block_w):
                os.close(fd)
                to_close.remove(fd)
        if state.interrupted is not None:  # arrived between verification and release
            state.on_signal(state.interrupted, None)
        try:
            if after_release is not None:
                after_release()
            code = state.bwrap.wait()
        except BaseException:
            _kill(state)
            raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for fd in to_close:
            os.close(fd)
    return code if code >= 0 else 128 - code


def _kill(state: _Supervision) -> None:
    if state.child_pid is not None:
        with contextlib.suppress(OSError):
            os.kill(state.child_pid, signal.SIGKILL)
    if state.bwrap is not None and state.bwrap.poll() is None:
        state.bwrap.kill()
    if state.bwrap is not None:
        state.bwrap.wait()
