"""The audit view's status (``s``): the Setup and Sessions tabs show what
``sandbox-setup --status`` shows, for a setup the wizard applied and a session recorded
in the host's history, with the proxy's refusal of a name and the command that allows it
(whole, on one line). Snapshots at 80x24, one under LANG=C."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static, TabbedContent

import sandbox_setup.audit.runner
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.paths import Layout
from sandbox_setup.boundary.session_history import EndCheck, PastSession, append_history
from sandbox_setup.boundary.trust_record import trust_dir
from sandbox_setup.commands.status import render_lines
from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.status import StatusScreen
from sandbox_setup.tui.undo import UndoScreen
from tests.core_fixtures import run_cli
from tests.tui.fake_findings import SANDBOX_HOST, fake_report
from tests.tui.fake_screens import ScreenHarness
from tests.tui.helpers import make_app, wait_for, wait_until
from tests.tui.test_modes import run_mode

ALLOW = "sandbox-setup --headless --allow-domain denied.test:80 --root {} --yes"


@pytest.fixture
def fake_audit_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sandbox_setup.audit.runner,
        "run_live_checks",
        lambda *args, **kwargs: fake_report(SANDBOX_HOST),
    )


def _record_session(root: Path, state: Path) -> None:
    """A session of the applied setup in the history, and its proxy's log records."""
    layout = Layout.for_root(root)
    started = time.time() - 30
    state.mkdir(mode=0o700)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started + 5))
    records = [
        {"event": "decision", "host": "denied.test", "port": 80, "allowed": False,
         "rule": "not allowlisted", "launcher": 4242, "time": stamp},
        {"event": "decision", "host": "169.254.169.254", "port": 80, "allowed": False,
         "rule": "address not allowlisted", "launcher": 4242, "time": stamp},
    ]  # fmt: skip
    (state / "egress.log").write_text("".join(json.dumps(r) + "\n" for r in records))
    directory = trust_dir(state, root)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    append_history(
        directory,
        PastSession(
            session="20270115T080000-4242", pid=4242, state=str(state),
            config=str(layout.launcher_config), agent="claude-agent", mode="user",
            workspaces=(str(root / "srv/project"),), started=started, ended=started + 20,
            exit_code=0, end_check=EndCheck(True, 0, None),
        ),
    )  # fmt: skip


async def test_the_audit_views_status_shows_the_setup_and_the_sessions_refusals(
    tmp_path: Path, fake_audit_probes: None
) -> None:
    root = await run_mode(tmp_path / "root", Mode.USER)
    _record_session(root, tmp_path / "state")
    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(100, 30)) as pilot:
        audit = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: not audit.busy, tries=1500)
        await pilot.press("s")
        screen = await wait_for(pilot, StatusScreen)
        setup = str(screen.query_one("#status-setup-text", Static).render())
        assert "agent: claude-agent, user mode" in setup
        assert "claude shim: not installed" in setup
        sessions = screen.sessions_text
        assert "exit 0, end check complete, 0 moved aside" in sessions
        assert "1x the agent asked for denied.test:80: not on the allowlist" in " ".join(
            " ".join(line.split()) for line in sessions.splitlines()
        )
        # The command whole, on one line of its own, however wide the screen.
        assert f"      to allow it: {ALLOW.format(root)}" in sessions.splitlines()
        assert "169.254.169.254:80" in sessions
        assert sum("to allow it" in line for line in sessions.splitlines()) == 1
        screen.query_one(TabbedContent).active = "status-sessions"
        await pilot.pause()
        shown = str(screen.query_one("#status-sessions-text", Static).render())
        assert any(line.endswith(ALLOW.format(root)) for line in shown.splitlines())
        await pilot.press("escape")
        await wait_for(pilot, AuditScreen)


def _fixed_texts() -> tuple[str, str]:
    refusal = {
        "asked_for": {"host": "denied.test", "port": 80},
        "count": 2,
        "rule": "not allowlisted",
        "reason": "not on the allowlist",
        "allow_command": "sandbox-setup --headless --allow-domain denied.test:80 --yes",
    }
    unresolved = {
        "asked_for": {"host": "nowhere.example.com", "port": 443},
        "count": 51,
        "rule": "unresolved",
        "reason": "did not resolve",
        "allow_command": None,
    }
    past = {
        "session": "s",
        "pid": 4242,
        "agent": "claude-agent",
        "mode": "sandbox",
        "workspaces": ["/srv/app"],
        "start": "2027-01-15T08:00:00Z",
        "duration_seconds": 312.4,
        "exit_code": 0,
        "end_check": {"complete": True, "moved_aside": 0, "quarantine": None},
        "refused": [refusal, unresolved],
    }
    setup = {"config": "/root/.config/sandbox-setup/launcher.toml",
             "state_dir": "/root/.local/state/sandbox-setup", "operator": "root",
             "in_host_record": True, "applies": 1, "problem": None, "agent": "claude-agent",
             "mode": "sandbox", "workspaces": ["/srv/app"], "claude": "/usr/local/bin/claude",
             "inner_sandbox": "strong",
             "network": {"network": "allowlist", "wall": ["allowlist: the egress proxy"],
                         "allowed_domains": [], "loopback_ports": []},
             "passed_variables": [],
             "host_changes": {"made": [{"agent": "claude-agent", "created_user": True,
                                        "group": "sandbox-ws-claude-agent",
                                        "created_group": True}],
                              "relies_on": ["/etc/sandbox-setup/git-protected.gitconfig"]},
             "sessions": {"running": [{"session": "r", "pid": 5151,
                                       "since": "2027-01-15T09:00:00+0000",
                                       "workspaces": ["/srv/app"]}],
                          "recent": [past]}}  # fmt: skip
    doc = {"schema": 1, "host": {"root": "/", "shim": {"path": "/usr/local/sbin/claude",
                                                      "installed": True}},
           "setups": [setup], "other_sessions": {"running": [], "recent": []},
           "problems": []}  # fmt: skip
    setup_text, sessions_text = (
        "\n".join(line.plain.rstrip() for line in render_lines(doc, 68, part))
        for part in ("setup", "sessions")
    )
    return setup_text, sessions_text


async def _on_sessions(pilot: Pilot[Any]) -> None:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, StatusScreen))
    pilot.app.screen.query_one(TabbedContent).active = "status-sessions"
    await pilot.pause()
    await pilot.pause()


def test_status_sessions_tab(snap_compare: Any) -> None:
    setup, sessions = _fixed_texts()
    app = ScreenHarness(lambda: StatusScreen(setup, sessions))
    assert snap_compare(app, run_before=_on_sessions, terminal_size=(80, 24))


def test_status_setup_tab_under_lang_c(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANG", "LC_ALL", "LC_CTYPE"):
        monkeypatch.setenv(name, "C")
    setup, sessions = _fixed_texts()

    async def settled(pilot: Pilot[Any]) -> None:
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, StatusScreen))
        await pilot.pause()

    app = ScreenHarness(lambda: StatusScreen(setup, sessions))
    assert snap_compare(app, run_before=settled, terminal_size=(80, 24))


async def test_undo_from_the_audit_view_previews_as_the_cli_then_undoes(
    tmp_path: Path, fake_audit_probes: None
) -> None:
    root = await run_mode(tmp_path / "root", Mode.USER)
    cli = run_cli("--undo", "--dry-run", "--root", str(root))
    assert cli.returncode == 0, cli.stderr
    config = Layout.for_root(root).real(Layout.for_root(root).launcher_config)
    assert config.exists()
    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(100, 30)) as pilot:
        audit = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: not audit.busy, tries=1500)
        await pilot.press("u")
        screen = await wait_for(pilot, UndoScreen)
        assert screen.preview == cli.stdout.splitlines()  # the same lines, the same code
        assert "Undo of apply" in screen.preview[0]
        assert config.exists()  # nothing changed by the preview
        await pilot.click("#undo")
        await wait_until(pilot, lambda: screen.ran, tries=1500)
        assert not config.exists()
        text = str(screen.query_one("#undo-text", Static).render())
        assert text.startswith("Undone."), text
        await pilot.press("escape")
        await wait_for(pilot, AuditScreen)
