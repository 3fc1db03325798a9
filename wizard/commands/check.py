"""``sandbox-setup --check`` and ``--list-checks``: run the probes, print, exit 0/1.

The report goes to stdout (readable, or the DESIGN.md JSON with ``--json``);
diagnostics go to stderr. No Textual import on this path.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from checks.model import Report, Status
from checks.registry import CHECKS
from wizard.base.exitcodes import ExitCode
from wizard.configure.probes import run_live_checks

LABEL = {
    Status.PASS: "PASS ",
    Status.WARN: "WARN ",
    Status.FAIL: "FAIL ",
    Status.SKIP: "SKIP ",
    Status.ERROR: "ERROR",
}


def render_list(out: TextIO) -> None:
    width = max(len(c.id) for c in CHECKS)
    for check in CHECKS:
        kind = "live" if check.live else "read"
        out.write(f"{check.id:<{width}}  {kind}  {check.title}\n")


def render_report(report: Report, out: TextIO) -> None:
    host = report.host
    probe = f"as {report.as_user}" if report.as_user else f"as uid {host.get('probe_uid')}"
    out.write(
        f"sandbox-setup --check: kernel {host.get('kernel')}, container: "
        f"{host.get('container')}, live probes {probe}\n\n"
    )
    width = max((len(f.id) for f in report.findings), default=0)
    for finding in report.findings:
        out.write(f"{LABEL[finding.status]} {finding.id:<{width}}  {finding.summary}\n")
        if finding.remedy and finding.status is not Status.PASS:
            lines = finding.remedy.splitlines()
            out.write(f"      {'':<{width}}  remedy: {lines[0]}\n")
            for line in lines[1:]:
                out.write(f"      {'':<{width}}          {line}\n")
    rec = report.recommendation
    inner = host.get("inner_sandbox")
    suffix = f" (inner sandbox: {inner})" if rec.mode == "sandbox" and inner else ""
    out.write(f"\nRecommended: {rec.mode}{suffix}\n")
    out.write(f"  {rec.reason}\n")


def run_check(args: argparse.Namespace) -> int:
    if args.list_checks:
        render_list(sys.stdout)
        return int(ExitCode.OK)
    report = run_live_checks(
        args.ids or None,
        as_user=args.as_user,
        root=Path(args.root),
        timeout=args.timeout,
        claude=getattr(args, "claude", None),
        # `--check --root DIR` judges DIR as a whole system, /proc included (a fake
        # tree or a mounted image); --headless and --audit keep the live /proc.
        system_root=Path(args.root),
    )
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_report(report, sys.stdout)
    failed = [f.id for f in report.findings if f.status in (Status.FAIL, Status.ERROR)]
    if failed:
        print(f"sandbox-setup: {len(failed)} check(s) failed: {', '.join(failed)}", file=sys.stderr)
    return int(ExitCode.FINDINGS if report.failed else ExitCode.OK)
