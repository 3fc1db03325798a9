"""``sandbox-setup --check`` and ``--list-checks``: run the probes, print, exit 0/1.

The report goes to stdout (readable, or the DESIGN.md JSON with ``--json``);
diagnostics go to stderr. No Textual import on this path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from checks.model import Finding, Report, Status, cause_key, worst_first
from wizard.base.accounts import DEFAULT_AGENT_USER
from wizard.base.choices import Mode
from wizard.base.errors import SetupError
from wizard.base.exitcodes import ExitCode
from wizard.base.paths import Layout
from wizard.base.styled import Line, emit, output_width, wrapped
from wizard.configure.probes import choose_probe_user, run_live_checks

LABEL = {
    Status.PASS: "PASS",
    Status.WARN: "WARN",
    Status.FAIL: "FAIL",
    Status.SKIP: "SKIP",
    Status.ERROR: "ERROR",
}


def render_list(out: TextIO) -> None:
    from checks.registry import CHECKS

    width = max(len(c.id) for c in CHECKS)
    for check in CHECKS:
        kind = "live" if check.live else "read"
        out.write(f"{check.id:<{width}}  {kind}  {check.title}\n")


@dataclass
class CauseGroup:
    """One cause and every check it breaks: its remedy is printed once."""

    label: str
    remedy: str
    ids: list[str] = field(default_factory=list)


def cause_groups(findings: list[Finding]) -> list[CauseGroup]:
    """The non-passing findings with a remedy, grouped by the cause they name (or,
    without one, by their remedy), worst first: a masked /proc is one entry listing
    proc.fresh_mount, bwrap.sandbox, ..., not the same remedy five times."""
    groups: dict[str, CauseGroup] = {}
    for finding in worst_first(findings):
        if finding.status is Status.PASS or not finding.remedy.strip():
            continue
        key = cause_key(finding) or "remedy:" + finding.remedy.strip()
        group = groups.setdefault(key, CauseGroup(finding.summary, finding.remedy.strip()))
        group.ids.append(finding.id)
    return list(groups.values())


def report_lines(report: Report, width: int) -> list[Line]:
    """The --check report for ``width`` columns: a row per check (worst first),
    then each cause once with the checks it breaks and its remedy."""
    host = report.host
    probe = f"as {report.as_user}" if report.as_user else f"as uid {host.get('probe_uid')}"
    lines = wrapped(
        [("sandbox-setup --check: ", "head")],
        f"kernel {host.get('kernel')}, container: {host.get('container')}, live probes {probe}",
        width,
        2,
    )
    lines.append(Line())
    findings = worst_first(report.findings)
    id_width = min(max((len(f.id) for f in findings), default=0), 22)
    indent = 5 + 2 + id_width + 2
    for finding in findings:
        head = [(f"{LABEL[finding.status]:<5}", finding.status.value), ("  ", "")]
        head.append((f"{finding.id:<{id_width}}  ", "id"))
        lines += wrapped(head, " ".join(finding.summary.split()), width, indent)
    groups = cause_groups(report.findings)
    if groups:
        lines += [Line(), Line().add("What to fix, each cause once:", "head")]
    for number, group in enumerate(groups):
        if number:
            lines.append(Line())
        lines += wrapped([("  ", "")], " ".join(group.label.split()), width, 4)
        lines += wrapped([("    -> ", "dim")], ", ".join(group.ids), width, 7, "id")
        lines += wrapped([("    remedy: ", "")], group.remedy, width, 12, "remedy")
    notes = host.get("probe_notes") or []
    if notes:
        lines.append(Line())
    for note in notes:
        lines += wrapped([("note: ", "dim")], note, width, 6)
    rec = report.recommendation
    inner = host.get("inner_sandbox")
    suffix = f" (inner sandbox: {inner})" if rec.mode == "sandbox" and inner else ""
    lines += [Line(), Line().add("Recommended: ", "head").add(f"{rec.mode}{suffix}", "pass")]
    lines += wrapped([("  ", "")], rec.reason, width, 2)
    return lines


def render_report(report: Report, out: TextIO) -> None:
    """The readable report: coloured on a terminal (Rich), plain on a pipe."""
    emit(report_lines(report, output_width(out)), out)


def probe_user(args: argparse.Namespace) -> tuple[str | None, list[str]]:
    """Whom the live probes run as: ``--as-user``, else, for root, the agent the
    launcher would run (the configured one, or ``claude-agent``), or an
    unprivileged stand-in before it exists. A sandbox started by root has covers
    an agent's does not, so a probe as root would not tell root the truth about
    the sandbox path (:mod:`wizard.configure.probes`)."""
    if args.as_user:
        return args.as_user, []
    if os.geteuid() != 0:
        return None, []
    layout = Layout.for_root(args.root)
    mode, agent = None, DEFAULT_AGENT_USER
    config_path = layout.real(layout.launcher_config)
    try:
        from wizard.base.launcher_config import parse_launcher_config  # tomllib: only then

        config = parse_launcher_config(
            config_path.read_text(encoding="utf-8"), str(layout.launcher_config)
        )
        mode, agent = config.mode, config.agent_user
    except (OSError, UnicodeDecodeError, SetupError):
        pass  # no setup yet (or a broken one, which --audit reports): the default agent
    as_user, notes = choose_probe_user(mode, agent, layout)
    if as_user is None and mode is Mode.UNSAFE:
        notes = ["unsafe mode is configured: Claude Code runs as root, so the probes did too"]
    return as_user, notes


def start_experiments(ids: list[str], as_user: str | None, claude: str | None = None) -> None:
    """Start the live checks' first experiments now, while the checks are imported
    (:mod:`checks.prefetch`); each check adopts its own when it gets to it."""
    from checks.experiments import CLAUDE_QUIET_ENV, first_experiments
    from checks.prefetch import SAFE_PATH, start, which

    experiments = first_experiments()
    start([experiments[i] for i in (ids or experiments) if i in experiments], as_user)
    # bwrap.installed asks bwrap its version as us, never as the probe user.
    if not ids or "bwrap.installed" in ids:
        bwrap = which("bwrap")
        if bwrap is not None:
            start([(bwrap, "--version")])
    # claude.installed asks the agent first: an unprivileged run, so never a risk.
    if as_user is not None and (not ids or "claude.installed" in ids) and claude is None:
        found = which("claude", os.environ.get("PATH", "") + os.pathsep + SAFE_PATH)
        if found is not None:
            start([(found, "--version")], as_user, CLAUDE_QUIET_ENV)


def run_check(args: argparse.Namespace) -> int:
    if args.list_checks:
        render_list(sys.stdout)
        return int(ExitCode.OK)
    as_user, notes = probe_user(args)
    start_experiments(args.ids, as_user, getattr(args, "claude", None))
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
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_report(report, sys.stdout)
    failed = [f.id for f in report.findings if f.status in (Status.FAIL, Status.ERROR)]
    if failed:
        print(f"sandbox-setup: {len(failed)} check(s) failed: {', '.join(failed)}", file=sys.stderr)
    return int(ExitCode.FINDINGS if report.failed else ExitCode.OK)
