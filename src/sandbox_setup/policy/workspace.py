"""The workspace boundary: which files in a workspace make root's tools run
something, and how the sandbox keeps them read-only.

The agent writes the workspace; root reviews its work there with git, Claude Code
and editors. Those tools execute or obey a few files: git's ``config``, ``hooks/``
and the files that send git to another config (``commondir``,
``config.worktree``, a ``.git`` file's ``gitdir:``), Claude Code's project
settings and ``.mcp.json``, editor folders, direnv's ``.envrc``. This module names
them once; the sandbox binds them read-only (:func:`plan_ro_binds`) and the
end-of-session scan (``sandbox_setup.boundary.scan``) looks for what a mount
could not stop.

The floor is Claude's sandbox runtime (``@anthropic-ai/sandbox-runtime``,
``sandbox-utils.ts`` and ``mandatory-deny-paths.ts``): it denies writes to
``.gitconfig .gitmodules .bashrc .bash_profile .zshrc .zprofile .profile
.ripgreprc .mcp.json``, ``.vscode/ .idea/ .claude/commands/ .claude/agents/``
and (in Claude Code) ``.claude/settings.json`` and ``settings.local.json`` of its
working directory; in every git directory it finds, ``hooks/``, ``config``,
``config.worktree`` and ``commondir``, following ``.git`` files and
``commondir`` to the directory git really uses, and walking ``.git/modules``.
A protected path that does not exist yet gets a placeholder mount (``/dev/null``
for a file, an empty read-only directory where a parent is missing, ``.`` for a
missing ``commondir`` because git refuses an empty one). Everything here does at
least that, and adds ``info/``, ``.claude/hooks/ .claude/skills/`` and ``.envrc``,
with two differences in the placeholders, both because here the agent's own git
and Claude Code run inside the sandbox and see them:

- a missing file becomes an empty read-only *directory*, not ``/dev/null``: git
  lists a device as untracked and ``git add -A`` fails on it ("can only add
  regular files"), while it ignores an empty directory;
- a missing ``.claude/settings.json``, ``.claude/settings.local.json`` or
  ``.mcp.json`` whose parent exists gets none (Claude Code would report the
  placeholder as invalid settings at every start); the end-of-session scan
  judges and neutralizes one created during the session. A missing ``.claude/``
  does get one, which covers both settings files.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from dataclasses import dataclass, field

from sandbox_setup.policy.claude_project import (
    judge_claude_settings,
    judge_mcp_json,
    without_settings,
)
from sandbox_setup.policy.config_hit import ConfigHit
from sandbox_setup.policy.git_danger import ConfigContext, dangerous_git_config
from sandbox_setup.policy.gitconfig import parse_git_config, remove_entries

# With the rules for what a config file holds, re-exported: the boundary reads them here.
__all__ = [
    "GITDIR_PROTECTED",
    "TREE_PROTECTED",
    "WORKSPACE_DOTFILES",
    "BindPlan",
    "ConfigContext",
    "ConfigHit",
    "GitDirFacts",
    "RoBind",
    "TreeFacts",
    "WorkspaceLayout",
    "dangerous_git_config",
    "git_metadata_kind_ok",
    "is_hook_that_runs",
    "judge_claude_settings",
    "judge_mcp_json",
    "looks_like_git_dir",
    "may_be_module_git_dir",
    "parse_git_config",
    "plan_ro_binds",
    "remove_entries",
    "without_settings",
]

# In a git directory: what git obeys (config), runs (hooks/) or follows to
# another git directory or config (commondir, config.worktree). info/ holds
# attributes and excludes git applies to every command.
GITDIR_PROTECTED: Mapping[str, str] = {
    "config": "git reads its settings here (core.fsmonitor, core.hooksPath... run commands)",
    "config.worktree": "git reads more settings here (extensions.worktreeConfig)",
    "hooks": "git runs the hooks in here on commit, checkout, merge, push",
    "info": "git applies the attributes and excludes in here",
    "commondir": "sends git to another git directory for its config and hooks",
}
# A linked worktree's own git directory: git takes config and hooks from its
# commondir, and reads only these two here.
WORKTREE_GITDIR_PROTECTED = ("config.worktree", "commondir")
# What a missing entry of a git directory becomes inside the sandbox.
_GITDIR_PLACEHOLDER = {
    "config": "empty-file",
    "config.worktree": "empty-file",  # an empty worktree config reads as none
    "commondir": "commondir",  # ".": git refuses an empty or unreadable commondir
    "hooks": "empty-dir",
    "info": "empty-dir",
}

# At the top of a work tree (and of the workspace): files root's tools obey.
TREE_PROTECTED: Mapping[str, str] = {
    ".gitmodules": "git reads submodule URLs and settings from it",
    ".claude/settings.json": "root's Claude Code runs its hooks, helpers and env",
    ".claude/settings.local.json": "root's Claude Code runs its hooks, helpers and env",
    ".claude/hooks": "Claude Code hook scripts live here",
    ".claude/commands": "slash commands (they can run shell lines)",
    ".claude/agents": "subagents root's Claude Code can start",
    ".claude/skills": "skills root's Claude Code can load (with their scripts)",
    ".mcp.json": "root's Claude Code starts the MCP servers it names",
    ".vscode": "VS Code runs tasks and settings from it",
    ".idea": "JetBrains IDEs run configurations from it",
    ".envrc": "direnv runs it on cd",
}
# Claude Code inside the sandbox reads these itself, and reports a placeholder
# (a directory or a device where JSON is expected) as invalid settings every
# session; missing ones are left to the end-of-session scan.
_READ_BY_CLAUDE_INSIDE = frozenset(
    {".claude/settings.json", ".claude/settings.local.json", ".mcp.json"}
)
# Claude Code's own Bash sandbox (sandbox-runtime) binds its deny list inside these
# directories, creating mount points for missing entries (``.claude/settings.json``
# among them): an empty read-only placeholder for a missing one makes every sandboxed
# command fail ("bwrap: Can't create file at .../.claude/settings.json: Read-only file
# system", seen with Claude Code 2.1). A missing one is left to the end-of-session scan.
_INNER_SANDBOX_BINDS_BELOW = frozenset({".claude"})
# Also at the top of the workspace only (sandbox-runtime's list): read by shells
# and tools when the workspace is also someone's home directory.
WORKSPACE_DOTFILES: Mapping[str, str] = {
    name: "a shell or tool reads it when this directory is a home directory"
    for name in (
        ".gitconfig",
        ".bashrc",
        ".bash_profile",
        ".zshrc",
        ".zprofile",
        ".profile",
        ".ripgreprc",
    )
}


def is_hook_that_runs(name: str, mode: int) -> bool:
    """Would git run the entry ``name`` (``lstat`` mode ``mode``) of a hooks directory?

    git runs ``hooks/<event>`` when it is executable (as root: any x bit). A
    symlink counts (git follows it); ``*.sample`` files never run; neither does a
    file without an x bit or a directory.
    """
    if name.endswith(".sample"):
        return False
    if stat.S_ISLNK(mode):
        return True
    return stat.S_ISREG(mode) and bool(mode & 0o111)


# The names git's discovery looks at in a directory to take it for a repository
# (is_git_directory()): the one set every part of the scan asks about.
GITDIR_MARKERS = frozenset({"HEAD", "objects", "refs", "commondir"})
# The directories git keeps in a git directory and reads as its own (judged
# through the git directory, never walked as work-tree files).
GIT_OWN_DIRS = frozenset(
    {"objects", "refs", "logs", "hooks", "info", "worktrees", "modules", "lfs", "rr-cache"}
)
# Of those, where git opens and reads files (refs, reflogs, objects, attributes):
# a FIFO there makes root's git wait for ever, a device gives it what it reads.
GIT_READ_DIRS = ("refs", "logs", "objects", "info")


def looks_like_git_dir(kinds: Mapping[str, str]) -> bool:
    """Would git's discovery open a directory with these entries (name -> kind, as
    ``lstat`` sees them, for the names of :data:`GITDIR_MARKERS`) as a repository?

    git's ``is_git_directory()``: ``objects`` and ``refs`` that pass
    ``access(X_OK)``, which follows symlinks and lets a file with an x bit through
    (root: any x bit), then ``HEAD``, which it opens and reads whatever its type (a
    symlink is read with readlink; a FIFO is opened, and root's git waits there for
    ever; only a directory is never taken, its read fails); with a ``commondir``,
    ``objects`` and ``refs`` are looked for in the directory it names. So any
    ``HEAD`` but a directory, any ``objects`` and ``refs`` count here, whatever
    their type, and any ``commondir``: a directory taken for a repository
    by mistake costs a look at its config, one missed costs root a command (or a
    hang). A bare repository is found this way too, from any directory below it,
    unless root's config says ``safe.bareRepository = explicit``."""
    if kinds.get("HEAD", "dir") == "dir":
        return False
    if "commondir" in kinds:
        return True
    return "objects" in kinds and "refs" in kinds


def may_be_module_git_dir(kinds: Mapping[str, str]) -> bool:
    """Under a git directory's ``modules/`` (where a submodule's name, a path, puts
    its git directory several levels down): a directory git would open as one
    (:func:`looks_like_git_dir`), or one holding the settings or hooks git would
    take from it once a ``.git`` file names it."""
    return looks_like_git_dir(kinds) or "config" in kinds or "hooks" in kinds


def git_metadata_kind_ok(kind: str) -> bool:
    """May an entry of this kind (:func:`sandbox_setup.base.fdwalk.kind_of`; for a
    symlink, the kind of what it names, as git's ``open`` follows it) stand in a git
    directory? git opens ``HEAD``, ``config``, ``index``, refs, ``packed-refs``,
    ``commondir``, ``gitdir`` and objects expecting regular files: a FIFO, a socket
    or a device there makes root's git wait for ever (or read what the device
    gives). Directories and regular files are git's."""
    return kind in ("dir", "file")


@dataclass(frozen=True, slots=True)
class GitDirFacts:
    """A git directory found in a workspace and which protected entries it has.

    ``role``: ``dotgit`` (a ``.git`` directory), ``target`` (named by a ``.git``
    file), ``common`` (named by a ``commondir``), ``module`` (under
    ``.git/modules``), ``worktree`` (under ``.git/worktrees``), ``bare``.
    ``present`` maps each entry of :data:`GITDIR_PROTECTED` that exists to its
    kind (``file dir link other``).
    """

    rel: str
    role: str
    present: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TreeFacts:
    """A work tree top (or the workspace itself) and which of the
    :data:`TREE_PROTECTED` paths (and their parents, e.g. ``.claude``) exist."""

    rel: str
    present: Mapping[str, str] = field(default_factory=dict)
    workspace_root: bool = False


@dataclass(frozen=True, slots=True)
class WorkspaceLayout:
    """What the session-start scan of one workspace found, for the binds."""

    gitdirs: tuple[GitDirFacts, ...] = ()
    pointers: tuple[str, ...] = ()  # .git files (gitdir: pointers)
    trees: tuple[TreeFacts, ...] = ()
    # Other files root's git obeys: a core.hooksPath directory or an included
    # config inside the workspace, (rel, kind).
    extra: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RoBind:
    """A read-only mount at ``<workspace>/rel``. ``source`` is ``self`` (the path
    bound over itself) or a placeholder for a path that does not exist yet:
    ``empty-dir`` (an empty read-only directory: nothing can be created there),
    ``empty-file`` or ``commondir`` (a file holding ``.``), which the launcher
    creates on the host first because git reads them."""

    rel: str
    source: str
    why: str


@dataclass(frozen=True, slots=True)
class BindPlan:
    """The read-only binds for one workspace, and what no mount covers."""

    binds: tuple[RoBind, ...]
    # (rel, reason): protected paths no mount covers; the end-of-session scan does.
    not_bound: tuple[tuple[str, str], ...]


def _join(base: str, name: str) -> str:
    return name if base in ("", ".") else f"{base}/{name}"


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory + "/")


def _gitdir_candidates(gitdir: GitDirFacts) -> list[tuple[str, str | None, str, str]]:
    names = WORKTREE_GITDIR_PROTECTED if gitdir.role == "worktree" else tuple(GITDIR_PROTECTED)
    return [
        (_join(gitdir.rel, n), gitdir.present.get(n), _GITDIR_PLACEHOLDER[n], GITDIR_PROTECTED[n])
        for n in names
    ]


def _tree_candidates(tree: TreeFacts) -> list[tuple[str, str | None, str, str]]:
    wanted = dict(TREE_PROTECTED)
    if tree.workspace_root:
        wanted.update(WORKSPACE_DOTFILES)
    out: list[tuple[str, str | None, str, str]] = []
    for name, why in wanted.items():
        parent, _, _leaf = name.rpartition("/")
        parent_kind = tree.present.get(parent) if parent else "dir"
        rel = _join(tree.rel, name)
        kind = tree.present.get(name)
        if kind is None and parent_kind != "dir":
            if (
                parent_kind is None
                and tree.workspace_root
                and parent not in _INNER_SANDBOX_BINDS_BELOW
            ):
                # The parent is missing too: one empty read-only directory there
                # blocks everything below it (as the runtime does).
                out.append((_join(tree.rel, parent), None, "empty-dir", why))
            elif parent_kind == "link":
                out.append((_join(tree.rel, parent), "link", "", why))
            continue  # below a file nothing can be created
        placeholder = "" if name in _READ_BY_CLAUDE_INSIDE else "empty-dir"
        out.append((rel, kind, placeholder if tree.workspace_root else "", why))
    return out


def plan_ro_binds(layout: WorkspaceLayout, max_binds: int = 4000) -> BindPlan:
    """The read-only binds that keep the protected paths of one workspace out of
    the agent's reach, in bwrap order (after the workspace's own ``--bind``).

    Existing paths are bound over themselves, so git keeps writing ``objects/``,
    ``refs/``, ``index``, ``logs/``, ``HEAD`` and ``COMMIT_EDITMSG`` beside them:
    committing inside the sandbox still works. A protected path that does not
    exist gets a placeholder where creating it matters (in every git directory,
    and at the top of the workspace); deeper work trees only have their existing
    files bound, and the end-of-session scan covers the rest. A symlink is never
    bound (the bind would land on its target; the scan judges it), nor anything
    below a file.
    """
    candidates: list[tuple[str, str | None, str, str]] = []
    for gitdir in layout.gitdirs:
        candidates += _gitdir_candidates(gitdir)
    for pointer in layout.pointers:
        candidates.append((pointer, "file", "", "sends git to the git directory it names"))
    for tree in layout.trees:
        candidates += _tree_candidates(tree)
    for extra_rel, extra_kind in layout.extra:
        candidates.append(
            (extra_rel, extra_kind, "", "root's git reads this (hooksPath or include)")
        )

    chosen: dict[str, RoBind] = {}
    dir_rels: set[str] = set()
    not_bound: dict[str, str] = {}
    for rel, kind, placeholder, why in candidates:
        if kind in ("file", "dir"):
            bind = RoBind(rel, "self", why)
        elif kind == "link":
            not_bound[rel] = "a symlink: a bind would land on its target; the scan judges it"
            continue
        elif kind is not None:
            not_bound[rel] = "not a regular file or directory; the scan judges it"
            continue
        elif placeholder:
            bind = RoBind(rel, placeholder, why)
        else:
            continue  # missing, and creating it there is left to the scan
        previous = chosen.get(rel)
        if previous is None or (bind.source == "empty-dir" and previous.source != "self"):
            chosen[rel] = bind
        if kind == "dir" or bind.source == "empty-dir":
            dir_rels.add(rel)
    # A directory bound read-only already covers what is below it (and bwrap could
    # not make a mount point inside it).
    binds = [b for b in chosen.values() if not any(_under(b.rel, d) for d in dir_rels)]
    binds.sort(key=lambda b: (b.rel.count("/"), b.rel))
    for extra in binds[max_binds:]:
        not_bound[extra.rel] = f"more than {max_binds} read-only binds; the scan covers it"
    return BindPlan(binds=tuple(binds[:max_binds]), not_bound=tuple(sorted(not_bound.items())))
