"""The AppArmor profile for bwrap has a field of its own in the details (issue 29):
shown where the probes found Ubuntu's user-namespace restriction stopping bwrap (the
``userns.policy``/``bwrap.*`` findings whose cause is ``apparmor-userns-restricted``),
off until the operator turns it on; turned on, the real plan and apply under a temp
root install the profile and the answers keep it. Pilot at 80x24, fake findings, the
real core."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input, Static

from sandbox_setup.base.apparmor import PROFILE_FILE
from sandbox_setup.base.choices import Mode
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.configure.answers import load_answers
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.controls import Toggle
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.done import DoneScreen
from sandbox_setup.tui.form import Field
from sandbox_setup.tui.review import ReviewScreen
from tests.core_fixtures import CONFIG
from tests.tools import require_root, require_tool
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.helpers import (
    make_app,
    make_root,
    make_target_root,
    type_text,
    wait_for,
    wait_until,
)
from tests.tui.test_habits import to_details

FIELD = "#apparmor-profile"
RESTRICTED = "\ncause: apparmor-userns-restricted"


def _restricted(finding: Finding) -> Finding:
    """The finding as Ubuntu's restriction makes it: failed, naming that cause."""
    if finding.id == "userns.policy":
        summary = "kernel.apparmor_restrict_unprivileged_userns=1 and no AppArmor profile grants"
    elif finding.id == "bwrap.sandbox":
        summary = "bwrap: setting up uid map: Permission denied"
    else:
        return finding
    detail = finding.detail + RESTRICTED
    return dataclasses.replace(
        finding,
        status=Status.FAIL,
        summary=summary,
        detail=detail,
        cause=RESTRICTED.removeprefix("\ncause: "),
    )


# An Ubuntu 24.04 host: the sandbox cannot start, user mode is recommended.
RESTRICTED_HOST = [_restricted(f) for f in SANDBOX_HOST]


def _hint(screen: DetailsScreen) -> str:
    field = screen.query_one("#field-apparmor-profile", Field)
    return " ".join(str(field.query_one(".hint", Static).render()).split())


async def test_the_field_is_offered_only_where_the_probes_found_the_restriction(
    tmp_path: Path,
) -> None:
    for findings, offered in ((RESTRICTED_HOST, True), (SANDBOX_HOST, False)):
        app = make_app(make_root(tmp_path / str(offered)), findings)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await to_details(pilot, Mode.USER)
            assert bool(screen.query(FIELD)) is offered
            if offered:
                assert screen.query_one(FIELD, Toggle).value is False  # off until asked
                assert str(PROFILE_FILE) in _hint(screen)
                assert "any local user can run bwrap" in _hint(screen)


async def _walk_with_the_profile(pilot: Pilot[Any]) -> None:
    """User mode, the workspace typed, the AppArmor toggle turned on with keys, then
    review, apply and done."""
    details = await to_details(pilot, Mode.USER)
    assert pilot.app.focused is details.query_one("#workspaces", Input)
    await type_text(pilot, "/srv/project")
    toggle = details.query_one(FIELD, Toggle)
    while pilot.app.focused is not toggle:
        await pilot.press("tab")
    await pilot.press("space")
    assert toggle.value is True
    await pilot.press("ctrl+n")
    review = await wait_for(pilot, ReviewScreen)
    await wait_until(pilot, lambda: not review.busy)
    assert review.plan is not None, pilot.app.screen.query_one("#plan").children
    assert any(str(PROFILE_FILE) in a.describe() for a in review.plan.actions), [
        a.describe() for a in review.plan.actions
    ]
    await pilot.press("a")
    applying = await wait_for(pilot, ApplyScreen)
    await wait_until(pilot, lambda: not applying.busy, tries=1500)
    assert applying.error is None, applying.error
    await pilot.press("enter")
    await wait_for(pilot, DoneScreen)
    await pilot.press("enter")


async def test_turned_on_the_apply_installs_the_profile_and_the_answers_keep_it(
    tmp_path: Path,
) -> None:
    require_root()
    for tool in ("useradd", "setfacl"):
        require_tool(tool)
    root = make_target_root(tmp_path)
    app = make_app(root, RESTRICTED_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        await _walk_with_the_profile(pilot)
        await wait_until(pilot, lambda: app.return_value is not None)
    assert app.return_value == 0
    profile = root / str(PROFILE_FILE).lstrip("/")
    assert "userns," in profile.read_text()  # written under the root, not loaded here
    assert load_answers(root / CONFIG / "answers.toml").apparmor_bwrap_profile is True
