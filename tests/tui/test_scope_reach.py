"""Managed settings apply to every user's Claude on the host (issue 28): the scope
choice says so in the wizard (Pilot at 80x24), in the CLI help and in the plan
(a real --dry-run under a temp root)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import RadioButton, RadioSet, Static

from sandbox_setup.base.choices import InnerSandbox, Mode, SettingsScope
from sandbox_setup.configure.answers import Answers
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.form import Field
from tests.core_fixtures import SANDBOX, make_target_root, run_cli
from tests.tools import require_root
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.fake_screens import ScreenHarness, fake_core
from tests.tui.helpers import wait_until

EVERY_USER = "every user's Claude Code on this host"


def _hint(app: ScreenHarness) -> str:
    field = app.screen.query_one("#field-scope", Field)
    return " ".join(str(field.query_one(".hint", Static).render()).split())


async def test_the_wizards_scope_choice_says_managed_reaches_every_user(tmp_path: Path) -> None:
    core = fake_core(tmp_path, SANDBOX_HOST)
    (tmp_path / "srv/project").mkdir(parents=True, exist_ok=True)
    details = Answers(
        Mode.SANDBOX, inner_sandbox=InnerSandbox.STRONG, settings_scope=SettingsScope.MANAGED
    )
    app = ScreenHarness(lambda: DetailsScreen(core, Mode.SANDBOX, details, InnerSandbox.STRONG, ""))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: bool(app.screen.query("#field-scope")))
        assert f"managed: root-owned, out of the agent's reach; applies to {EVERY_USER}" in _hint(
            app
        )
        scope = app.screen.query_one("#scope", RadioSet)
        user = next(b for b in scope.query(RadioButton) if str(b.label) == "user")
        user.value = True
        await wait_until(pilot, lambda: _hint(app).startswith("user: "))
        assert EVERY_USER not in _hint(app)


def test_the_cli_help_and_the_plan_say_managed_reaches_every_user(tmp_path: Path) -> None:
    helped = run_cli("--help")
    assert EVERY_USER in " ".join(helped.stdout.split())
    require_root()
    root = make_target_root(tmp_path / "root")
    plan = run_cli("--headless", *SANDBOX, "--dry-run", "--root", str(root))
    assert plan.returncode == 0, plan.stderr
    assert f"Claude settings (managed scope: they apply to {EVERY_USER})" in plan.stdout
