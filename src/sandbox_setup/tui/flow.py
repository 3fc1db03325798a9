"""The wizard's flow: a coroutine that pushes one step after another.

Steps are a table; a step that does not apply is skipped by data
(:attr:`Step.applies`), not by branches inside screens. Escape on a step
returns :data:`Nav.BACK` and the flow goes to the previous step that applies,
which is shown prefilled from the :class:`Draft`.

Each step's screen module is imported when the step is first shown, not when the
wizard starts: the first paint waits only for the welcome screen (bench/tui.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from textual.app import App

from sandbox_setup.base.choices import InnerSandbox, Mode, Network, SettingsScope
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.base.printable import printable_lines
from sandbox_setup.checks.model import Report
from sandbox_setup.tui.core import Core
from sandbox_setup.tui.draft import Draft, Nav, Outcome
from sandbox_setup.tui.step import StepScreen
from sandbox_setup.tui.welcome import WelcomeScreen, welcome_text

if TYPE_CHECKING:
    from sandbox_setup.configure.answers import Answers
    from sandbox_setup.configure.apply import ApplyResult
    from sandbox_setup.configure.plan import Plan
    from sandbox_setup.tui.apply import ApplyScreen
    from sandbox_setup.tui.checks import ChecksScreen
    from sandbox_setup.tui.choose_mode import ChooseModeScreen
    from sandbox_setup.tui.details import DetailsScreen
    from sandbox_setup.tui.done import DoneScreen
    from sandbox_setup.tui.review import ReviewScreen
    from sandbox_setup.tui.unsafe import UnsafeScreen

T = TypeVar("T")


@dataclass(frozen=True)
class Step(Generic[T]):
    """One step: whether it applies, the screen that asks, where its answer goes."""

    name: str
    applies: Callable[[Draft], bool]
    screen: Callable[[Core, Draft], StepScreen[T]]
    store: Callable[[Core, Draft, T], None]


def _always(draft: Draft) -> bool:
    return True


def _welcome(core: Core, draft: Draft) -> WelcomeScreen:
    layout = core.layout
    existing = str(layout.launcher_config) if core.existing_setup() else None
    return WelcomeScreen(
        welcome_text(
            layout.operator.name,
            layout.operator.uid,
            os.environ.get("SUDO_USER"),
            str(layout.root),
            existing,
            others=core.other_setups(),
        )
    )


def _store_report(core: Core, draft: Draft, report: Report) -> None:
    draft.report = report


def _checks_screen(core: Core, draft: Draft) -> ChecksScreen:
    # why: imported when the step is first shown (module docstring)
    from sandbox_setup.tui.checks import ChecksScreen

    return ChecksScreen(core, draft.report)


def _mode_screen(core: Core, draft: Draft) -> ChooseModeScreen:
    # why: imported when the step is first shown (module docstring)
    from sandbox_setup.tui.choose_mode import ChooseModeScreen

    assert draft.report is not None
    return ChooseModeScreen(core, draft.report, draft.mode)


def _store_mode(core: Core, draft: Draft, mode: Mode) -> None:
    draft.mode = mode
    if draft.details is None or draft.details.mode is not mode:
        # A new mode gets the presets the probes suggest for it, keeping what
        # the operator typed that does not depend on the mode.
        assert draft.report is not None
        old = draft.details
        if old is None:
            # why: the answers' rules (configure.answers) not before the first paint
            from sandbox_setup.configure.answers import Answers

            # Without root no user can be created: the operator's own account is
            # the agent unless they name an existing one.
            operator = core.layout.operator
            old = (
                Answers(mode) if core.operator_is_root else Answers(mode, agent_user=operator.name)
            )
        draft.details = dataclasses.replace(
            old,
            mode=mode,
            network=old.network or Network.ALLOWLIST,
            inner_sandbox=core.inner_sandbox_preset(draft.report, mode),
            settings_scope=core.default_settings_scope(mode),
        )


def claude_hint(core: Core) -> str:
    """What an empty Claude Code field means: the binary the checks probed and the
    plan will use, or where the lookup looked (under the root, when there is one)."""
    found, where = core.claude_lookup()
    layout = core.layout
    if found is None:
        return f"empty: not found ({where})"
    under = "" if layout.live else f" under the root {layout.root}"
    return f"empty: {found}{under}, the one the checks found"


def claude_placeholder(core: Core) -> str:
    """The empty Claude Code field's placeholder: the path the plan will use (the one
    found), or that none was found; never a made-up path that looks like a value."""
    found, _where = core.claude_lookup()
    return f"empty: {found}" if found is not None else "empty: none found; enter its path"


def _details_screen(core: Core, draft: Draft) -> DetailsScreen:
    # why: imported when the step is first shown (module docstring)
    from sandbox_setup.tui.details import DetailsScreen

    assert draft.mode is not None and draft.details is not None and draft.report is not None
    preset = core.inner_sandbox_preset(draft.report, draft.mode)
    return DetailsScreen(
        core,
        draft.mode,
        draft.details,
        preset,
        claude_hint(core),
        apparmor=core.apparmor_restricted(draft.report),
        claude_placeholder=claude_placeholder(core),
    )


def _store_details(core: Core, draft: Draft, details: Answers) -> None:
    draft.details = details


def _store_acceptance(core: Core, draft: Draft, accepted: bool) -> None:
    draft.accept_unsafe(core.acceptance_label())


def _unsafe_screen(core: Core, draft: Draft) -> UnsafeScreen:
    # why: imported when the step is first shown (module docstring)
    from sandbox_setup.tui.unsafe import UnsafeScreen

    return UnsafeScreen()


def _review_screen(core: Core, draft: Draft) -> ReviewScreen:
    # why: imported when the step is first shown (module docstring)
    from sandbox_setup.tui.review import ReviewScreen

    assert draft.report is not None
    return ReviewScreen(core, draft.report, draft.answers())


def _store_plan(core: Core, draft: Draft, plan: Plan) -> None:
    draft.plan = plan


def _apply_screen(core: Core, draft: Draft) -> ApplyScreen:
    # why: imported when the step is first shown (module docstring)
    from sandbox_setup.tui.apply import ApplyScreen

    assert draft.plan is not None
    return ApplyScreen(core, draft.plan)


def _store_result(core: Core, draft: Draft, result: ApplyResult) -> None:
    draft.result = result


def _done_screen(core: Core, draft: Draft) -> DoneScreen:
    # why: imported when the step is first shown (module docstring)
    from sandbox_setup.tui.done import DoneScreen, done_text

    layout = core.layout
    mode = draft.mode.value if draft.mode else "?"
    note = core.login_note(draft.answers()) if draft.mode and draft.details else None
    answers, config, root = str(layout.answers), str(layout.launcher_config), str(layout.root)
    applies = core.applies_in_effect()
    return DoneScreen(done_text(mode, answers, config, root, note, applies=applies))


def _ignore(core: Core, draft: Draft, value: str) -> None:
    return None


# Each Step[T] is type-checked where it is built (its screen returns T, its store
# takes T); the table itself holds steps of different T, hence Step[Any].
STEPS: tuple[Step[Any], ...] = (
    Step[str]("welcome", _always, _welcome, _ignore),
    Step[Report]("checks", _always, _checks_screen, _store_report),
    Step[Mode]("mode", _always, _mode_screen, _store_mode),
    Step["Answers"]("details", _always, _details_screen, _store_details),
    Step[bool]("unsafe", lambda d: d.mode is Mode.UNSAFE, _unsafe_screen, _store_acceptance),
    Step["Plan"]("review", _always, _review_screen, _store_plan),
    Step["ApplyResult"]("apply", _always, _apply_screen, _store_result),
    Step[str]("done", _always, _done_screen, _ignore),
)


def draft_from_answers(answers: Answers, report: Report | None = None) -> Draft:
    """A draft prefilled from saved answers (the audit's "wizard" action); what they
    leave to the defaults shown as the defaults, the unsafe acceptance never prefilled."""
    details = dataclasses.replace(
        answers,
        network=answers.network or Network.ALLOWLIST,
        inner_sandbox=answers.inner_sandbox or InnerSandbox.STRONG,
        settings_scope=answers.settings_scope or SettingsScope.MANAGED,
        accept_unsafe_root=False,
        accepted_by=None,
        accepted_at=None,
    )
    return Draft(report=report, mode=answers.mode, details=details)


NOTHING_CHANGED = "sandbox-setup: quit before applying; nothing was changed"
ROLLED_BACK = "sandbox-setup: quit; the apply failed and was rolled back, nothing was changed"


def quit_outcome(draft: Draft, failed_apply: bool = False) -> Outcome:
    """A deliberate quit is exit 0; what it says depends on whether anything was applied."""
    if draft.result is not None:
        return Outcome(int(ExitCode.OK), quit=True)
    message = ROLLED_BACK if failed_apply else NOTHING_CHANGED
    return Outcome(int(ExitCode.OK), message, quit=True)


async def run_steps(
    app: App[Any], core: Core, draft: Draft, steps: tuple[Step[Any], ...]
) -> Outcome | None:
    """Walk ``steps``; returns how it ended, or ``None`` when the operator went
    back from the first step."""
    index = 0
    direction = 1
    while 0 <= index < len(steps):
        step = steps[index]
        if not step.applies(draft):
            index += direction
            continue
        screen = step.screen(core, draft)
        result = await app.push_screen_wait(screen)
        if result is Nav.QUIT:
            failed = False
            if step.name == "apply":  # quit asked for while it applied
                # why: imported when the step is first shown (module docstring)
                from sandbox_setup.tui.apply import ApplyScreen

                assert isinstance(screen, ApplyScreen)
                draft.result = screen.result
                failed = screen.error is not None
            return quit_outcome(draft, failed)
        if result is Nav.BACK:
            if step.name == "unsafe":
                draft.accepted_by = draft.accepted_at = None
            direction = -1
            index -= 1
            if index < 0:
                return None
            continue
        step.store(core, draft, result)
        direction = 1
        index += 1
    return Outcome(int(ExitCode.OK))


FIX_STEPS = tuple(s for s in STEPS if s.name in ("review", "apply", "done"))


async def run_flow(app: App[Any], core: Core) -> Outcome:
    """The audit view when a launcher config exists, else the wizard."""
    draft = Draft()
    if core.existing_setup():
        # why: imported when the step is first shown (module docstring)
        from sandbox_setup.tui.audit import AuditChoice, AuditScreen

        while True:
            screen = AuditScreen(core)
            choice = await app.push_screen_wait(screen)
            if choice is AuditChoice.FIX:
                try:
                    saved = core.saved_answers()
                except SetupError as exc:  # a malformed answers.toml: say which and why
                    message = printable_lines(core.error_words(exc))  # names a file: not markup
                    app.notify(message, severity="error", timeout=15, markup=False)
                    continue
                if saved is None:
                    app.notify("No answers.toml to re-apply; start the wizard (w).")
                    continue
                fix = draft_from_answers(saved, core.report_for_fix())
                fix.accepted_by, fix.accepted_at = saved.accepted_by, saved.accepted_at
                outcome = await run_steps(app, core, fix, FIX_STEPS)
                if outcome is not None and outcome.quit:
                    return outcome  # quit in the middle of the fix
                continue  # back to a fresh audit
            if choice is AuditChoice.WIZARD:
                try:
                    saved = core.saved_answers()
                except SetupError:
                    saved = None  # start from the defaults; the audit showed the error
                if saved is not None:
                    draft = draft_from_answers(saved)
                break
            # Quit from the audit view: its result is the exit code, as --audit's.
            clean = screen.audit is None or screen.audit.clean
            return Outcome(int(ExitCode.OK if clean else ExitCode.FINDINGS))
    outcome = await run_steps(app, core, draft, STEPS)
    return quit_outcome(draft) if outcome is None else outcome
