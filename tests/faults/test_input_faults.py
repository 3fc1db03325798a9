"""Inputs that used to crash (a traceback, exit 1) or were taken silently (issue 15,
items 3, 4, 5, 13 and 15): each is now an input error naming what was wrong
(exit 2), or a refusal, and nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.core_fixtures import CONFIG, REPO, SANDBOX, STATE, make_target_root, snapshot
from tests.faults.conftest import FaultRow
from tests.tools import require_root

LONG = "/" + "a" * 10_000


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox_setup", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    return make_target_root(tmp_path / "root")


def _no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--headless", *SANDBOX, "--root", ""], "--root '': empty"),
        (["--headless", *SANDBOX, "--root", LONG], "a path has at most 4095"),
        (["--undo", "--root", LONG], "a path has at most 4095"),
        (["--headless", "--mode", "unsafe", "--accept-unsafe-root", "--claude", LONG], "4095"),
        (["--check", "--root", "/" + "b" * 300], "a file name has at most 255"),
        (["--check", "--timeout", "nan"], "finite number"),
        (["--check", "--timeout", "inf"], "finite number"),
        (["--check", "--timeout", "0"], "above 0"),
        (["--headless", "--mod", "sandbox"], "unrecognized arguments: --mod"),
    ],
)
def test_bad_flags_are_exit_2_naming_the_value(
    fault: FaultRow, argv: list[str], message: str
) -> None:
    fault.expect(f"command line {' '.join(a[:20] for a in argv)[:60]}", "exit 2 naming it")
    result = cli(*argv)
    fault.saw(f"exit {result.returncode}: {result.stderr.strip().splitlines()[-1][:120]}")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    _no_traceback(result)


def test_accept_unsafe_root_outside_unsafe_mode_is_refused(fault: FaultRow, root: Path) -> None:
    fault.expect("--accept-unsafe-root with --mode sandbox", "exit 2, nothing written")
    before = snapshot(root)
    result = cli("--headless", *SANDBOX, "--accept-unsafe-root", "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[:120]}")
    assert result.returncode == 2 and "only applies to --mode unsafe" in result.stderr
    assert snapshot(root) == before


def test_a_workspace_holding_the_claude_binary_is_refused(fault: FaultRow, root: Path) -> None:
    fault.expect(
        "--workspace /opt/claude-app holding the Claude binary",
        "exit 2 naming the binary; no ACL given, nothing written",
    )
    app = root / "opt/claude-app"
    (app / "bin").mkdir(parents=True)
    binary = app / "bin/claude.exe"
    binary.write_bytes((root / "usr/local/bin/claude").read_bytes())
    binary.chmod(0o755)
    before = snapshot(root)
    result = cli(
        "--headless", "--mode", "user", "--workspace", "/opt/claude-app",
        "--claude", "/opt/claude-app/bin/claude.exe", "--yes", "--root", str(root),
    )  # fmt: skip
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[:160]}")
    assert result.returncode == 2, result.stderr
    assert "contains the Claude binary" in result.stderr and "claude.exe" in result.stderr
    assert snapshot(root) == before


def test_a_deeply_nested_launcher_toml_is_an_error_naming_it(fault: FaultRow, root: Path) -> None:
    fault.expect("existing launcher.toml nested 100,000 deep", "exit 2 naming the file")
    config = root / CONFIG / "launcher.toml"
    config.parent.mkdir(parents=True)
    config.write_text("schema = 1\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    before = snapshot(root)
    result = cli("--headless", *SANDBOX, "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-160:]}")
    assert result.returncode == 2, result.stderr
    assert "launcher.toml" in result.stderr and "nested too deeply" in result.stderr
    assert snapshot(root) == before
    _no_traceback(result)


def test_a_read_only_state_directory_is_an_error_naming_it(fault: FaultRow, root: Path) -> None:
    fault.expect("read-only state directory (apply.lock cannot be opened)", "exit 2 naming it")
    state = root / STATE
    state.mkdir(parents=True)
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f'mount --bind "{state}" "{state}" && mount -o remount,ro,bind "{state}" && '
         f'exec "$@"', "sh", sys.executable, "-m", "sandbox_setup", "--headless", *SANDBOX, "--yes",
         "--root", str(root)],
        cwd=REPO, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    fault.saw(f"exit {done.returncode}: {done.stderr.strip()[-160:]}")
    assert done.returncode == 2, done.stderr
    assert "apply.lock" in done.stderr and "Read-only file system" in done.stderr
    _no_traceback(done)


def test_errors_name_the_answers_file_not_answers(fault: FaultRow, root: Path) -> None:
    fault.expect("a bad value in --answers FILE", "the message names FILE")
    answers = root.parent / "my-answers.toml"
    answers.write_text('schema = 1\nmode = "user"\nworkspaces = ["/srv/nowhere"]\n')
    result = cli("--headless", "--answers", str(answers), "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[:160]}")
    assert result.returncode == 2
    assert f"{answers}: workspace /srv/nowhere does not exist" in result.stderr
    assert "answers: " not in result.stderr.replace(f"{answers}: ", "")


def test_a_duplicate_workspace_is_bound_once(root: Path) -> None:
    result = cli("--headless", *SANDBOX, "--workspace", "/srv/project", "--root", str(root))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("read and write /srv/project") == 1, result.stdout
