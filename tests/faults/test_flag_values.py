"""Every flag value is validated before anything runs (issue 26): an option-looking
value (``--FLAG=--``, ``--FLAG=-x``) is an input error naming the flag, numbers are
range-checked, and the lists have the maxima of :mod:`sandbox_setup.policy.limits`,
the same for the flags, an answers file and the launcher. Each refusal is exit 2 and
writes nothing under the root."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_setup.policy.limits import MAX_LOOPBACK_PORTS
from tests.core_fixtures import CONFIG, SANDBOX, make_target_root, run_cli, snapshot
from tests.faults.conftest import FaultRow
from tests.tools import require_root

VALUE_FLAGS = (
    "--root", "--workspace", "--allow-domain", "--pass-env", "--allow-loopback-port",
    "--agent-user", "--claude", "--network", "--timeout", "--as-user", "--answers", "--mode",
    "--settings-scope", "--inner-sandbox",
)  # fmt: skip


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    return make_target_root(tmp_path / "root")


def refused(result_stderr: str, returncode: int, *words: str) -> None:
    assert returncode == 2, result_stderr
    assert "Traceback" not in result_stderr and "internal error" not in result_stderr
    for word in words:
        assert word in result_stderr, result_stderr


@pytest.mark.parametrize("flag", VALUE_FLAGS)
@pytest.mark.parametrize("value", ["--", "-x"])
def test_an_option_looking_value_is_exit_2_naming_the_flag(
    fault: FaultRow, root: Path, flag: str, value: str
) -> None:
    fault.expect(f"{flag}={value}", "exit 2 naming the flag, nothing written")
    before = snapshot(root)
    argv = ["--headless", "--mode", "sandbox", "--workspace", "/srv/project", "--yes"]
    argv = [a for a in argv if not (flag == "--mode" and a in ("--mode", "sandbox"))]
    if flag != "--root":
        argv += ["--root", str(root)]
    result = run_cli(*argv, f"{flag}={value}")
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    # a choices flag (--network=-x) may be refused by argparse first: "invalid choice"
    refused(result.stderr, result.returncode, f"{flag} ")
    if value == "--":
        assert "looks like an option" in result.stderr
    assert snapshot(root) == before
    assert not (root / CONFIG).exists()


@pytest.mark.parametrize("value", ["2147484", "86401", "-1", "1e400"])
def test_a_timeout_out_of_range_is_exit_2(fault: FaultRow, root: Path, value: str) -> None:
    fault.expect(f"--timeout {value}", "exit 2 naming the range")
    for argv in (["--check"], ["--headless", *SANDBOX]):
        result = run_cli(*argv, "--timeout", value, "--root", str(root))
        fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
        refused(result.stderr, result.returncode, "--timeout", "at most 86400")
    result = run_cli("--check", f"--timeout={value}", "--root", str(root))
    refused(result.stderr, result.returncode, "--timeout")


def loopback_flags(count: int) -> list[str]:
    return [f"--allow-loopback-port={20000 + i}" for i in range(count)]


def test_one_loopback_port_over_the_maximum_is_exit_2(fault: FaultRow, root: Path) -> None:
    fault.expect(f"{MAX_LOOPBACK_PORTS + 1} --allow-loopback-port", "exit 2 naming the maximum")
    before = snapshot(root)
    flags = loopback_flags(MAX_LOOPBACK_PORTS + 1)
    result = run_cli("--headless", *SANDBOX, *flags, "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    refused(
        result.stderr, result.returncode, "--allow-loopback-port", f"at most {MAX_LOOPBACK_PORTS}"
    )
    assert snapshot(root) == before


def test_an_answers_file_over_the_maximum_is_exit_2_naming_the_key(
    fault: FaultRow, root: Path
) -> None:
    fault.expect(f"answers.toml with {MAX_LOOPBACK_PORTS + 1} loopback ports", "exit 2")
    answers = root.parent / "answers.toml"
    ports = ", ".join(str(20000 + i) for i in range(MAX_LOOPBACK_PORTS + 1))
    answers.write_text(
        f'schema = 1\nmode = "sandbox"\nworkspaces = ["/srv/project"]\nloopback_ports = [{ports}]\n'
    )
    answers.chmod(0o600)
    before = snapshot(root)
    result = run_cli("--headless", "--answers", str(answers), "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    refused(result.stderr, result.returncode, "loopback_ports", f"at most {MAX_LOOPBACK_PORTS}")
    assert snapshot(root) == before


def test_exactly_the_maximum_of_loopback_ports_is_accepted(root: Path) -> None:
    flags = loopback_flags(MAX_LOOPBACK_PORTS)
    result = run_cli("--headless", *SANDBOX, *flags, "--yes", "--root", str(root))
    assert result.returncode == 0, result.stderr
    config = (root / CONFIG / "launcher.toml").read_text()
    assert str(20000 + MAX_LOOPBACK_PORTS - 1) in config


@pytest.mark.parametrize(
    ("action", "foreign"),
    [
        (["--undo"], ["--mode", "user"]),
        (["--undo", "--all"], ["--workspace", "/srv/project"]),
        (["--audit"], ["--allow-domain", "example.com"]),
        (["--status"], ["--yes"]),
        (["--check"], ["--network", "none"]),
        (["--audit"], ["--dry-run"]),
    ],
)
def test_an_option_another_action_would_ignore_is_exit_2(
    fault: FaultRow, root: Path, action: list[str], foreign: list[str]
) -> None:
    """``--undo --mode user`` used to undo and ignore ``--mode``: the operator meant
    something the action does not do, so it is refused before anything runs."""
    fault.expect(" ".join(action + foreign), "exit 2 naming the option and the action")
    before = snapshot(root)
    result = run_cli(*action, *foreign, "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    refused(result.stderr, result.returncode, foreign[0], f"not an option of {action[0]}")
    assert snapshot(root) == before
