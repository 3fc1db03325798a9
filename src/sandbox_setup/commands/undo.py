"""``sandbox-setup --undo [--all] [--yes]``: show (or with ``--yes`` revert) the last
apply, or with ``--all`` every apply of this setup.

A setup is one thing with a history: ``--undo`` takes back the last apply and says
how many earlier ones remain and the command that removes them all; ``--undo --all``
takes them all back, newest first (each through
:func:`~sandbox_setup.configure.undo.undo_last`), so the host is as it was before the
first. An undo that removes the agent also gives the files it owned in the workspaces
to the workspace's owner (listed in the preview); ``--undo --all`` ends by removing
the state directory with its journal and backups, after saying so, or says why it
keeps it (:mod:`sandbox_setup.configure.history`).

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
from collections.abc import Mapping
from typing import Any

from sandbox_setup.base import remedies
from sandbox_setup.base.console import OutputError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import printable, printable_lines
from sandbox_setup.commands.apply import layout_from_args
from sandbox_setup.configure import history
from sandbox_setup.configure.journal import apply_lock, last_left
from sandbox_setup.configure.outcome import StepResult, any_failed
from sandbox_setup.configure.revert import preview
from sandbox_setup.configure.undo import undo_last


def confirm(question: str) -> bool:
    """Ask on the terminal; only y or yes (any case) is a yes."""
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        print()
        return False
    return answer.strip().lower() in ("y", "yes")


def _all_command(layout: Layout) -> str:
    return remedies.undo_all(str(layout.root))


def _remaining_line(layout: Layout, remaining: int) -> str:
    """What is still in effect after one undo, and the command that removes it all."""
    if remaining:
        noun = "apply" if remaining == 1 else "applies"
        return (
            f"{remaining} earlier {noun} of this setup remain in effect; to take them all "
            f"back: {_all_command(layout)}"
        )
    return (
        "No apply of this setup is in effect any more; its journal and backups are left in "
        f"{layout.state_dir}; remove them with: " + _all_command(layout)
    )


def _preview_lines(
    layout: Layout,
    applies: list[tuple[str, list[dict[str, Any]]]],
    last: Mapping[str, str | None] | None = None,
) -> list[str]:
    lines = []
    for txn, entries in applies:
        lines.append(f"Undo of apply {printable(txn)} would:")
        lines += [f"  {printable_lines(line)}" for line in preview(layout, txn, entries, last)]
    return lines


def _preview(
    layout: Layout,
    applies: list[tuple[str, list[dict[str, Any]]]],
    last: Mapping[str, str | None] | None = None,
) -> None:
    for line in _preview_lines(layout, applies, last):
        print(line)


def _owned_lines(layout: Layout, owners: history.Owners) -> list[str]:
    files = history.agent_files(layout, history.journal_workspaces(layout), owners)
    if not files:
        return []
    return ["and give what the agent owned in the workspaces to their owner:"] + [
        f"  {printable_lines(line)}" for line in history.describe_owned(files, owners)
    ]


def _preview_owned(layout: Layout, owners: history.Owners) -> None:
    for line in _owned_lines(layout, owners):
        print(line)


def undo_preview(layout: Layout) -> list[str]:
    """What ``--undo --dry-run`` prints on stdout (the TUI's Undo shows the same);
    [] when there is nothing to undo."""
    applies = history.open_applies(layout)
    if not applies:
        return []
    owners = history.agent_owners(layout, history.steps(applies[:1]))
    lines = _preview_lines(layout, applies[:1]) + _owned_lines(layout, owners)
    if len(applies) > 1:
        lines.append(printable_lines(_remaining_line(layout, len(applies) - 1)))
    return lines


def undo_last_lines(layout: Layout) -> tuple[list[str], bool]:
    """Take back the last apply as ``--undo --yes`` does: its lines, and whether every
    step went through (none failed or was left)."""
    applies = history.open_applies(layout)
    owners = history.agent_owners(layout, history.steps(applies[:1]))
    done = undo_last(layout)
    if not done:
        return ["Nothing to undo."], True
    if not any_failed(done):
        done += history.give_back(layout, history.journal_workspaces(layout), owners)
    lines = [printable_lines(result.text) for result in done]
    clean = not any(result.failed or result.left for result in done)
    if not any_failed(done):
        lines.append(printable_lines(_remaining_line(layout, len(history.open_applies(layout)))))
    return lines, clean


def _ask(args: argparse.Namespace, question: str) -> bool:
    """True when the undo should run: --yes, or a yes on a terminal."""
    if args.dry_run:  # --dry-run only shows, even with --yes
        print("sandbox-setup: nothing changed; drop --dry-run to undo", file=sys.stderr)
        return False
    if args.yes:
        return True
    if not (sys.stdin.isatty() and sys.stdout.isatty()) or not confirm(question):
        print("sandbox-setup: nothing changed; add --yes to undo", file=sys.stderr)
        return False
    return True


def _report(layout: Layout, done: list[StepResult], *, again: str) -> int:
    """Print the lines of an undo; the exit code (1: failed or left steps), from each
    step's typed outcome."""
    try:
        for result in done:
            print(printable_lines(result.text))
    except OutputError as exc:
        # The undo ran: the exit code below says how it ended; one line says what was lost.
        print(f"sandbox-setup: the undo ran; {exc}", file=sys.stderr)
    failed = [result for result in done if result.failed]
    if failed:
        print(
            f"sandbox-setup: undo could not finish: {len(failed)} step(s) failed (see above); "
            f"the journal keeps them: run {again} again once the cause is fixed",
            file=sys.stderr,
        )
        return int(ExitCode.FINDINGS)
    left = [result for result in done if result.left]
    if left:
        # Exit 1 ("findings"): the undo ran, but the system is not back where it was.
        print(
            f"sandbox-setup: undo finished, but {len(left)} thing(s) were left as they are "
            "(see above); fix them by hand",
            file=sys.stderr,
        )
        return int(ExitCode.FINDINGS)
    return int(ExitCode.OK)


def run_undo(args: argparse.Namespace) -> int:
    layout = layout_from_args(args)
    if getattr(args, "all", False):
        return _run_undo_all(args, layout)
    applies = history.open_applies(layout)
    owners = history.agent_owners(layout, history.steps(applies[:1]))
    if not args.yes or args.dry_run:
        if not applies:
            return _nothing(layout)
        for line in undo_preview(layout):
            print(line)
    if not _ask(args, "Undo it?"):
        return int(ExitCode.OK)
    done = undo_last(layout)  # under the apply lock: refused while an apply runs
    if not done:
        return _nothing(layout)
    if not any_failed(done):
        done += history.give_back(layout, history.journal_workspaces(layout), owners)
    code = _report(layout, done, again=remedies.undo_last(str(layout.root)))
    if not any_failed(done):
        print(printable_lines(_remaining_line(layout, len(history.open_applies(layout)))))
    return code


def _nothing(layout: Layout) -> int:
    print("Nothing to undo.")
    if history.state_dir_contents(layout)[0]:
        print(printable_lines(_remaining_line(layout, 0)))
    return int(ExitCode.OK)


def _run_undo_all(args: argparse.Namespace, layout: Layout) -> int:
    """``--undo --all``: every apply, newest first, then the agent's files and the
    state directory."""
    applies = history.open_applies(layout)
    # Per file, what this setup last left it as: each file goes back to its state
    # before the first apply that planned it while it is still so (preview and run).
    last = last_left(layout)
    owners = history.agent_owners(layout, history.steps(applies))
    workspaces = history.journal_workspaces(layout)
    files, backups = history.state_dir_contents(layout)
    if not applies and not files:
        print("Nothing to undo.")
        return int(ExitCode.OK)
    state = printable(str(layout.state_dir))
    if not args.yes or args.dry_run:
        _preview(layout, applies, last)
        _preview_owned(layout, owners)
        kept = history.kept_in_state_dir(layout)
        if kept:
            print(
                f"and then remove the journal and {backups} backup(s) from {state}, keeping "
                "the directory: the sessions left " + printable(", ".join(kept)) + " there"
            )
        else:
            print(
                f"and then remove the state directory {state} ({files} file(s), "
                f"{backups} backup(s))"
            )
    if not _ask(args, f"Undo all {len(applies)} applies?"):
        return int(ExitCode.OK)
    done: list[StepResult] = []
    for _ in applies:
        results = undo_last(layout, last=last)
        done += results
        if not results or any_failed(results):
            break
    failed = any_failed(done)
    if not failed:
        done += history.give_back(layout, workspaces, owners)
    code = _report(layout, done, again=_all_command(layout))
    if code == int(ExitCode.OK) and not history.open_applies(layout):
        print(
            # What is removed for sure (the lines below say whether the directory went
            # too, or stayed for what the sessions left there).
            f"Every apply is undone; removing the journal and {backups} backup(s) (copies "
            "of the files the applies replaced, among them the account files) from the "
            f"state directory {state}."
        )
        with apply_lock(layout):  # no apply starts while it goes
            lines, left = history.remove_state_dir(layout)
        for line in lines:
            print(printable_lines(line))
        if left:
            print(
                f"Kept the state directory {state}: the sessions left "
                + printable(", ".join(left))
                + " there (the quarantine holds files moved out of the workspaces, never "
                "deleted); look through them, then remove the directory by hand"
            )
    else:
        print(
            f"Kept the state directory {state}: "
            + (
                "its journal keeps the steps that failed for the next " + _all_command(layout)
                if failed
                else "its backups hold the files left as they are (see above)"
            ),
        )
    return code
