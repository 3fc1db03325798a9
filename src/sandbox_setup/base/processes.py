"""Read the live process table (``/proc``): whose processes, whose children.

Used where the agent's processes matter: the plan (an existing account with
running processes), undo (stop them before the account goes) and the launcher's
end of a session where the kernel has no children files (:mod:`sandbox_setup.base.process_tree`
walks the tree otherwise). Only the live system has processes;
callers never ask this about a ``--root`` tree.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """One process as /proc shows it."""

    pid: int
    ppid: int
    uids: tuple[int, ...]  # real, effective, saved, filesystem
    name: str
    state: str = ""  # "R", "S", ..., "Z" (zombie: exited, waiting to be reaped)
    pgrp: int = 0
    session: int = 0

    @property
    def running(self) -> bool:
        """Not a zombie: it can still act (and be signalled)."""
        return self.state not in ("Z", "X")


def parse_stat_ids(stat: bytes) -> tuple[int, int, int]:
    """(parent pid, process group, session) from the text of ``/proc/PID/stat``
    (the command name may hold spaces and ')': split after the last one)."""
    fields = stat[stat.rindex(b")") + 2 :].split()
    return int(fields[1]), int(fields[2]), int(fields[3])


def parse_stat_ppid(stat: bytes) -> int:
    """The parent pid from the text of ``/proc/PID/stat``."""
    return parse_stat_ids(stat)[0]


def read_process(pid: int, proc: Path = PROC) -> ProcessInfo | None:
    """The process ``pid``, or None when it is gone (or never was)."""
    try:
        status = (proc / str(pid) / "status").read_text(encoding="utf-8", errors="replace")
        stat = (proc / str(pid) / "stat").read_bytes()
    except (OSError, ValueError):
        return None
    uids: tuple[int, ...] = ()
    name = state = ""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "Uid":
            uids = tuple(int(v) for v in value.split())
        elif key == "Name":
            name = value.strip()
        elif key == "State":
            state = value.strip()[:1]
    try:
        ppid, pgrp, session = parse_stat_ids(stat)
    except (ValueError, IndexError):
        return None
    return ProcessInfo(pid, ppid, uids, name, state, pgrp, session)


def all_processes(proc: Path = PROC) -> Iterator[ProcessInfo]:
    """Every process that exists now (one that exits meanwhile is skipped)."""
    try:
        names = os.listdir(proc)
    except OSError:
        return
    for name in names:
        if name.isdigit():
            info = read_process(int(name), proc)
            if info is not None:
                yield info


def processes_of_uid(uid: int, proc: Path = PROC) -> list[ProcessInfo]:
    """Processes that run as ``uid`` by any of their ids (real, effective, saved,
    filesystem): a setuid helper the agent started still counts as the agent's.
    Zombies do not count: they have exited and only wait for their parent."""
    return [p for p in all_processes(proc) if uid in p.uids and p.running]


def descendants(pid: int, proc: Path = PROC) -> list[int]:
    """Every live descendant of ``pid`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for info in all_processes(proc):
        children.setdefault(info.ppid, []).append(info.pid)
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo += children.get(child, [])
    return found
