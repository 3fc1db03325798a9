"""Unsafe acceptance: the risk in plain words and a phrase to type. Never a default."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Input, Static

from sandbox_setup.tui.controls import TextField
from sandbox_setup.tui.step import StepScreen
from sandbox_setup.tui.widgets import ActionButton

UNSAFE_PHRASE = "run claude as root without a sandbox"

RISK = (
    "You chose to run Claude Code as root with no OS sandbox.\n\n"
    "Claude can then read, change or delete anything on this machine: every "
    "file, every user's data, SSH keys, the system itself. A prompt injection "
    "in a web page, a README or a dependency can make it do so. Nothing but "
    "Claude's own judgement stands in the way.\n\n"
    "The launcher will print a warning at every start, and every audit will "
    "report this acceptance with who accepted it and when.\n"
)


class UnsafeScreen(StepScreen[bool]):
    """Returns ``True`` only once the phrase was typed exactly."""

    STEP = "details"

    def compose(self) -> ComposeResult:
        yield self.step_bar("unsafe mode: acceptance")
        with VerticalScroll(classes="step-body", can_focus=False):
            text = Text(RISK)
            text.append("To accept, type: ", style="bold")
            text.append(UNSAFE_PHRASE, style="bold reverse")
            yield Static(text, id="risk")
            # Empty every time the screen opens, also when coming back to it.
            yield TextField("", placeholder="type the phrase above", id="phrase")
        yield Static("", id="unsafe-error", classes="error")
        with Horizontal(classes="buttons"):
            yield ActionButton(
                "I accept", id="accept", variant="error", disabled=True, compact=True
            )
            yield ActionButton("Back", id="back", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#phrase", Input).focus()

    def _matches(self) -> bool:
        return self.query_one("#phrase", Input).value.strip() == UNSAFE_PHRASE

    @on(Input.Changed, "#phrase")
    def _changed(self) -> None:
        self.query_one("#accept", ActionButton).disabled = not self._matches()
        self.query_one("#unsafe-error", Static).update("")

    @on(Input.Submitted, "#phrase")
    def _submitted(self) -> None:
        self._accept()

    @on(ActionButton.Pressed, "#accept")
    def _accept(self) -> None:
        if not self._matches():
            self.query_one("#unsafe-error", Static).update(
                "The phrase does not match; type it exactly, or go back and choose another path."
            )
            return
        self.dismiss(True)

    @on(ActionButton.Pressed, "#back")
    def _back(self) -> None:
        self.action_back()
