"""Choose a path: sandbox, user or unsafe; the recommended one marked with its
reason, a mode the host rules out shown disabled with the reason and the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from sandbox_setup.base.choices import Mode
from sandbox_setup.checks.model import Report
from sandbox_setup.tui.controls import ChoiceList
from sandbox_setup.tui.core import Core
from sandbox_setup.tui.step import StepScreen

if TYPE_CHECKING:
    from sandbox_setup.configure.plan import Blocker

MODE_TEXT = {
    Mode.SANDBOX: (
        "Sandbox",
        "Claude runs as an unprivileged agent user inside a bubblewrap sandbox the "
        "launcher verifies: read-only system, only workspaces and the agent's home "
        "writable, its own /proc.",
    ),
    Mode.USER: (
        "Dedicated user",
        "Claude runs as a locked, non-root user that can reach your workspaces "
        "(group + ACL). Ordinary file permissions are the only wall.",
    ),
    Mode.UNSAFE: (
        "Unsafe: root, no sandbox",
        "Claude runs as root with no OS sandbox. It can change anything on this "
        "machine. Needs a typed acceptance, recorded and shown by every audit.",
    ),
}


def mode_prompt(mode: Mode, recommended: str | None, blocker: Blocker | None) -> Text:
    name, what = MODE_TEXT[mode]
    text = Text()
    text.append(name, style="bold")
    if recommended is not None and blocker is None:
        text.append("  * recommended", style="bold")
    if blocker is not None:
        text.append("  (not available here)", style="bold")
    text.append("\n" + what)
    if recommended is not None and blocker is None:
        text.append("\nWhy: " + recommended)
    if blocker is not None:
        text.append("\nRuled out: " + blocker.reason)
        text.append("\nFix: " + blocker.remedy)
    return text


class ChooseModeScreen(StepScreen[Mode]):
    """Returns the chosen :class:`Mode`; disabled options cannot be selected."""

    STEP = "path"

    def __init__(self, core: Core, report: Report, current: Mode | None = None) -> None:
        super().__init__()
        self.report = report
        self.current = current
        self.blockers = {mode: core.mode_blocker(report, mode) for mode in Mode}

    def compose(self) -> ComposeResult:
        yield self.step_bar()
        yield Static("Choose how Claude Code will run on this host:", classes="status-line")
        rec = self.report.recommendation
        options = [
            Option(
                mode_prompt(mode, rec.reason if mode is rec.mode else None, self.blockers[mode]),
                id=mode.value,
                disabled=self.blockers[mode] is not None,
            )
            for mode in Mode
        ]
        yield ChoiceList(*options, id="modes")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        modes = self.query_one("#modes", OptionList)
        preferred = [self.current, self.report.recommendation.mode, *Mode]
        for mode in preferred:
            if mode is not None and self.blockers[mode] is None:
                modes.highlighted = list(Mode).index(mode)
                break
        modes.focus()

    @on(OptionList.OptionSelected, "#modes")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        mode = Mode(event.option.id or "")
        # OptionList never selects a disabled option; this guards any other path.
        if self.blockers[mode] is None:
            self.dismiss(mode)
