"""Can a session get a cgroup of its own with task and memory limits here?

Gathering (:func:`read_cgroup_facts`: /proc/self/mountinfo, /proc/self/cgroup, the
cgroup's control files, whether systemd runs) is separate from judging
(:func:`judge_delegation`, pure), so the check ``cgroup.delegation``, the launcher
and the audit give one answer from the same facts.

Three outcomes, in the order the launcher prefers them:

- ``systemd``: systemd is the init (``/run/systemd/system`` exists); a session goes
  into a transient scope (``systemd-run --scope -p TasksMax= -p MemoryMax=``),
  systemd's own delegation, on cgroup v2 or v1;
- ``cgroup2``: a cgroup v2 hierarchy where this process's cgroup already hands the
  ``pids`` and ``memory`` controllers to its children (``cgroup.subtree_control``)
  and may be written: the launcher makes a child cgroup per session. The kernel
  lets a cgroup with processes of its own do that only at the root, so this is
  the root cgroup of a host without systemd;
- ``cgroup1``: no usable cgroup v2, but the ``memory`` and ``pids`` controllers are
  mounted as cgroup v1 hierarchies (a hybrid host without systemd, many containers
  and VMs) and this process's cgroups there may be written: the launcher makes a
  child in each per session (``memory.limit_in_bytes``, ``pids.max``);
- ``none``: none of these; tasks are then limited with ``RLIMIT_NPROC`` on the
  agent's uid, and memory is not limited (the launch notice and the audit say so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

CONTROLLERS = frozenset({"pids", "memory"})


@dataclass(frozen=True, slots=True)
class CgroupFacts:
    """What the host says about cgroups, for this process."""

    systemd: bool
    v2_mount: str | None = None  # where the cgroup2 hierarchy is mounted
    v2_root: str = "/"  # which of its cgroups that mount shows (mountinfo's root field)
    own_path: str | None = None  # this process's cgroup in it ("/" is the root)
    controllers: frozenset[str] = field(default_factory=frozenset)  # cgroup.controllers
    subtree: frozenset[str] = field(default_factory=frozenset)  # cgroup.subtree_control
    writable: bool = False  # may create a child cgroup there
    v1_controllers: frozenset[str] = field(default_factory=frozenset)  # mounted as cgroup v1
    # cgroup v1: (controller, this process's cgroup directory) for memory and pids,
    # and whether both may be written (a child made there)
    v1_dirs: tuple[tuple[str, str], ...] = ()
    v1_writable: bool = False

    @property
    def own_dir(self) -> str | None:
        if self.v2_mount is None or self.own_path is None:
            return None
        root = self.v2_root.rstrip("/")
        if root and not (self.own_path == root or self.own_path.startswith(root + "/")):
            return None  # this process's cgroup is outside what the mount shows
        return os.path.normpath(self.v2_mount + "/" + self.own_path[len(root) :])


@dataclass(frozen=True, slots=True)
class Delegation:
    """How a session's limits are enforced here, and why (with the fix when none)."""

    kind: str  # "systemd" | "cgroup2" | "none"
    reason: str
    remedy: str = ""
    parent: str | None = None  # cgroup2: the directory session cgroups are made in
    v1_parents: tuple[str, str] | None = None  # cgroup1: the memory and pids directories


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_mountinfo_cgroups(text: str) -> tuple[str | None, str, frozenset[str]]:
    """(where cgroup2 is mounted, the cgroup that mount shows, the controllers
    mounted as cgroup v1)."""
    v2 = None
    v2_root = "/"
    v1: set[str] = set()
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or not extra:
            continue
        if extra[0] == "cgroup2" and v2 is None:
            v2, v2_root = fields[4], fields[3]
        elif extra[0] == "cgroup" and len(extra) >= 3:
            v1 |= {opt for opt in extra[2].split(",") if opt in CONTROLLERS}
    return v2, v2_root, frozenset(v1)


def parse_v1_mounts(text: str) -> dict[str, tuple[str, str]]:
    """controller -> (mount point, the cgroup that mount shows) of its cgroup v1 mount."""
    found: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if not sep or len(fields) < 5 or len(extra) < 3 or extra[0] != "cgroup":
            continue
        for opt in extra[2].split(","):
            if opt in CONTROLLERS:
                found.setdefault(opt, (fields[4], fields[3]))
    return found


def parse_v1_cgroups(text: str) -> dict[str, str]:
    """controller -> this process's cgroup v1 path, from /proc/self/cgroup."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1]:
            for controller in parts[1].split(","):
                if controller in CONTROLLERS:
                    found[controller] = parts[2].strip() or "/"
    return found


def v1_dirs(mountinfo: str, own: str) -> tuple[tuple[str, str], ...]:
    """(controller, directory of this process's cgroup) for memory and pids on cgroup v1."""
    mounts, paths = parse_v1_mounts(mountinfo), parse_v1_cgroups(own)
    dirs = []
    for controller in sorted(CONTROLLERS):
        if controller not in mounts or controller not in paths:
            continue
        mount, root = mounts[controller]
        path, root = paths[controller], root.rstrip("/")
        if root and not (path == root or path.startswith(root + "/")):
            continue  # outside what the mount shows
        dirs.append((controller, os.path.normpath(mount + "/" + path[len(root) :])))
    return tuple(dirs)


def parse_own_cgroup(text: str) -> str | None:
    """This process's cgroup v2 path from /proc/self/cgroup (the ``0::`` line)."""
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def read_cgroup_facts(
    proc_self: Path = Path("/proc/self"), run: Path = Path("/run")
) -> CgroupFacts:
    """Gather the facts (reads only; nothing is created)."""
    systemd = (run / "systemd/system").is_dir()
    mountinfo = _read(proc_self / "mountinfo") or ""
    own_text = _read(proc_self / "cgroup") or ""
    v2, v2_root, v1 = parse_mountinfo_cgroups(mountinfo)
    own = parse_own_cgroup(own_text)
    dirs = v1_dirs(mountinfo, own_text)
    writable = len(dirs) == len(CONTROLLERS) and all(
        os.access(d, os.W_OK | os.X_OK) for _, d in dirs
    )
    facts = CgroupFacts(
        systemd=systemd, v2_mount=v2, v2_root=v2_root, own_path=own, v1_controllers=v1,
        v1_dirs=dirs, v1_writable=writable,
    )  # fmt: skip
    own_dir = facts.own_dir
    if own_dir is None:
        return facts
    directory = Path(own_dir)
    return CgroupFacts(
        systemd=systemd,
        v2_mount=v2,
        v2_root=v2_root,
        own_path=own,
        controllers=frozenset((_read(directory / "cgroup.controllers") or "").split()),
        subtree=frozenset((_read(directory / "cgroup.subtree_control") or "").split()),
        writable=os.access(directory, os.W_OK | os.X_OK),
        v1_controllers=v1,
        v1_dirs=dirs,
        v1_writable=writable,
    )


def judge_delegation(facts: CgroupFacts) -> Delegation:
    """Pure: which of systemd / cgroup2 / cgroup1 / none applies, and why."""
    found = _judge_v2(facts)
    dirs = dict(facts.v1_dirs)
    if found.kind != "none" or not set(dirs) >= CONTROLLERS:
        return found
    memory, pids = dirs["memory"], dirs["pids"]
    if not facts.v1_writable:
        return Delegation(
            "none",
            found.reason + f"; the cgroup v1 directories {memory} and {pids} are not writable",
            found.remedy,
        )
    return Delegation(
        "cgroup1",
        f"cgroup v1: each session gets a child cgroup of {memory} (memory.limit_in_bytes) "
        f"and of {pids} (pids.max)",
        v1_parents=(memory, pids),
    )


def _judge_v2(facts: CgroupFacts) -> Delegation:
    if facts.systemd:
        return Delegation(
            "systemd",
            "systemd runs here: each session gets a transient scope (systemd-run --scope) "
            "with TasksMax and MemoryMax",
        )
    if facts.v2_mount is None or facts.own_dir is None:
        return Delegation(
            "none",
            "no cgroup v2 hierarchy is mounted"
            + (" (pids/memory are cgroup v1 controllers here)" if facts.v1_controllers else ""),
            "boot with systemd, or mount cgroup2 (mount -t cgroup2 none /sys/fs/cgroup) on a "
            "kernel booted with cgroup_no_v1=all",
        )
    own = facts.own_dir
    missing = sorted(CONTROLLERS - facts.controllers)
    if missing:
        where = " (they are bound to cgroup v1 here)" if set(missing) & facts.v1_controllers else ""
        return Delegation(
            "none",
            f"the cgroup {own} has no {' and '.join(missing)} controller{where}",
            "boot with systemd.unified_cgroup_hierarchy=1 (or cgroup_no_v1=all), or run "
            "sandbox-launch under systemd",
        )
    if not facts.subtree >= CONTROLLERS:
        remedy = (
            f'echo "+pids +memory" > {own}/cgroup.subtree_control'
            if facts.own_path == "/"
            else "run sandbox-launch under systemd, or from a cgroup delegated to it "
            "(systemd-run --scope -p Delegate=yes ...)"
        )
        return Delegation(
            "none",
            f"the cgroup {own} does not hand pids and memory to child cgroups "
            "(cgroup.subtree_control)",
            remedy,
        )
    if not facts.writable:
        return Delegation(
            "none",
            f"the cgroup {own} is not writable by this user",
            f"run as root, or chown the delegated cgroup {own} to this user",
        )
    return Delegation(
        "cgroup2",
        f"cgroup v2: each session gets a child cgroup of {own} with pids.max and memory.max",
        parent=own,
    )
