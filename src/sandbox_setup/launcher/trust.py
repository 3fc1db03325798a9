"""Trust checks of the files the launcher reads or executes (security invariant 2).

The rule itself is :mod:`sandbox_setup.policy.trust` (shared with the plan, the audit
and the checks); this module applies it to live paths and turns a problem into
a refusal (exit 3) that names the file, the reason and the fix.

Symlinks are resolved first and the *resolved* path is checked and used (read or
exec'd), so a link planted somewhere cannot redirect the launcher afterwards.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.pathfacts import resolved_chain
from sandbox_setup.policy.claude_shim import MARKER_WINDOW, is_claude_shim, shim_refusal
from sandbox_setup.policy.trust import TrustProblem, chain_problems

# Used when PATH is unset; the same directories Debian's login.defs gives root.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _owner_text(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def refusal_text(problem: TrustProblem, what: str) -> str:
    """The launcher's words for one trust problem of ``what``."""
    facts = problem.facts
    path = facts.shown
    mode = f"{facts.perms:04o}"
    if not problem.leaf:
        where = f"{what}: directory {path} on its path"
        if problem.kind == "type":
            return f"{what}: {path} on its path is not a directory"
        if problem.kind == "writable":
            return (
                f"{where} is group- or world-writable (mode {mode}); anyone who can write "
                f"there could replace it. Fix: {problem.fix}"
            )
        return (
            f"{where} is owned by {_owner_text(facts.uid)}, not by you or root. Fix: {problem.fix}"
        )
    if problem.kind in ("type", "missing"):
        return f"{what}: {path} is not a regular file"
    if problem.kind == "owner":
        owner = _owner_text(facts.uid)
        return f"{what}: {path} is owned by {owner}, not by you or root. Fix: {problem.fix}"
    return f"{what}: {path} is group- or world-writable (mode {mode}). Fix: {problem.fix}"


def trusted_owners(uid: int | None = None) -> frozenset[int]:
    """Root and the invoking user."""
    return frozenset({0, os.getuid() if uid is None else uid})


def check_trusted_file(path: Path | PurePosixPath | str, owners: Iterable[int], what: str) -> Path:
    """Check ``path`` and its directories; return the resolved path to use.

    Raises :class:`RefusedError` (exit 3) naming the file and the reason.
    """
    owners = frozenset(owners)
    given = Path(path)
    if not given.is_absolute():
        raise RefusedError(f"{what}: {given} is not an absolute path")
    try:
        real = Path(os.path.realpath(given, strict=True))
    except OSError as exc:
        raise RefusedError(f"{what}: {given}: {exc.strerror or exc}") from None
    problems = chain_problems(*resolved_chain(real), owners)
    if problems:
        raise RefusedError(refusal_text(problems[0], what))
    return real


def read_trusted_text(
    path: Path | PurePosixPath | str, owners: Iterable[int], what: str
) -> tuple[Path, str]:
    """Check then read ``path``; the file read is the one checked (same inode)."""
    real = check_trusted_file(path, owners, what)
    checked = os.lstat(real)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise RefusedError(f"{what}: cannot open {real}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
            raise RefusedError(f"{what}: {real} changed while it was being checked")
        data = handle.read()
    try:
        return real, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RefusedError(f"{what}: {real} is not UTF-8 text ({exc.reason})") from None


def find_trusted_tool(name: str, owners: Iterable[int], path_env: str | None) -> Path:
    """The first ``name`` on PATH, resolved and trust-checked, or refuse.

    Relative PATH entries are skipped. The first executable found must pass the
    trust check: a planted, writable copy earlier on PATH is a refusal, not a
    silent fallback to a later one.
    """
    search = path_env if path_env else DEFAULT_PATH
    for entry in search.split(os.pathsep):
        if not entry.startswith("/"):
            continue
        candidate = Path(entry) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return check_trusted_file(candidate, owners, f"{name} (found on PATH)")
    package = {"bwrap": "bubblewrap", "socat": "socat"}.get(name, "util-linux")
    raise RefusedError(
        f"{name} not found on PATH ({search}); the sandbox cannot be built without it. "
        f"Install it (Debian: apt-get install {package})"
    )


def refuse_claude_shim(path: Path) -> None:
    """Refuse a configured Claude binary that is sandbox-setup's own claude shim.

    The shim runs root's ``claude`` through sandbox-launch; the launcher exec'ing it
    would start itself again, forever. Read from the checked path, without
    following a symlink (it is already resolved).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise RefusedError(f"Claude binary: cannot open {path}: {exc.strerror}") from None
    try:
        head = os.read(fd, MARKER_WINDOW)
    finally:
        os.close(fd)
    if is_claude_shim(head):
        raise RefusedError(f"Claude binary: {shim_refusal(str(path))}")
