"""The wizard's flow: a coroutine that pushes one step after another.

Steps are a table; a step that does not apply is skipped by data
(:attr:`Step.applies`), not by branches inside screens. Escape on a step
returns :data:`Nav.BACK` and the flow goes to the previous step that applies,
which is shown prefilled from the :class:`Draft`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.screen import Screen

from checks.model import Report
from screens.apply import ApplyScreen
from screens.audit import AuditScreen
from screens.backend import Backend, default_settings_scope, inner_sandbox_preset
from screens.checks import ChecksScreen
from screens.choose_mode import ChooseModeScreen
from screens.details import DetailsScreen
from screens.done import DoneScreen, done_text
from screens.draft import Details, Draft, Nav
from screens.review import ReviewScreen
from screens.unsafe import UnsafeScreen
from screens.welcome import WelcomeScreen, welcome_text
from wizard.base.choices import Mode
from wizard.base.errors import SetupError
from wizard.base.exitcodes import ExitCode
from wizard.configure.answers import Answers


@dataclass(frozen=True)
class Step:
    name: str
    applies: Callable[[Draft], bool]
    screen: Callable[[Backend, Draft], Screen[Any]]
    store: Callable[[Backend, Draft, Any], None]


def _always(draft: Draft) -> bool:
    return True


def _welcome(backend: Backend, draft: Draft) -> Screen[Any]:
    layout = backend.layout
    existing = None
    if backend.existing_setup():
        existing = str(layout.launcher_config)
    return WelcomeScreen(
        welcome_text(
            layout.operator.name,
            layout.operator.uid,
            os.environ.get("SUDO_USER"),
            str(layout.root),
            existing,
        )
    )


def _store_report(backend: Backend, draft: Draft, report: Report) -> None:
    draft.report = report


def _store_mode(backend: Backend, draft: Draft, mode: Mode) -> None:
    draft.mode = mode
    if draft.details_mode is not mode or draft.details is None:
        # A new mode gets the presets the probes suggest for it, keeping what
        # the operator typed that does not depend on the mode.
        assert draft.report is not None
        old = draft.details
        if old is None:
            # Without root no user can be created: the operator's own account is
            # the agent unless they name an existing one.
            operator = backend.layout.operator
            old = Details() if backend.operator_is_root else Details(agent_user=operator.name)
        draft.details = Details(
            workspaces=old.workspaces,
            agent_user=old.agent_user,
            network=old.network,
            inner_sandbox=inner_sandbox_preset(draft.report, mode),
            settings_scope=default_settings_scope(mode, backend.operator_is_root),
            copy_login=old.copy_login,
            claude=old.claude,
        )
        draft.details_mode = mode


def _details_screen(backend: Backend, draft: Draft) -> Screen[Any]:
    assert draft.mode is not None and draft.details is not None and draft.report is not None
    preset = inner_sandbox_preset(draft.report, draft.mode)
    return DetailsScreen(backend, draft.mode, draft.details, preset)


def _store_details(backend: Backend, draft: Draft, details: Details) -> None:
    draft.details = details


def _store_acceptance(backend: Backend, draft: Draft, accepted: bool) -> None:
    operator = backend.layout.operator
    draft.accept_unsafe(f"{operator.name} (uid {operator.uid})")


def _review_screen(backend: Backend, draft: Draft) -> Screen[Any]:
    assert draft.report is not None
    return ReviewScreen(backend, draft.report, draft.answers())


def _store_plan(backend: Backend, draft: Draft, plan: Any) -> None:
    draft.plan = plan


def _store_result(backend: Backend, draft: Draft, result: Any) -> None:
    draft.result = result


def _done_screen(backend: Backend, draft: Draft) -> Screen[Any]:
    layout = backend.layout
    mode = draft.mode.value if draft.mode else "?"
    return DoneScreen(
        done_text(mode, str(layout.answers), str(layout.launcher_config), str(layout.root))
    )


def _ignore(backend: Backend, draft: Draft, value: Any) -> None:
    return None


STEPS: tuple[Step, ...] = (
    Step("welcome", _always, _welcome, _ignore),
    Step("checks", _always, lambda b, d: ChecksScreen(b, d.report), _store_report),
    Step(
        "mode",
        _always,
        lambda b, d: ChooseModeScreen(d.report, d.mode),  # type: ignore[arg-type]
        _store_mode,
    ),
    Step("details", _always, _details_screen, _store_details),
    Step("unsafe", lambda d: d.mode is Mode.UNSAFE, lambda b, d: UnsafeScreen(), _store_acceptance),
    Step("review", _always, _review_screen, _store_plan),
    Step("apply", _always, lambda b, d: ApplyScreen(b, d.plan), _store_result),
    Step("done", _always, _done_screen, _ignore),
)


def draft_from_answers(answers: Answers, report: Report | None = None) -> Draft:
    """A draft prefilled from saved answers (the audit's "wizard" action)."""
    return Draft(
        report=report,
        mode=answers.mode,
        details_mode=answers.mode,
        details=Details(
            workspaces=answers.workspaces,
            agent_user=answers.agent_user,
            network=answers.network,
            inner_sandbox=answers.inner_sandbox or "strong",
            settings_scope=answers.settings_scope or "managed",
            copy_login=answers.copy_login,
            claude=answers.claude,
        ),
    )


async def run_steps(
    app: App[Any], backend: Backend, draft: Draft, steps: tuple[Step, ...]
) -> int | None:
    """Walk ``steps``; returns the exit code, or ``None`` when the operator
    went back from the first step."""
    index = 0
    direction = 1
    while 0 <= index < len(steps):
        step = steps[index]
        if not step.applies(draft):
            index += direction
            continue
        result = await app.push_screen_wait(step.screen(backend, draft))
        if result is Nav.QUIT:
            return int(ExitCode.INTERRUPTED)
        if result is Nav.BACK:
            if step.name == "unsafe":
                draft.accepted_by = draft.accepted_at = None
            direction = -1
            index -= 1
            if index < 0:
                return None
            continue
        step.store(backend, draft, result)
        direction = 1
        index += 1
    return int(ExitCode.OK)


FIX_STEPS = tuple(s for s in STEPS if s.name in ("review", "apply", "done"))


async def run_flow(app: App[Any], backend: Backend) -> int:
    """The audit view when a launcher config exists, else the wizard."""
    draft = Draft()
    if backend.existing_setup():
        while True:
            choice = await app.push_screen_wait(AuditScreen(backend))
            if choice == "fix":
                try:
                    saved = backend.saved_answers()
                except SetupError as exc:  # a malformed answers.toml: say which and why
                    app.notify(str(exc), severity="error", timeout=15)
                    continue
                if saved is None:
                    app.notify("No answers.toml to re-apply; start the wizard (w).")
                    continue
                fix = draft_from_answers(saved, backend.report_for_fix())
                fix.accepted_by, fix.accepted_at = saved.accepted_by, saved.accepted_at
                code = await run_steps(app, backend, fix, FIX_STEPS)
                if code == ExitCode.INTERRUPTED:
                    return code
                continue  # back to a fresh audit
            if choice == "wizard":
                try:
                    saved = backend.saved_answers()
                except SetupError:
                    saved = None  # start from the defaults; the audit showed the error
                if saved is not None:
                    draft = draft_from_answers(saved)
                break
            return int(ExitCode.OK if backend.last_audit_clean else ExitCode.FINDINGS)
    code = await run_steps(app, backend, draft, STEPS)
    return int(ExitCode.INTERRUPTED) if code is None else code
