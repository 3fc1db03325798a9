"""The session's cgroup (``[limits]``, docs/design.md invariant 10): made, joined, left, removed.

A cgroup v2 child of a delegated subtree (:class:`SessionCgroup`), or cgroup v1
``pids`` and ``memory`` children (:class:`SessionCgroupV1`), named
``sandbox-launch-PID``, that the launcher itself joins so every process of the session
is in it. :class:`EarlySessionCgroup` makes and joins it in a thread while the launch is
still being prepared (a cgroup v1 join waits for an RCU grace period).
:mod:`sandbox_setup.launcher.containment` plans the session.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base.cgroups import Delegation, judge_delegation, read_cgroup_facts
from sandbox_setup.base.limits import Limits, mem_total, memory_bytes

if TYPE_CHECKING:
    from sandbox_setup.launcher.containment import Containment


def remove_stale_cgroups(parent: Path) -> None:
    """Empty ``sandbox-launch-PID`` cgroups of launchers that are gone (one SIGKILLed
    before it could remove its own): a cgroup without processes can only be rmdir'ed."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name.removeprefix(SESSION_CGROUP_PREFIX)
        gone = name.startswith(SESSION_CGROUP_PREFIX) and pid.isdigit()
        if gone and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                os.rmdir(parent / name)


SESSION_CGROUP_PREFIX = "sandbox-launch-"


def _drain(directory: Path, deadline: float) -> list[int]:
    """SIGKILL what is in the cgroup ``directory`` until it is empty; the pids found."""
    left: list[int] = []
    while time.monotonic() < deadline:
        try:
            pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
        except OSError:
            break
        if not pids:
            break
        left = left or pids
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    return left


def _rmdir(directory: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            directory.rmdir()
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return
            time.sleep(0.02)


@dataclass(slots=True)
class SessionCgroupV1:
    """The cgroup v1 form of :class:`SessionCgroup`: a child in the memory and in the
    pids hierarchy, both joined by the launcher, both emptied and removed at the end."""

    memory_parent: Path
    pids_parent: Path
    name: str
    tasks: int
    memory: int | None
    path: Path = field(init=False)  # the pids one (the one every session has)
    left: bool = field(default=False, init=False)  # the launcher is back in the parents

    def __post_init__(self) -> None:
        self.path = self.pids_parent / self.name

    def _dirs(self) -> list[tuple[Path, Path]]:
        pairs = [(self.pids_parent, self.path)]
        if self.memory is not None:
            pairs.append((self.memory_parent, self.memory_parent / self.name))
        return pairs

    def enter(self) -> None:
        for parent, _ in self._dirs():
            remove_stale_cgroups(parent)
        self.path.mkdir(mode=0o755)
        (self.path / "pids.max").write_text(f"{self.tasks}\n")
        if self.memory is not None:
            memory = self.memory_parent / self.name
            memory.mkdir(mode=0o755)
            (memory / "memory.limit_in_bytes").write_text(f"{self.memory}\n")
            with contextlib.suppress(OSError):  # swap accounting (swapaccount=1) only
                (memory / "memory.memsw.limit_in_bytes").write_text(f"{self.memory}\n")
        for _, directory in self._dirs():
            (directory / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def leave(self) -> None:
        """Move the launcher back to the parents (what it starts from now on is not in
        the session's cgroups; what it started stays there)."""
        for parent, _ in self._dirs():
            with contextlib.suppress(OSError):
                (parent / "cgroup.procs").write_text(f"{os.getpid()}\n")
        self.left = True

    def close(self, timeout: float = 5.0) -> list[int]:
        """Leave both (unless :meth:`leave` did), kill everything still in them, remove
        them; the pids left."""
        deadline = time.monotonic() + timeout
        left: list[int] = []
        if not self.left:
            self.leave()
        for _, directory in self._dirs():
            left += [p for p in _drain(directory, deadline) if p not in left]
            _rmdir(directory, deadline)
        return left


@dataclass(slots=True)
class SessionCgroup:
    """A cgroup v2 child made for one session; the launcher joins it, so everything
    it starts is in it, and leaves it before it kills what is left."""

    parent: Path
    name: str
    tasks: int
    memory: int | None
    path: Path = field(init=False)
    left: bool = field(default=False, init=False)  # the launcher is back in the parent

    def __post_init__(self) -> None:
        self.path = self.parent / self.name

    def enter(self) -> None:
        remove_stale_cgroups(self.parent)
        self.path.mkdir(mode=0o755)
        (self.path / "pids.max").write_text(f"{self.tasks}\n")
        if self.memory is not None:
            (self.path / "memory.max").write_text(f"{self.memory}\n")
            with contextlib.suppress(OSError):  # no swap accounting on this kernel
                (self.path / "memory.swap.max").write_text("0\n")
        (self.path / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def leave(self) -> None:
        """Move the launcher back to the parent (what it starts from now on is not in
        the session's cgroup; what it started stays there)."""
        with contextlib.suppress(OSError):
            (self.parent / "cgroup.procs").write_text(f"{os.getpid()}\n")
        self.left = True

    def close(self, timeout: float = 5.0) -> list[int]:
        """Leave it (unless :meth:`leave` did), kill everything still in it, remove it;
        the pids that were left."""
        if not self.left:
            self.leave()
        left: list[int] = []
        deadline = time.monotonic() + timeout
        kill_file = self.path / "cgroup.kill"
        while time.monotonic() < deadline:
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                break
            if not pids:
                break
            left = left or pids
            if kill_file.exists():
                with contextlib.suppress(OSError):
                    kill_file.write_text("1\n")
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
        while time.monotonic() < deadline:
            try:
                self.path.rmdir()
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    break
                time.sleep(0.02)
        return left


def session_cgroup(
    cgroup_parent: str | None,
    cgroup_v1: tuple[str, str] | None,
    tasks: int,
    memory: int | None,
) -> SessionCgroup | SessionCgroupV1 | None:
    """The cgroup(s) of this launcher's session (not made yet), as a
    :class:`Containment` says (``cgroup_parent``, ``cgroup_v1``); None: no cgroup."""
    name = f"{SESSION_CGROUP_PREFIX}{os.getpid()}"
    if cgroup_parent is not None:
        return SessionCgroup(Path(cgroup_parent), name, tasks, memory)
    if cgroup_v1 is not None:
        memory_parent, pids_parent = cgroup_v1
        return SessionCgroupV1(Path(memory_parent), Path(pids_parent), name, tasks, memory)
    return None


class EarlySessionCgroup:
    """The session's cgroup, made and joined in a thread while the launch is still
    being prepared: joining waits for an RCU grace period (milliseconds), which then
    passes during the workspace snapshot and the trust checks instead of before bwrap.

    The cgroup is the one :func:`contain` will plan (the same delegation, judged once
    here, before the launcher moved: :func:`read_cgroup_facts` reads the launcher's
    own cgroup); the session runner :meth:`take` s it when its plan names the same
    one, and makes its own otherwise. One that no session took is removed
    (:meth:`discard`), as a refused launch leaves none."""

    def __init__(self, delegation: Delegation, limits: Limits) -> None:
        self.delegation = delegation
        memory = memory_bytes(limits, mem_total())
        kind = delegation.kind
        self.cgroup = session_cgroup(
            delegation.parent if kind == "cgroup2" else None,
            delegation.v1_parents if kind == "cgroup1" else None,
            limits.tasks,
            memory,
        )
        self.error: OSError | None = None
        self.taken = False
        self._thread: threading.Thread | None = None

    @classmethod
    def start(cls, limits: Limits) -> EarlySessionCgroup:
        early = cls(judge_delegation(read_cgroup_facts()), limits)
        if early.cgroup is not None:
            thread = threading.Thread(target=early._enter, name="enter-cgroup", daemon=True)
            try:
                thread.start()
            except RuntimeError:
                early.cgroup = None  # no thread: the session runner makes it, as before
            else:
                early._thread = thread
        return early

    def _enter(self) -> None:
        assert self.cgroup is not None
        try:
            self.cgroup.enter()
        except OSError as exc:
            self.error = exc

    def _wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def take(
        self, containment: Containment
    ) -> tuple[SessionCgroup | SessionCgroupV1 | None, OSError | None]:
        """The cgroup (entered, or the error entering it raised) when ``containment``
        plans this very one; (None, None) otherwise (then it is removed)."""
        self._wait()
        planned = session_cgroup(
            containment.cgroup_parent,
            containment.cgroup_v1,
            containment.tasks,
            containment.memory,
        )
        if self.cgroup is None or planned != self.cgroup:
            self.discard()
            return None, None
        self.taken = True
        return self.cgroup, self.error

    def discard(self) -> None:
        """Remove the cgroup unless a session took it (that session removes it)."""
        self._wait()
        if self.cgroup is not None and not self.taken:
            cgroup, self.cgroup = self.cgroup, None
            cgroup.close()
