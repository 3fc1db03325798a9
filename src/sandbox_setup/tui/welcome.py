"""Welcome: who this runs as, whether a setup exists, what happens next."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Static

from sandbox_setup.base.printable import printable
from sandbox_setup.tui.step import StepScreen
from sandbox_setup.tui.widgets import ActionButton


def welcome_text(
    operator: str,
    uid: int,
    sudo_user: str | None,
    root: str,
    existing: str | None,
    *,
    others: Sequence[str] = (),
) -> Text:
    text = Text()
    text.append("Run Claude Code without handing it the whole machine.\n\n", style="bold")
    text.append("Running as: ", style="bold")
    who = f"{operator} (uid {uid})"
    if sudo_user:
        who += f", through sudo by {sudo_user}"
    text.append(who + "\n")
    if root != "/":
        text.append("Target root: ", style="bold")
        text.append(root + " (everything is written under it)\n")
    text.append("Existing setup: ", style="bold")
    if existing:
        text.append(f"found, {existing}\n")
    else:
        text.append("none of yours\n" if others else "none found\n")
    if others:
        # Paths from the host record (root's own file); shown escaped all the same.
        text.append("Other setups on this host: ", style="bold")
        text.append(printable(", ".join(others)) + " (their state directories)\n")
    text.append("\n")
    text.append(
        "Next: real probes find out what this host can do (user namespaces, "
        "bubblewrap, /proc, Claude Code). Then you choose one of three paths, "
        "fill in the details, review every file and command, and apply. "
        "Nothing is written before the review.\n\n"
        "Keys: Tab moves between fields and buttons, Enter chooses, Esc goes back, "
        "? or F1 lists every key of a screen, Ctrl+Q quits.\n"
    )
    if uid == 0:
        text.append(
            "\nYou are root: Claude Code refuses --dangerously-skip-permissions "
            "here unless it is sandboxed or run as another user.\n"
        )
    return text


class WelcomeScreen(StepScreen[str]):
    """Returns ``"start"``."""

    STEP = "welcome"
    can_go_back = False

    def __init__(self, text: Text) -> None:
        super().__init__()
        self._text = text

    def compose(self) -> ComposeResult:
        yield self.step_bar()
        with VerticalScroll(classes="step-body", can_focus=False):
            yield Static(self._text, id="welcome-text")
        with Horizontal(classes="buttons"):
            yield ActionButton("Start host checks", id="start", variant="primary", compact=True)
            yield ActionButton("Quit", id="quit", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#start", ActionButton).focus()

    @on(ActionButton.Pressed, "#start")
    def _start(self) -> None:
        self.dismiss("start")

    @on(ActionButton.Pressed, "#quit")
    async def _quit(self) -> None:
        await self.run_action("app.quit_wizard")
