"""Run a selection of checks: facts once, live probes concurrently, then judge.

A check that raises becomes an ``error`` finding and the run goes on. Live
probes run as ``as_user`` when given (needs root, since ``setpriv`` switches to
it), each with its own timeout.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from sandbox_setup.base.accounts import DEFAULT_AGENT_USER, Account, lookup_user
from sandbox_setup.base.errors import InputError
from sandbox_setup.checks.base import Check, Context
from sandbox_setup.checks.claude import sandbox_binaries
from sandbox_setup.checks.facts import gather_host_facts
from sandbox_setup.checks.model import Finding, Report, Status
from sandbox_setup.checks.platform import detect_platform
from sandbox_setup.checks.probe import which
from sandbox_setup.checks.recommend import inner_strength, recommend
from sandbox_setup.checks.registry import BY_ID, CHECKS


def select_checks(ids: Iterable[str] | None) -> list[Check]:
    """The checks named (in registry order), or all; an unknown ID is an InputError."""
    if not ids:
        return list(CHECKS)
    wanted = list(dict.fromkeys(ids))
    unknown = [i for i in wanted if i not in BY_ID]
    if unknown:
        raise InputError(
            "unknown check ID " + ", ".join(repr(i) for i in unknown) + " (see --list-checks)"
        )
    return [c for c in CHECKS if c.id in wanted]


def resolve_as_user(name: str | None) -> Account | None:
    """The live account probes switch to; switching needs root unless it is us."""
    if not name:
        return None
    account = lookup_user(name)  # probes run on the real kernel, so the live passwd
    if account is None:
        raise InputError(f"--as-user {name}: no such user on this system")
    if account.uid == os.geteuid():
        return None if account.uid == os.getuid() else account
    if os.geteuid() != 0:
        raise InputError(
            f"--as-user {name}: running probes as another user needs root (setpriv "
            "switches to it); run sandbox-setup as root or as that user"
        )
    if which("setpriv") is None:
        raise InputError(f"--as-user {name}: setpriv (util-linux) is needed to switch user")
    return account


def _run_one(check: Check, ctx: Context) -> Finding:
    try:
        return check.run(ctx)
    except Exception as exc:  # a crashing check is a finding, the run goes on
        return Finding(
            check.id, check.title, Status.ERROR, f"the check crashed: {type(exc).__name__}: {exc}"
        )


def run_checks(
    ids: Iterable[str] | None = None,
    *,
    as_user: str | None = None,
    root: Path = Path("/"),
    timeout: float = 10.0,
    claude: str | None = None,
    on_finding: Callable[[Finding], object] | None = None,
    system_root: Path = Path("/"),
    untrusted: Callable[[str], str | None] | None = None,
    egress_probe: Sequence[str] | None = None,
    launch_probe: Sequence[str] | None = None,
    agent_user: str = DEFAULT_AGENT_USER,
) -> Report:
    """Run the checks ``ids`` (all by default) and judge them into a Report.

    ``root`` is the tree being configured (``--root``); the running system's
    state (/proc, sysctls, container markers) is read under ``system_root``,
    the live ``/`` unless a test points it at a fake tree: live probes run on
    the real kernel, so their facts must come from it too.

    ``untrusted(path)`` says why root must not run a binary (the trust rule of
    :mod:`sandbox_setup.policy.trust`, which checks cannot import); without it no binary
    is run as root. ``egress_probe`` is the command net.egress starts the egress proxy
    with (the launcher's, which checks cannot import); without it the proxy is not tried.
    ``launch_probe`` likewise runs the launcher's start-up for launch.path.

    ``on_finding`` is called in this thread with each finding as it is ready
    (file checks first, then live probes as they finish), for progress displays.
    """
    selected = select_checks(ids)
    if timeout <= 0:
        raise InputError(f"--timeout {timeout}: must be a positive number of seconds")
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"--root {root}: not a directory")
    if claude is not None and not os.access(claude, os.X_OK):
        raise InputError(f"--claude {claude}: not an executable file")
    account = resolve_as_user(as_user)
    facts = gather_host_facts(root, system_root=Path(system_root))
    platform = detect_platform(facts)
    ctx = Context(
        root=root,
        timeout=timeout,
        facts=facts,
        platform=platform,
        account=account,
        claude=claude,
        euid=os.geteuid(),
        **({"untrusted": untrusted} if untrusted is not None else {}),
        egress_probe=tuple(egress_probe) if egress_probe is not None else None,
        launch_probe=tuple(launch_probe) if launch_probe is not None else None,
        agent_user=agent_user,
    )
    live = [c for c in selected if c.live]
    results: dict[str, Finding] = {}
    # Live probes wait on subprocesses, so threads overlap them well.
    with ThreadPoolExecutor(max_workers=max(1, len(live))) as pool:
        futures = [pool.submit(_run_one, c, ctx) for c in live]
        for check in selected:
            if not check.live:
                results[check.id] = _run_one(check, ctx)
                if on_finding is not None:
                    on_finding(results[check.id])
        for future in as_completed(futures):
            finding = future.result()
            results[finding.id] = finding
            if on_finding is not None:
                on_finding(finding)
    findings = [results[c.id] for c in selected]
    host = {
        "uid": os.getuid(),
        "euid": os.geteuid(),
        "sudo_user": os.environ.get("SUDO_USER"),
        "kernel": os.uname().release,
        "container": platform.name,
        "container_evidence": list(platform.evidence),
        "probe_uid": ctx.uid,
        "root": str(root),
        "inner_sandbox": (
            inner_strength(findings)
            if {"bwrap.nested", "bwrap.nested_weak"} & set(results)
            else None
        ),
        # What Claude's sandbox would run (the plan writes these into managed settings).
        "binaries": sandbox_binaries(),
    }
    return Report(
        host=host,
        findings=findings,
        recommendation=recommend(findings, as_user=as_user, euid=os.geteuid()),
        as_user=as_user,
    )
