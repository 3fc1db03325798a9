"""The short list of git settings a session may add or change in a repository's
own metadata (docs/design.md invariant 8 (c)): an allowlist, not a denylist.

git has too many ways to run a command for a list of dangerous names to be the boundary
(docs/design.md invariant 8, held by structure: aliases with ``fetch --upload-pack``,
``rebase --exec``, ``log --output``; a quoted ``core.fsmonitor = " on"``). So in the
config files of a git directory the agent can write (``config``, ``config.worktree`` and
what they include), every setting that appeared or changed during a session is
neutralized unless it is listed here, with a value of the shape listed. These are the
keys ``git init``, ``git clone``, ``git remote``, ``git branch -u``, ``git submodule
add`` and ``git config user.*`` write, none of which makes git run anything or go
anywhere root did not ask for:

==============================  ==================================================
key                             value
==============================  ==================================================
core.repositoryformatversion    a number
core.filemode, core.symlinks,   a boolean (git's reading: ``" on"`` is not one)
core.ignorecase,
core.logallrefupdates           (also ``always``)
core.bare                       false
core.worktree                   a path inside the workspace (submodules have one)
remote.<name>.url / .pushurl    not ``ext::`` or ``fd::`` (those run commands)
remote.<name>.fetch / .push     a refspec
branch.<name>.remote / .merge   not ``ext::`` or ``fd::``
submodule.<name>.url            not ``ext::`` or ``fd::``
submodule.<name>.active         a boolean
user.name, user.email           any printable text (text in commits)
==============================  ==================================================

No listed value may hold a character that is not printable text (``str.isprintable``:
C0 and C1 controls, DEL, bidi overrides, bytes that are not UTF-8): root's ``git log``,
``git config`` and ``git remote -v`` print these values raw, and ``ESC ] 0 ; ... BEL``
or a colour sequence there acts on root's terminal.

Anything else a session writes (an alias, a pager, a filter or diff driver the
agent's ``.gitattributes`` names, an include, a hook setting) is moved out of
the file; the operator's own settings that were there when the session started
stay. The values are the ones :func:`~sandbox_setup.policy.gitconfig.parse_git_config`
reads, git's own parsing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable

from sandbox_setup.policy.config_hit import ConfigHit
from sandbox_setup.policy.git_danger import ConfigContext
from sandbox_setup.policy.gitconfig import ConfigEntry, git_bool, git_int

__all__ = ["INERT_KEYS", "is_inert", "unlisted_entries"]


def _number(value: str | None) -> bool:
    return value is not None and git_int(value) is not None


def _boolean(value: str | None) -> bool:
    return git_bool(value) is not None


def _false(value: str | None) -> bool:
    return git_bool(value) is False


def _logallrefupdates(value: str | None) -> bool:
    return _boolean(value) or (value or "").lower() == "always"


def _no_command_url(value: str | None) -> bool:
    if value is None:
        return False
    low = value.strip().lower()
    return not low.startswith(("ext::", "fd::")) and not low.startswith("-")


def _anything(value: str | None) -> bool:
    return value is not None


_Check = Callable[[str | None], bool]

# (section, needs a subsection, name) -> the values allowed
INERT_KEYS: dict[tuple[str, bool, str], _Check] = {
    ("core", False, "repositoryformatversion"): _number,
    ("core", False, "filemode"): _boolean,
    ("core", False, "symlinks"): _boolean,
    ("core", False, "ignorecase"): _boolean,
    ("core", False, "logallrefupdates"): _logallrefupdates,
    ("core", False, "bare"): _false,
    ("remote", True, "url"): _no_command_url,
    ("remote", True, "pushurl"): _no_command_url,
    ("remote", True, "fetch"): _anything,
    ("remote", True, "push"): _anything,
    ("branch", True, "remote"): _no_command_url,
    ("branch", True, "merge"): _no_command_url,
    ("submodule", True, "url"): _no_command_url,
    ("submodule", True, "active"): _boolean,
    ("user", False, "name"): _anything,
    ("user", False, "email"): _anything,
}


def _worktree_inside(value: str | None, context: ConfigContext | None) -> bool:
    if context is None or value is None or not value.strip() or value.startswith("~"):
        return False
    path = posixpath.normpath(posixpath.join(str(context.gitdir), value))
    workspace = posixpath.normpath(str(context.workspace))
    return path == workspace or path.startswith(workspace.rstrip("/") + "/")


def is_inert(entry: ConfigEntry, context: ConfigContext | None = None) -> bool:
    """Whether ``entry`` is on the list (key and value shape) above."""
    if entry.value is not None and not entry.value.isprintable():
        return False  # terminal controls, printed raw by root's git
    if (entry.section, entry.subsection, entry.name) == ("core", None, "worktree"):
        return _worktree_inside(entry.value, context)
    check = INERT_KEYS.get((entry.section, entry.subsection is not None, entry.name))
    return check is not None and check(entry.value)


def unlisted_entries(
    entries: Iterable[ConfigEntry], context: ConfigContext | None = None
) -> list[ConfigHit]:
    """The settings of ``entries`` not on the list, as hits (kind ``unlisted``)."""
    return [
        ConfigHit(
            key=entry.key,
            value=entry.value,
            why="not one of the few inert settings a session may change "
            "(docs/workspace-boundary.md); git may run or obey it",
            kind="unlisted",
            line=entry.line,
            locator=(entry.start,),
        )
        for entry in entries
        if not is_inert(entry, context)
    ]
