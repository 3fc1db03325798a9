"""Whom the live probes run as: the agent, or an unprivileged stand-in for it.

A probe as root can pass where the agent fails, and the reverse (docs/design.md):
bwrap started by root covers /proc/sys and friends read-only, so a nested
sandbox fails for root yet works for an ordinary user, while disabled
unprivileged user namespaces stop the agent but not root. The launcher never
starts a sandbox as root, so probes must speak for the agent. Before the agent
user exists on the live system (a first apply, or a setup made under ``--root``)
they run as ``nobody``, an unprivileged account every Debian has.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox_setup.base.accounts import DEFAULT_AGENT_USER, lookup_user
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.launcher_config import parse_launcher_config
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.regular_files import read_regular_text
from sandbox_setup.policy.trust import chain_problems, trusted_owners, untrusted_reason

if TYPE_CHECKING:
    from sandbox_setup.checks.model import Finding, Report

STAND_IN = "nobody"
# net.egress starts the launcher's egress proxy with this (as root, dropping to the
# probe user): a separate process, so the checks need not import the launcher. -P: the
# working directory is not on sys.path (the probes run from /, but never trust it).
EGRESS_PROBE = (sys.executable, "-P", "-m", "sandbox_setup.launcher.egress.probe")
# launch.path runs the launcher's own start-up (verification, network set-up) with this.
LAUNCH_PROBE = (sys.executable, "-P", "-m", "sandbox_setup.launcher.startup_probe")


def uid_mapped(uid: int, uid_map: str | None = None) -> bool:
    """Whether ``uid`` exists in this process's user namespace (``/proc/self/uid_map``),
    so ``setpriv`` can switch to it; in a user namespace that maps only root (a
    container, ``unshare -Ur``), an unprivileged stand-in cannot be used."""
    if uid_map is None:
        try:
            with open("/proc/self/uid_map", encoding="ascii") as handle:
                uid_map = handle.read()
        except OSError:
            return True  # no procfs to ask: let setpriv say
    for line in uid_map.splitlines():
        fields = line.split()
        if len(fields) == 3 and all(f.isdigit() for f in fields):
            inside, _outside, count = map(int, fields)
            if inside <= uid < inside + count:
                return True
    return False


def configured_agent(layout: Layout) -> tuple[Mode | None, str]:
    """``(mode, agent user)`` of the setup under ``layout`` (its launcher config), for
    probes run before a mode is chosen (``--check``, the wizard's checks step); with
    no setup yet (or a config that cannot be read, which ``--audit`` reports), no mode
    and the default agent. A config the trust rule refuses (someone else could write
    it: the audit reports it) is not believed either, and the read is bounded: a FIFO
    or a device there never blocks ``--check``."""
    leaf, dirs = layout.chain(layout.resolve(layout.launcher_config))
    if chain_problems(leaf, dirs, trusted_owners(layout.operator.uid)):
        return None, DEFAULT_AGENT_USER
    try:
        real = layout.real(layout.launcher_config)
        config = parse_launcher_config(read_regular_text(real), str(real))
    except (OSError, UnicodeDecodeError, SetupError):
        return None, DEFAULT_AGENT_USER
    return config.mode, config.agent_user


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
    stand_in = lookup_user(STAND_IN)
    if stand_in is None or not uid_mapped(stand_in.uid):
        why = (
            f"there is no {STAND_IN} account"
            if stand_in is None
            else f"{STAND_IN} (uid {stand_in.uid}) has no uid in this user namespace"
        )
        return None, [
            f"the agent {agent_user} {where}, and {why}: live probes ran as the operator "
            f"({operator}) and may pass where the agent would fail"
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
    agent_user: str | None = None,
) -> Report:
    """The checks as every part of the wizard runs them: with the trust rule
    (:func:`sandbox_setup.policy.trust.untrusted_reason`) deciding what root may execute.
    ``agent_user`` is the agent being planned; None: the one the setup under ``root``
    configured (:func:`configured_agent`), or the default before any setup."""
    # why: the checks load while --check's experiments run (sandbox_setup.checks.prefetch)
    from sandbox_setup.checks.runner import run_checks

    return run_checks(
        ids,
        as_user=as_user,
        root=root,
        timeout=timeout,
        claude=claude,
        on_finding=on_finding,
        system_root=system_root,
        untrusted=untrusted_reason,
        egress_probe=EGRESS_PROBE,
        launch_probe=LAUNCH_PROBE,
        agent_user=agent_user or configured_agent(Layout.for_root(root))[1],
    )
