"""Gather the facts the safety rules judge: owners, modes, ACLs, /etc files.

Every path is a target path mapped through :meth:`Layout.real`, so under
``--root DIR`` the tree in DIR is audited and the host is only read for
nothing. Findings show the real path (the one an operator can act on).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.audit.rules import (
    judge_agent_home,
    judge_owned_file,
    judge_parent_dirs,
    judge_password,
    judge_sudoers,
    judge_workspace,
)
from sandbox_setup.base import remedies
from sandbox_setup.base.account_files import agent_groups, read_text_or_none, sudoers_files
from sandbox_setup.base.accounts import Account
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.pathfacts import PathFacts, path_facts
from sandbox_setup.base.paths import Layout
from sandbox_setup.policy.sudoers import find_sudoers_rules
from sandbox_setup.policy.trust import trusted_owners

# POSIX ACL xattr format (linux/posix_acl_xattr.h): a u32 version, then entries
# of (u16 tag, u16 perm, u32 id), little-endian.
_ACL_USER_OBJ, _ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP, _ACL_MASK, _ACL_OTHER = (
    0x01,
    0x02,
    0x04,
    0x08,
    0x10,
    0x20,
)
_WX = 0o3


def _acl_entries(real: Path) -> list[tuple[int, int, int]]:
    try:
        raw = os.getxattr(real, "system.posix_acl_access")
    except OSError:
        return []
    return [struct.unpack_from("<HHI", raw, offset) for offset in range(4, len(raw) - 7, 8)]


def agent_can_write(facts: PathFacts, real: Path, uid: int, gids: set[int]) -> bool:
    """Can ``uid`` (with groups ``gids``) create files in the directory ``real``?"""
    if facts.uid == uid:
        return facts.perms >> 6 & _WX == _WX
    entries = _acl_entries(real)
    if not entries:
        group_ok = facts.gid in gids and facts.perms >> 3 & _WX == _WX
        return group_ok or facts.perms & _WX == _WX
    mask = next((perm for tag, perm, _ in entries if tag == _ACL_MASK), 0o7)
    for tag, perm, ident in entries:
        if tag == _ACL_USER and ident == uid:
            return perm & mask & _WX == _WX
    for tag, perm, ident in entries:
        in_group = (tag == _ACL_GROUP_OBJ and facts.gid in gids) or (
            tag == _ACL_GROUP and ident in gids
        )
        if in_group and perm & mask & _WX == _WX:
            return True
    return any(tag == _ACL_OTHER and perm & _WX == _WX for tag, perm, _ in entries)


@dataclass(frozen=True)
class ClaudeFacts:
    """Where the configured Claude binary really is, and whether it can be trusted."""

    real: Path
    exists: bool
    findings: tuple[AuditFinding, ...]

    @property
    def trusted(self) -> bool:
        return self.exists and not self.findings


def claude_facts(layout: Layout, config: LauncherConfig) -> ClaudeFacts:
    """The Claude binary must pass the trust rule as the launcher applies it: its
    resolved path, root-owned (or the non-root operator's), writable by nobody else."""
    trusted = trusted_owners(layout.operator.uid)
    resolved = layout.resolve(config.claude)
    leaf, dirs = layout.chain(resolved)
    real = layout.real(resolved)
    if not leaf.exists:
        return ClaudeFacts(real, False, ())
    found = judge_owned_file(leaf, trusted, "audit.safety.claude_binary", "the Claude binary")
    found += judge_parent_dirs(dirs, trusted, "audit.safety.claude_dir", "Claude")
    return ClaudeFacts(real, True, tuple(found))


def _trusted_file_findings(
    layout: Layout,
    target: PurePosixPath,
    owners: frozenset[int],
    prefix: str,
    what: str,
    *,
    dirs: bool = True,
) -> list[AuditFinding]:
    """The trust rule as the launcher applies it, for a file that should be there."""
    leaf, parents = layout.chain(layout.resolve(target))
    if not leaf.exists:
        return []
    found = judge_owned_file(leaf, owners, prefix, what)
    if dirs:
        found += judge_parent_dirs(parents, owners, prefix + "_dir", what)
    return found


def config_findings(layout: Layout) -> list[AuditFinding]:
    """launcher.toml and answers.toml (beside it): owned by the operator or root,
    and nobody else can write them or a directory above them."""
    trusted = trusted_owners(layout.operator.uid)
    found = _trusted_file_findings(
        layout, layout.launcher_config, trusted, "audit.safety.config", "the launcher config"
    )
    return found + _trusted_file_findings(
        layout, layout.answers, trusted, "audit.safety.answers", "the answers", dirs=False
    )


def managed_settings_findings(layout: Layout) -> list[AuditFinding]:
    """Managed settings take precedence over the agent's own: only root may write them,
    nor the drop-ins Claude Code merges over them (``managed-settings.d``), nor that
    directory (whoever can write it can add one)."""
    root_only = frozenset({0})
    found = _trusted_file_findings(
        layout, layout.managed_settings, root_only, "audit.safety.settings", "the managed settings"
    )
    folder = layout.managed_settings.parent / "managed-settings.d"
    leaf, parents = layout.chain(layout.resolve(folder))
    if not leaf.exists:
        return found
    managed_there = layout.chain(layout.resolve(layout.managed_settings))[0].exists
    dirs = [leaf] if managed_there else [*parents, leaf]  # else judged above already
    found += judge_parent_dirs(
        dirs, root_only, "audit.safety.settings_dropin_dir", "a managed-settings drop-in"
    )
    try:
        names = sorted(os.listdir(layout.real(folder)))
    except OSError:
        names = []
    for name in names:
        found += _trusted_file_findings(
            layout,
            folder / name,
            root_only,
            "audit.safety.settings_dropin",
            "the managed-settings drop-in",
            dirs=False,
        )
    return found


def agent_findings(
    layout: Layout, config: LauncherConfig, agent: Account | None
) -> list[AuditFinding]:
    """The agent user: exists, 0700 home, workspace access, no sudo, locked password."""
    if agent is None:
        return [
            AuditFinding(
                id="audit.safety.agent_missing",
                severity=Severity.HIGH,
                summary=f"the agent user {config.agent_user} does not exist "
                f"(in {layout.real('/etc/passwd')})",
                detail=f"{config.mode} mode runs Claude Code as {config.agent_user}; the "
                "launcher cannot start, and files still owned by its old uid may go to "
                "the next user created.",
                remedy=remedies.replay_answers(str(layout.real(layout.answers)), str(layout.root)),
            )
        ]
    if agent.uid in (0, layout.operator.uid):
        return []  # the operator's own account is the agent: its sudo rights are its own
    found = judge_agent_home(
        path_facts(layout.real(config.agent_home)), agent.name, agent.uid, agent.gid
    )
    groups = agent_groups(layout, agent)
    for workspace in config.workspaces:
        real = layout.real(workspace)
        facts = path_facts(real)
        access = facts.exists and agent_can_write(facts, real, agent.uid, set(groups.values()))
        found += judge_workspace(facts, access)
    hits = find_sudoers_rules(sudoers_files(layout), agent.name, agent.uid, groups)
    found += judge_sudoers(hits, agent.name)
    shadow = layout.real("/etc/shadow")
    prefix = None if layout.live else str(layout.root)
    found += judge_password(read_text_or_none(shadow), agent.name, str(shadow), prefix)
    return found
