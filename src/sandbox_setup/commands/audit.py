"""``sandbox-setup --audit [--json] [--root DIR]``: print the audit, exit 0 or 1.

The audit itself is :func:`sandbox_setup.audit.runner.audit`; no Textual on this path.
"""

from __future__ import annotations

import argparse
import sys

from sandbox_setup.audit.render import render_json, render_lines
from sandbox_setup.audit.runner import audit
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.styled import emit, output_width


def run_audit(args: argparse.Namespace) -> int:
    """The ``--audit`` entry point: print the report, return the exit code."""
    layout = Layout.for_root(args.root)
    result = audit(
        layout,
        timeout=float(getattr(args, "timeout", 10.0) or 10.0),
        as_user=getattr(args, "as_user", None),
    )
    if args.json:
        sys.stdout.write(render_json(result))
    else:  # coloured on a terminal, plain on a pipe or with NO_COLOR
        emit(render_lines(result, output_width(sys.stdout)), sys.stdout)
    return int(ExitCode.OK if result.clean else ExitCode.FINDINGS)
