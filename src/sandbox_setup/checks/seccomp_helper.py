"""Find Claude's seccomp helper (``apply-seccomp``), so the nested probes run it.

Claude Code's Bash sandbox (the sandbox-runtime) wraps every command as
``bwrap ... -- bash -c 'ARGV0=apply-seccomp CLAUDE bash -c CMD'``: Claude's own
binary, started with ``ARGV0=apply-seccomp``, is the helper that installs the
seccomp filter (2.1.197 has it built in; older runtimes ship a standalone
``vendor/seccomp/<arch>/apply-seccomp`` in ``@anthropic-ai/sandbox-runtime``). The
helper needs a capability-bearing user namespace of its own inside bwrap, which is
exactly what fails on some hosts (``apply-seccomp: write /proc/self/setgroups
(nested userns is capability-restricted ...)``), so a nested probe that skips it
passes where Claude's Bash tool fails.

Where it comes from, first usable wins: the Claude binary the checks use (when it
has the helper built in), then sandbox-runtime's standalone helper next to that
Claude install, next to ``srt`` on the PATH, or in the usual global npm prefixes.
"Usable" means the probe user can run it (a binary in root's 0700 home is not,
and the plan installs a copy elsewhere for the agent) and, when the probe runs as
root, the trust rule allows it. Gathering only: reads files, runs nothing.
"""

from __future__ import annotations

import mmap
import os
import platform
import shutil
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from sandbox_setup.checks.probe import SAFE_PATH

# A string only the helper's own code contains (its error for the nested userns step).
BUILTIN_MARK = b"apply-seccomp: unshare(CLONE_NEWUSER)"
RUNTIME_PACKAGE = Path("@anthropic-ai/sandbox-runtime")
GLOBAL_NODE_MODULES = (Path("/usr/local/lib/node_modules"), Path("/usr/lib/node_modules"))
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class SeccompHelper:
    """The command prefix that applies Claude's seccomp filter, and what it is."""

    argv: tuple[str, ...]  # append the command to run under the filter
    path: str
    source: str  # for a finding's detail


def has_builtin_helper(path: str) -> bool:
    """Does this (Claude Code) binary carry the helper, started as ``ARGV0=apply-seccomp``?"""
    try:
        # O_NONBLOCK: a FIFO planted where the binary should be must not hang the check
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as image:
            return image.find(BUILTIN_MARK) != -1
    except (OSError, ValueError):  # unreadable, or empty (mmap refuses length 0)
        return False
    finally:
        os.close(fd)


def _node_modules_above(path: str) -> Path | None:
    for parent in Path(os.path.realpath(path)).parents:
        if parent.name == "node_modules":
            return parent
    return None


def runtime_helper_paths(claude: str | None, machine: str | None = None) -> list[Path]:
    """Where sandbox-runtime's standalone helper would be, nearest first."""
    arch = _ARCH.get((machine or platform.machine()).lower())
    if arch is None:
        return []
    roots: list[Path] = []
    srt = shutil.which("srt", path=os.environ.get("PATH", "") + os.pathsep + SAFE_PATH)
    for found in (claude, srt):
        above = _node_modules_above(found) if found else None
        if above is not None:
            roots.append(above)
    roots += GLOBAL_NODE_MODULES
    seen = list(dict.fromkeys(roots))
    return [root / RUNTIME_PACKAGE / "vendor/seccomp" / arch / "apply-seccomp" for root in seen]


def runnable_by(path: str, uid: int, gids: Iterable[int]) -> bool:
    """Whether ``uid`` (with groups ``gids``) can reach and execute ``path`` (mode bits:
    root passes DAC checks, everyone else needs x on each directory and r+x on the file)."""
    if uid == 0:
        return os.path.isfile(path) and os.access(path, os.X_OK)
    groups = set(gids)

    def allows(st: os.stat_result, bits: int) -> bool:
        if st.st_uid == uid:
            return st.st_mode & (bits << 6) == bits << 6
        if st.st_gid in groups:
            return st.st_mode & (bits << 3) == bits << 3
        return st.st_mode & bits == bits

    real = Path(os.path.realpath(path))
    try:
        if not all(allows(os.stat(p), 0o1) for p in real.parents):
            return False
        st = os.stat(real)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and allows(st, 0o5)


def find_seccomp_helper(
    claude: str | None, usable: Callable[[str], bool], machine: str | None = None
) -> tuple[SeccompHelper | None, list[str]]:
    """The helper the nested probes run (None: none usable), and notes on what was
    passed over and why."""
    notes: list[str] = []
    if claude is not None and has_builtin_helper(claude):
        real = os.path.realpath(claude)
        if usable(real):
            return SeccompHelper(
                ("env", "ARGV0=apply-seccomp", real),
                real,
                f"Claude Code's built-in seccomp helper (ARGV0=apply-seccomp {real})",
            ), notes
        notes.append(f"{real} has the seccomp helper built in, but the probe user cannot run it")
    for candidate in runtime_helper_paths(claude, machine):
        if not candidate.is_file():
            continue
        path = os.path.realpath(candidate)
        if usable(path):
            return SeccompHelper((path,), path, f"sandbox-runtime's seccomp helper {path}"), notes
        notes.append(f"{path}: the probe user cannot run it")
    return None, notes
