"""What the screens say comes in the wizard's words (issue 17), at 80x24 with fake
findings: no CLI flag in the recommendation (the path step), the plan's notes and
steps (the review), the apply log; and the done screen says when the agent has no
Claude login and how to give it one. (The words themselves, for every flag-bearing
message of the core: tests/unit/test_tui_core.py.)"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from textual.widgets import OptionList, Static

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Report, Status
from sandbox_setup.checks.recommend import recommend
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.host_facts import gather_host_facts
from sandbox_setup.tui.app import SetupApp
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.choose_mode import ChooseModeScreen
from sandbox_setup.tui.done import DoneScreen
from sandbox_setup.tui.review import ReviewScreen
from tests.core_fixtures import make_target_root
from tests.tools import require_root, require_tool
from tests.tui.fake_findings import SANDBOX_HOST, fake_report
from tests.tui.fake_screens import FakeCore, WizardHarness
from tests.tui.helpers import make_root, plain, screen_lines, wait_for, wait_until
from tests.tui.test_habits import SIZE, to_details
from tests.tui.test_steps import _to_mode_screen
from tests.wizard_words import names_a_flag


def live_like(findings: list[Finding]) -> Callable[[Callable[[Finding], object]], Report]:
    """A provider whose recommendation is the real one (recommend()) for these
    findings, probed as root with no agent user: its reason names --as-user and,
    with socat missing, --inner-sandbox."""

    def provide(on_finding: Callable[[Finding], object]) -> Report:
        for finding in findings:
            on_finding(finding)
        return Report(host={}, findings=findings, recommendation=recommend(findings, euid=0))

    return provide


async def test_the_path_step_gives_the_recommendation_in_the_wizards_words(
    tmp_path: Path,
) -> None:
    deps = Finding(
        "claude.sandbox_deps", "socat and ripgrep", Status.FAIL, "socat not found", "",
        "apt-get install socat",
    )  # fmt: skip
    findings = [deps if f.id == deps.id else f for f in SANDBOX_HOST]
    reason = recommend(findings, euid=0).reason
    assert "--as-user" in reason and "--inner-sandbox" in reason  # what the core says
    core = FakeCore(Layout.for_root(make_root(tmp_path)), live_like(findings))
    app = SetupApp(core)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _to_mode_screen(pilot, app)
        assert isinstance(screen, ChooseModeScreen)
        modes = screen.query_one("#modes", OptionList)
        shown = "\n".join(
            plain(modes.get_option_at_index(i).prompt) for i in range(modes.option_count)
        )
        on_screen = "\n".join(screen_lines(app))
    assert "Why: bubblewrap starts a sandbox" in shown
    assert names_a_flag(shown) == [], shown
    assert "re-run the checks once the agent user exists" in shown
    assert "or choose the inner sandbox 'off'" in shown
    assert "--" not in on_screen, on_screen


def reusable_root(tmp_path: Path) -> Path:
    """A target root with bob, an operator-made account that may be reused."""
    root = make_target_root(tmp_path / "root")
    with (root / "etc/passwd").open("a") as passwd:
        passwd.write("bob:x:1500:1500::/home/bob:/bin/bash\n")
    with (root / "etc/group").open("a") as group:
        group.write("bob:x:1500:\n")
    with (root / "etc/shadow").open("a") as shadow:
        shadow.write("bob:!:20000:0:99999:7:::\n")
    home = root / "home/bob"
    home.mkdir(mode=0o700)
    os.chown(home, 1500, 1500)
    return root


REUSE = Answers(
    Mode.SANDBOX,
    workspaces=(PurePosixPath("/srv/project"),),
    agent_user="bob",
    reuse_account=True,
    network=Network.ALLOWLIST,
)


def pane_text(screen: ReviewScreen) -> str:
    parts = [screen.query_one("#plan-summary", Static), *screen.query(".plan-action")]
    return "\n".join(plain(part.render()) for part in parts)


async def test_the_review_gives_notes_and_steps_in_the_wizards_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real core's plan for a reused account, with ANTHROPIC_BASE_URL on the
    host's loopback: a step ("reused: --reuse-account") and a note
    ("--allow-loopback-port 8080") name flags in the core; the review does not."""
    require_root()  # bob's home belongs to bob
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080")
    core = InteractiveCore.for_root(reusable_root(tmp_path), live_like(SANDBOX_HOST))
    # The operator turned the per-launch port off: the note asks for the port.
    config = core.layout.real(core.layout.launcher_config)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('schema = 1\n[sandbox]\nbase_url_port = "off"\n')
    report = fake_report(SANDBOX_HOST)
    from sandbox_setup.configure.plan import build_plan

    raw = build_plan(
        report, REUSE, core.layout, facts=gather_host_facts(report, core.layout, REUSE)
    )  # what the CLI shows
    assert "--reuse-account" in " ".join(a.describe() for a in raw.actions)
    assert "--allow-loopback-port 8080" in " ".join(raw.notes)
    app = WizardHarness(lambda: ReviewScreen(core, report, REUSE))
    async with app.run_test(size=SIZE) as pilot:
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: not review.busy)
        assert review.plan is not None
        shown = pane_text(review)
    assert names_a_flag(shown) == [], shown
    assert "user bob already exists (reused: 'Reuse an existing account' is ticked)" in shown
    assert "to allow it, enter 8080 in the loopback ports" in shown  # (pane_text cuts)
    assert shown.count("enter 8080 in the loopback ports") == 1, shown  # once
    # the review says what the agent's network is (issue 11), before the steps
    assert "Network" in shown and "allowlist: a network namespace of its own" in shown
    assert "api.anthropic.com:443" in shown


async def test_the_apply_log_gives_each_step_once_in_the_wizards_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real core applies the real plan (groupadd/usermod --prefix, setfacl under
    the temp root): one line per step, when it has finished, in the review's words."""
    require_root()
    for tool in ("groupadd", "usermod", "setfacl"):
        require_tool(tool)
    core = InteractiveCore.for_root(reusable_root(tmp_path), live_like(SANDBOX_HOST))
    plan = core.build_plan(fake_report(SANDBOX_HOST), REUSE)
    reviewed = [core.describe(action) for action in plan.actions]  # as the review shows them
    app = WizardHarness(lambda: ApplyScreen(core, plan))
    async with app.run_test(size=SIZE) as pilot:
        applying = await wait_for(pilot, ApplyScreen)
        await wait_until(pilot, lambda: not applying.busy, tries=1500)
        assert applying.error is None, applying.error
        log = [line.text for line in applying.query_one("#apply-log").lines]  # type: ignore[attr-defined]
    # Each on one line: the log's width is the screen's, the steps may wrap; join
    # the lines that continue one (they start without a status word).
    entries: list[str] = []
    for line in log:
        if not entries or line.strip().split(" ", 1)[0] in ("changed", "unchanged", "failed"):
            entries.append(line.strip())
        else:
            entries[-1] += " " + line.strip()
    assert len(entries) == len(plan.actions), log
    for entry, words in zip(entries, reviewed, strict=True):
        assert " ".join(entry.split()[1:]) == " ".join(words.split()), entry
    assert names_a_flag("\n".join(log)) == [], log
    assert any("reused: 'Reuse an existing account' is ticked" in entry for entry in entries)


async def walk_to_done(pilot: Any) -> DoneScreen:
    await to_details(pilot)
    await pilot.press(*"/srv/project", "ctrl+n")
    review = await wait_for(pilot, ReviewScreen)
    await wait_until(pilot, lambda: not review.busy)
    await pilot.press("a")
    applying = await wait_for(pilot, ApplyScreen)
    await wait_until(pilot, lambda: not applying.busy)
    await pilot.press("enter")
    return await wait_for(pilot, DoneScreen)  # type: ignore[no-any-return]


async def test_the_done_screen_says_the_agent_has_no_claude_login_and_how_to_give_one(
    tmp_path: Path,
) -> None:
    root = make_root(tmp_path)
    app = SetupApp(FakeCore(Layout.for_root(root), live_like(SANDBOX_HOST)))
    async with app.run_test(size=SIZE) as pilot:
        await walk_to_done(pilot)
        await pilot.pause()
        lines = screen_lines(app)
    shown = "\n".join(lines)
    # In view at 80x24 without scrolling, right below the heading.
    assert "Before the first launch" in shown and "has no Claude login yet" in shown, shown
    words = " ".join(" ".join(lines).split())
    assert "/login" in words and "'Copy my Claude login' ticked" in words, words
    assert names_a_flag(words) == [], words
    # With a login in the agent's home, there is nothing to say.
    login = root / "home/claude-agent/.claude/.credentials.json"
    login.parent.mkdir(parents=True)
    login.write_text("{}")
    app = SetupApp(FakeCore(Layout.for_root(root), live_like(SANDBOX_HOST)))
    async with app.run_test(size=SIZE) as pilot:
        await walk_to_done(pilot)
        await pilot.pause()
        shown = "\n".join(screen_lines(app))
    assert "sandbox mode is set up" in shown and "Claude login" not in shown, shown
