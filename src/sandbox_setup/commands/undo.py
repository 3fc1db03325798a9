"""``sandbox-setup --undo [--yes]``: show (or with ``--yes`` revert) the last apply.

Without ``--yes`` it prints what the undo would do; on a terminal it then asks
``Undo it? [y/N]`` (anything but y/yes, or end of input, changes nothing). With
no terminal (a script, a pipe) it only prints the preview, as before.
Exit 1 when something could not be undone or was left as it is (it changed since).
``--dry-run`` only shows, even with ``--yes``, as it does for an apply.

The lines quote paths from the journal and from the workspaces (a file the ACL step
could not change is named by the agent): each is printed through
:func:`~sandbox_setup.base.printable.printable_lines` (invariant 15).
"""

from __future__ import annotations

import argparse
import sys

from sandbox_setup.base.console import OutputError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.printable import printable, printable_lines
from sandbox_setup.commands.apply import layout_from_args, root_flag
from sandbox_setup.configure.journal import last_transaction
from sandbox_setup.configure.revert import describe_entry, is_failure, is_left
from sandbox_setup.configure.undo import undo_last


def confirm(question: str) -> bool:
    """Ask on the terminal; only y or yes (any case) is a yes."""
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        print()
        return False
    return answer.strip().lower() in ("y", "yes")


def run_undo(args: argparse.Namespace) -> int:
    layout = layout_from_args(args)
    if not args.yes or args.dry_run:  # --dry-run only shows, even with --yes
        found = last_transaction(layout)
        if found is None:
            print("Nothing to undo.")
            return int(ExitCode.OK)
        txn, entries = found
        print(f"Undo of apply {printable(txn)} would:")
        for entry in reversed(entries):
            line = describe_entry(entry)
            if line:
                print(f"  {printable_lines(line)}")
        if args.dry_run:
            print("sandbox-setup: nothing changed; drop --dry-run to undo", file=sys.stderr)
            return int(ExitCode.OK)
        if not (sys.stdin.isatty() and sys.stdout.isatty()) or not confirm("Undo it?"):
            print("sandbox-setup: nothing changed; add --yes to undo", file=sys.stderr)
            return int(ExitCode.OK)
    done = undo_last(layout)
    try:
        if not done:
            print("Nothing to undo.")
        for line in done:
            print(printable_lines(line))
    except OutputError as exc:
        # The undo ran: the exit code below says how it ended; one line says what was lost.
        print(f"sandbox-setup: the undo ran; {exc}", file=sys.stderr)
    failed = [line for line in done if is_failure(line)]
    if failed:
        print(
            f"sandbox-setup: undo could not finish: {len(failed)} step(s) failed (see above); "
            "the journal keeps them: run sandbox-setup --undo --yes"
            + root_flag(layout)
            + " again once the cause is fixed",
            file=sys.stderr,
        )
        return int(ExitCode.FINDINGS)
    left = [line for line in done if is_left(line)]
    if left:
        # Exit 1 ("findings"): the undo ran, but the system is not back where it was.
        print(
            f"sandbox-setup: undo finished, but {len(left)} thing(s) were left as they are "
            "(see above); fix them by hand",
            file=sys.stderr,
        )
        return int(ExitCode.FINDINGS)
    return int(ExitCode.OK)
