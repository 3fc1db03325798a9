"""The wizard's small widgets every step uses: the step indicator, a button and a
reading pane that name their keys in the footer (form controls: :mod:`sandbox_setup.tui.controls`).

A widget's footer keys are its own bindings with ``show=True`` (the footer shows
the focused widget's bindings first), so every screen's footer says how to move,
choose, select and toggle where the focus is.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Button, Static

# The wizard's steps, in order (the step indicator's words).
STEP_NAMES = ("welcome", "checks", "path", "details", "review", "apply", "done")
MOVE = Binding.Group("Move", compact=True)
SCROLL = Binding.Group("Scroll", compact=True)


class StepBar(Static):
    """One line on top: the wizard's name, its steps (done ✓, current ●, to come ○,
    so it reads without colour) and what this screen is about, as room allows."""

    DEFAULT_CSS = """
    StepBar {
        dock: top;
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    """

    def __init__(self, step: str | None, context: str = "") -> None:
        super().__init__(id="step-bar")
        self.step = step
        self.context = context

    def set_context(self, context: str) -> None:
        self.context = context
        self.refresh()

    def steps_text(self) -> Text:
        text = Text()
        if self.step is None:  # a screen outside the wizard's steps (the audit)
            text.append(self.context, style="bold")
            return text
        current = STEP_NAMES.index(self.step)
        for index, name in enumerate(STEP_NAMES):
            if index:
                text.append(" ")
            if index < current:
                text.append("✓" + name, style="dim")
            elif index == current:
                text.append("●" + name, style="bold reverse")
            else:
                text.append("○" + name)
        return text

    def render(self) -> Text:
        steps = self.steps_text()
        width = self.size.width - 2
        text = Text(no_wrap=True, overflow="ellipsis")
        if len(steps) + len("sandbox-setup  ") <= width:
            text.append("sandbox-setup  ", style="bold")
        text.append_text(steps)
        if self.step is not None and self.context and len(text) + len(self.context) + 3 <= width:
            text.append("  " + self.context, style="italic")
        return text


class ActionButton(Button):
    """A button that names Enter in the footer."""

    BINDINGS = [Binding("enter", "press", "Press", key_display="Enter")]

    def watch_label(self) -> None:
        # Textual's Button repaints a new label but does not lay itself out again:
        # its row kept the old width until something else resized, and a longer
        # label ("Continue" -> "Back to review") showed cut ("Back to ").
        self.refresh(layout=True)


class ReadingPane(VerticalScroll):
    """A long text to read with the keyboard: ↑/↓ and PgUp/PgDn scroll it."""

    BINDINGS = [
        Binding("up", "scroll_up", "Scroll", group=SCROLL, key_display="↑"),
        Binding("down", "scroll_down", "Scroll", group=SCROLL, key_display="↓"),
        Binding("pageup", "page_up", "Page", show=False),
        Binding("pagedown", "page_down", "Page", show=False),
    ]
