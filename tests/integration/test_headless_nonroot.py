"""A non-root operator (``nobody`` with a temp home): every path but user creation.

The operator's own account is the agent; settings default to the user scope;
files are owned by the operator; creating another user is refused (exit 3)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import make_target_root, snapshot
from tests.installed import installed_copy
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration
NOBODY = 65534


@pytest.fixture
def root() -> Iterator[Path]:
    require_root()
    require_tool("setpriv")
    # /tmp/pytest-of-root is 0700: nobody needs a tree it can reach.
    base = Path(tempfile.mkdtemp(prefix="sandbox-setup-nonroot-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        root = make_target_root(base / "root")
        passwd = root / "etc/passwd"
        passwd.write_text(passwd.read_text().replace("/nonexistent", "/home/nobody"))
        (root / "home/nobody").mkdir(mode=0o700)
        os.chown(root / "home/nobody", NOBODY, NOBODY)
        yield root
    finally:
        shutil.rmtree(base, ignore_errors=True)


def as_nobody(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(root / "home/nobody")
    return subprocess.run(
        ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
         *installed_copy().wizard("--headless", "--root", str(root), *args)],
        cwd="/", env=env, capture_output=True, text=True, check=False, timeout=240,
    )  # fmt: skip


def test_non_root_operator_is_its_own_agent(root: Path) -> None:
    proc = as_nobody(root, "--yes", "--mode", "user", "--agent-user", "nobody")
    assert proc.returncode == 0, proc.stderr
    home = root / "home/nobody"
    settings = home / ".claude/settings.json"
    assert (settings.stat().st_uid, settings.stat().st_gid) == (NOBODY, NOBODY)
    assert json.loads(settings.read_text())["permissions"]["deny"]
    config = home / ".config/sandbox-setup/launcher.toml"
    assert config.stat().st_uid == NOBODY and 'user = "nobody"' in config.read_text()
    assert "useradd" not in proc.stdout + proc.stderr
    assert not (root / "etc/claude-code").exists()
    again = as_nobody(root, "--yes", "--mode", "user", "--agent-user", "nobody")
    assert again.returncode == 0 and "No change" in again.stdout


def test_non_root_operator_cannot_create_the_agent(root: Path) -> None:
    before = snapshot(root)
    proc = as_nobody(root, "--yes", "--mode", "user")
    assert proc.returncode == 3, proc.stderr
    assert "creating users needs root" in proc.stderr
    assert snapshot(root) == before


@pytest.mark.parametrize(
    "args",
    [
        ("--headless", "--yes"),
        ("--headless", "--yes", "--mode", "user", "--agent-user", "nobody"),
        ("--audit",),
    ],
    ids=["saved-setup", "mode-user", "audit"],
)
def test_a_config_directory_at_mode_0000_is_exit_2_naming_it(
    root: Path, args: tuple[str, ...]
) -> None:
    """The operator's own config directory at 0000: exit 2, one line naming it and the
    fix (docs/inputs-and-exit-codes.md), never an internal error (exit 70)."""
    config = root / "home/nobody/.config/sandbox-setup"
    config.mkdir(parents=True)
    for path in (config.parent, config):
        os.chown(path, NOBODY, NOBODY)
    config.chmod(0)
    before = snapshot(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(root / "home/nobody")
    proc = subprocess.run(
        ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
         *installed_copy().wizard(*args, "--root", str(root))],
        cwd="/", env=env, capture_output=True, text=True, check=False, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "internal error" not in proc.stderr, proc.stderr
    assert str(config) in proc.stderr and "chmod u+" in proc.stderr, proc.stderr
    assert snapshot(root) == before
