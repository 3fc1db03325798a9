"""Read the live process table (``/proc``): whose processes, whose children.

Used where the agent's processes matter: the plan (an existing account with
running processes), undo (stop them before the account goes) and the launcher's
end of a session (nothing of it may be left). Only the live system has processes;
callers never ask this about a ``--root`` tree.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
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


def children(pid: int, proc: Path = PROC) -> list[int] | None:
    """The direct children of ``pid``, from ``/proc/PID/task/TID/children`` of each of
    its threads (a child belongs to the thread that forked it, an orphan to the first
    live thread of its new parent): ``[]`` when ``pid`` is gone, None when this kernel
    has no ``children`` files (``CONFIG_PROC_CHILDREN``)."""
    tasks = f"{proc}/{pid}/task"
    try:
        tids = os.listdir(tasks)
    except OSError:
        return []
    found: list[int] = []
    for tid in tids:
        try:
            with open(f"{tasks}/{tid}/children", "rb") as handle:
                found += [int(child) for child in handle.read().split()]
        except FileNotFoundError:
            if os.path.isdir(f"{tasks}/{tid}"):
                return None  # the thread is there, its children file is not
        except OSError:
            continue  # the thread (or the process) ended meanwhile
    return found


def is_running(pid: int, proc: Path = PROC) -> bool:
    """``pid`` exists and is not a zombie (the state field of ``/proc/PID/stat``)."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    state = stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3]
    return state not in (b"Z", b"X", b"")


def running_descendants(pid: int, proc: Path = PROC) -> list[int] | None:
    """Every running descendant of ``pid``, found through the ``children`` files (the
    tree below ``pid`` only, not all of /proc); None when the kernel has none, and
    the caller walks all of /proc instead (:func:`descendants`).

    Meant for a child subreaper that calls it from its only thread that reaps, and
    reaps nothing meanwhile (the session's launcher): its own list of children then
    only grows while it is read (orphans are appended at its end), so a read misses
    none that was there when the read began. When the result is empty the caller is
    done: the list is read again after the walk, so every child ``pid`` has at that
    moment was seen, and seen a zombie (a zombie stays one and has no children: they
    were reparented to ``pid`` before it died, and would be in the list); a child not
    seen by the first read (reparented during the walk) makes the walk run again."""
    first = children(pid, proc)
    if first is None:
        return None
    while True:
        seen = set(first)
        todo = list(first)
        running: list[int] = []
        while todo:
            child = todo.pop()
            if is_running(child, proc):
                running.append(child)
            for grandchild in children(child, proc) or ():
                if grandchild not in seen:
                    seen.add(grandchild)
                    todo.append(grandchild)
        again = children(pid, proc)
        if again is None:
            return None
        if running or set(again) <= seen:
            return running
        first = again
