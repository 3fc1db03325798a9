"""How a plan is shown: every file as a syntax-highlighted diff, every command,
and where backups go. Also used for the audit's drift diffs."""

from __future__ import annotations

import shlex
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text


def diff_renderable(diff: str) -> RenderableType:
    if not diff.strip():
        return Text("(no textual change)", style="dim")
    # ansi_dark follows the terminal's palette, and NO_COLOR turns it monochrome.
    return Syntax(diff.rstrip("\n"), "diff", theme="ansi_dark", word_wrap=True)


def _call(obj: Any, name: str, default: Any) -> Any:
    attr = getattr(obj, name, None)
    if attr is None:
        return default
    return attr() if callable(attr) else attr


def action_renderable(index: int, action: Any, backups_dir: str) -> RenderableType:
    """One action: what it does, its diff, the commands it runs, its backup.

    Reads the files it compares: call it off the UI thread.
    """
    changed = bool(_call(action, "is_change", True))
    head = Text()
    head.append(f"{index}. ", style="bold")
    head.append(str(_call(action, "describe", action)), style="bold")
    if not changed:
        head.append("\n   unchanged, nothing to do", style="dim")
        return head
    parts: list[RenderableType] = [head]
    diff = str(_call(action, "diff", "") or "")
    if diff:
        parts.append(diff_renderable(diff))
    for command in list(_call(action, "commands", []) or []):
        line = command if isinstance(command, str) else shlex.join(map(str, command))
        parts.append(Text("   $ " + line))
    current = getattr(action, "current", None)
    if callable(current) and current() is not None:
        parts.append(Text(f"   the current file is backed up under {backups_dir} first"))
    return Group(*parts)


def plan_summary(plan: Any, backups_dir: str) -> Text:
    actions = list(getattr(plan, "actions", []))
    changes = sum(1 for a in actions if _call(a, "is_change", True))
    text = Text()
    text.append(f"{changes} change(s) in {len(actions)} action(s). ", style="bold")
    text.append(
        f"Every file replaced is backed up under {backups_dir} first; "
        "sandbox-setup --undo restores the last apply."
    )
    return text
