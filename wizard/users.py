"""Accounts and workspace access: the commands that create the agent user, its
groups and the ACLs that let it into the workspaces.

Commands are built as argv lists (shown by ``--dry-run``) and run with
:func:`run_tool`. Under ``--root DIR`` every shadow-utils command gets
``--prefix DIR`` so it edits ``DIR/etc/passwd`` and friends, never the host's;
ACL entries use numeric ids from ``DIR/etc/group`` for the same reason.
"""

from __future__ import annotations

import grp
import subprocess
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from wizard.accounts import lookup_group_gid, lookup_user
from wizard.errors import SetupError
from wizard.paths import Layout

# The group that gives the agent user rwX on the workspaces.
WORKSPACE_GROUP = "sandbox-ws"
AGENT_SHELL = "/bin/bash"


class CommandError(SetupError):
    """A system command failed; the message carries its argv and stderr."""


def run_tool(argv: Sequence[str], *, timeout: float = 120.0) -> str:
    """Run ``argv``; raise :class:`CommandError` with its stderr on failure."""
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False, cwd="/"
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommandError(f"{' '.join(argv)}: {exc}") from None
    if proc.returncode != 0:
        raise CommandError(
            f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.strip()}"
        )
    return proc.stdout


def prefix_args(layout: Layout) -> list[str]:
    return [] if layout.live else ["--prefix", str(layout.root)]


def useradd_argv(
    layout: Layout, name: str, home: PurePosixPath, groups: Sequence[str]
) -> list[str]:
    """useradd with a locked password (no ``-p``: shadow holds ``!``), a 0700
    home, and its own group."""
    argv = ["useradd", *prefix_args(layout), "--create-home", "--home-dir", str(home)]
    argv += ["--user-group", "--shell", AGENT_SHELL, "--key", "HOME_MODE=0700"]
    if groups:
        argv += ["--groups", ",".join(groups)]
    return [*argv, name]


def userdel_argv(layout: Layout, name: str) -> list[str]:
    return ["userdel", *prefix_args(layout), "--remove", name]


def groupadd_argv(layout: Layout, name: str) -> list[str]:
    return ["groupadd", *prefix_args(layout), name]


def groupdel_argv(layout: Layout, name: str) -> list[str]:
    return ["groupdel", *prefix_args(layout), name]


def add_to_group_argv(layout: Layout, user: str, group: str) -> list[str]:
    return ["usermod", *prefix_args(layout), "--append", "--groups", group, user]


def remove_from_group_argv(layout: Layout, user: str, group: str) -> list[str]:
    return ["usermod", *prefix_args(layout), "--remove", "--groups", group, user]


def group_members(name: str, root: Path) -> list[str] | None:
    """Supplementary members of group ``name`` in the target system (None: no group)."""
    if Path(root).resolve() == Path("/"):
        try:
            return list(grp.getgrnam(name).gr_mem)
        except KeyError:
            return None
    try:
        text = (Path(root) / "etc/group").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and parts[0] == name:
            return [m for m in parts[3].split(",") if m]
    return None


def user_exists(layout: Layout, name: str) -> bool:
    return lookup_user(name, layout.root) is not None


def group_gid(layout: Layout, name: str) -> int | None:
    return lookup_group_gid(name, layout.root)


def acl_entries(real_path: Path) -> set[str]:
    """The ACL of ``real_path`` as a set of ``[default:]type:qualifier:perms`` lines
    with numeric qualifiers (``getfacl -n``)."""
    out = run_tool(["getfacl", "--absolute-names", "--numeric", "--omit-header", str(real_path)])
    entries = set()
    for line in out.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            entries.add(line)
    return entries
