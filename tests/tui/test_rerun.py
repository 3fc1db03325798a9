"""The wizard re-run on its own setup (issue 28): after a headless apply under a temp
root (a real ``useradd --prefix`` tree), the wizard opens on the saved answers,
recognises the agent, its group and the claude shim as this setup's (no "Reuse an
existing account" needed, no ✗), and reaches the review with a plan it can apply."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.widgets import Input

from sandbox_setup.base.choices import Mode
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.tui.app import SetupApp
from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.choose_mode import ChooseModeScreen
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.form import Field
from sandbox_setup.tui.review import ReviewScreen
from tests.core_fixtures import SANDBOX, make_target_root, run_cli
from tests.tools import require_root, require_tool
from tests.tui.fake_findings import SANDBOX_HOST, FakeProvider
from tests.tui.helpers import make_root, screen_lines, wait_for, wait_until
from tests.tui.test_habits import to_details

SIZE = (80, 24)
AGENT = "op-agent"


@pytest.fixture
def applied_root(tmp_path: Path) -> Path:
    """A root with one headless apply: sandbox mode, agent op-agent, the shim."""
    require_root()
    for tool in ("useradd", "setfacl", "bwrap"):
        require_tool(tool)
    root = make_target_root(tmp_path / "root")
    proc = run_cli(
        "--headless", "--root", str(root), *SANDBOX, "--agent-user", AGENT,
        "--install-claude-shim", "--yes",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return root


def shown(app: SetupApp) -> str:
    return "\n".join(screen_lines(app))


async def test_the_wizard_rerun_on_its_own_setup_reaches_the_review_with_no_cross(
    applied_root: Path,
) -> None:
    app = SetupApp(InteractiveCore.for_root(applied_root, FakeProvider(SANDBOX_HOST)))
    async with app.run_test(size=SIZE) as pilot:
        audit = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: audit.audit is not None and not audit.busy)
        await pilot.press("w")  # the wizard, from the audit view
        await pilot.press("enter")  # welcome
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ChecksScreen")
        checks = app.screen
        await wait_until(pilot, lambda: checks.report is not None)  # type: ignore[attr-defined]
        await pilot.press("n")
        modes = await wait_for(pilot, ChooseModeScreen)
        assert modes.query_one("#modes").highlighted == list(Mode).index(Mode.SANDBOX)
        await pilot.press("enter")
        details = await wait_for(pilot, DetailsScreen)
        # Opens on what is set now.
        assert details.query_one("#agent-user", Input).value == AGENT
        assert details.query_one("#workspaces", Input).value == "/srv/project"
        assert details.query_one("#install-shim").value  # type: ignore[attr-defined]
        assert not details.query_one("#reuse-account").value  # type: ignore[attr-defined]
        await pilot.press("ctrl+n")
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: not review.busy)
        text = shown(app)
        assert "✗" not in text and "Cannot continue" not in text, text
        assert review.plan is not None, text
        assert not review.answers.reuse_account


def test_the_wizards_probes_run_as_the_setups_agent(tmp_path: Path) -> None:
    """The checks step of a re-run probes as the configured agent (as ``--check``
    does), not as the default agent's stand-in ``nobody``: a live account whose
    uid the tree's passwd shares, reused by a headless apply."""
    from tests.live_accounts import live_account

    require_root()
    for tool in ("useradd", "setfacl", "bwrap", "setpriv"):
        require_tool(tool)
    root = make_target_root(tmp_path / "root")
    with live_account("ac-d-probe") as agent:
        with (root / "etc/passwd").open("a") as passwd:
            passwd.write(f"{agent.name}:x:{agent.uid}:{agent.gid}::/home/{agent.name}:/bin/bash\n")
        with (root / "etc/group").open("a") as group:
            group.write(f"{agent.name}:x:{agent.gid}:\n")
        with (root / "etc/shadow").open("a") as shadow:
            shadow.write(f"{agent.name}:!:20000:0:99999:7:::\n")
        home = root / "home" / agent.name
        home.mkdir(mode=0o700)
        os.chown(home, agent.uid, agent.gid)
        proc = run_cli(
            "--headless", "--root", str(root), *SANDBOX, "--agent-user", agent.name,
            "--reuse-account", "--yes",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        report = InteractiveCore.for_root(root).run_checks(lambda finding: None)
    assert report.as_user == agent.name


async def test_a_stale_cross_clears_when_the_answer_changes(tmp_path: Path) -> None:
    """bob is an operator-made account: Next marks "Reuse" with ✗; ticking it takes
    the ✗ and the "Cannot continue" line away at once (Next judges again: bob has a
    password, ✗ on the agent), and a new name takes that ✗ away too."""
    root = make_root(tmp_path)
    (root / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\nbob:x:1001:1001:Bob:/home/bob:/bin/bash\n"
    )
    (root / "etc/group").write_text("root:x:0:\nbob:x:1001:\n")
    (root / "etc/shadow").write_text("root:*:1:0:99999:7:::\nbob:$6$salt$hash:1:0:99999:7:::\n")
    app = SetupApp(InteractiveCore.for_root(root, FakeProvider(SANDBOX_HOST)))
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot, Mode.USER)
        details.query_one("#agent-user", Input).value = "bob"
        await pilot.press("ctrl+n")
        reuse = details.query_one("#field-reuse-account", Field)
        await wait_until(pilot, lambda: "✗" in shown(app))
        assert reuse.error is not None and "Cannot continue" in shown(app)
        details.query_one("#reuse-account").focus()
        await pilot.press("space")
        await wait_until(pilot, lambda: "✗" not in shown(app))
        assert reuse.error is None and "Cannot continue" not in shown(app)
        await pilot.press("ctrl+n")  # judged again, with Reuse ticked
        agent = details.query_one("#field-agent-user", Field)
        await wait_until(pilot, lambda: agent.error is not None)
        assert "usable password" in (agent.error or "")
        agent_input = details.query_one("#agent-user", Input)
        agent_input.focus()
        await pilot.press("end", "2")  # bob2: a new account
        await wait_until(pilot, lambda: "✗" not in shown(app))
        assert agent.error is None and "Cannot continue" not in shown(app)
        assert isinstance(app.screen, DetailsScreen)  # nothing judged until Next
