"""The probe runner: clean environment, missing programs, timeouts, switching user."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.checks.probe import ProbeResult, run_probe


def test_missing_program_is_not_found() -> None:
    result = run_probe(["sandbox-setup-no-such-tool", "x"], timeout=5)
    assert result.not_found and not result.ok
    assert "not found" in result.describe()


def test_environment_is_clean_and_english(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")
    result = run_probe(["sh", "-c", 'echo "[$IS_SANDBOX][$LC_ALL][$(pwd)]"'], timeout=5)
    assert result.ok
    assert result.stdout.strip() == "[][C][/]"


def test_exit_status_and_stderr_are_kept() -> None:
    result = run_probe(["sh", "-c", "echo one >&2; echo 'two: failed' >&2; exit 3"], timeout=5)
    assert result.returncode == 3
    assert result.last_error == "two: failed"
    assert "(exit 3)" in result.describe()


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    result = run_probe(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], timeout=0.5)
    assert result.timed_out and result.returncode is None
    pid = int(pidfile.read_text())
    for _ in range(50):  # the kill is asynchronous; wait for the reaper, not for speed
        if _gone(pid):
            break
        time.sleep(0.1)
    assert _gone(pid)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching user needs root")
def test_runs_as_the_given_account() -> None:
    nobody = lookup_user("nobody")
    assert nobody is not None
    result = run_probe(["id", "-u"], timeout=5, account=nobody)
    assert result.stdout.strip() == str(nobody.uid)
    assert run_probe(["id", "-u"], timeout=5).stdout.strip() == "0"


def test_result_ok_only_on_zero() -> None:
    assert ProbeResult(("x",), 0).ok
    assert not ProbeResult(("x",), 1).ok
    assert not ProbeResult(("x",), None, timed_out=True).ok
