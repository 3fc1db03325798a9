"""Which repositories ``sandbox-launch --run`` lets the agent's git open.

Git refuses a repository its user does not own ("dubious ownership") unless its path
is listed in ``safe.directory``, read from the system, global or command-line scope
only. The operator's own repositories in a workspace are root's (or the operator's),
so ``sandbox-launch --run git -C /srv/app log`` exited 128 as the agent. Debian 12's
git 2.39 has no prefix wildcard, and ``*`` would trust every repository anywhere.

The rule here: a ``--run`` review (never a Claude session) gets, through its
environment only (``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_KEY_n`` / ``GIT_CONFIG_VALUE_n``,
which git reads as command-line scope), the exact top of each repository the
session-start scan found in the workspaces, as the agent sees it: the path inside the
sandbox in sandbox mode, the host's path (and the configured one) in user mode. Nothing
is written to any config, so the agent's git trusts nothing more outside that run.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence

from sandbox_setup.policy.workspace import WorkspaceLayout

__all__ = ["MAX_SAFE_DIRECTORIES", "repository_tops", "review_git_env", "review_safe_directories"]

# The environment is bounded (ARG_MAX counts it): past this many repositories the
# rest stay untrusted (git refuses them as before) and the launch says so.
MAX_SAFE_DIRECTORIES = 512


def repository_tops(layout: WorkspaceLayout) -> list[str]:
    """The repositories of one workspace, relative to it (``.`` for the workspace):
    the directory holding each ``.git`` directory or ``.git`` file (what git calls the
    work tree, the path ``safe.directory`` is matched against), and each bare
    repository itself."""
    tops: list[str] = []
    for gitdir in layout.gitdirs:
        if gitdir.role == "dotgit":
            tops.append(posixpath.dirname(gitdir.rel) or ".")
        elif gitdir.role == "bare":
            tops.append(gitdir.rel)
    tops += [posixpath.dirname(pointer) or "." for pointer in layout.pointers]
    return list(dict.fromkeys(tops))


def review_safe_directories(
    workspaces: Sequence[tuple[str, str]],
    layouts: Mapping[str, WorkspaceLayout],
    *,
    sandbox: bool,
) -> list[str]:
    """The exact paths to trust: ``workspaces`` are (path the sandbox shows, real host
    path) pairs, ``layouts`` the session-start scan's, by real host path."""
    paths: list[str] = []
    for inside, host in workspaces:
        layout = layouts.get(host)
        if layout is None:
            continue
        # git matches the path it computed (getcwd: symlinks resolved). In the sandbox
        # the workspace is mounted at its configured path; in user mode the agent sees
        # the host, where that is the real path (the configured one, if it is a
        # symlink, is listed too: it costs nothing and names the same repository).
        roots = [inside] if sandbox else [host, inside]
        for top in repository_tops(layout):
            for root in roots:
                paths.append(posixpath.normpath(posixpath.join(root, top)))
    return list(dict.fromkeys(paths))


def review_git_env(paths: Iterable[str]) -> dict[str, str]:
    """The environment giving git ``safe.directory`` = each of ``paths`` in
    command-line scope (git 2.31 and later); empty for none."""
    env: dict[str, str] = {}
    count = 0
    for path in paths:
        if not path.startswith("/") or "\0" in path:
            continue  # only absolute paths: "*", "" (reset) or "~" mean something else
        env[f"GIT_CONFIG_KEY_{count}"] = "safe.directory"
        env[f"GIT_CONFIG_VALUE_{count}"] = path
        count += 1
    if count:
        env["GIT_CONFIG_COUNT"] = str(count)
    return env
