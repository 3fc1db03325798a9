"""Pilot walks of each mode end to end under a temp root, with fake findings
and the real core (build_plan, apply_plan, useradd --prefix): the files the
wizard writes are checked, and the answers it leaves replay headless to
byte-identical files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, RadioSet

from sandbox_setup.base.choices import Mode
from sandbox_setup.configure.answers import load_answers
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.done import DoneScreen
from sandbox_setup.tui.review import ReviewScreen
from sandbox_setup.tui.unsafe import UNSAFE_PHRASE, UnsafeScreen
from tests.core_fixtures import CONFIG
from tests.tools import REPO, require_root, require_tool
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.helpers import make_app, make_target_root, tree, type_text, wait_for, wait_until
from tests.tui.test_steps import _to_mode_screen

INNER = ("strong", "weak", "off")  # the order of the details screen's choices


async def walk(
    pilot: Pilot[Any], mode: Mode, workspace: str = "/srv/project", inner: str | None = None
) -> None:
    """Welcome -> checks -> mode -> details -> (unsafe) -> review -> apply -> done,
    with keys only; ``inner`` picks Claude's inner sandbox (None: keep the preset)."""
    screen = await _to_mode_screen(pilot, pilot.app)
    await pilot.press("home", *["down"] * list(Mode).index(mode))
    assert screen.query_one("#modes", OptionList).highlighted == list(Mode).index(mode)
    await pilot.press("enter")
    details = await wait_for(pilot, DetailsScreen)
    if details.query("#workspaces"):
        assert pilot.app.focused is details.query_one("#workspaces", Input)
        await type_text(pilot, workspace)
    if inner is not None:  # Tab to the inner sandbox choice, move to it, select it
        while pilot.app.focused is not details.query_one("#inner"):
            await pilot.press("tab")
        await pilot.press(*["right"] * INNER.index(inner), "space")
        pressed = details.query_one("#inner", RadioSet).pressed_button
        assert pressed is not None and str(pressed.label) == inner
    await pilot.press("ctrl+n")
    if mode is Mode.UNSAFE:
        await wait_for(pilot, UnsafeScreen)
        await type_text(pilot, UNSAFE_PHRASE)
        await pilot.press("enter")
    review = await wait_for(pilot, ReviewScreen)
    await wait_until(pilot, lambda: not review.busy)
    assert review.plan is not None, pilot.app.screen.query_one("#plan").children
    await pilot.press("a")
    applying = await wait_for(pilot, ApplyScreen)
    await wait_until(pilot, lambda: not applying.busy, tries=1500)
    assert applying.error is None, applying.error
    await pilot.press("enter")
    await wait_for(pilot, DoneScreen)
    await pilot.press("enter")


async def run_mode(tmp_path: Path, mode: Mode, inner: str | None = None) -> Path:
    require_root()
    for tool in ("useradd", "setfacl"):
        require_tool(tool)
    root = make_target_root(tmp_path)
    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        await walk(pilot, mode, inner=inner)
        await wait_until(pilot, lambda: app.return_value is not None)
    assert app.return_value == 0
    return root


def _launcher(root: Path) -> dict[str, Any]:
    return tomllib.loads((root / CONFIG / "launcher.toml").read_text())


async def test_sandbox_mode_end_to_end(tmp_path: Path) -> None:
    root = await run_mode(tmp_path, Mode.SANDBOX)
    config = _launcher(root)
    assert config["mode"] == "sandbox"
    assert config["sandbox"]["workspaces"] == ["/srv/project"]
    assert config["sandbox"]["inner_sandbox"] == "strong"  # preset from the fake probes
    assert config["agent"]["user"] == "claude-agent"
    assert "claude-agent:" in (root / "etc/passwd").read_text()
    settings = json.loads((root / "etc/claude-code/managed-settings.json").read_text())
    assert settings  # managed scope, the default for sandbox mode as root
    answers = load_answers(root / CONFIG / "answers.toml")
    assert answers.mode is Mode.SANDBOX and not answers.accept_unsafe_root


async def test_user_mode_end_to_end(tmp_path: Path) -> None:
    root = await run_mode(tmp_path, Mode.USER)
    config = _launcher(root)
    assert config["mode"] == "user"
    assert "unsafe" not in config
    assert "claude-agent:" in (root / "etc/passwd").read_text()
    assert (root / "etc/claude-code/managed-settings.json").is_file()
    assert load_answers(root / CONFIG / "answers.toml").mode is Mode.USER


async def test_unsafe_mode_end_to_end(tmp_path: Path) -> None:
    root = await run_mode(tmp_path, Mode.UNSAFE)
    config = _launcher(root)
    assert config["mode"] == "unsafe"
    assert config["unsafe"]["accepted_by"] == "root (uid 0)"
    assert config["unsafe"]["accepted_at"]
    assert "claude-agent" not in (root / "etc/passwd").read_text()
    assert (root / "root/.claude/settings.json").is_file()  # user scope in unsafe mode
    answers = load_answers(root / CONFIG / "answers.toml")
    assert answers.accept_unsafe_root
    assert answers.accepted_at == config["unsafe"]["accepted_at"]


def _headless(answers: Path, root: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "sandbox_setup", "--headless", "--answers", str(answers)]
    return subprocess.run(
        [*argv, "--yes", "--root", str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("mode", "inner"),
    [
        (Mode.USER, None),
        (Mode.UNSAFE, None),
        (Mode.SANDBOX, "off"),
        (Mode.SANDBOX, "weak"),
        (Mode.SANDBOX, "strong"),
    ],
)
async def test_answers_replay_headless_byte_identical(
    tmp_path: Path, mode: Mode, inner: str | None
) -> None:
    """The answers of a Pilot-driven run, replayed by the headless path (live
    probes) into a second root, write the same bytes. In sandbox mode, each of
    Claude's inner sandbox strengths: the replay verifies "weak" and "strong"
    with the live nested probes (as nobody, standing in for the agent that does
    not exist on this system yet)."""
    first = await run_mode(tmp_path / "tui", mode, inner=inner)
    if inner is not None:
        assert _launcher(first)["sandbox"]["inner_sandbox"] == inner
    second = make_target_root(tmp_path / "headless")
    proc = _headless(first / CONFIG / "answers.toml", second)
    if mode is Mode.SANDBOX and proc.returncode == 3:
        # The fake findings allowed this; the live probes of this host do not, so
        # there is no second tree to compare. CI's host must allow it.
        reason = f"this host refuses sandbox mode (inner {inner}) live: {proc.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    assert proc.returncode == 0, proc.stderr
    # The journal and backups record times and transaction ids; /etc/shadow
    # records the day of the change. Everything else must match byte for byte.
    # The host-wide record of setups names each setup's state directory and applies.
    skip = ("root/.local/state", "etc/shadow", "etc/gshadow", "etc/shadow-", "etc/gshadow-")
    skip += ("etc/sandbox-setup/setups.json", "etc/sandbox-setup/before")
    tui_files, headless_files = tree(first, skip), tree(second, skip)
    assert sorted(tui_files) == sorted(headless_files)
    differing = [p for p in tui_files if tui_files[p] != headless_files[p]]
    assert differing == []
    assert "root/.config/sandbox-setup/launcher.toml" in tui_files


async def test_failed_apply_is_rolled_back_and_shown(tmp_path: Path) -> None:
    """An apply that fails midway (the workspace went after the review: its access
    step fails once the account exists) is rolled back by the core; the screen says
    so and goes back to the review."""
    require_root()
    root = make_target_root(tmp_path)
    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _to_mode_screen(pilot, app)
        screen.query_one("#modes", OptionList).highlighted = list(Mode).index(Mode.USER)
        await pilot.press("enter")
        await wait_for(pilot, DetailsScreen)
        await type_text(pilot, "/srv/project")
        await pilot.press("ctrl+n")
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: not review.busy)
        assert review.plan is not None
        (root / "srv/project").rmdir()
        await pilot.press("a")
        applying = await wait_for(pilot, ApplyScreen)
        await wait_until(pilot, lambda: not applying.busy, tries=1500)
        assert applying.error is not None
        log = "\n".join(line.text for line in applying.query_one("#apply-log").lines)  # type: ignore[attr-defined]
        assert "changed" in log and "error: " in log  # some actions ran before the failure
        # Rolled back: the agent user and the settings written before are gone.
        assert "claude-agent" not in (root / "etc/passwd").read_text()
        assert not (root / "etc/claude-code/managed-settings.json").exists()
        await pilot.press("enter")  # "Back to review"
        await wait_for(pilot, ReviewScreen)
