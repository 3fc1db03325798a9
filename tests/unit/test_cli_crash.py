"""An unexpected exception is exit 70 with one line on stderr and the traceback in
the state directory's crash.log; a known error keeps its own exit code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sandbox_setup.commands.check as check_command
from sandbox_setup.base.errors import InputError
from sandbox_setup.cli import main
from tests.core_fixtures import STATE, make_target_root


def _broken(*_args: object) -> int:
    raise KeyError("nobody foresaw this")


def test_a_crash_is_exit_70_with_the_traceback_in_the_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_target_root(tmp_path / "root")
    monkeypatch.setattr(check_command, "run_check", _broken)
    assert main(["--check", "--root", str(root)]) == 70
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    log = root / STATE / "crash.log" if os.geteuid() == 0 else None
    if log is not None:
        assert f"The traceback is in {log}" in err
        text = log.read_text()
        assert "Traceback" in text and "KeyError: 'nobody foresaw this'" in text
        assert (log.stat().st_mode & 0o777) == 0o600


def test_a_crash_with_an_unusable_state_dir_is_one_line_naming_a_temp_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_target_root(tmp_path / "root")
    (root / "root/.local").mkdir(parents=True)
    (root / "root/.local/state").write_text("not a directory\n")  # the log cannot go there
    monkeypatch.setattr(check_command, "run_check", _broken)
    assert main(["--check", "--root", str(root)]) == 70
    err = capsys.readouterr().err
    # One line, not the traceback (issue 26): the traceback is in a private temp file.
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    log = Path(err.split("The traceback is in ", 1)[1].split(" (the state directory", 1)[0])
    try:
        assert "Not a directory" in err
        assert "KeyError: 'nobody foresaw this'" in log.read_text()
        assert (log.stat().st_mode & 0o777) == 0o600
    finally:
        log.unlink()


def test_a_known_error_keeps_its_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def bad_input(*_args: object) -> int:
        raise InputError("--thing: bad")

    monkeypatch.setattr(check_command, "run_check", bad_input)
    assert main(["--check", "--root", str(make_target_root(tmp_path / "root"))]) == 2
    assert capsys.readouterr().err == "sandbox-setup: --thing: bad\n"
