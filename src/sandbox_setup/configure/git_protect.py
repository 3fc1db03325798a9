"""Plan actions for root's protected git settings (:mod:`sandbox_setup.policy.git_protected`).

Two kinds of :class:`~sandbox_setup.configure.actions.WriteFile`, so the journal records
each, a replaced file is backed up and ``--undo`` restores it byte for byte (or removes
what the apply created):

- :data:`PROTECTED_KIND`: the owned file, written whole (root, 0644, enforced);
- :data:`INCLUDE_KIND`: an ``[include]`` of it merged into the end of a global git
  config, every other byte kept: root's ``~/.gitconfig``, and the ``~/.gitconfig`` of
  each workspace's owner that is another account (root reviews their work as them too,
  and so do they).

Which global file: git reads ``$XDG_CONFIG_HOME/git/config`` (or ``~/.config/git/config``)
first and ``~/.gitconfig`` after it, both always; ``~/.gitconfig`` is the later one, so
an include at its end wins over anything in either file, and it is the file
``git config --global`` writes when it exists. Only ``-c``/``GIT_CONFIG_PARAMETERS`` or a
``GIT_CONFIG_GLOBAL``/``HOME`` pointing elsewhere bypass it (the plan says so).

Modes: ``sandbox`` and ``user``, where an agent writes workspaces that root then works
in. Not ``unsafe``: there the agent *is* root and could rewrite both files, so the
setting would claim a boundary that does not exist (the plan says so).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import PurePosixPath

from sandbox_setup.base.accounts import Account, lookup_user
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.actions import Action, WriteFile
from sandbox_setup.policy.git_protected import (
    PROTECTED_FILE,
    PROTECTED_SETTINGS,
    render_protected_file,
    with_include,
)

PROTECTED_KIND = "git-protected"
INCLUDE_KIND = "git-include"
GIT_KINDS = (PROTECTED_KIND, INCLUDE_KIND)


def _settings_text() -> str:
    return ", ".join(f"{section}.{key} = {value}" for section, key, value in PROTECTED_SETTINGS)


def _workspace_owners(
    layout: Layout, agent: str, workspaces: Sequence[PurePosixPath], notes: list[str]
) -> list[Account]:
    """Owners of the workspaces other than root and the agent, each once."""
    owners: list[Account] = []
    for workspace in workspaces:
        try:
            # Resolved inside the root: under --root an absolute link stays in DIR.
            uid = os.stat(layout.real(layout.resolve(workspace))).st_uid
        except OSError:
            continue  # a missing workspace is refused elsewhere
        account = lookup_user(uid, layout.root)
        if uid == 0 or (account is not None and account.name == agent):
            continue
        if account is None:
            notes.append(
                f"{workspace} is owned by uid {uid}, which has no account: its git gets no "
                "protected settings"
            )
            continue
        if not os.path.isdir(layout.real(PurePosixPath(account.home))):
            notes.append(
                f"{workspace}'s owner {account.name} has no home ({account.home}): its git "
                "gets no protected settings; root's does"
            )
            continue
        if account not in owners:
            owners.append(account)
    return owners


def _include_action(layout: Layout, account: Account) -> WriteFile:
    path = PurePosixPath(account.home) / ".gitconfig"
    source = str(layout.real(path))
    return WriteFile(
        layout,
        path,
        lambda current: with_include(
            current.decode("utf-8", errors="surrogateescape") if current else "", source
        ).encode("utf-8", errors="surrogateescape"),
        owner=account.name,
        label=f"{account.name}'s git config (include of {PROTECTED_FILE})",
        mode=0o644,
        dir_mode=0o700,
        kind=INCLUDE_KIND,
    )


def protected_git_actions(
    layout: Layout,
    mode: Mode,
    agent: str,
    workspaces: Sequence[PurePosixPath],
    notes: list[str],
) -> list[Action]:
    """The owned file and the includes, after the reasons to skip (appends plan notes)."""
    if mode is Mode.UNSAFE:
        notes.append(
            "root's git gets no protected settings in unsafe mode: the agent runs as root "
            "and could remove them, so they would claim a boundary that is not there"
        )
        return []
    if layout.operator.uid != 0:
        notes.append(
            f"root's protected git settings ({_settings_text()}) need a root operator; "
            "run the apply as root to install them"
        )
        return []
    root = lookup_user("root", layout.root) or Account("root", 0, 0, layout.operator.home, "")
    data = render_protected_file()
    actions: list[Action] = [
        WriteFile(
            layout,
            PROTECTED_FILE,
            lambda _current: data,
            owner="root",
            label=f"root's protected git settings ({_settings_text()})",
            mode=0o644,
            dir_mode=0o755,
            enforce=True,
            kind=PROTECTED_KIND,
        )
    ]
    accounts = [root, *_workspace_owners(layout, agent, workspaces, notes)]
    actions += [_include_action(layout, account) for account in accounts]
    homes = ", ".join(f"{PurePosixPath(a.home) / '.gitconfig'}" for a in accounts)
    notes.append(
        f"git ({homes}): safe.bareRepository = explicit, so git no longer finds a bare "
        "repository by walking up from the current directory (a planted one in a workspace "
        "is refused). For your own bare repositories name them: git --git-dir=/srv/repo.git "
        "log, or GIT_DIR=/srv/repo.git git log; clones, worktrees, submodules, push and "
        "fetch are unaffected, and git before 2.45 also refuses commands run inside a .git "
        "directory. Not in /etc/gitconfig, so other accounts (a git server's) keep theirs. "
        "A shell with GIT_CONFIG_GLOBAL set or another HOME does not read it"
    )
    return actions
