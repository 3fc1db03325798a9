"""Review findings on the headless path, through the real CLI under a temp --root:

- a ``--claude`` binary another user owns is never run as root (not by the
  probes, not by the plan), even without ``--yes``, and the plan refuses it
  (exit 3): the launcher would refuse it anyway;
- deeply nested JSON (managed settings) or TOML (answers) is exit 2 naming the
  file, not a RecursionError traceback, and nothing is written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import host_passwd_digest, make_target_root, run_cli, system_state
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration
NOBODY = 65534
DEEP = 100_000


@pytest.fixture
def root() -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "setfacl", "setpriv", "bwrap"):
        require_tool(tool)
    before = host_passwd_digest()
    # nobody (the probe user) must reach the fake binary and its marker dir.
    base = Path(tempfile.mkdtemp(prefix="sandbox-setup-refusals-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        yield make_target_root(base / "root")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        assert host_passwd_digest() == before


def test_an_untrusted_claude_is_never_run_as_root(root: Path) -> None:
    ws = root / "srv/ws2"
    ws.mkdir(parents=True)
    marks = root.parent / "marks"
    marks.mkdir(mode=0o777)
    os.chmod(marks, 0o1777)
    claude = ws / "claude"
    claude.write_text(f'#!/bin/sh\nid -u >> {marks}/ran-as\necho "2.1.197 (Claude Code)"\n')
    os.chmod(claude, 0o755)
    os.chown(claude, NOBODY, NOBODY)
    os.chown(ws, NOBODY, NOBODY)
    before = system_state(root)
    for extra in ((), ("--yes",)):
        proc = run_cli("--headless", "--root", str(root), "--mode", "user", "--workspace",
                       "/srv/ws2", "--claude", "/srv/ws2/claude", *extra)  # fmt: skip
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert "can be changed by a user other than root" in proc.stderr
    ran = (marks / "ran-as").read_text().split() if (marks / "ran-as").exists() else []
    assert "0" not in ran, f"root ran a binary nobody owns (ran as {ran})"
    assert system_state(root) == before


def test_deeply_nested_settings_json_is_exit_2_naming_the_file(root: Path) -> None:
    managed = root / "etc/claude-code/managed-settings.json"
    managed.parent.mkdir(parents=True)
    managed.write_text('{"a":' + "[" * DEEP + "]" * DEEP + "}")
    before = system_state(root)
    proc = run_cli("--headless", "--root", str(root), "--dry-run", "--mode", "user",
                   "--workspace", "/srv/project")  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "managed-settings.json" in proc.stderr and "Traceback" not in proc.stderr
    assert system_state(root) == before


def test_deeply_nested_answers_toml_is_exit_2_naming_the_file(root: Path) -> None:
    answers = root.parent / "deep.toml"
    answers.write_text('mode = "user"\nworkspaces = ' + "[" * DEEP + "]" * DEEP + "\n")
    before = system_state(root)
    proc = run_cli("--headless", "--root", str(root), "--answers", str(answers), "--yes")
    assert proc.returncode == 2, proc.stderr
    assert str(answers) in proc.stderr and "Traceback" not in proc.stderr
    assert system_state(root) == before
