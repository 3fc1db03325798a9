"""The suite passes on a host where sandbox-setup is set up and in use (tests/hermetic.py).

Each test runs a small part of the suite in a nested pytest on a made-up host: in a
private mount namespace whose /etc has a ``managed-settings.json`` that turns Claude's
sandbox off, or with a state directory that a stand-in for a host session writes to
throughout the run. With the suite's private view the part passes; with
``SANDBOX_SETUP_TEST_HOST_VIEW=shared`` (the suite as it was) the same run fails, so
the host really was in the way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.tools import REPO, require_root, require_tool

# A sandboxed Bash command, checked from the inside, on the newest Claude Code.
SANDBOXED_TURN = "tests/e2e/test_fake_api.py::" + (
    "test_sandboxed_commands_run_without_a_prompt_when_auto_allow_is_written"
)


def nested_pytest(
    *args: str, env: dict[str, str], prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    argv = [*prefix, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def host_with_managed_settings(base: Path, settings: dict[str, object]) -> tuple[str, ...]:
    """An argv prefix: what follows runs where the host's /etc/claude-code holds
    ``settings`` (an overlay in a private mount namespace; the real /etc never changes)."""
    upper, work = base / "upper", base / "work"
    (upper / "claude-code").mkdir(parents=True)
    work.mkdir()
    for directory in (base, upper, upper / "claude-code"):
        directory.chmod(0o755)
    managed = upper / "claude-code" / "managed-settings.json"
    managed.write_text(json.dumps(settings))
    managed.chmod(0o644)
    mount = f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc"
    unshare = require_tool("unshare")
    return (
        unshare,
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        f'{mount} && exec "$@"',
        "sh",
    )


@pytest.mark.parametrize("view", ["private", "shared"])
def test_host_managed_settings_that_turn_the_sandbox_off_reach_no_test(
    view: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    require_root()
    base = tmp_path_factory.mktemp("host-etc")
    prefix = host_with_managed_settings(base, {"sandbox": {"enabled": False}})
    env = {**os.environ, "SANDBOX_SETUP_TEST_HOST_VIEW": view}
    run = nested_pytest(SANDBOXED_TURN, "-k", "latest", env=env, prefix=prefix)
    if view == "private":
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        assert "1 passed" in run.stdout, run.stdout[-2000:]
    else:
        # The host's settings win over the test's: the command ran unsandboxed.
        assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
        assert "1 failed" in run.stdout, run.stdout[-2000:]


@pytest.mark.parametrize("view", ["private", "shared"])
def test_a_session_writing_the_host_state_during_the_run_fails_nothing(
    view: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    require_root()
    state = tmp_path_factory.mktemp("host-state")
    (state / "journal.jsonl").write_text("")
    stop = threading.Event()

    def host_session() -> None:  # what a sandbox-launch session on the host does meanwhile
        count = 0
        while not stop.wait(0.05):
            count += 1
            (state / f"session-{count}.json").write_text("{}")

    writer = threading.Thread(target=host_session, daemon=True)
    writer.start()
    try:
        env = {
            **os.environ,
            "SANDBOX_SETUP_TEST_HOST_STATE": str(state),
            "SANDBOX_SETUP_TEST_HOST_VIEW": view,
        }
        run = nested_pytest("tests/unit/test_layers.py", env=env)
    finally:
        stop.set()
        writer.join()
    assert len(list(state.iterdir())) > 2, "the stand-in session wrote nothing"
    if view == "private":
        assert run.returncode == 0, run.stdout[-3000:]
    else:
        assert run.returncode == 1, run.stdout[-3000:]
        assert "changed the host's state directory" in run.stdout, run.stdout[-3000:]


def test_the_host_wide_record_of_the_suites_sessions_is_the_suites_own() -> None:
    """Every launch as root keeps the workspaces' trusted state in
    /var/lib/sandbox-setup, whatever its XDG_STATE_HOME: in the suite's view that is a
    tmpfs of its own (or /var/lib is), so no test writes the host's record."""
    require_root()
    if os.environ.get("SANDBOX_SETUP_TEST_HOST_VIEW") == "shared":
        pytest.skip("the suite runs in the host's view (SANDBOX_SETUP_TEST_HOST_VIEW=shared)")
    mounts = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        mounts[fields[4]] = fields[fields.index("-") + 1]
    assert "tmpfs" in (mounts.get("/var/lib/sandbox-setup"), mounts.get("/var/lib")), mounts
