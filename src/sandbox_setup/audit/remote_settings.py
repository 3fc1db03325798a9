"""``audit.claude.remote_settings``: Claude Code has cached server-managed settings
in the operator's or the agent's home (:mod:`sandbox_setup.policy.claude_remote`):
these settings may be overridden by an organisation's."""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base.accounts import Account
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import pasted_word
from sandbox_setup.policy.claude_remote import (
    MAY_BE_OVERRIDDEN,
    REMEDY,
    WHY,
    remote_settings_caches,
)


def remote_settings_findings(
    layout: Layout, config: LauncherConfig, agent: Account | None
) -> list[AuditFinding]:
    """One finding naming every cache found in the operator's and the agent's homes."""
    if str(config.mode) not in ("sandbox", "user"):
        return []
    accounts = [layout.operator, agent]
    homes = [(a.name, PurePosixPath(a.home)) for a in accounts if a is not None]
    found = remote_settings_caches(homes, lambda path: os.path.lexists(layout.real(path)))
    if not found:
        return []
    shown = [str(layout.real(path)) for _, path in found]
    return [
        AuditFinding(
            id="audit.claude.remote_settings",
            severity=Severity.MEDIUM,
            summary="server-managed Claude settings are cached for "
            + ", ".join(f"{who} ({path})" for who, path in found)
            + f": {MAY_BE_OVERRIDDEN}",
            detail=WHY,
            remedy=REMEDY.format(paths=" ".join(pasted_word(p) for p in shown)),
        )
    ]
