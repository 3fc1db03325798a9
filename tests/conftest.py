"""Suite-wide fixtures."""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.hermetic import HOST_RECORD_DIR, enter_private_view

# The real state directory of the user running the suite (root in CI): what a test
# that forgot XDG_STATE_HOME would change (session snapshots, quarantine, crash.log).
# (tests/integration/test_host_view.py points a nested run of the suite elsewhere.)
HOST_STATE = Path(
    os.environ.get("SANDBOX_SETUP_TEST_HOST_STATE")
    or Path(pwd.getpwuid(os.getuid()).pw_dir) / ".local/state/sandbox-setup"
)
# And its config directory (launcher.toml, answers.toml): what a live --check reads.
HOST_CONFIG = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".config/sandbox-setup"
# As root, the suite runs in a mount namespace of its own where the host's Claude
# settings and HOST_CONFIG are hidden and HOST_STATE is read-only (tests/hermetic.py).
HOST_VIEW = enter_private_view(HOST_STATE, HOST_CONFIG)


def _state_listing() -> dict[str, int]:
    found: dict[str, int] = {}
    for path in sorted(HOST_STATE.rglob("*")) if HOST_STATE.is_dir() else []:
        try:
            found[str(path)] = path.lstat().st_mtime_ns
        except OSError:
            continue
    return found


_BEFORE: dict[str, int] = {}
_STATE_HOME = tempfile.mkdtemp(prefix="sandbox-setup-test-state-")
atexit.register(shutil.rmtree, _STATE_HOME, True)
_popen_init = subprocess.Popen.__init__


def _popen_with_state_home(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
    """sandbox-setup or sandbox-launch, given an environment without XDG_STATE_HOME
    or HOME, would keep its state in its account's real home (root's ~/.local/state:
    session snapshots, the quarantine, crash.log): give it the suite's own instead.
    Explicit values (a test's temp HOME or state directory) are left as they are; a
    launch hidden in a shell string is the test's to point elsewhere."""
    env = kwargs.get("env")
    words = [] if isinstance(args, (str, bytes)) else [str(a) for a in args]
    ours = any(
        w in ("sandbox_setup", "sandbox_setup.launcher")
        or w.endswith(("/sandbox-launch", "/sandbox-setup", "_with_seams.py"))
        for w in words
    )
    if ours and env is not None and "XDG_STATE_HOME" not in env and "HOME" not in env:
        kwargs["env"] = {**env, "XDG_STATE_HOME": _STATE_HOME}
    _popen_init(self, args, *rest, **kwargs)


subprocess.Popen.__init__ = _popen_with_state_home  # type: ignore[method-assign]


def pytest_sessionstart(session: pytest.Session) -> None:
    _BEFORE.update(_state_listing())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Tests never change the host: the host's sandbox-setup state is as it was.

    Where it is read-only to the suite, nothing of the suite could have changed it, and
    what changed it (a session on the host) is none of the suite's business."""
    if HOST_VIEW.state_read_only:
        return
    after = _state_listing()
    if after != _BEFORE:
        changed = sorted(set(after.items()) ^ set(_BEFORE.items()))
        print(f"\nERROR: the suite changed the host's state directory {HOST_STATE}:")
        for path, _ in changed[:20]:
            print(f"  {path}")
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Which Claude Code each e2e test ran against (tests/e2e/conftest.py), so a CI log
    shows every test's version, passed or not, and how many ran on each."""
    seen: dict[str, tuple[str, str]] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            release = dict(getattr(report, "user_properties", ())).get("claude_code")
            if release is not None and report.nodeid not in seen:
                seen[report.nodeid] = (release, outcome.upper())
    if not seen:
        return
    terminalreporter.section("Claude Code per e2e test")
    for nodeid, (release, outcome) in sorted(seen.items()):
        terminalreporter.write_line(f"{outcome:8} Claude Code {release:16} {nodeid}")
    totals: dict[str, int] = {}
    for release, outcome in seen.values():
        key = f"{release} {outcome.lower()}"
        totals[key] = totals.get(key, 0) + 1
    terminalreporter.write_line(
        "; ".join(f"Claude Code {key}: {count}" for key, count in sorted(totals.items()))
    )


@pytest.fixture(autouse=True, scope="module")
def _fresh_workspace_trust() -> None:
    """Each test module starts with no workspace trusted state and no session recorded:
    the host-wide record (/var/lib/sandbox-setup, the suite's own tmpfs) would otherwise
    carry one module's sessions, marks and untrusted workspaces into the next (a test
    module's own fixtures and tests may share theirs). Never on a host view that is not
    private: that record would be the host's."""
    if not HOST_VIEW.record_private or not HOST_RECORD_DIR.is_dir():
        return
    for entry in os.scandir(HOST_RECORD_DIR):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


@pytest.fixture(autouse=True)
def _no_host_config_leak(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Point platformdirs away from the real ~/.config and ~/.local/state.

    Tests write under temp roots (``--root``); this keeps one that forgets from
    touching the operator's real files.
    """
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
