"""A workspace the apply creates (the operator asked for it): who owns it, its mode.

The wizard and the headless path (``--create-workspace``, ``--workspace-owner``,
``--workspace-mode``; ``create_workspaces``, ``workspace_owner``, ``workspace_mode`` in
the answers) ask these rules, and the plan's step (``create-directory``) obeys them.

The defaults are what a careful administrator makes for a project directory the agent
works in: owned by the operator (root, as a rule), mode 0750. The agent gets in the way
it gets into any existing workspace, through the setup's own group and its ACLs; it
never owns the directory (an owner can chmod and setfacl it, opening the workspace to
everyone or taking it out of the setup's ACLs), and nobody else on the host reads it.
Parents that do not exist are made root-owned, 0755 (as ``mkdir -p`` by root would),
so the agent can walk to the workspace and to nothing more.
"""

from __future__ import annotations

import re
import stat

DEFAULT_MODE = 0o750
PARENT_MODE = 0o755
_OCTAL = re.compile(r"0?[0-7]{3}")


def parse_mode(text: str) -> int | str:
    """``0750`` (or ``750``) as a mode; else why not (words)."""
    value = text.strip()
    if not _OCTAL.fullmatch(value):
        return f"mode {value!r} is not three octal digits, e.g. 0750 or 0755"
    return int(value, 8)


def mode_problem(mode: int) -> str | None:
    """Why ``mode`` cannot be a new workspace's (None: it can)."""
    if mode & ~0o777:
        return f"mode {mode:04o} sets more than the permission bits; use e.g. 0750"
    if mode & stat.S_IWOTH:
        return (
            f"mode {mode:04o} lets every user of the host write the workspace (what root "
            "reviews there); use 0750 or 0755"
        )
    if mode & stat.S_IRWXU != stat.S_IRWXU:
        return f"mode {mode:04o} does not give its owner rwx; use 0750 or 0755"
    return None


def owner_problem(owner: str, exists: bool, agent_user: str | None) -> str | None:
    """Why ``owner`` cannot own a new workspace (None: it can). ``exists``: the account
    is on the target system; ``agent_user``: the setup's separate agent (None: none)."""
    if not owner:
        return "the owner of a new workspace is empty; name an account, e.g. root"
    if agent_user is not None and owner == agent_user:
        return (
            f"the agent {agent_user} cannot own its workspace (an owner can change its "
            "mode and ACLs); let root or you own it: the agent gets in through its group"
        )
    if not exists:
        return f"the owner {owner!r} of a new workspace is not an account on this system"
    return None
