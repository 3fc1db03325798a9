"""An absolute symlink inside ``--root`` means the target system's path: it is followed
inside the root, never onto the host (issue 26)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core_fixtures import CLAUDE_VERSION, CONFIG, SANDBOX, make_target_root, run_cli
from tests.faults.conftest import FaultRow
from tests.tools import require_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    return make_target_root(tmp_path / "root")


def test_an_absolute_claude_link_is_followed_inside_the_root(fault: FaultRow, root: Path) -> None:
    fault.expect(
        "root/usr/local/bin/claude -> /opt/claude/claude (only in the root)",
        "found and applied as the root's /opt/claude/claude",
    )
    assert not Path("/opt/claude/claude").exists(), "the host must not have it"
    (root / "opt/claude").mkdir(parents=True)
    (root / "usr/local/bin/claude").rename(root / "opt/claude/claude")
    (root / "usr/local/bin/claude").symlink_to("/opt/claude/claude")
    result = run_cli("--headless", *SANDBOX, "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 0, result.stderr
    config = (root / CONFIG / "launcher.toml").read_text()
    assert 'claude = "/usr/local/bin/claude"' in config
    assert f'claude_version = "{CLAUDE_VERSION}"' in config


def test_an_absolute_link_to_a_host_only_file_is_not_taken(fault: FaultRow, root: Path) -> None:
    fault.expect(
        "root/usr/local/bin/claude -> /bin/sh (on the host, not in the root)",
        "exit 2: no such file under the root; the host's /bin/sh is never judged",
    )
    assert Path("/bin/sh").exists() and not (root / "bin/sh").exists()
    (root / "usr/local/bin/claude").unlink()
    (root / "usr/local/bin/claude").symlink_to("/bin/sh")
    result = run_cli(
        "--headless", *SANDBOX, "--claude", "/usr/local/bin/claude", "--root", str(root)
    )
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2, result.stderr
    assert f"--claude /usr/local/bin/claude: no such file under {root}" in result.stderr
