"""The checks, in the order they are run and shown: an explicit tuple, no discovery.

IDs are stable and never renamed (docs/design.md); new checks get new IDs.
"""

from __future__ import annotations

from sandbox_setup.checks import (
    bwrap,
    cgroup,
    claude,
    claude_guard,
    container,
    identity,
    landlock,
    launch,
    net,
    proc,
    seccomp,
    tty,
    user_net,
    userns,
)
from sandbox_setup.checks.base import Check

CHECKS: tuple[Check, ...] = (
    Check("identity.root", "Who runs this (root? sudo?)", False, identity.check_identity),
    Check("platform.container", "Container runtime", False, container.check_platform),
    Check("proc.masks", "Masked or read-only mounts over /proc", False, proc.check_proc_masks),
    Check(
        "userns.policy",
        "User namespace policy (sysctls, AppArmor)",
        False,
        userns.check_userns_policy,
    ),
    Check(
        "userns.create", "Create a user namespace with a uid map", True, userns.check_userns_create
    ),
    Check(
        "proc.fresh_mount",
        "Mount a fresh /proc in a new user+pid namespace",
        True,
        proc.check_fresh_proc,
    ),
    Check("bwrap.installed", "bubblewrap installed", False, bwrap.check_bwrap_installed),
    Check(
        "bwrap.sandbox",
        "bubblewrap starts a sandbox with a fresh /proc",
        True,
        bwrap.check_bwrap_sandbox,
    ),
    Check(
        "bwrap.nested",
        "Claude's inner sandbox (strong) inside an outer bwrap",
        True,
        bwrap.check_bwrap_nested,
    ),
    Check(
        "bwrap.nested_weak",
        "Claude's weaker nested sandbox inside an outer bwrap",
        True,
        bwrap.check_bwrap_nested_weak,
    ),
    Check(
        "bwrap.direct",
        "Claude's own sandbox (strong) with no outer sandbox (user mode)",
        True,
        bwrap.check_bwrap_direct,
    ),
    Check(
        "bwrap.direct_weak",
        "Claude's weaker sandbox with no outer sandbox (user mode)",
        True,
        bwrap.check_bwrap_direct_weak,
    ),
    Check("seccomp.available", "seccomp filters can be installed", True, seccomp.check_seccomp),
    Check(
        "landlock.abi",
        "Landlock for the agent (files, TCP ports, scopes)",
        True,
        landlock.check_landlock,
    ),
    Check(
        "net.user_wall",
        "User mode's network wall: a network namespace of its own, Landlock's ports, or none",
        True,
        user_net.check_user_wall,
    ),
    Check("tty.tiocsti", "TIOCSTI terminal injection", False, tty.check_tiocsti),
    Check(
        "cgroup.delegation",
        "A cgroup for each session's task and memory limits",
        False,
        cgroup.check_cgroup_delegation,
    ),
    Check("claude.installed", "Claude Code installed", False, claude.check_claude_installed),
    Check("claude.root_guard", "Claude Code's root guard", True, claude_guard.check_root_guard),
    Check(
        "claude.remote_settings",
        "No server-managed Claude settings",
        False,
        claude.check_remote_settings,
    ),
    Check(
        "claude.sandbox_deps",
        "socat and ripgrep for Claude's sandbox",
        False,
        claude.check_sandbox_deps,
    ),
    Check(
        "net.egress",
        "The sandbox's network: loopback only, egress through the proxy",
        True,
        net.check_egress,
    ),
    Check(
        "launch.path",
        "The launcher's own start-up: verification and network set-up",
        True,
        launch.check_launch_path,
    ),
)

BY_ID = {check.id: check for check in CHECKS}
