"""The tree of processes below one process, read through ``/proc/PID/task/TID/children``
(no dataclass, no walk over all of /proc): how the launcher finds what is left of a
session when it ends. Where the kernel has no such files, callers fall back to
:func:`sandbox_setup.base.processes.descendants`.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


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
