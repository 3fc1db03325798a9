"""The headless apply with socat gone: the inner sandbox is refused (exit 3, the
remedy on stderr, nothing written) unless the operator chooses ``--inner-sandbox off``.

socat disappears only inside a private mount namespace of the test's own
(``/dev/null`` bound over it), so the real CLI runs its real probes on a host
where ``claude.sandbox_deps`` really fails, and the host never changes.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.checks.claude import sandbox_binaries
from tests.core_fixtures import MANAGED, REPO, host_passwd_digest, make_target_root, snapshot
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "setfacl", "bwrap", "socat", "unshare"):
        require_tool(tool)
    before = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == before


def without_socat(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m sandbox_setup ARGS`` where socat is not there (a private mount namespace)."""
    socat = sandbox_binaries()["socat"]
    assert socat, "socat is required"
    cli = shlex.join([sys.executable, "-m", "sandbox_setup", *args])
    hide = f"mount --bind /dev/null {shlex.quote(socat)} && exec {cli}"
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", hide],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "mode", [["--mode", "user"], ["--mode", "sandbox", "--workspace", "/srv/project"]]
)
def test_missing_socat_refuses_the_inner_sandbox(root: Path, mode: list[str]) -> None:
    before = snapshot(root)
    for strength in ((), ("--inner-sandbox", "strong"), ("--inner-sandbox", "weak")):
        done = without_socat("--headless", "--root", str(root), "--yes", *mode, *strength)
        assert done.returncode == 3, done.stdout + done.stderr
        assert "claude.sandbox_deps is fail" in done.stderr, done.stderr
        assert "apt-get install -y socat" in done.stderr and "--inner-sandbox off" in done.stderr
        assert snapshot(root) == before, "a refused apply wrote something"


def test_inner_sandbox_off_is_the_way_through(root: Path) -> None:
    args = ("--headless", "--root", str(root), "--yes", "--mode", "user")
    done = without_socat(*args, "--inner-sandbox", "off")
    assert done.returncode == 0, done.stderr
    settings = json.loads((root / MANAGED).read_text())
    assert settings["sandbox"] == {"enabled": False}


def test_check_says_so_first(root: Path) -> None:
    done = without_socat("--check", "--json", "claude.sandbox_deps")
    assert done.returncode == 1, done.stderr
    (finding,) = json.loads(done.stdout)["checks"]
    assert finding["status"] == "fail" and finding["remedy"] == "apt-get install -y socat"
