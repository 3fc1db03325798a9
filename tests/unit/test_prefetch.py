"""sandbox_setup.checks.prefetch: an experiment started early is adopted by exactly the probe that
asks for it (same command, user, environment), and nothing else is left running."""

from __future__ import annotations

import os
import time

import sandbox_setup.checks.prefetch as prefetch
from sandbox_setup.checks.probe import probe_env, run_probe


def test_a_started_experiment_is_adopted_by_its_probe(tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "ran"
    argv = ("sh", "-c", f'echo started >> "{marker}"; echo out')
    assert prefetch.start([argv]) == 1
    result = run_probe(argv, timeout=10)
    assert result.ok and result.stdout == "out\n"
    assert marker.read_text() == "started\n"  # it ran once: adopted, not started again
    assert prefetch.take(list(argv), probe_env(None)) is None


def test_another_environment_is_not_adopted_and_the_leftover_is_killed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pidfile = tmp_path / "pid"
    argv = ("sh", "-c", f'echo $$ > "{pidfile}"; exec sleep 60')
    assert prefetch.start([argv], extra={"X": "1"}) == 1
    result = run_probe(("true",), timeout=10)  # asks for something else
    assert result.ok
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.01)
    pid = int(pidfile.read_text())
    prefetch.discard()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"the unadopted experiment {pid} is still running")


def test_an_unknown_user_or_program_starts_nothing() -> None:
    assert prefetch.start([("true",)], as_user="no-such-user-sandbox-setup") == 0
    assert prefetch.start([("no-such-program-sandbox-setup",)]) == 0


def test_a_probe_leaves_nothing_running(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A probe whose command starts a background child and exits (as Claude Code
    does with ripgrep) leaves no process behind."""
    pidfile = tmp_path / "child"
    result = run_probe(
        ("sh", "-c", f'sleep 60 >/dev/null 2>&1 & echo $! > "{pidfile}"; exit 0'), timeout=10
    )
    assert result.ok
    child = int(pidfile.read_text())
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    raise AssertionError(f"the probe's background child {child} is still running")
