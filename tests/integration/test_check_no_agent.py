"""No probe starts Claude with a session (issue 26, invariant 13), through the real CLI.

A fake ``claude`` first on PATH records every invocation (argv, uid, IS_SANDBOX) and
answers ``--version`` like Claude Code. ``--check`` (text, ``--json``, ``--as-user
root``), the headless plan, ``--dry-run`` and the apply, all under ``--root``, may
ask it ``--version`` and nothing else: never ``--dangerously-skip-permissions`` or
``--print``, never anything else as uid 0. A file the claude shim's marker names
first on PATH is never executed at all. And root's environment exporting
``IS_SANDBOX=yes`` makes ``claude.root_guard`` warn with the remedy (issue 28).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base.claude_shim import SHIM_MARKER, is_claude_shim
from tests.core_fixtures import REPO, make_target_root
from tests.tools import require_root

pytestmark = pytest.mark.integration

VERSION = "2.1.332 (Claude Code)"
# Records each run as one file in a sticky, world-writable log directory, so a
# run as any probe user is recorded; answers --version like Claude Code.
HEADER = "#!/usr/bin/python3 -IS\n"
RECORDER = """import json, os, sys, tempfile
entry = {{"who": {who!r}, "argv": sys.argv[1:], "uid": os.getuid(),
          "is_sandbox": os.environ.get("IS_SANDBOX")}}
fd, _ = tempfile.mkstemp(dir={log!r}, prefix="run-")
os.write(fd, json.dumps(entry).encode())
os.close(fd)
if sys.argv[1:] == ["--version"]:
    print({version!r})
    sys.exit(0)
print("an agent session would start here")
sys.exit(0)
"""
# What is_claude_shim recognises: the marker near the top (then it records like the rest).
SHIM_HEAD = "# {marker}: a stand-in for the installed shim\n"
CLAIMS = ("IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP")
UNSAFE = ("--mode", "unsafe", "--accept-unsafe-root", "--workspace", "/srv/project")


@dataclass(frozen=True)
class FakeClaude:
    base: Path
    bin: Path  # the recording claude's directory (root-owned, 0755: root may run it)
    log: Path  # one file per invocation

    def runs(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted(self.log.iterdir())]

    def env(self, *first: Path, **extra: str) -> dict[str, str]:
        """The test's environment with this claude first on PATH (after ``first``), and
        no sandbox claim of the caller's own unless ``extra`` sets one."""
        env = {k: v for k, v in os.environ.items() if k not in CLAIMS}
        dirs = [*(str(d) for d in first), str(self.bin), os.environ.get("PATH", "")]
        return {**env, "PATH": ":".join(dirs), **extra}


def recorder(who: str, log: Path, head: str = "") -> str:
    return HEADER + head + RECORDER.format(who=who, log=str(log), version=VERSION)


def write_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def fake() -> Iterator[FakeClaude]:
    require_root()
    # Not under pytest's 0700 tmp: the probe users must reach the binary and the log.
    base = Path(tempfile.mkdtemp(prefix="sandbox-setup-no-agent-", dir="/tmp"))
    base.chmod(0o755)
    log = base / "log"
    log.mkdir()
    log.chmod(0o1777)
    bin_dir = base / "bin"
    write_executable(bin_dir / "claude", recorder("claude", log))
    try:
        yield FakeClaude(base, bin_dir, log)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def cli(
    fake: FakeClaude, *args: str, first: tuple[Path, ...] = (), **extra: str
) -> subprocess.CompletedProcess[str]:
    """``python -m sandbox_setup ARGS`` as the operator runs it (as run_cli does), with
    exactly :meth:`FakeClaude.env` as its environment."""
    return subprocess.run(
        [sys.executable, "-m", "sandbox_setup", *args],
        cwd=REPO,
        env=fake.env(*first, **extra),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def assert_no_agent(fake: FakeClaude) -> None:
    for run in fake.runs():
        assert "--dangerously-skip-permissions" not in run["argv"], run
        assert "--print" not in run["argv"] and "-p" not in run["argv"], run
        assert run["uid"] != 0 or run["argv"] == ["--version"], run
        assert run["who"] != "shim", run


def findings(stdout: str) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in json.loads(stdout)["checks"]}


def test_check_text_and_json_start_no_agent(fake: FakeClaude) -> None:
    text = cli(fake, "--check")
    assert text.returncode in (0, 1), text.stderr
    as_json = cli(fake, "--check", "--json")
    assert as_json.returncode in (0, 1), as_json.stderr
    checks = findings(as_json.stdout)
    assert_no_agent(fake)
    assert str(fake.bin / "claude") in checks["claude.installed"]["summary"], checks
    guard = checks["claude.root_guard"]
    assert "judged from" in guard["detail"] and "no probe starts Claude" in guard["detail"]


def test_check_as_root_asks_only_the_version(fake: FakeClaude) -> None:
    result = cli(fake, "--check", "--json", "--as-user", "root")
    assert result.returncode in (0, 1), result.stderr
    guard = findings(result.stdout)["claude.root_guard"]
    assert_no_agent(fake)
    assert [run["argv"] for run in fake.runs()], "the version was never asked"
    # The recorder carries no guard message: as root nothing would stop it.
    assert guard["status"] == "warn" and "cause: root-guard-absent" in guard["detail"], guard
    assert "2.1.332" in guard["detail"]


@pytest.mark.parametrize(
    "extra",
    [(), ("--dry-run",), ("--yes",)],
    ids=["plan-only", "dry-run", "apply"],
)
def test_headless_under_root_starts_no_agent(fake: FakeClaude, extra: tuple[str, ...]) -> None:
    root = Path(tempfile.mkdtemp(prefix="sandbox-setup-no-agent-root-", dir="/tmp"))
    try:
        make_target_root(root)
        # The target's own claude records too: the plan may only ask its version.
        write_executable(
            root / "usr/local/bin/claude",
            recorder("target", fake.log),
        )
        result = cli(fake, "--headless", "--root", str(root), *UNSAFE, *extra)
        assert result.returncode == 0, result.stderr
        assert_no_agent(fake)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_headless_sandbox_plan_starts_no_agent(fake: FakeClaude) -> None:
    root = Path(tempfile.mkdtemp(prefix="sandbox-setup-no-agent-root-", dir="/tmp"))
    try:
        make_target_root(root)
        result = cli(
            fake, "--headless", "--root", str(root), "--mode", "sandbox",
            "--workspace", "/srv/project",
        )  # fmt: skip
        assert result.returncode in (0, 3), result.stderr
        assert_no_agent(fake)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_shim_first_on_path_is_never_executed(fake: FakeClaude) -> None:
    shim_dir = fake.base / "sbin"
    shim = write_executable(
        shim_dir / "claude",
        recorder("shim", fake.log, SHIM_HEAD.format(marker=SHIM_MARKER.decode())),
    )
    assert is_claude_shim(shim.read_bytes())
    for args in (("--check", "--json"), ("--check", "--json", "--as-user", "root")):
        result = cli(fake, *args, first=(shim_dir,))
        assert result.returncode in (0, 1), result.stderr
        checks = findings(result.stdout)
        assert str(fake.bin / "claude") in checks["claude.installed"]["summary"], checks
        assert f"claude shim at {shim}" in checks["claude.root_guard"]["detail"]
    given = cli(fake, "--check", "--json", "--claude", str(shim), "claude.installed",
                "claude.root_guard", first=(shim_dir,))  # fmt: skip
    checks = findings(given.stdout)
    for check in checks.values():
        assert check["status"] == "warn" and "cause: claude-shim-given" in check["detail"], check
    assert [run for run in fake.runs() if run["who"] == "shim"] == []
    assert_no_agent(fake)


@pytest.mark.parametrize("value", ["1", "yes"])
def test_is_sandbox_in_roots_environment_is_a_warning_with_the_remedy(
    fake: FakeClaude, value: str
) -> None:
    result = cli(fake, "--check", "--json", "claude.root_guard", IS_SANDBOX=value)
    guard = findings(result.stdout)["claude.root_guard"]
    assert guard["status"] == "warn", guard
    assert f"IS_SANDBOX={value}" in guard["summary"]
    assert "cause: root-guard-skipped-by-environment" in guard["detail"]
    assert "unset IS_SANDBOX" in guard["remedy"] and "sandbox-launch" in guard["remedy"]
    bubblewrap = cli(fake, "--check", "--json", "claude.root_guard", CLAUDE_CODE_BUBBLEWRAP="1")
    assert findings(bubblewrap.stdout)["claude.root_guard"]["status"] == "warn"
    kept = cli(fake, "--check", "--json", "claude.root_guard", IS_SANDBOX="0")
    assert "skipped-by-environment" not in findings(kept.stdout)["claude.root_guard"]["detail"]
    assert_no_agent(fake)
