"""Whom the live probes run as: the agent, or an unprivileged stand-in for it.

A probe as root can pass where the agent fails, and the reverse (DESIGN.md):
bwrap started by root covers /proc/sys and friends read-only, so a nested
sandbox fails for root yet works for an ordinary user, while disabled
unprivileged user namespaces stop the agent but not root. The launcher never
starts a sandbox as root, so probes must speak for the agent. Before the agent
user exists on the live system (a first apply, or a setup made under ``--root``)
they run as ``nobody``, an unprivileged account every Debian has.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from checks.model import Finding, Report
from wizard.base.accounts import lookup_user
from wizard.base.choices import Mode
from wizard.base.paths import Layout
from wizard.policy.trust import untrusted_reason

STAND_IN = "nobody"


def choose_probe_user(
    mode: Mode | None, agent_user: str | None, layout: Layout
) -> tuple[str | None, list[str]]:
    """``(as_user, notes)`` for ``run_checks``; ``None`` means the operator.

    ``mode`` None (not chosen yet, as in the wizard's first screens) is treated
    like a mode with a separate agent.
    """
    operator = layout.operator.name
    if mode is Mode.UNSAFE or not agent_user or agent_user == operator:
        return None, []  # Claude Code runs as the operator: probe as the operator
    if os.geteuid() != 0:
        return None, [f"not root: live probes ran as {operator}, not as the agent {agent_user}"]
    live = lookup_user(agent_user)
    in_tree = lookup_user(agent_user, layout.root)
    if live is not None and (layout.live or (in_tree is not None and in_tree.uid == live.uid)):
        return agent_user, []
    where = (
        "does not exist yet"
        if in_tree is None
        else f"exists only in {layout.real('/etc/passwd')}, not on this live system"
    )
    if lookup_user(STAND_IN) is None:
        return None, [
            f"the agent {agent_user} {where}, and there is no {STAND_IN} account: live "
            f"probes ran as the operator ({operator}) and may pass where the agent would fail"
        ]
    return STAND_IN, [
        f"the agent {agent_user} {where}: live probes ran as {STAND_IN}, an unprivileged "
        "stand-in for it (the launcher never starts a sandbox as root)"
    ]


def run_live_checks(
    ids: Iterable[str] | None = None,
    *,
    as_user: str | None,
    root: Path = Path("/"),
    timeout: float = 10.0,
    claude: str | None = None,
    on_finding: Callable[[Finding], object] | None = None,
    system_root: Path = Path("/"),
) -> Report:
    """The checks as every part of the wizard runs them: with the trust rule
    (:func:`wizard.policy.trust.untrusted_reason`) deciding what root may execute."""
    from checks.runner import run_checks

    return run_checks(
        ids,
        as_user=as_user,
        root=root,
        timeout=timeout,
        claude=claude,
        on_finding=on_finding,
        system_root=system_root,
        untrusted=untrusted_reason,
    )
