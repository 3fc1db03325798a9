"""The launcher's command line, its light import, and the refusal/exit-code mapping."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sandbox_setup.launcher.main as launcher
from sandbox_setup.base.errors import InputError
from sandbox_setup.launcher.main import Options, main, parse_args
from tests.tools import REPO

CFG = Path("/c.toml")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], Options(False, None, ())),
        (["--dry-run"], Options(True, None, ())),
        (["--config", "/c.toml", "--", "--print", "ok"], Options(False, CFG, ("--print", "ok"))),
        (["--config=/c.toml", "--dry-run", "-p", "hi"], Options(True, CFG, ("-p", "hi"))),
        # Everything after the first argument that is not ours belongs to Claude.
        (["--print", "--dry-run"], Options(False, None, ("--print", "--dry-run"))),
        (["--", "--dry-run"], Options(False, None, ("--dry-run",))),
    ],
)  # fmt: skip
def test_parse_args(argv: list[str], expected: Options) -> None:
    assert parse_args(argv) == expected


def test_help() -> None:
    assert parse_args(["--help"]) is None
    assert main(["-h"]) == 0


@pytest.mark.parametrize("argv", [["--config"], ["--config="]])
def test_config_needs_a_path(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InputError):
        parse_args(argv)
    assert main(argv) == 2
    assert "--config needs a path" in capsys.readouterr().err


def test_missing_config_is_a_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "absent.toml"), "--dry-run"]) == 3
    err = capsys.readouterr().err
    assert "refused" in err and "absent.toml" in err and "sandbox-setup" in err


def test_invalid_config_is_a_refusal_not_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp_path.chmod(0o755)
    config = tmp_path / "launcher.toml"
    config.write_text('schema = 1\nmode = "yolo"\nclaude = "/bin/true"\n')
    config.chmod(0o644)
    assert main(["--config", str(config), "--dry-run"]) == 3
    assert "'yolo'" in capsys.readouterr().err


def test_importing_the_launcher_loads_no_textual_nor_tomlkit() -> None:
    code = (
        "import sys, sandbox_setup.launcher.main, sandbox_setup.launcher.session.supervise;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'tomlkit')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# What a sandbox on the host's network never runs: the egress proxy's session (the proxy,
# its wire, the namespace's sockets), user mode's Landlock gate and walls, and what only
# an error, --run or a session's end needs; Boundary.prepare_end imports the last two
# while the agent runs.
NOT_FOR_A_HOST_SANDBOX = (
    "sandbox_setup.launcher.egress.session",
    "sandbox_setup.launcher.egress.proxy",
    "sandbox_setup.launcher.egress.wire",
    "sandbox_setup.launcher.egress.netns",
    "sandbox_setup.launcher.egress.server",
    "sandbox_setup.launcher.user.landlock_gate",
    "sandbox_setup.policy.landlock",
    "sandbox_setup.base.crashlog",
    "sandbox_setup.policy.git_review",
    "sandbox_setup.boundary.session_history",
    "sandbox_setup.boundary.claude_mountpoints",
)
# Imported by the launch once the session's cgroup is being joined (a kernel wait in a
# thread, EarlySessionCgroup), so that their import passes within it.
AFTER_THE_CGROUP_STARTS = (
    "sandbox_setup.boundary.session",
    "sandbox_setup.launcher.session.runner",
)


def _loaded_after(code: str, names: tuple[str, ...]) -> list[str]:
    probe = f"{code}; import sys; print(' '.join(n for n in {names!r} if n in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    return result.stdout.split()


def test_a_host_network_sandbox_imports_only_what_it_runs() -> None:
    """What a launch imports is its mode's: the launcher's entry loads neither the
    boundary nor the session's runner (a session imports them after its cgroup started
    joining), and those two load no egress proxy and nothing of the session's end."""
    main_only = "import sandbox_setup.launcher.main"
    assert _loaded_after(main_only, AFTER_THE_CGROUP_STARTS) == []
    session = (
        "import sandbox_setup.launcher.main, sandbox_setup.boundary.session, "
        "sandbox_setup.launcher.session.runner"
    )
    assert _loaded_after(session, NOT_FOR_A_HOST_SANDBOX) == []
    # ... and they are there when the session needs them (the names are real modules).
    ended = (
        f"{session}; import sandbox_setup.launcher.egress.session, "
        "sandbox_setup.launcher.user.landlock_gate, sandbox_setup.policy.landlock; "
        "from sandbox_setup.boundary.session import Boundary; Boundary.prepare_end()"
    )
    elsewhere = {  # the proxy process's, a crash's, --run's
        "sandbox_setup.launcher.egress.server",
        "sandbox_setup.base.crashlog",
        "sandbox_setup.policy.git_review",
    }
    assert (
        set(_loaded_after(ended, NOT_FOR_A_HOST_SANDBOX)) == set(NOT_FOR_A_HOST_SANDBOX) - elsewhere
    )


def test_a_deeply_nested_config_is_a_refusal_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp_path.chmod(0o755)
    config = tmp_path / "launcher.toml"
    config.write_text("schema = 1\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    config.chmod(0o644)
    assert main(["--config", str(config), "--dry-run"]) == 3
    err = capsys.readouterr().err
    assert f"sandbox-launch: refused: {config}" in err and "nested too deeply" in err


def test_an_unexpected_error_fails_closed_with_exit_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def broken(*_args: object) -> int:
        raise ValueError("something nobody foresaw")

    monkeypatch.setattr(launcher, "run", broken)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert main(["--dry-run"]) == 70
    err = capsys.readouterr().err
    assert "Claude Code was not started" in err
    assert "internal error (ValueError: something nobody foresaw)" in err
    assert "Traceback" not in err  # one line; the traceback is in the log
    log = tmp_path / "state/sandbox-setup/crash.log"
    assert "Traceback" in log.read_text() and "something nobody foresaw" in log.read_text()


def test_version_names_itself_and_the_recorded_claude_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sandbox_setup.base.version import package_version

    tmp_path.chmod(0o755)
    marker = tmp_path / "claude-ran"
    claude = tmp_path / "claude"
    claude.write_text(f"#!/bin/sh\ntouch {marker}\necho '9.9.9 (Claude Code)'\n")
    claude.chmod(0o755)
    config = tmp_path / "launcher.toml"
    config.write_text(
        f'schema = 1\nmode = "unsafe"\nclaude = "{claude}"\nclaude_version = "2.1.332"\n'
        '[agent]\nuser = "root"\nhome = "/root"\n'
        '[unsafe]\naccepted_by = "root (uid 0)"\naccepted_at = "2026-11-30T04:00:00+00:00"\n'
        'statement = "I accept"\n'
    )
    config.chmod(0o644)
    assert parse_args(["--version"]) == Options(False, None, (), version=True)
    assert main(["--config", str(config), "--version"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"sandbox-launch {package_version()}"
    assert "Claude Code: 2.1.332 (recorded at apply" in out and str(claude) in out
    assert not marker.exists()  # neither Claude nor `claude --version` ran


def test_version_without_a_config_still_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(tmp_path / "absent.toml"), "--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sandbox-launch ") and "Claude Code: unknown" in out
    assert "absent.toml" in out
