"""``sandbox-setup --audit [--json] [--root DIR]``: print the audit, exit 0 or 1.

The audit itself is :func:`sandbox_setup.audit.runner.audit`; no Textual on this path.
"""

from __future__ import annotations

import argparse
import sys

from sandbox_setup.audit.left import left_views
from sandbox_setup.audit.render import render_json, render_lines
from sandbox_setup.audit.runner import audit
from sandbox_setup.base.errors import InputError, SetupError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import printable_lines
from sandbox_setup.base.styled import emit, output_width


def _print_left(layout: Layout) -> None:
    try:
        views = left_views(layout, setup=str(layout.state_dir))
    except (SetupError, OSError):
        return  # the error being raised says what is wrong
    if views:
        print("An undo left these files as they are:")
    for view in views:
        print(printable_lines(f"  {view.where}: {view.reason}; {view.todo}"))


def run_audit(args: argparse.Namespace) -> int:
    """The ``--audit`` entry point: print the report, return the exit code."""
    layout = Layout.for_root(args.root)
    try:
        result = audit(
            layout,
            timeout=float(getattr(args, "timeout", 10.0) or 10.0),
            as_user=getattr(args, "as_user", None),
        )
    except InputError:
        # No setup to audit (an undo took it back): what the undo left is still named
        # (with --json, stdout stays empty: --status --json has them typed).
        if not args.json:
            _print_left(layout)
        raise
    if args.json:
        sys.stdout.write(render_json(result))
    else:  # coloured on a terminal, plain on a pipe or with NO_COLOR
        emit(render_lines(result, output_width(sys.stdout)), sys.stdout)
    return int(ExitCode.OK if result.clean else ExitCode.FINDINGS)
