"""Done: how to launch, how to audit, where the answers file is."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Footer, Static

from sandbox_setup.base import remedies
from sandbox_setup.base.remedies import undo_commands
from sandbox_setup.tui.step import StepScreen
from sandbox_setup.tui.widgets import ActionButton, ReadingPane


def done_text(
    mode: str,
    answers_path: str,
    config_path: str,
    root: str,
    login_note: str | None = None,
    applies: int = 1,
) -> Text:
    """``applies``: how many applies of this setup are in effect (this one included)."""
    text = Text()
    text.append(f"{mode} mode is set up.\n\n", style="bold")
    if login_note:
        text.append("Before the first launch:\n", style="bold")
        text.append(f"  {login_note}\n\n")
    text.append("Launch Claude Code:\n", style="bold")
    text.append("  sandbox-launch -- --dangerously-skip-permissions\n")
    text.append("  sandbox-launch --dry-run   (show what it would run)\n\n")
    text.append("Audit the setup later (also what `sandbox-setup` opens on now):\n", style="bold")
    text.append(f"  {remedies.audit(root)}\n\n")
    for what, command in undo_commands(applies, root, yes=False):
        text.append(f"{what}:\n", style="bold")
        text.append(f"  {command}\n")
    text.append("\n")
    text.append(f"Answers file (re-apply it: {remedies.change_setup(root=root)}):\n", style="bold")
    text.append(f"  {answers_path}\n")
    text.append("Launcher config:\n", style="bold")
    text.append(f"  {config_path}\n")
    if root != "/":
        text.append(f"\n(paths are inside the target root {root})\n")
    return text


class DoneScreen(StepScreen[str]):
    """Returns ``"exit"``."""

    STEP = "done"
    can_go_back = False

    def __init__(self, text: Text) -> None:
        super().__init__()
        self._text = text

    def compose(self) -> ComposeResult:
        yield self.step_bar()
        with ReadingPane(classes="step-body", id="done-pane"):
            yield Static(self._text, id="done-text")
        with Horizontal(classes="buttons"):
            yield ActionButton("Exit", id="exit", variant="primary", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#exit", ActionButton).focus()

    @on(ActionButton.Pressed, "#exit")
    def _exit(self) -> None:
        self.dismiss("exit")
