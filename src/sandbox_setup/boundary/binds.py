"""The read-only binds of the workspace boundary, as bwrap arguments, and the
placeholders they need for paths that do not exist yet.

:func:`sandbox_setup.policy.workspace.plan_ro_binds` decides what is bound; this turns
the plan into bwrap arguments placed after the workspace's own ``--bind``:

- an existing path: ``--ro-bind PATH PATH`` (host path as source);
- a missing file or directory (``.claude/``, ``.vscode/``, ``.bashrc``,
  ``.git/hooks/``): ``--tmpfs PATH --remount-ro PATH``, an empty read-only
  directory. Nothing can be created, renamed or removed there (it is a mount
  point), and git ignores an empty directory (``/dev/null``, what Claude's
  sandbox runtime binds, shows up as untracked and makes ``git add -A`` fail);
- a missing ``commondir`` or ``config.worktree`` in a git directory: git itself
  reads these, refuses an empty or unreadable ``commondir``, and would see the
  empty mount point bwrap leaves on the host during the session. So the launcher
  creates them on the host first (:func:`prepare`, as the operator, by fd: ``.``
  for ``commondir``, which points git at the directory it is in, and an empty
  ``config.worktree``), binds them over themselves, and removes them afterwards.

For a destination that does not exist bwrap creates a mount point on the host
(an empty 0444 file or an empty directory) as the agent; the agent cannot write,
rename or delete it during the session (it is a mount point there). :func:`finish`
removes exactly those and the prepared files when the session ends, by fd, and
leaves anything that is no longer what was put there.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from sandbox_setup.base import fdwalk
from sandbox_setup.policy.workspace import BindPlan, RoBind

_PREPARED_CONTENT = {"commondir": b".\n", "empty-file": b""}


@dataclass(slots=True)
class Prepared:
    """What :func:`prepare` created on the host for one workspace (relative paths)."""

    workspace: str
    created: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _parent(top: int, rel: str) -> tuple[int, str]:
    parent, _, leaf = rel.rpartition("/")
    return fdwalk.open_dir_path(top, parent or "."), leaf


def _open_top(workspace: str) -> int:
    return os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)


def prepare(workspace: str, plan: BindPlan) -> Prepared:
    """Create the placeholder files git must be able to read (see the module
    docstring), 0444, owned by the caller. Call before the sandbox starts."""
    done = Prepared(workspace)
    top = _open_top(workspace)
    try:
        for bind in plan.binds:
            content = _PREPARED_CONTENT.get(bind.source)
            if content is None:
                continue
            try:
                fd, leaf = _parent(top, bind.rel)
            except OSError:
                done.failed.append(bind.rel)
                continue
            try:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                wfd = os.open(leaf, flags, 0o444, dir_fd=fd)
                try:
                    os.write(wfd, content)
                    os.fchmod(wfd, 0o444)
                finally:
                    os.close(wfd)
                done.created.append(bind.rel)
            except OSError:
                done.failed.append(bind.rel)  # it appeared meanwhile: not bound
            finally:
                os.close(fd)
    finally:
        os.close(top)
    return done


def ro_bind_argv(
    plan: BindPlan, host_root: str, sandbox_root: str, prepared: Prepared | None = None
) -> list[str]:
    """The bwrap arguments for ``plan``: sources on the host (``host_root``, the
    workspace's real path), destinations inside (``sandbox_root``, where the
    workspace is bound). A prepared placeholder is bound like an existing file;
    one :func:`prepare` could not create is left out (the scan covers it)."""
    created = set(prepared.created) if prepared is not None else set()
    argv: list[str] = []
    for bind in plan.binds:
        dest = os.path.join(sandbox_root, bind.rel)
        if bind.source == "self" or bind.rel in created:
            argv += ["--ro-bind", os.path.join(host_root, bind.rel), dest]
        elif bind.source == "empty-dir":
            argv += ["--tmpfs", dest, "--remount-ro", dest]
    return argv


def _prepared_left(fd: int, leaf: str, st: os.stat_result, source: str) -> bool:
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
        return False
    content = fdwalk.read_file_at(fd, leaf, 64)
    return content is not None and content.data == _PREPARED_CONTENT[source]


def finish(workspace: str, plan: BindPlan, prepared: Prepared | None = None) -> list[str]:
    """After the session: remove the empty directories bwrap made as mount points
    for placeholders, and the files :func:`prepare` made. Returns what was left in
    place because it is no longer what was put there (the scan judges it)."""
    created = set(prepared.created) if prepared is not None else set()
    kept: list[str] = []
    try:
        top = _open_top(workspace)
    except OSError:
        return kept
    try:
        # Deepest first, so a directory placeholder is empty when its turn comes.
        for bind in sorted(plan.binds, key=lambda b: -b.rel.count("/")):
            if bind.source == "empty-dir" or bind.rel in created:
                kept += _remove_one(top, bind, bind.rel in created)
    finally:
        os.close(top)
    return kept


def _remove_one(top: int, bind: RoBind, was_prepared: bool) -> list[str]:
    try:
        fd, leaf = _parent(top, bind.rel)
    except OSError:
        return []
    try:
        st = fdwalk.lstat_at(fd, leaf)
        if st is None:
            return []
        try:
            if was_prepared and _prepared_left(fd, leaf, st, bind.source):
                os.unlink(leaf, dir_fd=fd)
            elif not was_prepared and stat.S_ISDIR(st.st_mode):
                os.rmdir(leaf, dir_fd=fd)  # only ever removes an empty directory
            else:
                return [bind.rel]
        except OSError:
            return [bind.rel]  # not empty (or busy): not ours to remove
        return []
    finally:
        os.close(fd)
