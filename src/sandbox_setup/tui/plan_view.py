"""How a plan is shown: every file as a syntax-highlighted diff, every command,
and where backups go. Also used for the audit's drift diffs."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

from sandbox_setup.base import remedies

if TYPE_CHECKING:
    from sandbox_setup.configure.actions import Action
    from sandbox_setup.configure.plan import Plan


def diff_renderable(diff: str) -> RenderableType:
    if not diff.strip():
        return Text("(no textual change)", style="dim")
    # ansi_dark follows the terminal's palette, and NO_COLOR turns it monochrome.
    return Syntax(diff.rstrip("\n"), "diff", theme="ansi_dark", word_wrap=True)


def action_renderable(
    index: int, action: Action, backups_dir: str, description: str | None = None
) -> RenderableType:
    """One action: what it does (``description``, the core's words for it; by
    default its own), its diff, the commands it runs, its backup.

    Reads the files it compares: call it off the UI thread.
    """
    head = Text()
    head.append(f"{index}. ", style="bold")
    head.append(action.describe() if description is None else description, style="bold")
    if not action.is_change():
        head.append("  (nothing to do)")
        head.stylize("dim")
        return head
    parts: list[RenderableType] = [head]
    diff = action.diff()
    if diff:
        parts.append(diff_renderable(diff))
    for command in action.commands():
        parts.append(Text("   $ " + shlex.join(command)))
    if action.backs_up():
        parts.append(Text(f"   the current file is backed up under {backups_dir} first"))
    return Group(*parts)


def plan_summary(plan: Plan, backups_dir: str) -> Text:
    changes = len(plan.changes())
    text = Text()
    if not changes:
        text.append("Nothing to change: ", style="bold")
        text.append("everything is already as planned, so there is nothing to apply.")
        return text
    text.append(f"{changes} change(s) in {len(plan.actions)} action(s). ", style="bold")
    text.append(
        f"Every file replaced is backed up under {backups_dir} first; "
        f"{remedies.undo_last(yes=False)} takes back the last apply, "
        f"{remedies.undo_all(yes=False)} every apply."
    )
    return text
