"""``sandbox-setup --check`` and ``--list-checks``: run the probes, print, exit 0/1.

The report goes to stdout (readable, or the docs/design.md JSON with ``--json``);
diagnostics go to stderr. No Textual import on this path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TextIO

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.claude_path import find_claude
from sandbox_setup.checks.experiments import (
    CLAUDE_QUIET_ENV,
    egress_command,
    egress_ids,
    first_experiments,
)
from sandbox_setup.checks.prefetch import probe_ids, start, which
from sandbox_setup.configure.probes import (
    EGRESS_PROBE,
    choose_probe_user,
    configured_agent,
    run_live_checks,
)


def render_list(out: TextIO) -> None:
    # why: the checks are imported after the experiments start (run_check)
    from sandbox_setup.checks.registry import CHECKS

    width = max(len(c.id) for c in CHECKS)
    for check in CHECKS:
        kind = "live" if check.live else "read"
        out.write(f"{check.id:<{width}}  {kind}  {check.title}\n")


def probe_user(args: argparse.Namespace) -> tuple[str | None, list[str]]:
    """Whom the live probes run as: ``--as-user``, else, for root, the agent the
    launcher would run (the configured one, or ``claude-agent``), or an
    unprivileged stand-in before it exists. A sandbox started by root has covers
    an agent's does not, so a probe as root would not tell root the truth about
    the sandbox path (:mod:`sandbox_setup.configure.probes`)."""
    if args.as_user:
        return args.as_user, []
    if os.geteuid() != 0:
        return None, []
    layout = Layout.for_root(args.root)
    mode, agent = configured_agent(layout)
    as_user, notes = choose_probe_user(mode, agent, layout)
    if as_user is None and mode is Mode.UNSAFE:
        notes = ["unsafe mode is configured: Claude Code runs as root, so the probes did too"]
    return as_user, notes


def start_experiments(ids: list[str], as_user: str | None, claude: str | None = None) -> None:
    """Start the live checks' first experiments now, while the checks are imported
    (:mod:`sandbox_setup.checks.prefetch`); each check adopts its own when it gets to it."""
    experiments = first_experiments()
    start([experiments[i] for i in (ids or experiments) if i in experiments], as_user)
    # net.egress's second experiment, the launcher's proxy started and probed, is the
    # slowest: start it too (as root, dropping to the ids its check would use).
    if not ids or "net.egress" in ids:
        proxy_ids = egress_ids(probe_ids(as_user))
        if proxy_ids is not None:
            start([egress_command(EGRESS_PROBE, proxy_ids)])
    # bwrap.installed asks bwrap its version as us, never as the probe user.
    if not ids or "bwrap.installed" in ids:
        bwrap = which("bwrap")
        if bwrap is not None:
            start([(bwrap, "--version")])
    # claude.installed asks the agent first: an unprivileged run of `--version` (no
    # session), of the binary that check would find: never the claude shim.
    if as_user is not None and (not ids or "claude.installed" in ids) and claude is None:
        found = find_claude()
        if found is not None:
            start([(found, "--version")], as_user, CLAUDE_QUIET_ENV)


def run_check(args: argparse.Namespace) -> int:
    if args.list_checks:
        render_list(sys.stdout)
        return int(ExitCode.OK)
    as_user, notes = probe_user(args)
    start_experiments(args.ids, as_user, getattr(args, "claude", None))
    # why: imported while the experiments run (sandbox_setup.checks.prefetch).
    from sandbox_setup.checks.model import Status
    from sandbox_setup.commands.check_report import render_report

    report = run_live_checks(
        args.ids or None,
        as_user=as_user,
        root=Path(args.root),
        timeout=args.timeout,
        claude=getattr(args, "claude", None),
        # `--check --root DIR` judges DIR as a whole system, /proc included (a fake
        # tree or a mounted image); --headless and --audit keep the live /proc.
        system_root=Path(args.root),
    )
    report.host["probe_notes"] = notes
    from sandbox_setup.checks.registry import CHECKS

    if args.ids and {f.id for f in report.findings} != {c.id for c in CHECKS}:
        report.extra["partial"] = True  # no mode is recommended from some checks
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_report(report, sys.stdout)
    failed = [f.id for f in report.findings if f.status in (Status.FAIL, Status.ERROR)]
    if failed:
        print(f"sandbox-setup: {len(failed)} check(s) failed: {', '.join(failed)}", file=sys.stderr)
    return int(ExitCode.FINDINGS if report.failed else ExitCode.OK)
