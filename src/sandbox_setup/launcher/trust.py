"""Trust checks of the files the launcher reads or executes (security invariant 2).

The rule itself, its words and its live-path check (:func:`check_trusted_file`)
are :mod:`sandbox_setup.policy.trust` (shared with the plan, the audit, the undo
and the checks); this module reads what passed it and finds the tools on PATH.

Symlinks are resolved first and the *resolved* path is checked and used (read or
exec'd), so a link planted somewhere cannot redirect the launcher afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.policy.claude_shim import MARKER_WINDOW, is_claude_shim, shim_refusal
from sandbox_setup.policy.trust import check_trusted_file

# Used when PATH is unset; the same directories Debian's login.defs gives root.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def trusted_owners(uid: int | None = None) -> frozenset[int]:
    """Root and the invoking user."""
    return frozenset({0, os.getuid() if uid is None else uid})


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


class ToolNotFound(RefusedError):
    """A tool that is not on PATH at all (one that is there but untrusted is a plain
    :class:`RefusedError`): a launch that can do without it may go on."""


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
    raise ToolNotFound(
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
